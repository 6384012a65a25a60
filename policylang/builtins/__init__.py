"""Functions callable from .sched files.

Only Kubernetes API-level helpers that every plugin shares (quantities, a pod's effective
requests, label- and node-selector matching, toleration matching) and generic math and
string functions live here. Plugin logic belongs in stdlib_policies/, not here.

The declarations are in declare.py (the @builtin decorator, REGISTRY, READS and the errors);
the builtins themselves in values.py (collections, strings, math, quantities) and cluster.py
(objects and the cluster state), each registered as it is imported.
"""

from __future__ import annotations

# Importing them registers their builtins, values' first (REGISTRY's order is the declarations').
from . import values  # noqa: F401,I001
from . import cluster  # noqa: F401
from .declare import (INT64, POLICY_ERRORS, READS, REGISTRY, Builtin, EvalError, IntegerOverflow, builtin,
                      check_call, error_text, in_range)
from .values import milli, to_string, value

__all__ = ["INT64", "POLICY_ERRORS", "READS", "REGISTRY", "Builtin", "EvalError", "IntegerOverflow", "builtin",
           "check_call", "error_text", "in_range", "milli", "to_string", "value"]

"""policylang lint: a rule catalogue checked over .sched policies, KubeSchedulerConfiguration
files and workload manifests.

    model.py      Rule, Finding, Edit          catalogue.py  the registry of rules
    rules/        the rule families            context.py    what a rule's check receives
    sched_ast.py  walking and folding .sched    yaml_source.py YAML nodes with line/column
    k8s.py        well-known labels and keys    settings.py   select/ignore/per-path settings
    suppress.py   `# policylang: ignore[…]`     edits.py      the text edits of fixes
    runner.py     finding, loading, fixing      formats.py    text, json, sarif, github
    command.py    the `lint` command            docs.py       docs/lint-rules.md
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .catalogue import all_rules, get
    from .runner import Result, Selection, lint

__all__ = ["all_rules", "get", "lint", "Result", "Selection"]
# Imported on first use (PEP 562), so that `policylang.lint.command` is cheap to import.
_LAZY = {"all_rules": ".catalogue", "get": ".catalogue", "lint": ".runner", "Result": ".runner",
         "Selection": ".runner"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'policylang.lint' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value

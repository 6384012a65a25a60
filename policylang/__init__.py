"""policylang: policy-as-code for Kubernetes scheduling.

Deciding goes through one Engine (docs/api.md)::

    engine = Engine(cluster="dump.yaml")
    decision = engine.evaluate("pod.yaml")

The pipeline under it, in the order it runs::

    program = load_program("team.sched")      # parse (+ imports and used policies)
    checked = check(program)                  # names, types, stages
    plan = compile_profile(checked)           # the evaluation plan
    decision = schedule(Executable(plan), load_cluster(["cluster.yaml"]), pod)

The names are imported on first use (PEP 562): `policylang fmt` or `check` never pays for
numpy, cattrs or the executors.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .check import check
    from .cluster.load import load_cluster, load_objects
    from .compile import compile_all, compile_profile
    from .cost import CostExceeded
    from .diagnostics import InputError, PolicyError, PolicylangError
    from .engine import Engine, Fork
    from .pending import Held
    from .profiles import check_file, load_plans
    from .program import load_program, stdlib_dir
    from .run.decision import Decision
    from .run.schedule import Executable, schedule

# The public names (docs/api.md), each imported from its module on first use.
_LAZY = {"Engine": ".engine", "Fork": ".engine", "Decision": ".run.decision", "Held": ".pending",
         "PolicylangError": ".diagnostics", "PolicyError": ".diagnostics", "InputError": ".diagnostics",
         "CostExceeded": ".cost", "load_plans": ".profiles", "check_file": ".profiles",
         "check": ".check", "load_cluster": ".cluster.load", "load_objects": ".cluster.load",
         "compile_all": ".compile", "compile_profile": ".compile", "load_program": ".program",
         "stdlib_dir": ".roots", "Executable": ".run.schedule", "schedule": ".run.schedule"}

__all__ = list(_LAZY)


class _Package(types.ModuleType):
    """policylang's module type: importing the submodule policylang.check binds the package's
    ``check`` to that module, which would hide the function of the same name that the eager
    ``from .check import check`` used to leave there; a submodule never replaces a name above."""

    def __setattr__(self, name: str, value) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'policylang' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value

"""Where policies may be read from: the stdlib, a policy's own tree and the directories
`--allow-root` adds. Apart from program.py (which re-exports these), so that the command line
can set them up without importing the parser."""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from pathlib import Path

# Directories besides a policy's own tree and the stdlib that its imports and uses may reach
# (`--allow-root DIR`).
_EXTRA_ROOTS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("extra_roots", default=())


@contextlib.contextmanager
def allowed_roots(dirs):
    """Within the block, imports and uses may also reach files under ``dirs``."""
    token = _EXTRA_ROOTS.set(tuple(os.path.realpath(d) for d in dirs or ()))
    try:
        yield
    finally:
        _EXTRA_ROOTS.reset(token)


def snake_case(name: str) -> str:
    """A policy's file stem: DefaultPreemption lives in default_preemption.sched."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def stdlib_dir() -> Path:
    """The shipped policies: inside the installed package, or at the top of a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "stdlib_policies", here.parent / "stdlib_policies"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("stdlib_policies not found next to the policylang package")


def confined(target: str | Path, roots) -> bool:
    """Whether ``target`` (symlinks resolved) lies under one of ``roots`` (already resolved)."""
    real = os.path.realpath(target)
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def policy_roots(base: str | Path) -> tuple[str, ...]:
    """The directories a policy under ``base`` may reach: its tree, the stdlib, --allow-root."""
    return (os.path.realpath(base), os.path.realpath(stdlib_dir()), *_EXTRA_ROOTS.get())

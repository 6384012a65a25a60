"""The modules a document reaches (through `import` and `use`), the stdlib's plugins, and the
comments that document declarations."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from ..syntax import ast
from ..diagnostics import PolicyError
from ..inputs import read_text
from ..syntax.parse import parse
from ..program import stdlib_dir
from .analysis import Analysis


def imported_module(analysis: Analysis, alias: str) -> ast.Module | None:
    program = analysis.program
    if program is None:
        return None
    target = program.imports.get(program.root, {}).get(alias)
    return program.modules.get(target) if target else None


def used_module(analysis: Analysis, use: ast.Use) -> ast.Module | None:
    """The policy file a `use` names, as the loader resolved it."""
    program = analysis.program
    if program is None:
        return None
    target = program.uses.get(use)
    if target is None:  # a use of a recovered tree, not the loaded one: resolve by name
        target = program.policies.get(use.ref) or stdlib_plugins().get(use.ref)
    return program.modules.get(target) if target else None


@lru_cache(maxsize=1)
def stdlib_plugins() -> dict[str, str]:
    """Policy name → file, for every plugin of the stdlib."""
    out = {}
    for path in sorted(stdlib_dir().glob("*.sched")):
        try:
            module = parse(read_text(str(path)), str(path))
        except PolicyError:
            continue
        if module.policy is not None:
            out[module.policy.name] = str(path)
    return out


def comment_above(text: str, line: int) -> str:
    """The comment lines right above ``line`` (1-based), without their `#`, as one paragraph."""
    lines = text.splitlines()
    out: list[str] = []
    i = line - 2
    while 0 <= i < len(lines) and lines[i].strip().startswith("#"):
        out.append(lines[i].strip().lstrip("#").strip())
        i -= 1
    return "\n".join(reversed(out))


def header_comment(text: str) -> str:
    """The comment a file starts with (a stdlib plugin's: what it does, its upstream source)."""
    out = []
    for raw in text.splitlines():
        if not raw.strip().startswith("#"):
            break
        out.append(raw.strip().lstrip("#").strip())
    return "\n".join(out)


@lru_cache(maxsize=1)
def _api_docs() -> dict:
    return json.loads(resources.files("policylang.lsp").joinpath("api_docs.json").read_text())


def api_doc(kind: str, field: str = "") -> str:
    """The Kubernetes API's description of a field of a model kind (of the kind itself for ""),
    from api_docs.json (written by editors/extract_api_docs.py from k8s.io/api v0.35)."""
    return _api_docs().get(kind, {}).get(field, "")

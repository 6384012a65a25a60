"""Load a program: a root .sched file, the files it imports, and the policies its
profiles use (from beside it or from the stdlib). Parsing happens here; checking does not.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import attrs

from .syntax import ast
from .diagnostics import Diagnostic, InputError, PolicyError
from .inputs import read_text
from .roots import allowed_roots, confined, policy_roots, snake_case, stdlib_dir  # noqa: F401  (where they were)


@attrs.define
class Program:
    """Every module reachable from the root, keyed by path, plus where each policy lives."""
    root: str
    # The directories imports and uses may reach: the policy's own tree, the stdlib, --allow-root.
    roots: tuple[str, ...] = ()
    modules: dict[str, ast.Module] = attrs.Factory(dict)
    sources: dict[str, str] = attrs.Factory(dict)
    imports: dict[str, dict[str, str]] = attrs.Factory(dict)    # module → alias → module
    policies: dict[str, str] = attrs.Factory(dict)              # policy name → module
    uses: ast.NodeMap = attrs.Factory(ast.NodeMap)           # `use` → the policy module it names

    @property
    def root_module(self) -> ast.Module:
        return self.modules[self.root]

    def profiles(self) -> list[tuple[str, ast.Profile]]:
        return [(path, p) for path, m in self.modules.items() for p in m.of_type(ast.Profile)]


def load_program(path: str | Path | None = None, text: str | None = None, base: str | Path | None = None,
                 parsed: ast.Module | None = None) -> Program:
    """Parse ``path`` (or ``text``) and everything it reaches; raises PolicyError.

    Imports and uses reach only files under ``base`` (default: the directory of ``path``, or
    the working directory for bare text), the stdlib and the roots `allowed_roots` adds.
    ``parsed``: the root's text already parsed (the language server parses as it edits)."""
    root = str(path) if path is not None else "<input>"
    if base is None:
        base = Path(root).parent if path is not None else Path.cwd()
    program = Program(root=root, roots=policy_roots(base))
    if text is None and not root.endswith(".sched"):
        raise PolicyError([Diagnostic("P063", "not a .sched policy file", _file_span(root))])
    diagnostics: list[Diagnostic] = []
    _load(program, root, text, diagnostics, stack=(), parsed=parsed)
    if diagnostics:
        raise PolicyError(diagnostics, program.sources)
    return program


def _read(path: str) -> str:
    try:
        return read_text(path)
    except InputError as err:
        message = "file not found" if str(err).endswith("no such file or directory") else \
            f"cannot read: {err}".replace(f"{path}: ", "", 1)
        raise PolicyError([Diagnostic("P061", message, _file_span(path))]) from None


def _confined(program: Program, target: str) -> bool:
    return confined(target, program.roots)


def _reach_problem(program: Program, target: str, ref: str) -> str | None:
    """Why an import or use may not read ``target``: it is not a policy, or lies outside the roots.
    Such a file is never read, so no diagnostic can quote it."""
    if not target.endswith(".sched"):
        return f"not a .sched policy file: {ref!r}"
    if not _confined(program, target):
        return (f"{ref!r} is outside the policy's directory and the stdlib "
                f"(allow another directory with --allow-root)")
    return None


def _file_span(path: str):
    from .source import Span
    return Span(path, 0, 0, 0, 0)


def _load(program: Program, path: str, text: str | None, diagnostics: list, stack: tuple,
          parsed: ast.Module | None = None) -> None:
    if path in program.modules:
        return
    # Here: `policylang check` of an unchanged file never parses. A file read from disk has its
    # AST kept in the cache; a text given in memory (generated, an editor's buffer) does not.
    from .syntax.parse import parse, parse_file

    read = parse_file if text is None else parse
    if text is None:
        text = _read(path)
    program.sources[path] = text
    try:
        module = parsed if parsed is not None else read(text, path)
    except PolicyError as err:
        diagnostics.extend(err.diagnostics)
        return
    program.modules[path] = module
    program.imports[path] = {}
    if module.policy is not None:
        other = program.policies.get(module.policy.name)
        if other is not None and other != path:
            diagnostics.append(Diagnostic("P015", f"policy {module.policy.name} is also declared in {other}",
                                          module.policy.span))
        program.policies[module.policy.name] = path
    for imp in module.of_type(ast.Import):
        if imp.path is not None and not _valid_path(imp.path):
            diagnostics.append(Diagnostic("P061", f"not a valid file path: {imp.path!r}", imp.span))
            continue
        target = _import_target(path, imp)
        target = _as_loaded(program, target) if target is not None else None
        if target is None:
            diagnostics.append(Diagnostic("P061", f"no stdlib module named '{imp.alias}'", imp.span))
            continue
        problem = _reach_problem(program, target, imp.path) if imp.path is not None else None
        if problem is not None:
            diagnostics.append(Diagnostic("P063", problem, imp.span))
            continue
        if target in stack or target == path:
            chain = " → ".join(Path(p).name for p in (*stack, path, target))
            diagnostics.append(Diagnostic("P060", f"import cycle: {chain}", imp.span))
            continue
        if not Path(target).is_file():
            diagnostics.append(Diagnostic("P061", f"imported file not found: {imp.path}", imp.span))
            continue
        program.imports[path][imp.alias] = target
        _load(program, target, None, diagnostics, (*stack, path))
    for profile in module.of_type(ast.Profile):
        for i, use in enumerate(profile.uses):
            if use.is_path and not _valid_path(use.ref):
                diagnostics.append(Diagnostic("P054", f"not a valid file path: {use.ref!r}", use.span))
                continue
            target = _use_target(program, path, use)
            if target is None:
                continue
            target = _as_loaded(program, target)
            problem = _reach_problem(program, target, use.ref) if use.is_path else None
            if problem is not None:
                diagnostics.append(Diagnostic("P063", problem, use.span))
                continue
            if target not in program.modules and not Path(target).is_file():
                diagnostics.append(Diagnostic("P054", f"policy file not found: {use.ref}", use.span))
                continue
            _load(program, target, None, diagnostics, (*stack, path))
            program.uses[use] = target


def _as_loaded(program: Program, target: str) -> str:
    """The key under which ``target`` is (or will be) loaded: the root keeps the spelling it was
    given (`policylang eval --profile team.sched`), so a file reaching the root by path gets the
    root, not a second copy of it."""
    root = program.root
    if target != root and Path(root).is_file() and str(Path(root).resolve()) == target:
        return root
    return target


def _valid_path(text: str) -> bool:
    return bool(text) and "\x00" not in text


def _import_target(path: str, imp: ast.Import) -> str | None:
    if imp.path is not None:
        return str((Path(path).parent / imp.path).resolve())
    candidate = stdlib_dir() / f"{imp.alias}.sched"
    return str(candidate) if candidate.is_file() else None


def _use_target(program: Program, path: str, use: ast.Use) -> str | None:
    if use.is_path:
        return str((Path(path).parent / use.ref).resolve())
    if use.ref in program.policies:
        return program.policies[use.ref]
    candidate = stdlib_dir() / f"{snake_case(use.ref)}.sched"
    return str(candidate) if candidate.is_file() else None

"""Load a program: a root .sched file, the files it imports, and the policies its
profiles use (from beside it or from the stdlib). Parsing happens here; checking does not.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from . import ast
from .diagnostics import Diagnostic, PolicyError
from .parse import parse


def stdlib_dir() -> Path:
    """The shipped policies: inside the installed package, or at the top of a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "stdlib_policies", here.parent / "stdlib_policies"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("stdlib_policies not found next to the policylang package")


def snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@attrs.define
class Program:
    """Every module reachable from the root, keyed by path, plus where each policy lives."""
    root: str
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


def load_program(path: str | Path | None = None, text: str | None = None) -> Program:
    """Parse ``path`` (or ``text``) and everything it reaches; raises PolicyError."""
    root = str(path) if path is not None else "<input>"
    program = Program(root=root)
    diagnostics: list[Diagnostic] = []
    _load(program, root, text, diagnostics, stack=())
    if diagnostics:
        raise PolicyError(diagnostics, program.sources)
    return program


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise PolicyError([Diagnostic("P061", "file not found", _file_span(path))]) from None
    except (OSError, UnicodeDecodeError) as err:
        raise PolicyError([Diagnostic("P061", f"cannot read: {err}", _file_span(path))]) from None


def _file_span(path: str):
    from .source import Span
    return Span(path, 0, 0, 0, 0)


def _load(program: Program, path: str, text: str | None, diagnostics: list, stack: tuple) -> None:
    if path in program.modules:
        return
    if text is None:
        text = _read(path)
    program.sources[path] = text
    try:
        module = parse(text, path)
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
        return str((Path(path).parent / imp.path).resolve()) if not Path(imp.path).is_absolute() else imp.path
    candidate = stdlib_dir() / f"{imp.alias}.sched"
    return str(candidate) if candidate.is_file() else None


def _use_target(program: Program, path: str, use: ast.Use) -> str | None:
    if use.is_path:
        return str((Path(path).parent / use.ref).resolve())
    if use.ref in program.policies:
        return program.policies[use.ref]
    candidate = stdlib_dir() / f"{snake_case(use.ref)}.sched"
    return str(candidate) if candidate.is_file() else None

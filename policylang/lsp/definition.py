"""Go to definition: a def (here or through an import), a `let`, a param, a plugin named by
`use` (into its file, the stdlib's included), an imported file."""

from __future__ import annotations

from ..syntax import ast
from ..lint.sched_ast import name_span
from ..source import Span
from .analysis import Analysis
from .locate import chain_at, contains
from .modules import imported_module, used_module


def definition(analysis: Analysis, line: int, column: int) -> Span | None:
    chain = chain_at(analysis.module, line, column)
    if not chain:
        return None
    node = chain[-1]
    if isinstance(node, ast.Call) and contains(node.func_span, line, column):
        return _def_of(analysis, node.func)
    if isinstance(node, ast.Field) and isinstance(node.target, ast.Name) and node.target.id == "params":
        return _decl_name(analysis, analysis.module, ast.Param, "param", node.name)
    if isinstance(node, ast.Name):
        return _local(analysis, chain, node)
    if isinstance(node, ast.Use):
        target = used_module(analysis, node)
        return _file_start(target) if target is not None else None
    if isinstance(node, ast.UseArg) and isinstance(chain[-2], ast.Use):
        target = used_module(analysis, chain[-2])
        return _decl_name(analysis, target, ast.Param, "param", node.name) if target is not None else None
    if isinstance(node, ast.Import):
        target = imported_module(analysis, node.alias)
        return _file_start(target) if target is not None else None
    return None


def _def_of(analysis: Analysis, func: str) -> Span | None:
    if "." in func:
        alias, name = func.split(".", 1)
        target = imported_module(analysis, alias)
        return _decl_name(analysis, target, ast.Def, "def", name) if target is not None else None
    return _decl_name(analysis, analysis.module, ast.Def, "def", func)


def _decl_name(analysis: Analysis, module: ast.Module, kind, keyword: str, name: str) -> Span | None:
    decl = next((d for d in module.of_type(kind) if d.name == name), None)
    if decl is None:
        return None
    text = analysis.text if module.path == analysis.path else (
        analysis.program.sources.get(module.path, "") if analysis.program else "")
    return name_span(text, decl.span, keyword, name)


def _local(analysis: Analysis, chain: list, node: ast.Name) -> Span | None:
    """A name bound by a comprehension or fold around it, a `let` before it in its block, or a
    def's parameter."""
    for outer in reversed(chain[:-1]):
        if isinstance(outer, ast.Comprehension) and outer.var == node.id and outer.source is not node \
                and not _within(node, outer.source):
            return outer.span
        if isinstance(outer, ast.Fold) and node.id in (outer.acc, outer.var):
            return outer.span
        if isinstance(outer, ast.Def) and node.id in outer.params:
            return name_span(analysis.text, outer.span, "def", outer.name)
        if isinstance(outer, (ast.Filter, ast.Score)):
            lets = [s for s in outer.body if isinstance(s, ast.Let) and s.name == node.id
                    and (s.span.line, s.span.column) < (node.span.line, node.span.column)]
            if lets:
                return name_span(analysis.text, lets[-1].span, "let", node.id)
    return None


def _within(node, outer) -> bool:
    return outer is not None and contains(outer.span, node.span.line, node.span.column)


def _file_start(module: ast.Module) -> Span:
    decl = module.policy
    if decl is not None:
        return Span(module.path, decl.span.line, decl.span.column, decl.span.line, decl.span.column)
    return Span(module.path, 1, 1, 1, 1)

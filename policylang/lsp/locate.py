"""What stands at a position of a document: the chain of syntax nodes around it, outermost
first (a declaration, a statement, then expressions down to the innermost)."""

from __future__ import annotations

from ..syntax import ast
from ..lint.sched_ast import children, decl_exprs, stmt_exprs
from ..source import Span


def contains(span: Span, line: int, column: int) -> bool:
    """Whether 1-based (line, column) lies in ``span``, its end included (a cursor just after
    a word is on it)."""
    if span.line <= 0:
        return False
    return (span.line, span.column) <= (line, column) <= (span.end_line, span.end_column)


def chain_at(module: ast.Module, line: int, column: int) -> list:
    """The nodes containing (line, column), outermost first; [] outside every declaration."""
    for decl in module.decls:
        if contains(decl.span, line, column):
            return [decl, *_inside(_parts(decl), line, column)]
    return []


def _parts(node) -> list:
    if isinstance(node, (ast.Filter, ast.Score)):
        return list(node.body)
    if isinstance(node, ast.Rule):
        return ([node.when] if node.when is not None else []) + list(node.body)
    if isinstance(node, ast.Profile):
        pct = [node.percentage_of_nodes_to_score] if node.percentage_of_nodes_to_score is not None else []
        return list(node.uses) + pct
    if isinstance(node, ast.Use):
        return list(node.args) + ([node.weight] if node.weight is not None else [])
    if isinstance(node, ast.UseArg):
        return [node.value]
    if isinstance(node, (ast.Def, ast.Param)):
        return decl_exprs(node)
    if isinstance(node, (ast.Skip, ast.Let, ast.Reject, ast.Restrict, ast.Value, ast.Normalize, ast.Require,
                         ast.Prefer, ast.Tolerate, ast.Spread)):
        return stmt_exprs(node)
    return children(node)


def _inside(nodes: list, line: int, column: int) -> list:
    for node in nodes:
        span = getattr(node, "span", None)
        if span is not None and contains(span, line, column):
            return [node, *_inside(_parts(node), line, column)]
    return []

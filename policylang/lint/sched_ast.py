"""Reading a .sched syntax tree for lint rules: walking it, the names an expression
leaves free, folding constant conditions, and the exact spans of declared names."""

from __future__ import annotations

import re
from typing import Iterator

from ..syntax import ast
from ..source import Span

BLOCKS = (ast.Filter, ast.Score, ast.Rule)


# ---- walking ----------------------------------------------------------------------------

def children(e) -> list:
    if isinstance(e, ast.Interpolated):
        return [p for p in e.parts if not isinstance(p, str)]
    if isinstance(e, ast.Field):
        return [e.target]
    if isinstance(e, ast.Index):
        return [e.target, e.key]
    if isinstance(e, ast.Call):
        return list(e.args)
    if isinstance(e, ast.Unary):
        return [e.operand]
    if isinstance(e, ast.Binary):
        return [e.left, e.right]
    if isinstance(e, ast.If):
        return [e.cond, e.then, e.else_]
    if isinstance(e, ast.ListExpr):
        return list(e.items)
    if isinstance(e, ast.MapExpr):
        return list(e.values)
    if isinstance(e, ast.Comprehension):
        return [x for x in (e.source, e.where, e.element, e.by) if x is not None]
    if isinstance(e, ast.Fold):
        return [e.init, e.source, e.body]
    return []


def walk(e) -> Iterator:
    """``e`` and every expression inside it, parents first."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def stmt_exprs(stmt) -> list:
    """The expressions a statement (or a rule's `when`) holds, in source order."""
    if isinstance(stmt, (ast.Skip, ast.Require)):
        return [stmt.cond]
    if isinstance(stmt, ast.Let):
        return [stmt.value]
    if isinstance(stmt, ast.Reject):
        return [stmt.cond, stmt.reason]
    if isinstance(stmt, ast.Restrict):
        return [stmt.names]
    if isinstance(stmt, ast.Value):
        return [stmt.expr]
    if isinstance(stmt, ast.Normalize):
        return [stmt.expr] if stmt.expr is not None else []
    if isinstance(stmt, ast.Prefer):
        return [stmt.weight, stmt.cond]
    if isinstance(stmt, ast.Tolerate):
        return [x for x in (stmt.value, stmt.seconds) if x is not None]
    if isinstance(stmt, ast.Spread):
        return [stmt.max_skew]
    return []


def decl_exprs(decl) -> list:
    """Every top-level expression of a declaration."""
    if isinstance(decl, ast.Def):
        return [decl.body]
    if isinstance(decl, ast.Param):
        return [decl.default] if decl.default is not None else []
    if isinstance(decl, ast.Rule):
        return ([decl.when] if decl.when is not None else []) + [x for s in decl.body for x in stmt_exprs(s)]
    if isinstance(decl, (ast.Filter, ast.Score)):
        return [x for s in decl.body for x in stmt_exprs(s)]
    if isinstance(decl, ast.Profile):
        out = [a.value for u in decl.uses for a in u.args] + [u.weight for u in decl.uses if u.weight is not None]
        out += [u.when for u in decl.uses if u.when is not None]
        return out + ([decl.percentage_of_nodes_to_score] if decl.percentage_of_nodes_to_score is not None else [])
    return []


def all_exprs(module: ast.Module) -> Iterator:
    for decl in module.decls:
        for root in decl_exprs(decl):
            yield from walk(root)


def free_names(e, bound: frozenset = frozenset()) -> set[str]:
    """Names ``e`` reads that it does not bind itself (a comprehension binds its variable
    in its where, element and by clauses, not in its source)."""
    if isinstance(e, ast.Name):
        return set() if e.id in bound else {e.id}
    if isinstance(e, ast.Comprehension):
        inner = bound | {e.var}
        out = free_names(e.source, bound)
        for part in (e.where, e.element, e.by):
            if part is not None:
                out |= free_names(part, inner)
        return out
    if isinstance(e, ast.Fold):
        return free_names(e.init, bound) | free_names(e.source, bound) | \
            free_names(e.body, bound | {e.acc, e.var})
    out: set[str] = set()
    for c in children(e):
        out |= free_names(c, bound)
    return out


def calls(module: ast.Module) -> Iterator[ast.Call]:
    return (e for e in all_exprs(module) if isinstance(e, ast.Call))


# ---- constants --------------------------------------------------------------------------

class NotConstant(Exception):
    pass


_KIND = {"int": "number", "float": "number", "string": "string", "bool": "bool", "null": "null",
         "quantity": "quantity", "duration": "duration"}


def fold(e):
    """The value of a condition made only of literals, as (kind, value); raises NotConstant.

    Only what is certain is folded: literals, `not`, `and`/`or` (a false operand makes an
    `and` false whatever the rest is), comparisons of two constants of one kind,
    membership in a literal list, `if`, and `??`.
    """
    if isinstance(e, ast.Literal):
        return _KIND[e.kind], e.value
    if isinstance(e, ast.Unary) and e.op == "not":
        kind, v = fold(e.operand)
        if kind != "bool":
            raise NotConstant
        return "bool", not v
    if isinstance(e, ast.Binary) and e.op in ("and", "or"):
        results = []
        for side in (e.left, e.right):
            try:
                results.append(_bool(fold(side)))
            except NotConstant:
                results.append(None)
        decisive = e.op == "or"  # true decides an `or`, false an `and`
        if decisive in results:
            return "bool", decisive
        if None in results:
            raise NotConstant
        return "bool", not decisive
    if isinstance(e, ast.Binary) and e.op == "??":
        kind, v = fold(e.left)
        return fold(e.right) if kind == "null" else (kind, v)
    if isinstance(e, ast.Binary) and e.op in ("==", "!=", "<", "<=", ">", ">="):
        (lk, lv), (rk, rv) = fold(e.left), fold(e.right)
        if e.op in ("==", "!="):
            if lk != rk:
                raise NotConstant
            return "bool", (lv == rv) == (e.op == "==")
        if lk != rk or lk not in ("number", "string"):
            raise NotConstant
        return "bool", {"<": lv < rv, "<=": lv <= rv, ">": lv > rv, ">=": lv >= rv}[e.op]
    if isinstance(e, ast.Binary) and e.op in ("in", "notin") and isinstance(e.right, ast.ListExpr):
        item = fold(e.left)
        items = [fold(i) for i in e.right.items]
        if any(k != item[0] for k, _ in items):
            raise NotConstant
        return "bool", (item in items) == (e.op == "in")
    if isinstance(e, ast.If):
        return fold(e.then) if _bool(fold(e.cond)) else fold(e.else_)
    raise NotConstant


def _bool(folded) -> bool:
    kind, v = folded
    if kind != "bool":
        raise NotConstant
    return v


def fold_bool(e) -> bool | None:
    """True or False when the condition is constant, None when it is not (or not a bool)."""
    try:
        return _bool(fold(e))
    except NotConstant:
        return None


def const_int(e) -> int | None:
    try:
        kind, v = fold(e)
    except NotConstant:
        return None
    return v if kind == "number" and isinstance(v, int) else None


def const_string(e) -> str | None:
    return e.value if isinstance(e, ast.Literal) and e.kind == "string" else None


# ---- spans --------------------------------------------------------------------------------

def name_span(text: str, span: Span, keyword: str, name: str) -> Span:
    """The span of ``name`` as declared after ``keyword`` in the statement at ``span``
    (``let x``, ``def f``, ``param p``, ``import "…" as a``); the statement's first line
    when it cannot be found."""
    lines = text.splitlines()
    if not 0 < span.line <= len(lines):
        return span
    line = lines[span.line - 1]
    pattern = re.compile(rf"\b{re.escape(keyword)}\b.*?\b({re.escape(name)})\b")
    m = pattern.search(line, span.column - 1)
    if not m:
        return Span(span.path, span.line, span.column, span.line, len(line) + 1)
    return Span(span.path, span.line, m.start(1) + 1, span.line, m.end(1) + 1)


def head_span(span: Span, text: str) -> Span:
    """A multi-line span cut to its first line (carets under one line read best)."""
    if span.end_line == span.line:
        return span
    lines = text.splitlines()
    end = len(lines[span.line - 1]) + 1 if 0 < span.line <= len(lines) else span.column + 1
    return Span(span.path, span.line, span.column, span.line, end)

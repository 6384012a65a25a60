"""Document symbols: the outline of a file (policy, imports, params, defs, filters, scores,
rules, profiles and their `let`s and `use`s). A file that does not parse still gets the
declarations that do, and a bare entry for each declaration whose header can be read."""

from __future__ import annotations

import bisect
import re

from ..syntax import ast
from ..frozen import frozen
from ..lint.sched_ast import name_span
from ..source import Span

# Declaration → (keyword before its name, symbol kind)
KINDS = {ast.PolicyDecl: ("policy", "class"), ast.Import: ("as", "module"), ast.Param: ("param", "property"),
         ast.Def: ("def", "function"), ast.Filter: ("filter", "method"), ast.Score: ("score", "method"),
         ast.Rule: ("rule", "event"), ast.Profile: ("profile", "object")}
_HEADER = re.compile(r"^(policy|param|def|filter|score|rule|profile)\s+([A-Za-z_][A-Za-z0-9_.-]*)", re.MULTILINE)


@frozen
class Symbol:
    name: str
    kind: str             # class module property function method event object variable
    detail: str
    span: Span            # the whole declaration
    selection: Span       # its name
    children: tuple = ()


def symbols(module: ast.Module, text: str) -> list[Symbol]:
    out = [_symbol(d, text) for d in module.decls]
    out += _unparsed_headers(module, text)
    return sorted(out, key=lambda s: (s.span.line, s.span.column))


def _symbol(decl, text: str) -> Symbol:
    keyword, kind = KINDS[type(decl)]
    name = decl.alias if isinstance(decl, ast.Import) else decl.name
    if isinstance(decl, ast.Import) and decl.path is None:
        keyword = "import"
    selection = name_span(text, decl.span, keyword, name)
    children: list[Symbol] = []
    if isinstance(decl, (ast.Filter, ast.Score)):
        children = [Symbol(s.name, "variable", "let", s.span, name_span(text, s.span, "let", s.name))
                    for s in decl.body if isinstance(s, ast.Let)]
    elif isinstance(decl, ast.Profile):
        children = [Symbol(u.ref, "class", "use", u.span, _head(u.span)) for u in decl.uses]
    return Symbol(name, kind, type(decl).__name__.lower().replace("policydecl", "policy"), decl.span, selection,
                  tuple(children))


def _head(span: Span) -> Span:
    return Span(span.path, span.line, span.column, span.line, span.column if span.end_line != span.line
                else span.end_column)


def _unparsed_headers(module: ast.Module, text: str) -> list[Symbol]:
    """`filter name {` lines outside every parsed declaration: a declaration that does not parse."""
    covered = sorted((d.span.line, d.span.end_line) for d in module.decls if d.span.line > 0)
    starts = [a for a, _ in covered]
    out, line, at = [], 1, 0
    for m in _HEADER.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        i = bisect.bisect_right(starts, line) - 1
        if i >= 0 and covered[i][0] <= line <= covered[i][1]:
            continue
        keyword, name = m.group(1), m.group(2)
        kind = next(k for kw, k in KINDS.values() if kw == keyword)
        span = Span(module.path, line, 1, line, len(m.group(0)) + 1)
        selection = Span(module.path, line, m.start(2) - m.start() + 1, line, m.end(2) - m.start() + 1)
        out.append(Symbol(name, kind, f"{keyword} (does not parse)", span, selection))
    return out

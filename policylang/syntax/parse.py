"""Parse: .sched text → ast.Module, or diagnostics: the grammar's parser (grammar.py), a bound
on nesting, and the tree built into the AST (build.py).

Lark and the tree builder are imported when text is parsed: a file whose AST the cache holds
(``parse_file``) is read back without them."""

from __future__ import annotations

import re

from .. import cache
from ..diagnostics import Diagnostic, PolicyError
from ..source import Span
from . import ast

__all__ = ["parse", "parse_file", "parse_expr", "parse_piece", "declaration_pieces", "MAX_NESTING"]


# How deeply a file's syntax may nest (grammar levels: about one per `else if`, bracket or
# operator): 60 times the stdlib's deepest (18), and within what every later stage (check,
# compile, both executors, fmt, lint) follows under the recursion limit the CLI sets
# (cli.deep_recursion). Deeper is `error[P019]`, never a RecursionError.
MAX_NESTING = 1000

def parse(text: str, path: str = "<input>") -> ast.Module:
    """Parse one file; raises PolicyError carrying every syntax diagnostic found."""
    import lark

    from .build import Build
    from .grammar import lalr, syntax_diagnostic

    diagnostics: list[Diagnostic] = []
    try:
        tree = lalr().parse(text, start="start")
    except lark.exceptions.UnexpectedInput as err:
        raise PolicyError([syntax_diagnostic(err, text, path)], {path: text}) from None
    too_deep = _deeper_than(tree, MAX_NESTING)
    if too_deep is not None:
        raise PolicyError([Diagnostic("P019", f"this nests deeper than {MAX_NESTING} levels",
                                      _meta_span(too_deep, path),
                                      notes=("help: write a long `else if` chain as a lookup in a map, "
                                             "or split it into defs",))], {path: text})
    builder = Build(path, diagnostics)
    try:
        module = builder.transform(tree)
    except lark.exceptions.VisitError as err:  # a bug in a rule method, never the user's fault
        raise RuntimeError(f"internal error while parsing {path}: {err.orig_exc!r}") from err.orig_exc
    if diagnostics:
        raise PolicyError(diagnostics, {path: text})
    return ast.Module(path=path, decls=tuple(module), span=Span(path, 1, 1, 1, 1))

def parse_file(text: str, path: str) -> ast.Module:
    """``parse`` of a file read from disk, its AST kept in the cache by path and text (the
    stdlib's 17 files take ~0.4 s to parse, ~0.05 s to read back)."""
    return cache.cached("ast", cache.key("ast", path, text), lambda: parse(text, path), ast.Module)

def _deeper_than(tree, limit: int):
    """The first subtree (depth first) nested more than ``limit`` levels down, found without
    recursion; None when there is none."""
    import lark

    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return node
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, lark.Tree))
    return None

def _meta_span(tree, path: str) -> Span:
    meta = tree.meta
    if getattr(meta, "empty", True):
        return Span(path, 1, 1, 1, 1)
    return Span(path, meta.line, meta.column, meta.line, meta.column + 1)

# A line starting with one of these, at the first column, starts a declaration: where an editor
# cuts a file to parse again only what changed, and to recover from a declaration that does not parse.
_DECL_START = re.compile(r"^(?:policy|import|param|def|filter|score|rule|profile)\b", re.MULTILINE)

def declaration_pieces(text: str) -> list[tuple[int, str]]:
    """The file cut before each line that starts a top-level declaration: (the number of lines
    before the piece, the piece). Each piece starts a line, so its columns are the file's."""
    starts = [0] + [m.start() for m in _DECL_START.finditer(text) if m.start() > 0]
    out, line = [], 0
    for start, end in zip(starts, starts[1:] + [len(text)]):
        out.append((line, text[start:end]))
        line += text.count("\n", start, end)
    return out

def parse_piece(piece: str, lines_before: int, path: str) -> tuple:
    """The declarations of one piece of a file (see declaration_pieces); raises PolicyError."""
    # Blank lines in front keep the piece's line numbers.
    return parse("\n" * lines_before + piece, path).decls

def parse_expr(text: str, path: str = "<expr>") -> ast.Expr:
    import lark

    from .build import Build
    from .grammar import lalr, syntax_diagnostic

    diagnostics: list[Diagnostic] = []
    try:
        tree = lalr().parse(text, start="expr")
    except lark.exceptions.UnexpectedInput as err:
        raise PolicyError([syntax_diagnostic(err, text, path)], {path: text}) from None
    expr = Build(path, diagnostics).transform(tree)
    if diagnostics:
        raise PolicyError(diagnostics, {path: text})
    return expr

"""Parsing a document as it is edited: only the declarations whose text changed are parsed again.

The file is cut where each top-level declaration starts (parse.declaration_pieces) and each
piece's declarations are kept by the piece's text; a piece seen before, perhaps at other lines
now, is reused with its spans moved. When every piece parses, the module is the one the whole
file parses to (the grammar is a sequence of declarations, and no token crosses a cut, which is
at the start of a line). When some piece does not, the whole file is parsed too, as the CLI parses
it (a line inside a declaration may start with a declaration's keyword): its result stands when it
parses, and its first error is the one reported first.
"""

from __future__ import annotations

import attrs

from ..syntax import ast
from ..diagnostics import PolicyError
from ..syntax.parse import declaration_pieces, parse, parse_piece
from ..source import Span


class IncrementalParser:
    """One document's parser: holds the pieces of its last text."""

    def __init__(self) -> None:
        # (path, piece text) → (lines before it, its decls there): moved only when lines before change
        self._pieces: dict[tuple[str, str], tuple[int, tuple]] = {}

    def parse(self, text: str, path: str) -> tuple[ast.Module, tuple]:
        """(module, syntax diagnostics). The module holds the declarations of every piece that
        parses. The diagnostics are the CLI's (the whole file's first error), then those of the
        broken pieces after it: an editor shows each broken declaration, not only the first."""
        kept: dict[tuple[str, str], tuple[int, tuple]] = {}
        decls: list = []
        errors: list = []   # (the piece's first line, a diagnostic)
        for lines_before, piece in declaration_pieces(text):
            key = (path, piece)
            known = self._pieces.get(key)
            if known is None:
                try:
                    known = (lines_before, parse_piece(piece, lines_before, path))
                except PolicyError as err:
                    errors += [(lines_before + 1, d) for d in err.diagnostics]
                    continue
            elif known[0] != lines_before:
                known = (lines_before, shift_lines(known[1], lines_before - known[0]))
            kept.setdefault(key, known)
            decls += known[1]
        self._pieces = kept
        module = ast.Module(path=path, decls=tuple(decls), span=Span(path, 1, 1, 1, 1))
        if not errors:
            return module, ()
        try:
            return parse(text, path), ()
        except PolicyError as err:
            first = err.diagnostics
        line = first[0].span.line if first else 0
        return module, (*first, *(d for start, d in errors if start > line))


def shift_lines(node, lines: int):
    """``node`` with every span in it moved down by ``lines``."""
    if isinstance(node, tuple):
        return tuple(shift_lines(n, lines) for n in node)
    if isinstance(node, Span):
        return Span(node.path, node.line + lines, node.column, node.end_line + lines, node.end_column) \
            if node.line > 0 else node
    if not attrs.has(type(node)):
        return node
    changes = {}
    for f in attrs.fields(type(node)):
        value = getattr(node, f.name)
        if isinstance(value, (Span, tuple)) or attrs.has(type(value)):
            changes[f.name] = shift_lines(value, lines)
    return attrs.evolve(node, **changes)

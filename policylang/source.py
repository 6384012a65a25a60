"""Spans: the regions of source files that diagnostics and syntax nodes point at."""

from __future__ import annotations

from .frozen import frozen


@frozen(order=True)
class Span:
    """A region of a source file: 1-based line/column, end column exclusive."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


NO_SPAN = Span("<builtin>", 0, 0, 0, 0)

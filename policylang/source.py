"""Source text and the spans that point into it."""

from __future__ import annotations

import attrs

from .frozen import frozen


@frozen
class Source:
    """A policy file's text, kept so diagnostics can quote the offending line."""

    path: str
    text: str = attrs.field(repr=False)

    def line(self, number: int) -> str:
        lines = self.text.splitlines()
        return lines[number - 1] if 0 < number <= len(lines) else ""


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

"""Text positions and the edits certain fixes make: deleting a statement or declaration
together with the lines it stood on, and nothing else."""

from __future__ import annotations

import bisect
import re

from ..source import Span
from .model import Edit


class Text:
    """A file's text with line offsets, to turn 1-based line/column spans into offsets."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def offset(self, line: int, column: int) -> int:
        line = min(max(line, 1), len(self.starts))
        return min(self.starts[line - 1] + column - 1, len(self.text))

    def span(self, path: str, start: int, end: int) -> Span:
        line = bisect.bisect_right(self.starts, start)
        end_line = bisect.bisect_right(self.starts, max(start, end - 1)) if end > start else line
        return Span(path, line, start - self.starts[line - 1] + 1, end_line, end - self.starts[end_line - 1] + 1)

    def line(self, number: int) -> str:
        if not 0 < number <= len(self.starts):
            return ""
        end = self.starts[number] - 1 if number < len(self.starts) else len(self.text)
        return self.text[self.starts[number - 1]:end]

    @property
    def line_count(self) -> int:
        return len(self.starts) - (1 if self.text.endswith("\n") else 0)


def _blank(line: str) -> bool:
    return not line.strip()


def _comment_only(line: str) -> bool:
    return line.strip().startswith("#")


def delete(text: str, span: Span, with_comment_above: bool = False) -> tuple[Edit, ...]:
    """Delete what ``span`` covers. When it stands alone on its lines, the lines go too
    (with a trailing comment, and with the comment lines right above it when asked), and
    a blank line it leaves doubled is dropped."""
    t = Text(text)
    start, end = t.offset(span.line, span.column), t.offset(span.end_line, span.end_column)
    before = t.line(span.line)[:span.column - 1]
    after = t.line(span.end_line)[span.end_column - 1:]
    if before.strip() or not (_blank(after) or _comment_only(after)):
        # Shares its line with other code: remove the text and the spaces after it.
        while end < len(text) and text[end] == " ":
            end += 1
        return (Edit(start, end, ""),)
    first, last = span.line, span.end_line
    if with_comment_above:
        while first > 1 and _comment_only(t.line(first - 1)):
            first -= 1
    if (first == 1 or _blank(t.line(first - 1))) and last < t.line_count and _blank(t.line(last + 1)):
        last += 1
    elif last >= t.line_count and first > 1 and _blank(t.line(first - 1)):
        first -= 1  # at the end of the file: do not leave a trailing blank line
    end_offset = t.starts[last] if last < len(t.starts) else len(text)
    return (Edit(t.starts[first - 1], end_offset, ""),)


def apply(text: str, edits) -> str:
    """Apply non-overlapping edits; an edit overlapping one already taken is skipped
    (the next round of fixing picks it up again)."""
    out, taken = text, []
    for e in sorted(set(edits), key=lambda e: (e.start, e.end), reverse=True):
        if any(e.start < s_end and s_start < e.end or (e.start == e.end == s_start) for s_start, s_end in taken):
            continue
        out = out[:e.start] + e.text + out[e.end:]
        taken.append((e.start, e.end))
        if not e.text:
            out = _collapse_blank_lines(out, e.start)
    return out


def _collapse_blank_lines(text: str, at: int) -> str:
    """Two deletions side by side can leave two blank lines where there was one: keep one
    (none at the top of the file). Edits are applied from the end, so nothing after ``at``
    is still to be edited."""
    a = b = at
    while a > 0 and text[a - 1] == "\n":
        a -= 1
    while b < len(text) and text[b] == "\n":
        b += 1
    if a == 0:
        return text[b:]
    return text[:a] + "\n\n" + text[b:] if b - a > 2 else text

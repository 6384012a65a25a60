"""Code actions: the certain fixes of lint rules (those `policylang lint --fix` applies), one
per finding in the range asked about, and one that applies them all."""

from __future__ import annotations

import bisect

from ..frozen import frozen
from ..lint import edits as lint_edits
from ..source import Span
from .analysis import Analysis, Problem


@frozen
class Action:
    title: str
    kind: str                           # quickfix | source.fixAll
    changes: tuple[tuple[Span, str], ...]   # (span to replace, new text)
    problems: tuple[Problem, ...] = ()


def actions(analysis: Analysis, first_line: int, last_line: int) -> list[Action]:
    text = lint_edits.Text(analysis.text)
    fixable = [p for p in analysis.problems if p.edits]
    out = [Action(f"Fix {p.code}: {p.message}", "quickfix", tuple(_change(text, analysis.path, e) for e in p.edits),
                  (p,)) for p in fixable if p.span.line <= last_line and p.span.end_line >= first_line]
    if fixable:
        fixed = lint_edits.apply(analysis.text, [e for p in fixable for e in p.edits])
        whole = whole_document(analysis.path, analysis.text)
        out.append(Action(f"Fix all certain lint findings ({len(fixable)})", "source.fixAll",
                          ((whole, fixed),), tuple(fixable)))
    return out


def _change(text: lint_edits.Text, path: str, edit) -> tuple[Span, str]:
    """An edit's offsets as a span; an end just past a newline is the start of the next line
    (so deleting a whole line deletes its newline too)."""
    (line, column), (end_line, end_column) = _point(text, edit.start), _point(text, edit.end)
    return Span(path, line, column, end_line, end_column), edit.text


def _point(text: lint_edits.Text, offset: int) -> tuple[int, int]:
    line = bisect.bisect_right(text.starts, offset)
    return line, offset - text.starts[line - 1] + 1


def whole_document(path: str, text: str) -> Span:
    """From the first character to the end of the text."""
    last = text.rsplit("\n", 1)[-1]
    return Span(path, 1, 1, text.count("\n") + 1, len(last) + 1)

"""Inline suppressions: `# policylang: ignore[S101, S204]` on the line of a finding, or
alone on the line before it. Rule names (`ignore[unused-let]`) work as codes do."""

from __future__ import annotations

import re

import attrs

from ..syntax.format import _comments  # the formatter's comment finder: `#` outside string literals
from ..source import Span
from . import edits
from .catalogue import all_rules
from .model import Edit, Finding

PATTERN = re.compile(r"#\s*policylang:\s*ignore\[([^\]]*)\]")


@attrs.define
class Suppression:
    line: int               # where the comment is
    standalone: bool        # alone on its line: it covers the next line
    codes: list[tuple[str, str, Span]]   # (code or name as written, resolved code or "", span of it)
    comment_start: int      # offset of the `#`
    comment_end: int        # offset of the end of the comment
    used: set = attrs.Factory(set)

    def covers(self, line: int) -> bool:
        return line == self.line or (self.standalone and line == self.line + 1)


def find(path: str, text: str) -> list[Suppression]:
    t = edits.Text(text)
    by_name = {r.name: r.code for r in all_rules()}
    codes = {r.code for r in all_rules()}
    out = []
    for number, comment in _comments(text.splitlines()).items():
        m = PATTERN.search(comment)
        if not m:
            continue
        line = t.line(number)
        col = line.index(comment) + 1          # the comment's column
        start = t.offset(number, col)
        items, pos = [], m.start(1)
        for raw in m.group(1).split(","):
            token = raw.strip()
            offset = pos + raw.index(token) if token else pos
            pos += len(raw) + 1
            if not token:
                continue
            resolved = token if token in codes else by_name.get(token, "")
            span = Span(path, number, col + offset, number, col + offset + len(token))
            items.append((token, resolved, span))
        out.append(Suppression(number, not line[:col - 1].strip(), items, start, start + len(comment)))
    return out


def apply(findings: list[Finding], suppressions: list[Suppression]) -> list[Finding]:
    """The findings no suppression covers; marks the suppressions that were used."""
    kept = []
    for f in findings:
        hit = False
        for s in suppressions:
            if s.covers(f.span.line):
                for token, code, _ in s.codes:
                    if code == f.code:
                        s.used.add(token)
                        hit = True
        if not hit:
            kept.append(f)
    return kept


def unused(text: str, suppressions: list[Suppression], ran: set[str]) -> list[tuple[str, Span, tuple[Edit, ...]]]:
    """(message, span, fix) for each code that suppressed nothing, among rules that ran
    (and codes no rule has)."""
    out = []
    for s in suppressions:
        stale = [(token, code, span) for token, code, span in s.codes
                 if token not in s.used and (not code or code in ran)]
        if not stale:
            continue
        fix = _removal(text, s, {token for token, _, _ in stale})
        for token, code, span in stale:
            message = f"'{token}' is not a lint rule" if not code else f"this suppresses nothing: {token} found nothing here"
            out.append((message, span, fix))
    return out


def _removal(text: str, s: Suppression, stale: set[str]) -> tuple[Edit, ...]:
    keep = [token for token, _, _ in s.codes if token not in stale]
    if keep:
        comment = text[s.comment_start:s.comment_end]
        m = PATTERN.search(comment)
        new = comment[:m.start(1)] + ", ".join(keep) + comment[m.end(1):]
        return (Edit(s.comment_start, s.comment_end, new),)
    t = edits.Text(text)
    line_start = t.starts[s.line - 1]
    if s.standalone:
        end = t.starts[s.line] if s.line < len(t.starts) else len(text)
        return (Edit(line_start, end, ""),)
    start = s.comment_start
    while start > line_start and text[start - 1] in " \t":
        start -= 1
    return (Edit(start, s.comment_end, ""),)

"""Diagnostics: what every stage reports instead of raising, and how they print.

A diagnostic renders like a compiler's::

    team/gpu.sched:12:9: error[P012]: Pod has no field 'spec.tolerationz'
       12 |   when pod.spec.tolerationz contains t
          |            ^^^^^^^^^^^^^^^^
       = help: did you mean 'spec.tolerations'?

Every code (P001…P080) is listed with its meaning in docs/diagnostics.md; a test keeps the list
and the codes used here in step.
"""

from __future__ import annotations

from typing import Iterable

from .frozen import frozen
from .source import Span

MAX_REPORTED = 50


@frozen
class Diagnostic:
    code: str
    message: str
    span: Span
    severity: str = "error"
    notes: tuple[str, ...] = ()

    def render(self, text_of: dict[str, str] | None = None) -> str:
        head = f"{self.span}: {self.severity}[{self.code}]: {self.message}"
        lines = [head]
        source_line = _line_of(text_of or {}, self.span)
        if source_line is not None:
            number = str(self.span.line)
            gutter = " " * len(number)
            width = (
                self.span.end_column - self.span.column
                if self.span.end_line == self.span.line
                else len(source_line) - self.span.column + 1
            )
            lines.append(f" {number} | {source_line}")
            lines.append(f" {gutter} | {' ' * (self.span.column - 1)}{'^' * max(1, width)}")
        for note in self.notes:
            lines.append(f"   = {note}")
        return "\n".join(lines)


def _line_of(text_of: dict[str, str], span: Span) -> str | None:
    text = text_of.get(span.path)
    if text is None or span.line <= 0:
        return None
    lines = text.splitlines()
    return lines[span.line - 1].expandtabs(1) if span.line <= len(lines) else None


class PolicylangError(Exception):
    """Every error policylang raises for what it was given (str(err) is the CLI's message):
    PolicyError (a policy that does not check), InputError (a bad file, object, field or
    option) and CostExceeded (an evaluation past its step budget or deadline). Anything else
    raised is a bug in policylang."""


class PolicyError(PolicylangError):
    """Raised at a pipeline boundary when a stage reported errors."""

    def __init__(self, diagnostics: Iterable[Diagnostic], sources: dict[str, str] | None = None):
        self.diagnostics = sort_and_cap(diagnostics)
        self.sources = dict(sources or {})
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(d.render(self.sources) for d in self.diagnostics)


class InputError(PolicylangError):
    """Bad cluster, pod or configuration input: names the file (with the line and column when
    known), the object and the field."""

    def __init__(self, message: str, *, path: str | None = None, obj: str | None = None, field: str | None = None,
                 line: int | None = None, column: int | None = None):
        self.path, self.obj, self.field, self.line, self.column = path, obj, field, line, column
        self.message = message
        place = f"{path}:{line}:{column}" if path and line else path
        where = ": ".join(p for p in (place, obj) if p)
        detail = f"field {field}: {message}" if field else message
        super().__init__(f"{where}: {detail}" if where else detail)

    def all(self) -> tuple["InputError", ...]:
        return (self,)

    def render(self) -> str:
        """As the CLI prints it: one ``error: …`` line per problem."""
        return "\n".join(f"error: {e}" for e in self.all())


class InputErrors(InputError):
    """Every problem found in one input (a configuration kube-scheduler would refuse for several
    reasons is reported with all of them, as kube-scheduler reports them), in file order."""

    MAX = 50

    def __init__(self, errors):
        self.errors = tuple(sorted(errors, key=lambda e: (e.line or 0, e.column or 0)))[:self.MAX]
        first = self.errors[0]
        super().__init__(first.message, path=first.path, obj=first.obj, field=first.field,
                         line=first.line, column=first.column)
        self.args = ("\n".join(str(e) for e in self.errors),)

    def __str__(self) -> str:
        return self.args[0]

    def all(self) -> tuple[InputError, ...]:
        return self.errors


def sort_and_cap(diagnostics: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    unique = dict.fromkeys(diagnostics)
    ordered = sorted(unique, key=lambda d: (d.span.path, d.span.line, d.span.column, d.code))
    return tuple(ordered[:MAX_REPORTED])


class Reporter:
    """Collects diagnostics for one stage run; stages call ``report`` instead of raising."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, code: str, message: str, span: Span, *notes: str) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, "error", tuple(notes)))

    def warning(self, code: str, message: str, span: Span, *notes: str) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, "warning", tuple(notes)))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

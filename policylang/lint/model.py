"""What a lint rule is and what it reports: the shapes every other lint module shares."""

from __future__ import annotations

from typing import Callable

import attrs

from ..frozen import frozen
from ..source import Span

CATEGORIES = ("correctness", "suspicious", "style", "performance")
# The first digit of a code says its category, so a code alone tells a reader how bad it is.
CATEGORY_DIGIT = {"correctness": "1", "suspicious": "2", "style": "3", "performance": "4"}
SEVERITIES = ("info", "warning", "error")  # in increasing order
INPUTS = ("sched", "config", "manifest")   # .sched files, KubeSchedulerConfiguration, workload manifests


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


@frozen
class Edit:
    """Replace text[start:end] (character offsets) with ``text``."""
    start: int
    end: int
    text: str = ""


@frozen
class Finding:
    code: str
    message: str
    span: Span
    notes: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()   # a certain fix, or () when there is none


@attrs.define
class Rule:
    """One entry of the catalogue. ``checks`` maps an input kind to a function
    ``check(ctx) -> Iterable[Finding]``; a rule may look at several kinds of input."""
    code: str
    name: str
    category: str
    severity: str
    summary: str          # one line: SARIF shortDescription, `--rules`
    rationale: str        # one paragraph: why it matters
    bad: str
    good: str
    example_lang: str = "sched"   # sched | yaml
    fixable: bool = False
    checks: dict[str, Callable] = attrs.Factory(dict)

    def __attrs_post_init__(self):
        if self.category not in CATEGORIES or self.severity not in SEVERITIES:
            raise ValueError(f"{self.code}: bad category or severity")
        if not (len(self.code) == 4 and self.code[0] == "S" and self.code[1] == CATEGORY_DIGIT[self.category]):
            raise ValueError(f"{self.code}: a {self.category} rule's code starts with S{CATEGORY_DIGIT[self.category]}")

    def on(self, kind: str):
        """Decorator registering this rule's check for one kind of input."""
        if kind not in INPUTS:
            raise ValueError(kind)

        def register(fn):
            self.checks[kind] = fn
            return fn
        return register

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(k for k in INPUTS if k in self.checks)

    def finding(self, message: str, span: Span, *notes: str, edits=()) -> Finding:
        return Finding(self.code, message, span, tuple(notes), tuple(edits))

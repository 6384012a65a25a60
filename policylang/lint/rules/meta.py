"""Rules about the linter's own annotations. Their findings are made by the runner, which
alone knows which suppressions were used."""

from __future__ import annotations

from ..registry import rule

UNUSED_SUPPRESSION = rule(
    "S307", "unused-suppression", "style", "warning", fixable=True,
    summary="A `# policylang: ignore[CODE]` comment that suppresses nothing.",
    rationale="""A suppression is a promise that a finding was looked at and accepted. Once the code
    changes and the finding is gone, the comment stays and would silently hide a new finding of
    that rule on that line. Suppressions of unknown codes are reported too. Only rules that ran
    count: a suppression for a rule disabled by configuration is not reported. The fix removes
    the unused codes (or the whole comment).""",
    bad="""
policy P
filter f {
    # policylang: ignore[S305]
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""",
    good="""
policy P
filter f {
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""")

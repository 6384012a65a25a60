"""The table every lint rule is registered in, by code: what the rule families
(``lint/rules/``) write to when imported, and ``catalogue`` reads."""

from __future__ import annotations

from .model import Rule

RULES: dict[str, Rule] = {}


def rule(code: str, name: str, category: str, severity: str, *, summary: str, rationale: str, bad: str,
         good: str, example_lang: str = "sched", fixable: bool = False) -> Rule:
    if code in RULES:
        raise ValueError(f"rule {code} is registered twice")
    if any(r.name == name for r in RULES.values()):
        raise ValueError(f"rule name {name} is registered twice")
    r = Rule(code, name, category, severity, " ".join(summary.split()), " ".join(rationale.split()),
             bad.strip("\n") + "\n", good.strip("\n") + "\n", example_lang, fixable)
    RULES[code] = r
    return r

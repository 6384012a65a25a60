"""The rule catalogue: every rule is registered here, in one table, by code.

Rule families live in ``policylang/lint/rules/`` (one module per family); importing that
package registers them. ``--rules``, the SARIF rule list and docs/lint-rules.md all read
this table, so the three never disagree.
"""

from __future__ import annotations

from .model import Rule

_RULES: dict[str, Rule] = {}


def rule(code: str, name: str, category: str, severity: str, *, summary: str, rationale: str, bad: str,
         good: str, example_lang: str = "sched", fixable: bool = False) -> Rule:
    if code in _RULES:
        raise ValueError(f"rule {code} is registered twice")
    if any(r.name == name for r in _RULES.values()):
        raise ValueError(f"rule name {name} is registered twice")
    r = Rule(code, name, category, severity, " ".join(summary.split()), " ".join(rationale.split()),
             bad.strip("\n") + "\n", good.strip("\n") + "\n", example_lang, fixable)
    _RULES[code] = r
    return r


def all_rules() -> list[Rule]:
    from . import rules  # noqa: F401  (registers every family)
    return [_RULES[c] for c in sorted(_RULES)]


def get(code: str) -> Rule | None:
    all_rules()
    return _RULES.get(code)

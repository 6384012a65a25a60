"""The rule catalogue: every rule, registered in one table by code (``registry``).

Rule families live in ``policylang/lint/rules/`` (one module per family); importing that
package registers them. ``--rules``, the SARIF rule list and docs/lint-rules.md all read
this table, so the three never disagree.
"""

from __future__ import annotations

from .model import Rule
from .registry import RULES, rule  # noqa: F401  (rule: what the families register with)


def all_rules() -> list[Rule]:
    from . import rules  # noqa: F401  (registers every family)
    return [RULES[c] for c in sorted(RULES)]


def get(code: str) -> Rule | None:
    all_rules()
    return RULES.get(code)

"""Render Python values (from YAML or JSON) as .sched literals.

Used where configuration written for kube-scheduler (plugin args) becomes policylang
source, so the translation is ordinary, readable, checkable code.
"""

from __future__ import annotations

import json
import re

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def to_literal(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value).replace("${", "\\${")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        bare = all(isinstance(k, str) and _IDENT.match(k) for k in value)
        if bare and value:
            return "{" + ", ".join(f"{k}: {to_literal(v)}" for k, v in value.items()) + "}"
        return "{" + ", ".join(f"{json.dumps(str(k))}: {to_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as a policy literal")

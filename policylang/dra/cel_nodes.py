"""What the DRA CEL checker (policylang/dra/cel_check.py) builds and checks in: a compiled Node
(its type, its closure, what validation knows of it), the scope of names an expression is
checked in, and the lazily evaluated variables of cel.bind. Package-internal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policylang.dra.cel_values import _Run, DEVICE, Fn, T, _MISSING
from policylang.frozen import frozen


@frozen
class Node:
    type: T
    fn: Fn
    const: Any = _MISSING      # a literal's value, for the regex validator
    size: int | None = None    # the most elements a list or map can hold, where known
    scalars: bool = False      # a non-empty list literal of literal strings, numbers and bools


@frozen
class _Scope:
    names: Mapping[str, T]
    lazy: frozenset = frozenset()      # names bound by cel.bind, evaluated on first use

    def bind(self, name: str, t: T, lazy: bool = False) -> "_Scope":
        return _Scope({**self.names, name: t}, (self.lazy | {name}) if lazy else (self.lazy - {name}))


_ROOT = _Scope({"device": DEVICE})


class _Lazy:
    """A cel.bind variable: cel-go evaluates the bound expression only when (and the first time)
    the body reads it, in the variables of the bind's own scope."""

    __slots__ = ("fn", "scope", "value")

    def __init__(self, fn: Fn, scope: dict):
        self.fn, self.scope, self.value = fn, scope, _MISSING

    def get(self, r: "_Run") -> Any:
        if self.value is _MISSING:
            inner = r.vars
            r.vars = self.scope
            try:
                self.value = self.fn(r)
            finally:
                r.vars = inner
        return self.value

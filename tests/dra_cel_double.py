"""A stand-in for policylang/dra/cel.py (issue 23's dra-cel branch) while that branch has not
landed: the same interface, evaluating only the few selector shapes the allocator's tests use,
each a real CEL expression that the real module evaluates alike:

    true | false
    device.driver == "<driver>"
    device.attributes["<domain>"].<id> == <"string" | int | true | false>
    device.capacity["<domain>"].<id>.compareTo(quantity("<q>")) >= 0

joined by ``&&``. Anything else is a CompileError. A missing attribute or capacity is an
EvalError, as CEL's "no such key"."""

from __future__ import annotations

import re
import sys
import types
from typing import Mapping

import attrs

from policylang.api.quantity import parse_quantity


class CompileError(Exception):
    pass


class EvalError(Exception):
    pass


class Version(str):
    pass


@attrs.frozen
class Device:
    driver: str
    attributes: Mapping = attrs.field(factory=dict)
    capacity: Mapping = attrs.field(factory=dict)


_TERMS = [
    (re.compile(r'(true|false)'), lambda m: (lambda d: m[1] == "true")),
    (re.compile(r'device\.driver == "([^"]*)"'), lambda m: (lambda d: d.driver == m[1])),
    (re.compile(r'device\.attributes\["([^"]+)"\]\.(\w+) == ("[^"]*"|-?\d+|true|false)'),
     lambda m: (lambda d: _lookup(d.attributes, d.driver, m[1], m[2]) == _literal(m[3]))),
    (re.compile(r'device\.capacity\["([^"]+)"\]\.(\w+)\.compareTo\(quantity\("([^"]+)"\)\) >= 0'),
     lambda m: (lambda d: _lookup(d.capacity, d.driver, m[1], m[2]) >= parse_quantity(m[3]))),
]


def _literal(text: str):
    if text.startswith('"'):
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    return int(text)


def _lookup(values: Mapping, driver: str, domain: str, ident: str):
    for name, value in values.items():
        d, sep, i = name.rpartition("/")
        if (d if sep else driver) == domain and i == ident:
            return value
    raise EvalError(f"no such key: {ident}")


@attrs.frozen
class Selector:
    expression: str
    terms: tuple

    def matches(self, device: Device) -> bool:
        return all(term(device) for term in self.terms)


def compile_selector(expression: str) -> Selector:
    terms = []
    for part in expression.split(" && "):
        for pattern, make in _TERMS:
            m = pattern.fullmatch(part.strip())
            if m:
                terms.append(make(m))
                break
        else:
            raise CompileError(f"compilation failed: ERROR: <input>:1:1: undeclared reference in {part!r}")
    return Selector(expression, tuple(terms))


def install() -> None:
    """Stand in for policylang.dra.cel where it is missing."""
    try:
        import policylang.dra.cel  # noqa: F401
    except ModuleNotFoundError:
        module = types.ModuleType("policylang.dra.cel")
        for name in ("CompileError", "EvalError", "Version", "Device", "Selector", "compile_selector"):
            setattr(module, name, globals()[name])
        sys.modules["policylang.dra.cel"] = module
        import policylang.dra
        policylang.dra.cel = module

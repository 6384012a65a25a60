"""The values of the DRA CEL environment (policylang/dra/cel.py): cel-go's types as its checker
names them, the runtime values that stand for CEL's (a uint, a semantic version, the device and
its default-valued attribute maps), CEL's equality and ordering, and the evaluation's cost
counter. Package-internal: the public names are re-exported by cel.py."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable

from policylang.api.quantity import Quantity
from policylang.frozen import frozen

# k8s.io/api/resource/v1/types.go
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
DEVICE_MAX_ID_LENGTH = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DRIVER_NAME_MAX_LENGTH = 63

# cel-go's parser refuses expressions nested deeper than this (parser.MaxRecursionDepth's default).
MAX_NESTING = 250

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
UINT_MAX = 2**64 - 1


class CompileError(Exception):
    """str(err) is upstream's compile error text."""


class EvalError(Exception):
    """A runtime error, the cost limit included; str is upstream's text where it has one."""


class AbortError(EvalError):
    """An error that ends the evaluation whatever the rest would say: cel-go stops on the cost
    limit and on an internal panic instead of letting `||`, `&&`, all() or exists() absorb it."""


# ---------------------------------------------------------------------------------------------
# Types, as cel-go prints them in its messages.

@frozen
class T:
    name: str
    params: tuple["T", ...] = ()

    def __str__(self) -> str:
        """As cel-go's checker names types in its errors (FormatCELType)."""
        name = _CHECKER_NAMES.get(self.name, self.name)
        if self.params:
            return f"{name}({', '.join(map(str, self.params))})"
        return name

    def output(self) -> str:
        """As cel-go's Type.String() names it (the result-type message)."""
        if self.params:
            return f"{self.name}({', '.join(p.output() for p in self.params)})"
        return self.name


_CHECKER_NAMES = {"google.protobuf.Any": "any", "null_type": "null"}


BOOL, INT, UINT, DOUBLE, STRING, BYTES = T("bool"), T("int"), T("uint"), T("double"), T("string"), T("bytes")
NULL, DYN, TYPE = T("null_type"), T("dyn"), T("type")
# An attribute's value: apiservercel.AnyType, which cel-go names google.protobuf.Any. It checks like
# dyn, but unlike dyn it is accepted as a selector's result ("bool or the unknown type").
ANY = T("google.protobuf.Any")
QUANTITY, SEMVER, DEVICE = T("kubernetes.Quantity"), T("kubernetes.Semver"), T("kubernetes.DRADevice")


def list_of(elem: T) -> T:
    return T("list", (elem,))


def map_of(key: T, value: T) -> T:
    return T("map", (key, value))


ATTRIBUTES = map_of(STRING, map_of(STRING, ANY))
CAPACITY = map_of(STRING, map_of(STRING, QUANTITY))
# The device's fields. allowMultipleAllocations comes with the DRAConsumableCapacity gate (off by
# default in v1.35), yet it is declared in the stored-expressions environment the scheduler
# compiles in (environment.StoredExpressions keeps every versioned declaration), where a device
# without the gate reads false; the API server, checking a new expression, refuses it.
DEVICE_FIELDS = {"driver": STRING, "attributes": ATTRIBUTES, "capacity": CAPACITY, "allowMultipleAllocations": BOOL}
NEW_EXPRESSION_FIELDS = frozenset({"driver", "attributes", "capacity"})
NUMERIC = (INT, UINT, DOUBLE)


def assignable(param: T, arg: T) -> bool:
    """Whether a value of static type ``arg`` may be passed where ``param`` is declared."""
    if is_dyn(param) or is_dyn(arg):
        return True
    if arg == NULL and param in (QUANTITY, SEMVER, DEVICE):
        return True      # null is assignable to object types, as in cel-go (it fails at runtime)
    if param.name != arg.name or len(param.params) != len(arg.params):
        return False
    return all(assignable(p, a) for p, a in zip(param.params, arg.params))


def is_dyn(t: T) -> bool:
    return t == DYN or t == ANY


def join(a: T, b: T) -> T | None:
    """cel-go's joinTypes: the more general of two assignable types (a ternary's branches, a
    list's elements), None when they are not assignable (HomogeneousAggregateLiterals)."""
    if a == b:
        return a
    if is_dyn(b):
        return b         # cel-go's mostGeneral: of two dyn-like types the later one
    if is_dyn(a):
        return a
    if NULL in (a, b) and ({a, b} - {NULL}) <= {QUANTITY, SEMVER, DEVICE}:
        return b if a == NULL else a         # null is assignable to object types
    if a.name == b.name and len(a.params) == len(b.params):
        params = [join(x, y) for x, y in zip(a.params, b.params)]
        if None not in params:
            return T(a.name, tuple(params))
    return None


# ---------------------------------------------------------------------------------------------
# Runtime values: bool, int, Uint, float, str, bytes, None, tuple (list), dict (map),
# Quantity, Semver.

class Uint(int):
    """A CEL uint (Python has one int type)."""


class Semver:
    """A parsed semantic version, compared as blang/semver v4 does (build metadata ignored)."""

    __slots__ = ("major", "minor", "patch", "pre", "build")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple, build: tuple):
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def compare(self, other: "Semver") -> int:
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return 1 if a > b else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre):
            if x != y:
                if isinstance(x, int) != isinstance(y, int):
                    return -1 if isinstance(x, int) else 1     # numeric identifiers sort first
                return 1 if x > y else -1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __repr__(self) -> str:
        return f"Semver({self.major}.{self.minor}.{self.patch})"


_DIGITS = set("0123456789")
_ALNUM = _DIGITS | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


def parse_semver(text: str) -> Semver:
    """blang/semver v4's Parse, with its error texts; raises ValueError."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    numbers = []
    rest = parts[2]
    build: list[str] = []
    pre: list[str] = []
    if "+" in rest:
        rest, _, meta = rest.partition("+")
        build = meta.split(".")
    if "-" in rest:
        rest, _, release = rest.partition("-")
        pre = release.split(".")
    for label, part in (("major", parts[0]), ("minor", parts[1]), ("patch", rest)):
        if not set(part) <= _DIGITS:
            raise ValueError(f"Invalid character(s) found in {label} number {_go_quote(part)}")
        if len(part) > 1 and part[0] == "0":
            raise ValueError(f"{label.capitalize()} number must not contain leading zeroes {_go_quote(part)}")
        if not part or int(part) > UINT_MAX:
            raise ValueError(f'strconv.ParseUint: parsing {_go_quote(part)}: '
                             + ("invalid syntax" if not part else "value out of range"))
        numbers.append(int(part))
    identifiers: list[int | str] = []
    for p in pre:
        if not p:
            raise ValueError("Prerelease is empty")
        if set(p) <= _DIGITS:
            if len(p) > 1 and p[0] == "0":
                raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {_go_quote(p)}")
            identifiers.append(int(p))
        elif set(p) <= _ALNUM:
            identifiers.append(p)
        else:
            raise ValueError(f"Invalid character(s) found in prerelease {_go_quote(p)}")
    for b in build:
        if not b:
            raise ValueError("Build meta data is empty")
        if not set(b) <= _ALNUM:
            raise ValueError(f"Invalid character(s) found in build meta data {_go_quote(b)}")
    return Semver(*numbers, tuple(identifiers), tuple(build))


def normalize_semver(text: str) -> Semver:
    """semverlib.go's normalizeAndParse: ``v`` prefix, leading zeroes, missing minor/patch."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _DIGITS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse_semver(".".join(parts))


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kind(v: Any) -> T:
    """The CEL type of a runtime value (lists and maps without parameters)."""
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, Uint):
        return UINT
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return DOUBLE
    if isinstance(v, str):
        return STRING
    if isinstance(v, bytes):
        return BYTES
    if v is None:
        return NULL
    if isinstance(v, tuple):
        return T("list")
    if isinstance(v, Mapping):
        return T("map")
    if isinstance(v, Quantity):
        return QUANTITY
    if isinstance(v, Semver):
        return SEMVER
    if isinstance(v, _DeviceValue):
        return DEVICE
    return TYPE


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_SCALARS = frozenset({str, int, bool, float, bytes})


def equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality: values of different types are unequal, numbers compare by
    value across int, uint and double."""
    ta = type(a)
    if ta is type(b) and ta in _SCALARS:
        return a == b
    if _is_number(a) and _is_number(b):
        return a == b
    ka, kb = kind(a), kind(b)
    if ka != kb:
        if ka in (QUANTITY, SEMVER) and b is not None:
            # apiservercel's Quantity and Semver answer `==` with another type by "no such
            # overload" (a built-in value on the left answers false; `!=` is never an error).
            raise EvalError("no such overload")
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping):
        return len(a) == len(b) and all(_find(b, k) is not _MISSING and equal(v, _find(b, k)) for k, v in a.items())
    if isinstance(a, Semver):
        return a.compare(b) == 0
    return a == b


def compare(a: Any, b: Any, op: str = "_<_") -> int:
    if _is_number(a) and _is_number(b) or kind(a) == kind(b) and isinstance(a, (bool, str, bytes)):
        if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
            return 2       # NaN is not ordered: every comparison with it is false
        return (a > b) - (a < b)
    # cel-go's built-in values answer another type with a bare "no such overload"; a null, a
    # quantity or a version on the left finds no overload at all, and the error names it.
    named = a is None or b is None or isinstance(a, (Semver, Quantity))
    raise EvalError(f"no such overload: {op}" if named else "no such overload")


_MISSING = object()


def _find(m: Mapping, key: Any) -> Any:
    """A map lookup with CEL's key equality (numeric keys match across int and uint)."""
    if type(key) is str:
        return m.get(key, _MISSING)
    if isinstance(key, bool) or not isinstance(key, (int, float)):
        try:
            return m.get(key, _MISSING)
        except TypeError:   # a map or a device as the key: in no map (cel-go: `device in {}` is false)
            return _MISSING
    if isinstance(key, float):
        if not key.is_integer():
            return _MISSING
        key = int(key)
    for k, v in m.items():
        if _is_number(k) and not isinstance(k, float) and k == key:
            return v
    return _MISSING


class _DefaultMap(dict):
    """upstream's newStringInterfaceMapWithDefault: looking up an unknown domain (``.x``, ``[k]``,
    ``has()``) finds an empty map; ``in``, ``size()`` and iteration see only the real domains."""


_EMPTY: dict = {}


def _lookup(m: Mapping, key: Any) -> Any:
    v = _find(m, key)
    return _EMPTY if v is _MISSING and isinstance(m, _DefaultMap) else v


@frozen
class _DeviceValue:
    driver: str
    attributes: _DefaultMap
    capacity: _DefaultMap
    allowMultipleAllocations: bool = False



# ---------------------------------------------------------------------------------------------
# Evaluation state: bound variables and the cost counter.

class _Run:
    __slots__ = ("vars", "cost", "limit")

    def __init__(self, variables: dict, limit: int):
        self.vars = variables
        self.cost = 0
        self.limit = limit

    def charge(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            raise AbortError("operation cancelled: actual cost limit exceeded")


_UNSIZED = frozenset({int, bool, float, Uint, type(None)})


def _compare_cost(a: Any, b: Any) -> int:
    """cel-go's cost of ==, != and the orderings: a tenth of the shorter operand's size."""
    try:
        return _size_cost(min(len(a), len(b)))
    except TypeError:
        return 0


def _size_cost(n: int) -> int:
    # cel-go charges traversals of strings and lists at 0.1 per element.
    return math.ceil(n * 0.1)


Fn = Callable[[_Run], Any]



"""CEL device selectors for Dynamic Resource Allocation, as kube-scheduler v1.35 evaluates them.

A DeviceClass or a ResourceClaim request selects devices with CEL expressions over one variable,
``device`` (``driver``, ``attributes``, ``capacity``), in the Kubernetes CEL environment
(``k8s.io/dynamic-resource-allocation/cel/compile.go``). This module compiles such an expression
once (``compile_selector``, cached as upstream's ``cel/cache.go`` does) into a tree of Python
closures that is type-checked as it is built, and ``Selector.matches`` runs it against a device.

Parsing is cel-python's (celpy) Lark grammar of CEL. The checker and the evaluator are ours,
because no CEL library for Python carries what the DRA environment needs: typed values of
Kubernetes' own types (``quantity(...)``, ``semver(...)``), the attribute maps that answer an
unknown domain with an empty map, and a bound on the work of one evaluation.

The environment is the one kube-scheduler compiles in (environment.StoredExpressions, the
DRAConsumableCapacity gate off, its default in v1.35): ``device.allowMultipleAllocations`` is
declared and false. ``validate_selector`` checks new expressions as the API server does, without
that field. tests/test_dra_cel_oracle.py holds all of this against upstream's own package.

Cost: upstream enforces ``CELSelectorExpressionMaxCost`` with cel-go's cost tracker at runtime.
Ours charges each node of the expression once, each node of a comprehension's body and the
fold's own steps on each iteration, and each call what cel-go's tracker and Kubernetes'
CallCost charge it (strings by size, regular expressions by pattern length, ...). Every node
costs at least what cel-go charges for it, so a selector upstream stops also stops here; it can
stop slightly sooner (a branch skipped inside a comprehension is still charged). The
compile-time estimate of ``validate_selector``'s "too complex" check is this model at the
environment's size limits, not cel-go's estimator: close to it, not equal.

Not supported (refused with a message that says so): the URL, IP/CIDR, sets, format and optional
libraries, two-variable comprehensions and the lists library beyond indexOf/lastIndexOf.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from collections import OrderedDict
from fractions import Fraction
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Callable

import attrs
import lark
import re2

from policylang import cache
from policylang.cluster.quantity import Quantity, QuantityError, QuantityRangeError, parse_quantity

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


class Version(str):
    """An attribute of type version (semver)."""


@attrs.frozen
class Device:
    """One device as a selector sees it. Attribute and capacity names are ``domain/id`` or just
    ``id``; an unqualified name belongs to the driver's domain (upstream's parseQualifiedName)."""

    driver: str
    attributes: Mapping[str, "bool | int | str | Version"] = attrs.field(factory=dict)
    capacity: Mapping[str, Quantity] = attrs.field(factory=dict)


# ---------------------------------------------------------------------------------------------
# Types, as cel-go prints them in its messages.

@attrs.frozen
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
# Quantity, Semver, TypeValue.

class Uint(int):
    """A CEL uint (Python has one int type)."""


@attrs.frozen
class TypeValue:
    name: str


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
    raise EvalError(f"no such overload: {op}")


_MISSING = object()


def _find(m: Mapping, key: Any) -> Any:
    """A map lookup with CEL's key equality (numeric keys match across int and uint)."""
    if type(key) is str:
        return m.get(key, _MISSING)
    if isinstance(key, bool) or not isinstance(key, (int, float)):
        return m.get(key, _MISSING)
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


@attrs.frozen
class _DeviceValue:
    driver: str
    attributes: _DefaultMap
    capacity: _DefaultMap
    allowMultipleAllocations: bool = False


def _type_name(v: Any) -> str:
    return str(kind(v))


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
            raise EvalError("operation cancelled: actual cost limit exceeded")


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


@attrs.frozen
class Node:
    type: T
    fn: Fn
    const: Any = _MISSING      # a literal's value, for the regex validator
    size: int | None = None    # the most elements a list or map can hold, where known


# ---------------------------------------------------------------------------------------------
# Functions: overloads (member or global), checked statically and dispatched on runtime kinds.

@attrs.frozen
class Overload:
    params: tuple[T, ...]
    result: T
    impl: Callable[..., Any]
    cost: Callable[..., int] | None = None      # runtime cost from the arguments, beyond 1


def _int_result(v: int) -> int:
    if not INT_MIN <= v <= INT_MAX:
        raise EvalError("integer overflow")
    return v


def _uint_result(v: int) -> Uint:
    if not 0 <= v <= UINT_MAX:
        raise EvalError("unsigned integer overflow")
    return Uint(v)


def _go_div(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("modulus by zero")
    return a - _go_div(a, b) * b


def _fdiv(a: float, b: float) -> float:
    if b == 0:
        return math.copysign(math.inf, a) * math.copysign(1, b) if a != 0 and not math.isnan(a) else math.nan
    return a / b


def _regex(pattern: str):
    return _compile_regex(pattern)


@lru_cache(maxsize=256)
def _compile_regex(pattern: str):
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as err:
        detail = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else str(err)
        raise EvalError(f"error parsing regexp: {detail}: `{pattern}`") from None


def _to_int(v: Any) -> int:
    if isinstance(v, float):
        if math.isnan(v) or not -(2.0**63) <= v < 2.0**63:
            raise EvalError("integer overflow")
        return int(v)
    if isinstance(v, str):
        try:
            return _int_result(int(v, 10)) if re.fullmatch(r"[+-]?[0-9]+", v) else int("x")
        except ValueError:
            raise EvalError(f'strconv.ParseInt: parsing {_go_quote(v)}: invalid syntax') from None
    return _int_result(int(v))


def _to_uint(v: Any) -> Uint:
    if isinstance(v, float):
        if math.isnan(v) or not 0 <= v < 2.0**64:
            raise EvalError("unsigned integer overflow")
        return Uint(int(v))
    if isinstance(v, str):
        if not re.fullmatch(r"\+?[0-9]+", v):
            raise EvalError(f'strconv.ParseUint: parsing {_go_quote(v)}: invalid syntax')
        return _uint_result(int(v))
    return _uint_result(int(v))


def _to_double(v: Any) -> float:
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            raise EvalError(f'strconv.ParseFloat: parsing {_go_quote(v)}: invalid syntax') from None
    return float(v)


def _format_double(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    text = repr(v)
    return text[:-2] if text.endswith(".0") else text


def _to_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _format_double(v)
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            raise EvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(v, Quantity):
        return str(v)
    return str(v)


def _to_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if v in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise EvalError(f"type conversion error from 'string' to 'bool'")


# resource.ParseQuantity's first check (ErrFormatWrong); a text that passes it and still fails
# has a bad number (ErrNumeric) or suffix (ErrSuffix).
_QUANTITY_FORMAT = re.compile(r"[+-]?[0-9.]+[eEinumkKMGTP]*[-+]?[0-9]*")
_QUANTITY_PARTS = re.compile(r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,4})?")
_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def _qty(text: str) -> Quantity:
    """``quantity(text)``: resource.ParseQuantity, with its error texts. A quantity beyond what a
    cluster object may hold (int64 milli-units) is still a value here, as it is in Go."""
    if not _QUANTITY_FORMAT.fullmatch(text):
        raise EvalError("quantities must match the regular expression "
                        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    try:
        return parse_quantity(text)
    except QuantityRangeError:
        pass
    except QuantityError:
        pass
    m = _QUANTITY_PARTS.fullmatch(text)
    if not m:
        number = re.match(r"[+-]?[0-9.]+", text).group(0)
        if number.count(".") > 1:
            raise EvalError("unable to parse numeric part of quantity")
        raise EvalError("unable to parse quantity's suffix")
    sign, number, suffix = m.group(1), m.group(2), m.group(3) or ""
    scale = _SUFFIXES[suffix] if suffix in _SUFFIXES else Fraction(10) ** int(suffix[1:])
    amount = Fraction(number) * scale * 10**9
    nanos = math.ceil(abs(amount))
    return Quantity(nanos=-nanos if sign == "-" else nanos)


def _is_qty(text: str) -> bool:
    try:
        _qty(text)
        return True
    except EvalError:
        return False


def _qty_as_int(q: Quantity) -> int:
    if q.nanos % 10**9 or not INT_MIN <= q.nanos // 10**9 <= INT_MAX:
        raise EvalError("cannot convert value to integer")
    return q.nanos // 10**9


def _qty_cmp(a: Quantity, b: Quantity) -> int:
    return (a.nanos > b.nanos) - (a.nanos < b.nanos)


def _semver(text: str, normalize: bool = False) -> Semver:
    try:
        return normalize_semver(text) if normalize else parse_semver(text)
    except ValueError as err:
        raise EvalError(str(err)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _semver(text, normalize)
        return True
    except EvalError:
        return False


def _substring(s: str, start: int, end: int | None = None) -> str:
    end = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise EvalError(f"index out of range: {start}")
    if end < 0 or end > len(s):
        raise EvalError(f"index out of range: {end}")
    if start > end:
        raise EvalError(f"invalid substring range. start: {start}, end: {end}")
    return s[start:end]


def _char_at(s: str, i: int) -> str:
    if i < 0 or i > len(s):
        raise EvalError(f"index out of range: {i}")
    return s[i:i + 1]


def _index_of(s: str, sub: str, start: int = 0, last: bool = False) -> int:
    if start < 0 or start > len(s):
        raise EvalError(f"index out of range: {start}")
    if last:
        return s.rfind(sub, 0, start + len(sub))
    return s.find(sub, start)


def _split(s: str, sep: str, n: int = -1) -> tuple:
    if n == 0:
        return ()
    if sep == "":
        chars = list(s)
        return tuple(chars if n < 0 or n >= len(chars) else chars[:n - 1] + ["".join(chars[n - 1:])])
    return tuple(s.split(sep) if n < 0 else s.split(sep, n - 1))


def _replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new) if n < 0 else s.replace(old, new, n)


def _join(items: tuple, sep: str = "") -> str:
    if not all(isinstance(i, str) for i in items):
        raise EvalError("no such overload")
    return sep.join(items)


def _lower_ascii(s: str) -> str:
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in s)


def _upper_ascii(s: str) -> str:
    return "".join(c.upper() if "a" <= c <= "z" else c for c in s)


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _find_regex(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, n: int = -1) -> tuple:
    if n == 0:
        return ()
    found = tuple(m.group(0) for m in _regex(pattern).finditer(s))
    return found if n < 0 else found[:n]


def _size(v: Any) -> int:
    return len(v)


def _regex_cost(s: str, pattern: str, *_: Any) -> int:
    # library/cost.go (find, findAll) and cel-go (matches): the string's traversal times the
    # pattern's length at RegexStringLengthCostFactor (0.25).
    return math.ceil((1 + len(s)) * 0.1) * math.ceil(len(pattern) * 0.25)


# cel-go's runtime costs of calls (interpreter/runtimecost.go costCall) and Kubernetes' (library/
# cost.go CallCost), each charged on top of the call's own node, so that ours is never less.
def _traverse(s: Any, *_: Any) -> int:
    return _size_cost(len(s))


def _traverse_twice(s: str, *_: Any) -> int:
    return math.ceil(len(s) * 0.2)


def _traverse_list(items: tuple, *_: Any) -> int:
    # library/cost.go's traversalCost of the list: its elements' sizes at a tenth, at least 1 each
    return sum(_size_cost(len(i)) if isinstance(i, (str, bytes)) else 1 for i in items)


def _list_index(items: tuple, value: Any, last: bool) -> int:
    """library.Lists' indexOf / lastIndexOf: the first (last) position of an equal element."""
    order = range(len(items) - 1, -1, -1) if last else range(len(items))
    for i in order:
        if equal(items[i], value):
            return i
    return -1


def _contains_cost(s: str, t: str) -> int:
    return _size_cost(len(s)) * _size_cost(len(t))


def _join_cost(items: tuple, sep: str = "") -> int:
    size = sum(len(i) for i in items if isinstance(i, str)) + len(sep) * max(len(items) - 1, 0)
    return math.ceil(size * 0.2)


A = DYN     # a type parameter: checked as dyn (the operand types are then compared at runtime)
LIST, MAP = list_of(DYN), map_of(DYN, DYN)

# Global functions: name → overloads. Member functions: name → overloads with the receiver first.
GLOBALS: dict[str, list[Overload]] = {
    "size": [Overload((STRING,), INT, len), Overload((BYTES,), INT, len),
             Overload((LIST,), INT, len), Overload((MAP,), INT, len)],
    "int": [Overload((t,), INT, _to_int) for t in (INT, UINT, DOUBLE, STRING)],
    "uint": [Overload((t,), UINT, _to_uint) for t in (UINT, INT, DOUBLE, STRING)],
    "double": [Overload((t,), DOUBLE, _to_double) for t in (DOUBLE, INT, UINT, STRING)],
    "string": [Overload((t,), STRING, _to_string, _traverse if t == BYTES else None)
               for t in (STRING, INT, UINT, DOUBLE, BOOL, BYTES)],
    "bytes": [Overload((BYTES,), BYTES, lambda b: b), Overload((STRING,), BYTES, lambda s: s.encode(), _traverse)],
    "bool": [Overload((BOOL,), BOOL, _to_bool), Overload((STRING,), BOOL, _to_bool)],
    "dyn": [Overload((DYN,), DYN, lambda v: v)],
    "quantity": [Overload((STRING,), QUANTITY, _qty, _traverse)],
    "isQuantity": [Overload((STRING,), BOOL, _is_qty, _traverse)],
    "semver": [Overload((STRING,), SEMVER, _semver, _traverse), Overload((STRING, BOOL), SEMVER, _semver, _traverse)],
    "isSemver": [Overload((STRING,), BOOL, _is_semver, _traverse), Overload((STRING, BOOL), BOOL, _is_semver, _traverse)],
}

MEMBERS: dict[str, list[Overload]] = {
    "size": [Overload((STRING,), INT, len), Overload((BYTES,), INT, len),
             Overload((LIST,), INT, len), Overload((MAP,), INT, len)],
    "contains": [Overload((STRING, STRING), BOOL, lambda s, t: t in s, _contains_cost)],
    "startsWith": [Overload((STRING, STRING), BOOL, lambda s, t: s.startswith(t), _traverse)],
    "endsWith": [Overload((STRING, STRING), BOOL, lambda s, t: s.endswith(t), _traverse)],
    "matches": [Overload((STRING, STRING), BOOL, lambda s, p: _regex(p).search(s) is not None, _regex_cost)],
    # ext.Strings(version 2)
    "charAt": [Overload((STRING, INT), STRING, _char_at)],
    "indexOf": [Overload((LIST, DYN), INT, lambda xs, x: _list_index(xs, x, False), _traverse_list),
                Overload((STRING, STRING), INT, _index_of, _traverse),
                Overload((STRING, STRING, INT), INT, _index_of, _traverse)],
    "lastIndexOf": [Overload((LIST, DYN), INT, lambda xs, x: _list_index(xs, x, True), _traverse_list),
                    Overload((STRING, STRING), INT, lambda s, t: s.rfind(t), _traverse),
                    Overload((STRING, STRING, INT), INT, lambda s, t, i: _index_of(s, t, i, last=True), _traverse)],
    "lowerAscii": [Overload((STRING,), STRING, _lower_ascii, _traverse)],
    "upperAscii": [Overload((STRING,), STRING, _upper_ascii, _traverse)],
    "replace": [Overload((STRING, STRING, STRING), STRING, _replace, _traverse_twice),
                Overload((STRING, STRING, STRING, INT), STRING, _replace, _traverse_twice)],
    "split": [Overload((STRING, STRING), list_of(STRING), _split, _traverse_twice),
              Overload((STRING, STRING, INT), list_of(STRING), _split, _traverse_twice)],
    "substring": [Overload((STRING, INT), STRING, _substring, _traverse),
                  Overload((STRING, INT, INT), STRING, _substring, _traverse)],
    "trim": [Overload((STRING,), STRING, lambda s: s.strip(" \t\n\r\v\f\u0085\u00a0"), _traverse)],
    "join": [Overload((list_of(STRING),), STRING, _join, _join_cost),
             Overload((list_of(STRING), STRING), STRING, _join, _join_cost)],
    "quote": [Overload((STRING,), STRING, _quote, _traverse)],
    # library.Regex
    "find": [Overload((STRING, STRING), STRING, _find_regex, _regex_cost)],
    "findAll": [Overload((STRING, STRING), list_of(STRING), _find_all, _regex_cost),
                Overload((STRING, STRING, INT), list_of(STRING), _find_all, _regex_cost)],
    # library.Quantity
    "isGreaterThan": [Overload((QUANTITY, QUANTITY), BOOL, lambda a, b: _qty_cmp(a, b) == 1),
                      Overload((SEMVER, SEMVER), BOOL, lambda a, b: a.compare(b) == 1)],
    "isLessThan": [Overload((QUANTITY, QUANTITY), BOOL, lambda a, b: _qty_cmp(a, b) == -1),
                   Overload((SEMVER, SEMVER), BOOL, lambda a, b: a.compare(b) == -1)],
    "compareTo": [Overload((QUANTITY, QUANTITY), INT, _qty_cmp),
                  Overload((SEMVER, SEMVER), INT, lambda a, b: a.compare(b))],
    "sign": [Overload((QUANTITY,), INT, lambda q: (q.nanos > 0) - (q.nanos < 0))],
    "asApproximateFloat": [Overload((QUANTITY,), DOUBLE, lambda q: q.nanos / 10**9)],
    "asInteger": [Overload((QUANTITY,), INT, _qty_as_int)],
    "isInteger": [Overload((QUANTITY,), BOOL, lambda q: q.nanos % 10**9 == 0 and INT_MIN <= q.nanos // 10**9 <= INT_MAX)],
    "add": [Overload((QUANTITY, QUANTITY), QUANTITY, lambda a, b: Quantity(nanos=a.nanos + b.nanos)),
            Overload((QUANTITY, INT), QUANTITY, lambda a, b: Quantity(nanos=a.nanos + b * 10**9))],
    "sub": [Overload((QUANTITY, QUANTITY), QUANTITY, lambda a, b: Quantity(nanos=a.nanos - b.nanos)),
            Overload((QUANTITY, INT), QUANTITY, lambda a, b: Quantity(nanos=a.nanos - b * 10**9))],
    # library.SemverLib
    "major": [Overload((SEMVER,), INT, lambda v: v.major)],
    "minor": [Overload((SEMVER,), INT, lambda v: v.minor)],
    "patch": [Overload((SEMVER,), INT, lambda v: v.patch)],
}

# Functions of the Kubernetes CEL environment that policylang does not evaluate yet: a selector
# that uses one is refused with this clear message instead of upstream's answer.
UNSUPPORTED = frozenset({
    "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
    "ip", "isIP", "cidr", "isCIDR", "containsIP", "containsCIDR", "prefixLength", "masked",
    "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "isSorted", "sum", "min", "max", "sets", "format",
    "transformList", "transformMap", "transformMapEntry", "all", "exists", "existsOne",
    "optional", "orValue", "hasValue", "value", "or", "reverse", "slice", "flatten", "distinct",
    "sort", "sortBy", "range", "first", "last", "timestamp", "duration", "named", "validate",
    "check", "authorizer", "path", "group", "resource", "serviceAccount",
})


def _matches_runtime(param: T, v: Any) -> bool:
    if param == DYN:
        return True
    if param.name == "list":
        return isinstance(v, tuple)
    if param.name == "map":
        return isinstance(v, Mapping)
    return kind(v) == param


# ---------------------------------------------------------------------------------------------
# The compiler: the celpy parse tree → typed Nodes.

@attrs.frozen
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


class _CheckError(Exception):
    def __init__(self, message: str, where: Any):
        super().__init__(message)
        self.message = message
        self.where = where


def _pos(where: Any, lines: list[str]) -> tuple[int, int]:
    """Where cel-go reports an error about ``where``: an operator at its symbol, a selection at
    its dot, a call at its parenthesis, an index at its bracket, a ternary at its ``?``,
    anything else where it starts (parentheses make no node: their content's place)."""
    if where is None:
        return -1, 0
    if isinstance(where, lark.Token):
        return where.line or 1, where.column or 1
    rule, children = where.data, where.children
    if rule == "paren_expr" or (rule in _WRAPPERS and len(children) == 1):
        return _pos(children[0], lines)
    after = None
    if rule == "member_dot":
        after, symbol = children[0], "."
    elif rule == "member_dot_arg":
        after, symbol = children[1], "("
    elif rule in ("ident_arg", "dot_ident_arg"):
        after, symbol = children[0], "("
    elif rule == "member_index":
        after, symbol = children[0], "["
    elif rule == "expr" and len(children) == 3:
        after, symbol = children[0], "?"
    elif rule in ("relation", "addition", "multiplication") and len(children) == 2:
        op_tree = children[0]
        after, symbol = op_tree.children[0], _SYMBOLS[op_tree.data]
    if after is not None:
        found = _scan(lines, _end(after), symbol)
        if found:
            return found
    meta = getattr(where, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    return 1, 1


_SYMBOLS = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
            "relation_eq": "==", "relation_ne": "!=", "relation_in": "in", "addition_add": "+",
            "addition_sub": "-", "multiplication_mul": "*", "multiplication_div": "/",
            "multiplication_mod": "%"}


def _end(node: Any) -> tuple[int, int] | None:
    if isinstance(node, lark.Token):
        return node.end_line, node.end_column
    meta = getattr(node, "meta", None)
    if meta is None or getattr(meta, "empty", True):
        return None
    return meta.end_line, meta.end_column


def _scan(lines: list[str], start: tuple[int, int] | None, symbol: str) -> tuple[int, int] | None:
    """The position of ``symbol`` at or after ``start``, past whitespace and comments."""
    if start is None:
        return None
    line, column = start
    while 0 < line <= len(lines):
        text = lines[line - 1]
        i = column - 1
        while i < len(text) and text[i] in " \t\r\f\v":
            i += 1
        if i < len(text) and not text.startswith("//", i):
            return (line, i + 1) if text.startswith(symbol, i) else None
        line, column = line + 1, 1
    return None


_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                       "multiplication", "member", "primary", "unary"})
_UNCOUNTED = frozenset({"paren_expr", "list_lit", "map_lit", "conditionalor", "conditionaland", "literal",
                        "ident", "expr", "unary"})


class _Compiler:
    def __init__(self, fields: "frozenset[str] | dict" = DEVICE_FIELDS) -> None:
        self.fields = fields   # the device fields this environment declares
        self.deepest = 0       # the deepest nesting compiled: evaluation recurses as deep
        self.nodes = 0     # nodes compiled so far: a comprehension body's static cost
        self.extra = 0     # the worst-case cost of comprehensions' iterations beyond one

    def fail(self, message: str, where: Any):
        raise _CheckError(message, where)

    def compile(self, tree: Any, scope: _Scope, depth: tuple[int, int] = (0, 0)) -> Node:
        # Nesting, bounded as cel-go's parser bounds it (measured against it): at most 250
        # nested expressions (parentheses, arguments, elements) and 250 operators or calls
        # inside one another; && and || chains are flattened (cel-go balances them), and `!`
        # and unary `-` are not counted.
        exprs, ops = depth
        if tree.data == "expr":
            exprs += 1
        while tree.data in _WRAPPERS and len(tree.children) == 1:
            tree = tree.children[0]          # the grammar's precedence levels, not nodes
        rule = tree.data
        if rule not in _UNCOUNTED:
            ops += 1
        if exprs > MAX_NESTING:
            self.fail(f"expression recursion limit exceeded: {MAX_NESTING}", None)
        if ops > MAX_NESTING:
            self.fail("max recursion depth exceeded", None)
        depth = (exprs, ops)
        self.deepest = max(self.deepest, exprs + ops)
        self.nodes += 1
        method = getattr(self, "c_" + rule)
        return method(tree, scope, depth)

    # -- logic
    def c_expr(self, tree, scope, d) -> Node:
        cond, yes, no = (self.compile(c, scope, d) for c in tree.children)
        rt = join(yes.type, no.type)
        if rt is None or not assignable(BOOL, cond.type):
            self.fail(f"found no matching overload for '_?_:_' applied to '({cond.type}, {yes.type}, {no.type})'", tree)
        cf, yf, nf = cond.fn, yes.fn, no.fn

        def ternary(r):
            c = cf(r)
            if c is True:
                return yf(r)
            if c is False:
                return nf(r)
            raise EvalError("no such overload")
        return Node(rt, ternary)

    def _logic(self, tree, scope, d, absorbing: bool) -> Node:
        # A chain `a || b || c` is one n-ary node (left-recursive in the grammar): compiled and
        # run without recursion, with CEL's commutative rule that an error in one term is
        # absorbed when another term decides the result.
        rule, terms = tree.data, []
        while tree.data == rule and len(tree.children) == 2:
            terms.append(tree.children[1])
            tree = tree.children[0]
        terms.append(tree)
        terms.reverse()
        nodes = [self.compile(t, scope, d) for t in terms]
        for node, term in zip(nodes, terms):
            if not assignable(BOOL, node.type):
                self.fail(f"expected type 'bool' but found '{node.type}'", term)
        fns = [n.fn for n in nodes]

        def logic(r):
            error = None
            for f in fns:
                try:
                    v = f(r)
                except EvalError as err:
                    error = error or err
                    continue
                if v is absorbing:
                    return absorbing
                if not isinstance(v, bool):
                    error = error or EvalError("no such overload")
            if error is not None:
                raise error
            return not absorbing
        return Node(BOOL, logic)

    def c_conditionalor(self, tree, scope, d) -> Node:
        return self._logic(tree, scope, d, True)

    def c_conditionaland(self, tree, scope, d) -> Node:
        return self._logic(tree, scope, d, False)

    # -- operators
    def c_relation(self, tree, scope, d) -> Node:
        op_tree, right_tree = tree.children
        op = op_tree.data
        left = self.compile(op_tree.children[0], scope, d)
        right = self.compile(right_tree, scope, d)
        lt, rt = left.type, right.type
        lf, rf = left.fn, right.fn
        if op == "relation_in":
            name = "@in"
            if not is_dyn(rt) and rt.name not in ("list", "map") or (
                    rt.name in ("list", "map") and not assignable(rt.params[0], lt)):
                self.fail(f"found no matching overload for '{name}' applied to '({lt}, {rt})'", tree)

            def contains(r):
                item, container = lf(r), rf(r)
                if isinstance(container, tuple):
                    r.charge(len(container))
                    return any(equal(item, x) for x in container)
                if isinstance(container, Mapping):
                    return _find(container, item) is not _MISSING
                raise EvalError("no such overload")
            return Node(BOOL, contains)
        symbol = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
                  "relation_eq": "==", "relation_ne": "!="}[op]
        name = f"_{symbol}_"
        if symbol in ("==", "!="):
            if join(lt, rt) is None:
                self.fail(f"found no matching overload for '{name}' applied to '({lt}, {rt})'", tree)
            negate = symbol == "!="

            def eq(r):
                a, b = lf(r), rf(r)
                if type(a) not in _UNSIZED and type(b) not in _UNSIZED:
                    r.charge(_compare_cost(a, b))
                if negate:
                    try:
                        return not equal(a, b)
                    except EvalError:
                        return True
                return equal(a, b)
            return Node(BOOL, eq)
        orderable = (BOOL, STRING, BYTES, INT, UINT, DOUBLE, NULL)
        ok = (is_dyn(lt) or lt in orderable) and (is_dyn(rt) or rt in orderable) and (
            is_dyn(lt) or is_dyn(rt) or lt == rt or lt in NUMERIC and rt in NUMERIC)
        if not ok:
            self.fail(f"found no matching overload for '{name}' applied to '({lt}, {rt})'", tree)
        test = {"<": lambda c: c == -1, "<=": lambda c: c in (-1, 0), ">": lambda c: c == 1,
                ">=": lambda c: c in (0, 1)}[symbol]

        def order(r):
            a, b = lf(r), rf(r)
            if type(a) not in _UNSIZED and type(b) not in _UNSIZED:
                r.charge(_compare_cost(a, b))
            return test(compare(a, b, name))
        return Node(BOOL, order)

    def c_addition(self, tree, scope, d) -> Node:
        return self._arith(tree, scope, d, {"addition_add": "+", "addition_sub": "-"})

    def c_multiplication(self, tree, scope, d) -> Node:
        return self._arith(tree, scope, d, {"multiplication_mul": "*", "multiplication_div": "/",
                                            "multiplication_mod": "%"})

    def _arith(self, tree, scope, d, symbols) -> Node:
        op_tree, right_tree = tree.children
        symbol = symbols[op_tree.data]
        left = self.compile(op_tree.children[0], scope, d)
        right = self.compile(right_tree, scope, d)
        lt, rt = left.type, right.type
        allowed = [INT, UINT, DOUBLE] + ([STRING, BYTES, T("list")] if symbol == "+" else [])
        if symbol == "%":
            allowed = [INT, UINT]
        static = join(lt, rt)
        if static is not None and is_dyn(static):
            static = lt if not is_dyn(lt) else rt if not is_dyn(rt) else DYN
        if symbol in "+-" and NULL in (lt, rt) and all(t == NULL or is_dyn(t) for t in (lt, rt)):
            static = DYN     # null is assignable to timestamp and duration, which + and - take
        if static is None or not is_dyn(static) and not any(static.name == a.name for a in allowed):
            self.fail(f"found no matching overload for '_{symbol}_' applied to '({lt}, {rt})'", tree)
        lf, rf = left.fn, right.fn
        impl = _ARITH[symbol]
        return Node(static, lambda r: impl(r, lf(r), rf(r)))

    def c_unary(self, tree, scope, d) -> Node:
        op, operand_tree = tree.children
        # cel-go's parser drops an even run of `!` or `-` (`!!x` is `x`, unchecked as bool).
        count, inner = 1, operand_tree
        while True:
            inner = _unwrap_to(inner, "unary")
            if inner is None or len(inner.children) != 2 or inner.children[0].data != op.data:
                break
            count, inner = count + 1, inner.children[1]
        if count % 2 == 0:
            self.nodes -= 1
            return self.compile(inner, scope, d)
        if count > 1:
            operand_tree = inner
        operand = self.compile(operand_tree, scope, d)
        f = operand.fn
        if op.data == "unary_not":
            if not assignable(BOOL, operand.type):
                self.fail(f"found no matching overload for '!_' applied to '({operand.type})'", tree)

            def negate(r):
                v = f(r)
                if not isinstance(v, bool):
                    raise EvalError("no such overload")
                return not v
            return Node(BOOL, negate)
        if operand.type not in (INT, DOUBLE, DYN, ANY):
            self.fail(f"found no matching overload for '-_' applied to '({operand.type})'", tree)
        result = DYN if is_dyn(operand.type) else operand.type

        def minus(r):
            v = f(r)
            if isinstance(v, bool) or isinstance(v, Uint) or not _is_number(v):
                raise EvalError("no such overload")
            return -v if isinstance(v, float) else _int_result(-v)
        if operand.const is not _MISSING:
            value = minus(None)
            return Node(result, lambda r: value, value)
        return Node(result, minus)

    # -- member access and calls
    def c_member_dot(self, tree, scope, d) -> Node:
        target_tree, name_token = tree.children
        field = str(name_token)
        if target_tree.data == "member" and len(target_tree.children) == 1 and target_tree.children[0].data == "primary":
            pass
        target = self.compile(target_tree, scope, d)
        return self.select(target, field, tree)

    def select(self, target: Node, field: str, where) -> Node:
        t, f = target.type, target.fn
        if t == DEVICE:
            if field not in self.fields:
                self.fail(f"undefined field '{field}'", where)
            size = MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE if field in ("attributes", "capacity") else None
            return Node(DEVICE_FIELDS[field], lambda r: getattr(f(r), field), size=size)
        if t.name == "map":
            if not assignable(t.params[0], STRING):
                self.fail(f"type '{t}' does not support field selection", where)
            result = t.params[1]
        elif is_dyn(t):
            result = DYN
        else:
            self.fail(f"type '{t}' does not support field selection", where)

        def get(r):
            m = f(r)
            if type(m) is dict or type(m) is _DefaultMap:      # the common case, first
                v = m.get(field, _MISSING)
                if v is not _MISSING:
                    return v
                if type(m) is _DefaultMap:
                    return _EMPTY
                raise EvalError(f"no such key: {field}")
            if isinstance(m, _DeviceValue):
                if field in DEVICE_FIELDS:
                    return getattr(m, field)
            elif isinstance(m, Mapping):
                v = _lookup(m, field)
                if v is not _MISSING:
                    return v
            else:
                raise EvalError("no such overload")
            raise EvalError(f"no such key: {field}")
        return Node(result, get, size=_element_size(target, result))

    def c_member_index(self, tree, scope, d) -> Node:
        target = self.compile(tree.children[0], scope, d)
        index = self.compile(tree.children[1], scope, d)
        t, it = target.type, index.type
        if t.name == "map":
            if not assignable(t.params[0], it):
                self.fail(f"found no matching overload for '_[_]' applied to '({t}, {it})'", tree)
            result = t.params[1]
        elif t.name == "list":
            if it not in (INT, UINT, DOUBLE, DYN, ANY):
                self.fail(f"found no matching overload for '_[_]' applied to '({t}, {it})'", tree)
            result = t.params[0]
        elif is_dyn(t):
            result = DYN
        else:
            self.fail(f"found no matching overload for '_[_]' applied to '({t}, {it})'", tree)
        tf, xf = target.fn, index.fn

        def get(r):
            c, k = tf(r), xf(r)
            if type(k) is str and (type(c) is dict or type(c) is _DefaultMap):
                v = c.get(k, _MISSING)
                if v is not _MISSING:
                    return v
                if type(c) is _DefaultMap:
                    return _EMPTY
                raise EvalError(f"no such key: {k}")
            if isinstance(c, Mapping):
                v = _lookup(c, k)
                if v is _MISSING:
                    raise EvalError(f"no such key: {_to_string(k) if not isinstance(k, str) else k}")
                return v
            if isinstance(c, tuple):
                if isinstance(k, float) and k.is_integer():
                    k = int(k)
                if isinstance(k, bool) or not isinstance(k, int):
                    raise EvalError("unsupported index type")
                if not 0 <= k < len(c):
                    raise EvalError(f"index '{k}' out of range in list size '{len(c)}'")
                return c[k]
            raise EvalError("no such overload")
        return Node(result, get, size=_element_size(target, result))

    def c_member_dot_arg(self, tree, scope, d) -> Node:
        target_tree, name_token = tree.children[0], tree.children[1]
        args_tree = tree.children[2] if len(tree.children) > 2 else None
        name = str(name_token)
        arg_trees = list(args_tree.children) if args_tree is not None else []
        if _is_ident(target_tree, "cel") and "cel" not in scope.names and name == "bind":
            return self.bind(arg_trees, scope, d, tree)
        if name in _MACROS and (len(arg_trees) == 2 or name == "map" and len(arg_trees) == 3):
            return self.macro(name, target_tree, arg_trees, scope, d, tree)
        target = self.compile(target_tree, scope, d)
        args = [self.compile(a, scope, d) for a in arg_trees]
        return self.call(name, [target] + args, True, tree)

    def c_primary(self, tree, scope, d) -> Node:  # pragma: no cover - single-child primaries are unwrapped
        return self.compile(tree.children[0], scope, d)

    def c_ident(self, tree, scope, d) -> Node:
        token = tree.children[0]
        name = str(token)
        if name in _KEYWORD_LITERALS:       # the lexer reads `true`, `false` and `null` as names
            value, t = _KEYWORD_LITERALS[name]
            return Node(t, lambda r: value, value)
        if name not in scope.names:
            self.fail(f"undeclared reference to '{name}' (in container '')", token)
        t = scope.names[name]
        if name in scope.lazy:
            return Node(t, lambda r: r.vars[name].get(r))
        return Node(t, lambda r: r.vars[name])

    def c_dot_ident(self, tree, scope, d) -> Node:
        token = tree.children[0]
        name = str(token)
        if name != "device":
            self.fail(f"undeclared reference to '{name}' (in container '')", token)
        return Node(DEVICE, lambda r: r.vars["device"])

    def c_ident_arg(self, tree, scope, d) -> Node:
        token = tree.children[0]
        name = str(token)
        arg_trees = list(tree.children[1].children) if len(tree.children) > 1 else []
        if name == "has":
            return self.has(arg_trees, scope, d, tree)
        args = [self.compile(a, scope, d) for a in arg_trees]
        return self.call(name, args, False, tree)

    def c_dot_ident_arg(self, tree, scope, d) -> Node:
        return self.c_ident_arg(tree, scope, d)

    def c_paren_expr(self, tree, scope, d) -> Node:
        self.nodes -= 1
        return self.compile(tree.children[0], scope, d)

    def c_list_lit(self, tree, scope, d) -> Node:
        trees = tree.children[0].children if tree.children else []
        items = [self.compile(c, scope, d) for c in trees]
        elem = None
        for item, item_tree in zip(items, trees):
            joined = item.type if elem is None else join(elem, item.type)
            if joined is None:
                self.fail(f"expected type '{elem}' but found '{item.type}'", item_tree)
            elem = joined
        elem = elem or DYN
        fns = [i.fn for i in items]
        n = len(fns)

        def make(r):
            r.charge(10 + _size_cost(n))
            return tuple(f(r) for f in fns)
        return Node(list_of(elem), make, size=n)

    def c_map_lit(self, tree, scope, d) -> Node:
        parts = tree.children[0].children if tree.children else []
        entries = [(self.compile(parts[i], scope, d), self.compile(parts[i + 1], scope, d))
                   for i in range(0, len(parts), 2)]
        kt = vt = None
        for k, v in entries:
            if k.type not in (STRING, INT, UINT, BOOL, DYN, ANY):
                self.fail(f"unsupported map key type: {k.type}", tree)
            nk = k.type if kt is None else join(kt, k.type)
            nv = v.type if vt is None else join(vt, v.type)
            if nk is None:
                self.fail(f"expected type '{kt}' but found '{k.type}'", tree)
            if nv is None:
                self.fail(f"expected type '{vt}' but found '{v.type}'", tree)
            kt, vt = nk, nv
        fns = [(k.fn, v.fn) for k, v in entries]

        def make(r):
            r.charge(30 + _size_cost(len(fns)))
            out: dict = {}
            for kf, vf in fns:
                key = kf(r)
                if isinstance(key, (float, tuple)) or isinstance(key, (Mapping, Quantity, Semver)) or key is None:
                    raise EvalError("unsupported key type")
                if _find(out, key) is not _MISSING:
                    raise EvalError(f"Failed with repeated key: {_to_string(key)}")
                out[key] = vf(r)
            return out
        return Node(map_of(kt or DYN, vt or DYN), make, size=len(fns))

    def c_member_object(self, tree, scope, d) -> Node:
        self.fail("message construction is not supported in device selectors", tree)

    def c_literal(self, tree, scope, d) -> Node:
        token = tree.children[0]
        value, t = _literal(token, self)
        return Node(t, lambda r: value, value, size=len(value) if isinstance(value, (str, bytes)) else None)

    # -- calls, macros
    def call(self, name: str, args: list[Node], member: bool, where) -> Node:
        table = MEMBERS if member else GLOBALS
        overloads = table.get(name)
        if overloads is None:
            if name in UNSUPPORTED or name in (MEMBERS if not member else GLOBALS):
                self.fail(f"function '{name}' of the Kubernetes CEL environment is not supported "
                          f"by policylang yet", where)
            self.fail(f"undeclared reference to '{name}' (in container '')", where)
        types = [a.type for a in args]
        candidates = [o for o in overloads if len(o.params) == len(types)
                      and all(assignable(p, a) for p, a in zip(o.params, types))]
        if not candidates:
            shown = (f"{types[0]}.({', '.join(map(str, types[1:]))})" if member
                     else f"({', '.join(map(str, types))})")
            self.fail(f"found no matching overload for '{name}' applied to '{shown}'", where)
        results = {o.result for o in candidates}
        result = results.pop() if len(results) == 1 else DYN
        if name in ("matches", "find", "findAll") and args[1].const is not _MISSING:
            try:
                _regex(args[1].const)
            except EvalError as err:
                self.fail(str(err), where)
        fns = [a.fn for a in args]
        if args and all(a.const is not _MISSING for a in args) and len(candidates) == 1 and all(
                _matches_runtime(p, a.const) for p, a in zip(candidates[0].params, args)):
            # Every library function is pure: with literal arguments (`quantity("40Gi")`) it is
            # evaluated once, here. One that fails is left to fail at runtime, as upstream does.
            consts = [a.const for a in args]
            try:
                value = candidates[0].impl(*consts)
            except EvalError:
                pass
            else:
                # Charged where the call stands (each iteration of a comprehension around
                # it), as if it ran there: folding saves time, never cost.
                self.nodes += candidates[0].cost(*consts) if candidates[0].cost else 0
                return Node(result, lambda r: value, value)
        if len(candidates) == 1 and all(p == DYN or a == p for p, a in zip(candidates[0].params, types)):
            only = candidates[0]
            impl, cost = only.impl, only.cost

            def direct(r):
                values = [f(r) for f in fns]
                if cost is not None:
                    r.charge(cost(*values))
                return impl(*values)
            return Node(result, direct, size=_result_size(name, args))

        def dispatch(r):
            values = [f(r) for f in fns]
            for o in candidates:
                if all(_matches_runtime(p, v) for p, v in zip(o.params, values)):
                    if o.cost is not None:
                        r.charge(o.cost(*values))
                    return o.impl(*values)
            raise EvalError(f"no such overload: {name}({', '.join(kind(v).output() for v in values)})")
        return Node(result, dispatch, size=_result_size(name, args))

    def has(self, arg_trees, scope, d, where) -> Node:
        if len(arg_trees) != 1:
            self.fail("invalid argument to has() macro", where)
        inner = _unwrap(arg_trees[0])
        if inner.data != "member_dot":
            self.fail("invalid argument to has() macro", where)
        target = self.compile(inner.children[0], scope, d)
        field = str(inner.children[1])
        t = target.type
        if t == DEVICE:
            if field not in self.fields:
                self.fail(f"undefined field '{field}'", inner.children[1])
            return Node(BOOL, lambda r: True)
        if t.name != "map" and not is_dyn(t):
            self.fail(f"type '{t}' does not support field selection", inner.children[1])
        f = target.fn

        def present(r):
            m = f(r)
            if isinstance(m, _DeviceValue):
                return field in DEVICE_FIELDS
            if not isinstance(m, Mapping):
                raise EvalError("no such overload")
            return _lookup(m, field) is not _MISSING
        return Node(BOOL, present)

    def bind(self, arg_trees, scope, d, where) -> Node:
        if len(arg_trees) != 3 or not _is_ident(arg_trees[0]):
            self.fail("cel.bind() variable names must be simple identifiers", where)
        name = str(_unwrap(arg_trees[0]).children[0])
        init = self.compile(arg_trees[1], scope, d)
        body = self.compile(arg_trees[2], scope.bind(name, init.type, lazy=True), d)
        inf, bf = init.fn, body.fn

        def bound(r):
            saved = r.vars
            r.vars = {**saved, name: _Lazy(inf, saved)}
            try:
                return bf(r)
            finally:
                r.vars = saved
        return Node(body.type, bound)

    def macro(self, name, target_tree, arg_trees, scope, d, where) -> Node:
        if not _is_ident(arg_trees[0]):
            self.fail("argument must be a simple name", arg_trees[0])
        var = str(_unwrap(arg_trees[0]).children[0])
        target = self.compile(target_tree, scope, d)
        t = target.type
        if t.name == "list":
            elem = t.params[0]
        elif t.name == "map":
            elem = t.params[0]
        elif t == DYN:
            elem = DYN
        else:
            self.fail(f"expression of type '{t}' cannot be range of a comprehension "
                      f"(must be list, map, or dynamic)", target_tree)
        inner = scope.bind(var, elem)
        before, extra_before = self.nodes, self.extra
        steps = [self.compile(a, inner, d) for a in arg_trees[1:]]
        # cel-go expands a macro into a fold whose accumulator steps cost too: per iteration
        # the loop condition and `__result__` (3), for map and filter also the `__result__ +
        # [x]` that builds the list (a list literal's 10); once, the accumulator and result.
        builds = name in ("map", "filter")
        body_cost = self.nodes - before + 1 + (14 if builds else 3)
        self.nodes += 12 if builds else 3
        # The worst case for validation: every element of the largest range the environment
        # allows (a literal's length, a device's 32 attributes), each iteration at its worst.
        elements = target.size if target.size is not None else CEL_SELECTOR_EXPRESSION_MAX_LENGTH
        self.extra = extra_before + elements * (body_cost + self.extra - extra_before)
        for step, step_tree, kind_ in zip(steps, arg_trees[1:], ("filter" if len(steps) == 2 else name,) + ("map",)):
            if kind_ in ("all", "exists", "exists_one", "filter") and not assignable(BOOL, step.type):
                self.fail(f"expected type 'bool' but found '{step.type}'", step_tree)
        tf = target.fn
        fns = [s.fn for s in steps]
        run = _COMPREHENSIONS[name]
        if name == "map":
            result = list_of(steps[-1].type)
        elif name == "filter":
            result = list_of(elem)
        else:
            result = BOOL

        def comprehension(r):
            items = _range(tf(r))
            saved = r.vars
            r.vars = dict(saved)
            try:
                return run(r, items, var, fns, body_cost)
            finally:
                r.vars = saved
        return Node(result, comprehension, size=target.size if result.name == "list" else None)


_KEYWORD_LITERALS = {"true": (True, BOOL), "false": (False, BOOL), "null": (None, NULL)}


def _element_size(container: Node, element: T) -> int | None:
    """The most elements (or bytes) a looked-up value can have, for the validation estimate: a
    domain's map holds 32 attributes, an attribute's value 64 bytes (DeviceAttributeMaxValueLength)."""
    if element.name == "map":
        return container.size
    if container.type == map_of(STRING, ANY):
        return DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH
    return None


def _result_size(name: str, args: list[Node]) -> int | None:
    if name in ("split", "findAll") and args[0].size is not None:
        return args[0].size + 1
    if name in ("lowerAscii", "upperAscii", "trim", "substring") and args[0].size is not None:
        return args[0].size
    return None


def _range(v: Any) -> tuple:
    if isinstance(v, tuple):
        return v
    if isinstance(v, Mapping):
        # Go's map order is random; a sorted order makes every answer reproducible.
        return tuple(sorted(v, key=lambda k: (str(kind(k)), k)))
    raise EvalError("no such overload")


def _all(r, items, var, fns, cost):
    (pred,) = fns
    error = None
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        try:
            v = pred(r)
        except EvalError as err:
            error = error or err
            continue
        if v is False:
            return False
        if v is not True:
            error = error or EvalError("no such overload")
    if error:
        raise error
    return True


def _exists(r, items, var, fns, cost):
    (pred,) = fns
    error = None
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        try:
            v = pred(r)
        except EvalError as err:
            error = error or err
            continue
        if v is True:
            return True
        if v is not False:
            error = error or EvalError("no such overload")
    if error:
        raise error
    return False


def _exists_one(r, items, var, fns, cost):
    (pred,) = fns
    count = 0
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        v = pred(r)
        if not isinstance(v, bool):
            raise EvalError("no such overload")
        count += v
    return count == 1


def _map(r, items, var, fns, cost):
    out = []
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        if len(fns) == 2:
            keep = fns[0](r)
            if not isinstance(keep, bool):
                raise EvalError("no such overload")
            if not keep:
                continue
        out.append(fns[-1](r))
    return tuple(out)


def _filter(r, items, var, fns, cost):
    (pred,) = fns
    out = []
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        keep = pred(r)
        if not isinstance(keep, bool):
            raise EvalError("no such overload")
        if keep:
            out.append(item)
    return tuple(out)


_COMPREHENSIONS = {"all": _all, "exists": _exists, "exists_one": _exists_one, "map": _map, "filter": _filter}
_MACROS = frozenset(_COMPREHENSIONS)


def _add(r, a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        raise EvalError("no such overload")
    if isinstance(a, Uint) and isinstance(b, Uint):
        return _uint_result(a + b)
    if type(a) is int and type(b) is int:
        return _int_result(a + b)
    if isinstance(a, float) and isinstance(b, float):
        return a + b
    if isinstance(a, str) and isinstance(b, str) or isinstance(a, bytes) and isinstance(b, bytes) \
            or isinstance(a, tuple) and isinstance(b, tuple):
        r.charge(_size_cost(len(a) + len(b)))
        return a + b
    raise EvalError("no such overload")


def _numeric(op_int, op_float):
    def apply(r, a, b):
        if isinstance(a, Uint) and isinstance(b, Uint):
            return _uint_result(op_int(a, b))
        if type(a) is int and type(b) is int:
            return _int_result(op_int(a, b))
        if op_float is not None and isinstance(a, float) and isinstance(b, float):
            return op_float(a, b)
        raise EvalError("no such overload")
    return apply


_ARITH = {
    "+": _add,
    "-": _numeric(lambda a, b: a - b, lambda a, b: a - b),
    "*": _numeric(lambda a, b: a * b, lambda a, b: a * b),
    "/": _numeric(_go_div, _fdiv),
    "%": _numeric(_go_mod, None),
}


def _unwrap(tree: Any) -> Any:
    """The innermost tree of a chain of single-child wrappers (expr → … → primary)."""
    while isinstance(tree, lark.Tree) and len(tree.children) == 1 and isinstance(tree.children[0], lark.Tree):
        tree = tree.children[0]
    return tree


def _unwrap_to(tree: Any, rule: str) -> Any:
    """``tree`` itself or the first tree named ``rule`` down its chain of single children."""
    while isinstance(tree, lark.Tree):
        if tree.data == rule:
            return tree
        if len(tree.children) != 1 or tree.data == "paren_expr":
            return None
        tree = tree.children[0]
    return None


def _is_ident(tree: Any, name: str | None = None) -> bool:
    inner = _unwrap(tree)
    return isinstance(inner, lark.Tree) and inner.data == "ident" and (name is None or str(inner.children[0]) == name)


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            '"': '"', "'": "'", "\\": "\\", "?": "?", "`": "`"}
_ESCAPE = re.compile(r"\\(?:([abfnrtv\"'\\?`])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-7]{3})|(.))", re.S)


def _unescape(body: str, raw: bool, as_bytes: bool, compiler: _Compiler, token) -> str | bytes:
    if raw:
        return body.encode() if as_bytes else body
    out: list[bytes] = []
    pos = 0
    for m in _ESCAPE.finditer(body):
        out.append(body[pos:m.start()].encode())
        pos = m.end()
        simple, hx, u4, u8, octal, bad = m.groups()
        if bad is not None:
            compiler.fail("Syntax error: invalid escape sequence", token)
        if simple:
            out.append(_ESCAPES[simple].encode())
        elif hx or octal:
            code = int(hx, 16) if hx else int(octal, 8)
            if octal and code > 255:
                compiler.fail("Syntax error: octal escape sequence out of range", token)
            out.append(bytes([code]) if as_bytes else chr(code).encode())
        else:
            code = int(u4 or u8, 16)
            if as_bytes or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                compiler.fail("Syntax error: invalid unicode escape", token)
            out.append(chr(code).encode())
    out.append(body[pos:].encode())
    joined = b"".join(out)
    if as_bytes:
        return joined
    try:
        return joined.decode("utf-8")
    except UnicodeDecodeError:
        compiler.fail("Syntax error: invalid UTF-8 in string literal", token)


def _literal(token: lark.Token, compiler: _Compiler) -> tuple[Any, T]:
    text = str(token)
    kind_ = token.type
    if kind_ == "BOOL_LIT":
        return text == "true", BOOL
    if kind_ == "NULL_LIT":
        return None, NULL
    if kind_ in ("INT_LIT", "UINT_LIT"):
        digits = text[:-1] if kind_ == "UINT_LIT" else text
        negative = digits.startswith("-")
        digits = digits.lstrip("-")
        value = int(digits[2:], 16) if digits[:2].lower() == "0x" else int(digits)
        value = -value if negative else value
        if kind_ == "UINT_LIT":
            if not 0 <= value <= UINT_MAX:
                compiler.fail("invalid uint literal", token)
            return Uint(value), UINT
        if not INT_MIN <= value <= INT_MAX:
            compiler.fail("invalid int literal", token)
        return value, INT
    if kind_ == "FLOAT_LIT":
        return float(text), DOUBLE
    as_bytes = text[:1] in "bB"
    if as_bytes:
        text = text[1:]
    raw = text[:1] in "rR"
    if raw:
        text = text[1:]
    quote = 3 if text[:3] in ('"""', "'''") else 1
    body = text[quote:-quote]
    value = _unescape(body, raw, as_bytes, compiler, token)
    return value, (BYTES if as_bytes else STRING)


# ---------------------------------------------------------------------------------------------
# The public interface.

_OPTIONS = dict(parser="lalr", start="expr", propagate_positions=True, maybe_placeholders=False,
                priority="invert", g_regex_flags=re.M)


# celpy's grammar also reads `1.` as a float, so `1.exists(…)` would not parse; the CEL spec (and
# cel-go's lexer) want a digit after the point.
_FLOAT_AS_CEL_SPEC = '\n%override FLOAT_LIT: /-?/ DIGIT* "." DIGIT+ EXPONENT? | /-?/ DIGIT+ EXPONENT\n'


@lru_cache(maxsize=None)
def _parser() -> lark.Lark:
    """The LALR parser of cel-python's CEL grammar (``celpy/cel.lark``). Only the grammar file is
    read, not celpy's modules; its tables are kept in policylang's cache as parse.py keeps ours."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("celpy")
    if spec is None or not spec.submodule_search_locations:
        raise CompileError("CEL selectors need the cel-python package (pip install cel-python)")
    grammar = (Path(next(iter(spec.submodule_search_locations))) / "cel.lark").read_text() + _FLOAT_AS_CEL_SPEC
    key = cache.key("cel-lark", grammar, lark.__version__, repr(sorted(_OPTIONS.items())))

    def tables() -> dict:
        import io
        import pickle

        out = io.BytesIO()
        lark.Lark(grammar, **_OPTIONS).save(out)
        return pickle.loads(out.getvalue())

    data = cache.cached("lark", key, tables, dict, allow=cache.nothing)
    try:
        return lark.Lark.__new__(lark.Lark)._load(data)
    except Exception:  # noqa: BLE001 - tables that do not load are rebuilt, never trusted
        return lark.Lark(grammar, **_OPTIONS)


def _render(expression: str, message: str, line: int, column: int) -> str:
    """cel-go's issue text: ``ERROR: <input>:L:C: message``, the source line, a caret (none
    for an error of the whole expression, which cel-go places at -1:0)."""
    if line < 0:
        return f"ERROR: <input>:-1:0: {message}"
    lines = expression.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    caret = "." * (column - 1) + "^"
    return f"ERROR: <input>:{line}:{column}: {message}\n | {source}\n | {caret}"


@attrs.frozen
class Selector:
    """One compiled selector expression."""

    expression: str
    _fn: Fn = attrs.field(repr=False, eq=False)
    _static_cost: int = attrs.field(repr=False, eq=False)
    max_cost: int = attrs.field(default=0, eq=False)   # the worst-case estimate validation uses
    _deep: bool = attrs.field(default=False, eq=False, repr=False)
    cost_limit: int = CEL_SELECTOR_EXPRESSION_MAX_COST

    def matches(self, device: Device) -> bool:
        """Whether the device is selected; raises EvalError on a runtime error or when the
        evaluation exceeds the cost limit."""
        return self.evaluate(device)[0]

    def evaluate(self, device: Device) -> tuple[bool, int]:
        """``matches``'s answer and the cost charged for it (at least cel-go's actual cost)."""
        run = _Run({"device": _view(device)}, self.cost_limit)
        run.charge(self._static_cost)
        with _deep_recursion() if self._deep else contextlib.nullcontext():
            result = self._fn(run)
        if not isinstance(result, bool):
            name = kind(result).output()
            raise EvalError(f"CEL result of type {name} could not be converted to bool: "
                            + _NOT_BOOL.get(name, f"type conversion error from '{name}' to 'bool'"))
        return result, run.cost


@contextlib.contextmanager
def _deep_recursion():
    """Room for the 250 + 250 levels of nesting a selector may have, each a few Python frames
    to compile and to run (as cli.deep_recursion does for policies; Python 3.11 does not grow
    the C stack for these calls)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 20_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


# ConvertToNative's texts for the values an attribute can hold (an any result is one of them).
_NOT_BOOL = {"int": "unsupported type conversion from 'int' to bool",
             "string": "unsupported native conversion from string to 'bool'",
             "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'"}


def _compile(expression: str, new: bool = False) -> Selector:
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        raise CompileError(f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes")
    try:
        tree = _parser().parse(expression)
    except lark.exceptions.UnexpectedInput as err:
        line, column = max(getattr(err, "line", 1) or 1, 1), max(getattr(err, "column", 1) or 1, 1)
        raise CompileError("compilation failed: " + _render(
            expression, f"Syntax error: {_syntax_detail(expression, line, column)}", line, column)) from None
    except lark.exceptions.LarkError:
        raise CompileError("compilation failed: " + _render(expression, "Syntax error", 1, 1)) from None
    except RecursionError:
        raise CompileError("compilation failed: " + _render(
            expression, "Syntax error: expression nested too deeply", 1, 1)) from None
    compiler = _Compiler(NEW_EXPRESSION_FIELDS if new else DEVICE_FIELDS)
    try:
        with _deep_recursion():
            node = compiler.compile(tree, _ROOT)
    except _CheckError as err:
        line, column = _pos(err.where, expression.splitlines() or [""])
        raise CompileError("compilation failed: " + _render(expression, err.message, line, column)) from None
    if node.type not in (BOOL, ANY):
        raise CompileError(f"must evaluate to bool or the unknown type, not {node.type.output()}")
    return Selector(expression, node.fn, compiler.nodes, compiler.nodes + compiler.extra,
                    deep=compiler.deepest > 60)


def _syntax_detail(expression: str, line: int, column: int) -> str:
    lines = expression.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    near = source[column - 1:column] if column - 1 < len(source) else ""
    return f"unexpected input {near!r}" if near else "unexpected end of input"


@lru_cache(maxsize=1024)
def _compile_cached(expression: str, new: bool = False) -> Selector | CompileError:
    try:
        return _compile(expression, new)
    except CompileError as err:
        return err


def compile_selector(expression: str) -> Selector:
    """Compile a selector as kube-scheduler does (cached, in the stored-expressions
    environment); raises CompileError with upstream's text."""
    result = _compile_cached(expression)
    if isinstance(result, CompileError):
        raise CompileError(str(result))
    return result


def validate_selector(expression: str, *, stored: bool = False) -> str | None:
    """The API server's check of a CEL selector on a DeviceClass or a ResourceClaim
    (pkg/apis/resource/validation: validateCELSelector): None when valid, else the field
    error's text after its path (``Invalid value: "1": must evaluate to bool …``), to which
    the caller prefixes the field path. ``stored``: the expression is already stored (an update
    that leaves it unchanged), checked in the stored-expressions environment as upstream does;
    otherwise in the new-expressions one.

    The "too complex" check compares a worst-case estimate with CELSelectorExpressionMaxCost
    as upstream does; the estimate is this module's cost model at the environment's size
    limits (a device's 32 attributes, a literal's length), not cel-go's estimator, so an
    expression near the limit may be judged differently from the API server."""
    if len(expression.encode()) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes"
    result = _compile_cached(expression, not stored)
    if isinstance(result, CompileError):
        return f"Invalid value: {json.dumps(expression)}: {result}"
    selector = result
    if selector.max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return "Forbidden: too complex, exceeds cost limit"
    return None


# Devices are converted once into the maps a selector reads (the allocator asks many selectors
# about the same device); the cache holds the device itself, so an id is never reused under it.
_VIEWS: OrderedDict[int, tuple[Device, _DeviceValue]] = OrderedDict()
_VIEWS_MAX = 4096


def _view(device: Device) -> _DeviceValue:
    entry = _VIEWS.get(id(device))
    if entry is not None and entry[0] is device:
        return entry[1]
    view = _convert(device)
    _VIEWS[id(device)] = (device, view)
    if len(_VIEWS) > _VIEWS_MAX:
        _VIEWS.popitem(last=False)
    return view


def _split_name(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _convert(device: Device) -> _DeviceValue:
    attributes: dict[str, dict] = _DefaultMap()
    for name, value in device.attributes.items():
        if isinstance(value, Version):
            try:
                value = parse_semver(str(value))
            except ValueError as err:
                raise EvalError(f"attribute {name}: parse semantic version: {err}") from None
        elif isinstance(value, bool) or isinstance(value, str):
            pass
        elif isinstance(value, int):
            value = int(value)
        else:
            raise EvalError(f"attribute {name}: unsupported attribute value")
        domain, ident = _split_name(name, device.driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict] = _DefaultMap()
    for name, q in device.capacity.items():
        domain, ident = _split_name(name, device.driver)
        capacity.setdefault(domain, {})[ident] = q
    return _DeviceValue(device.driver, attributes, capacity)

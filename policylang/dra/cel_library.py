"""The functions of the DRA CEL environment (policylang/dra/cel.py): CEL's standard functions, the
strings extension, and Kubernetes' quantity, semver, regex and lists libraries, each overload
with its types, its implementation and its cost as cel-go and Kubernetes charge it.
Package-internal."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable

import re2

from policylang.api.quantity import Quantity, QuantityError, QuantityRangeError, parse_quantity
from policylang.dra.cel_values import (BOOL, BYTES, DOUBLE, DYN, EvalError, INT, INT_MAX, INT_MIN,
    QUANTITY, SEMVER, STRING, Semver, T, UINT, UINT_MAX, Uint, _go_quote, _size_cost, equal, kind,
    list_of, map_of, normalize_semver, parse_semver)
from policylang.frozen import frozen

# ---------------------------------------------------------------------------------------------
# Functions: overloads (member or global), checked statically and dispatched on runtime kinds.

@frozen
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
    raise EvalError("type conversion error from 'string' to 'bool'")


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


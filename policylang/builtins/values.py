"""Builtins over plain values: collections, strings, math and quantities."""

from __future__ import annotations

import math

from ..api.quantity import Quantity, QuantityError, format_quantity, parse_quantity
from ..api.errors import go_quote
from ..cost import charge
from ..types import ANY, BOOL, FLOAT, INT, QUANTITY, STRING, list_of, map_of
from .declare import EvalError, _same, builtin, in_range

# ---- collections and strings ------------------------------------------------------

@builtin("len", [ANY], INT, "Number of items in a list or map, or characters in a string.", vector="length")
def _len(x):
    return 0 if x is None else len(x)


@builtin("keys", [map_of(ANY, ANY)], lambda a: list_of(a[0].args[0] if a[0].kind == "map" else ANY),
         "The keys of a map, sorted.")
def _keys(m):
    return sorted((m or {}).keys())


@builtin("values", [map_of(ANY, ANY)], lambda a: list_of(a[0].args[1] if a[0].kind == "map" else ANY),
         "The values of a map, in key order.")
def _values(m):
    return [m[k] for k in sorted((m or {}).keys())]


@builtin("sorted", [list_of(ANY)], lambda a: a[0], "The list in ascending order.")
def _sorted(xs):
    return sorted(xs or [])


@builtin("distinct", [list_of(ANY)], lambda a: a[0], "The list without repeats, first occurrence kept.")
def _distinct(xs):
    return list(dict.fromkeys(xs or []))


@builtin("flatten", [list_of(list_of(ANY))], lambda a: a[0].args[0] if a[0].kind == "list" else ANY,
         "A list of lists joined into one list.")
def _flatten(xss):
    return [x for xs in (xss or []) for x in (xs or [])]


@builtin("pick", [map_of(ANY, ANY), list_of(ANY)], lambda a: a[0],
         "The entries of map m whose keys are in the list keys (keys m lacks are left out).")
def _pick(m, keys):
    m = m or {}
    return {k: m[k] for k in (keys or []) if k in m}


@builtin("merge_maps", [list_of(map_of(ANY, ANY))], lambda a: a[0].args[0] if a[0].kind == "list" else ANY,
         "The maps merged into one; a key in a later map replaces the same key in an earlier one (labels.Merge).")
def _merge_maps(maps):
    out: dict = {}
    for m in maps or []:
        out.update(m or {})
    return out


@builtin("range", [INT], list_of(INT), "The whole numbers 0, 1, … n-1.")
def _range(n):
    charge(max(0, n or 0))      # before the list is made: range(10000000000) would take all memory
    return list(range(n or 0))


@builtin("last_index", [STRING, STRING], INT, "The position of the last sub in s, or -1.")
def _last_index(s, sub):
    return -1 if s is None else s.rfind(sub)


@builtin("fail", [STRING], ANY, "Stop with an error: for inputs a policy cannot decide on.")
def _fail(message):
    raise EvalError(message)


@builtin("startswith", [STRING, STRING], BOOL, "Whether s starts with prefix.")
def _startswith(s, prefix):
    return s is not None and prefix is not None and s.startswith(prefix)


@builtin("split", [STRING, STRING], list_of(STRING), "s split at every sep.")
def _split(s, sep):
    return [] if s is None else s.split(sep)


@builtin("join", [list_of(STRING), STRING], STRING, "The strings joined with sep between them.")
def _join(xs, sep):
    return sep.join(xs or [])


@builtin("lower", [STRING], STRING, "s in lower case.")
def _lower(s):
    return None if s is None else s.lower()


@builtin("string", [ANY], STRING, "The value as text (quantities in canonical form).")
def to_string(x):
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, Quantity):
        return format_quantity(x)
    if isinstance(x, list):
        return "[" + " ".join(to_string(v) for v in x) + "]"
    return str(x)


@builtin("int", [ANY], INT, "A whole number: floats truncate toward zero, strings parse (null if not a number).", cheap=True, vector="to_int")
def _int(x):
    if x is None or isinstance(x, bool):
        return None
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return None
        return in_range(int(x), "int({!r})", x)
    if isinstance(x, str):
        try:
            n = int(x, 10)
        except ValueError:
            return None
        return in_range(n, "int({})", go_quote(x[:40]))
    if isinstance(x, Quantity):
        return x.value()
    return in_range(int(x), "int({!r})", x)


@builtin("float", [ANY], FLOAT, "A floating-point number.", cheap=True, vector="to_float")
def _float(x):
    if x is None or isinstance(x, bool):
        return None
    if isinstance(x, Quantity):
        return float(x.amount)
    try:
        return float(x)
    except ValueError:
        return None


# ---- math ---------------------------------------------------------------------------

@builtin("abs", [ANY], lambda a: a[0], "Absolute value.", cheap=True, vector="absolute")
def _abs(x):
    return None if x is None else in_range(abs(x), "abs({})", x)


@builtin("sqrt", [FLOAT], FLOAT, "Square root (math.Sqrt).", cheap=True, vector="square_root")
def _sqrt(x):
    if x is None:
        return None
    if x < 0:
        raise EvalError(f"sqrt of a negative number ({x})")
    return math.sqrt(x)


@builtin("log", [FLOAT], FLOAT, "Natural logarithm (math.Log).")
def _log(x):
    if x is None:
        return None
    if x <= 0:
        raise EvalError(f"log of a non-positive number ({x})")
    return math.log(x)


@builtin("min", [ANY, ANY], _same, "The smallest argument; min(xs) or min(e for x in xs) of a list (null if empty).",
         variadic=True, cheap=True, vector="minimum")
def _min(*xs):
    xs = [x for x in xs if x is not None]
    return min(xs) if xs else None


@builtin("max", [ANY, ANY], _same, "The largest argument; max(xs) of a list (null if empty).", variadic=True,
         cheap=True, vector="maximum")
def _max(*xs):
    xs = [x for x in xs if x is not None]
    return max(xs) if xs else None


# ---- quantities --------------------------------------------------------------------

@builtin("quantity", [STRING], QUANTITY, "Parse a quantity such as \"500m\" or \"1Gi\" (null if invalid).")
def _quantity(s):
    try:
        return parse_quantity(s)
    except (QuantityError, TypeError):
        return None


@builtin("milli", [QUANTITY], INT, "Thousandths of the quantity, rounded up (the API's MilliValue).", vector="milli")
def milli(q):
    if q is None:
        return 0
    return q.milli() if isinstance(q, Quantity) else in_range(q * 1000, "milli({})", q)


@builtin("value", [QUANTITY], INT, "The quantity in whole units, rounded up (the API's Value).", vector="value")
def value(q):
    if q is None:
        return 0
    return q.value() if isinstance(q, Quantity) else q


@builtin("trim", [STRING], STRING, "s without leading and trailing white space (strings.TrimSpace).")
def _trim(s):
    return None if s is None else s.strip(" \t\n\v\f\r\x85\xa0")


@builtin("go_quote", [STRING], STRING, "s quoted as Go's %q prints it.")
def _go_quote_builtin(s):
    return go_quote(s or "")

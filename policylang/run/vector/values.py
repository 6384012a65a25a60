"""Vector values: what an expression evaluates to over a batch of nodes.

A value is either the same for every node of the batch (a plain Python value, as the
reference interpreter has it) or varies by node: a ``Col`` (a numpy array, int64/float64/bool
where the values allow it, else objects), a ``Rec`` (a record literal whose fields vary) or a
``Seq`` (a list whose members are chosen per node by masks). Here: the three, and how they are
taken apart (``take``, ``restrict``) and put together (``expand``, ``merge``) over sub-batches,
and the reference interpreter run node by node for what has no vector form.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable

import numpy as np

from ...builtins import EvalError
from ..interpret import _truthy

INT_LIMIT = 1 << 62        # int64 fast paths only while results stay below this
FLOAT_EXACT = 1 << 53      # ints compared with floats exactly only below this


class Col:
    """One value per node of the batch; ``key`` names how it was computed from the nodes
    alone (see NodeCache), None when it depends on more. ``source``: the node cache entry and
    positions it was read at (see codes_of and _widening)."""
    __slots__ = ("a", "key", "source")

    def __init__(self, a: np.ndarray, key=None, source=None):
        self.a, self.key, self.source = a, key, source


class Rec:
    """A record literal with fields that vary by node."""
    __slots__ = ("fields",)

    def __init__(self, fields: dict):
        self.fields = fields


class Seq:
    """A list built from candidate items: item i is a member on the nodes where masks[i]
    holds (True: on every node). ``key`` as for Col."""
    __slots__ = ("items", "masks", "key")

    def __init__(self, items: list, masks: list, key=None):
        self.items, self.masks, self.key = items, masks, key


VARYING = (Col, Rec, Seq)
VFn = Callable[[dict, int], Any]


# ---- columns ---------------------------------------------------------------------------------

def col_of(values: list) -> Col:
    """A column of Python values, numeric when they all are."""
    kinds = set(map(type, values))
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind is int:
            try:
                a = np.array(values, dtype=np.int64)
            except OverflowError:
                a = None
            if a is not None and ((a > -INT_LIMIT) & (a < INT_LIMIT)).all():
                return Col(a)
        elif kind is float:
            return Col(np.array(values, dtype=np.float64))
        elif kind is bool:
            return Col(np.array(values, dtype=bool))
    return Col(np.fromiter(values, dtype=object, count=len(values)))


def values_of(v, n: int) -> list:
    """The per-node Python values, as the reference interpreter would hold them."""
    if isinstance(v, Col):
        return v.a.tolist()
    if isinstance(v, Rec):
        fields = {k: values_of(x, n) for k, x in v.fields.items()}
        return [{k: xs[i] for k, xs in fields.items()} for i in range(n)]
    if isinstance(v, Seq):
        if plain_members(v):
            codes, lists = member_codes(v, n)
            return [lists[c] for c in codes]
        items = [values_of(x, n) for x in v.items]
        masks = [m.tolist() if isinstance(m, np.ndarray) else [m] * n for m in v.masks]
        return [[xs[i] for xs, ms in zip(items, masks) if ms[i]] for i in range(n)]
    return [v] * n


def codes_of(col: Col) -> "tuple[np.ndarray, list] | None":
    """A column read from the node cache with few distinct values, as (per node, which of
    them; the values)."""
    if col.source is None:
        return None
    entry, pos = col.source
    encoded = entry.codes()
    return (encoded[0][pos], encoded[1]) if encoded is not None else None


def plain_members(seq: "Seq") -> bool:
    return len(seq.items) < 63 and not any(isinstance(x, VARYING) for x in seq.items)


def member_codes(seq: "Seq", n: int) -> "tuple[list[int], list[list]]":
    """A Seq of plain members as (each node's group, each group's list): nodes whose masks
    pick the same members share a group (and a list, which no one changes)."""
    code = np.zeros(n, dtype=np.int64)
    for bit, mask in enumerate(seq.masks):
        code |= np.broadcast_to(np.asarray(mask, dtype=np.int64), (n,)) << bit
    picks, groups = np.unique(code, return_inverse=True)
    return groups.tolist(), [[x for bit, x in enumerate(seq.items) if c >> bit & 1] for c in picks.tolist()]


def take(v, sel: np.ndarray):
    if isinstance(v, Col):
        return Col(v.a[sel], v.key, v.source and (v.source[0], v.source[1][sel]))
    if isinstance(v, Rec):
        return Rec({k: take(x, sel) for k, x in v.fields.items()})
    if isinstance(v, Seq):
        return Seq([take(x, sel) for x in v.items], [m if m is True else m[sel] for m in v.masks], v.key)
    if isinstance(v, np.ndarray):
        return v[sel]
    return v


def expand(v, sel: np.ndarray, n: int):
    """A value computed on the nodes ``sel`` of a batch of n, placed back in that batch (the
    other nodes get a filler that no one reads)."""
    if isinstance(v, Col):
        a = np.zeros(n, dtype=v.a.dtype) if v.a.dtype != object else np.full(n, None, dtype=object)
        a[sel] = v.a
        return Col(a)
    if isinstance(v, Rec):
        return Rec({k: expand(x, sel, n) for k, x in v.fields.items()})
    if isinstance(v, Seq):
        return Seq([expand(x, sel, n) for x in v.items], [expand(np.broadcast_to(m, sel.shape), sel, n)
                                                          for m in v.masks])
    if isinstance(v, np.ndarray):
        a = np.zeros(n, dtype=v.dtype)
        a[sel] = v
        return a
    return v


def restrict(venv: dict, sel: np.ndarray, names: "frozenset | None" = None) -> dict:
    """venv on the nodes at sel; given the variables an expression reads (``names``), only
    those of the values that vary are taken (a filter's env holds many lets, and the right of
    an `and` reads one or two)."""
    if names is None:
        return {k: take(v, sel) if isinstance(v, (VARYING, np.ndarray)) else v for k, v in venv.items()}
    out = {k: v for k, v in venv.items() if not isinstance(v, (VARYING, np.ndarray))}
    for k in names:
        v = venv.get(k)
        if isinstance(v, VARYING):
            out[k] = take(v, sel)
    if "$pos" in venv:
        out["$pos"] = venv["$pos"][sel]
    return out


def is_listy(v) -> bool:
    return isinstance(v, (Seq, list, tuple))


def as_seq(v) -> Seq:
    return v if isinstance(v, Seq) else Seq(list(v), [True] * len(v))


def merge(parts: list, n: int):
    """One value from disjoint parts [(sel, value)] covering the batch."""
    parts = [(sel, v) for sel, v in parts if len(sel)]
    if len(parts) == 1:
        sel, v = parts[0]
        return v if not isinstance(v, VARYING) else expand(v, sel, n)
    if all(is_listy(v) for _, v in parts):
        # Lists on either side: one Seq of both sides' members, each where its side holds.
        items, masks = [], []
        for sel, v in parts:
            seq = expand(as_seq(v), sel, n) if len(sel) < n else as_seq(v)
            where = np.zeros(n, dtype=bool)
            where[sel] = True
            items += seq.items
            masks += [where if m is True else m & where for m in seq.masks]
        return Seq(items, masks)
    kinds = {num_kind(v) for _, v in parts}
    if len(kinds) == 1 and None not in kinds:
        kind = kinds.pop()
        a = np.empty(n, dtype=np.int64 if kind == "int" else np.float64 if kind == "float" else bool)
        for sel, v in parts:
            a[sel] = v.a if isinstance(v, Col) else v
        return Col(a)
    out: list = [None] * n
    for sel, v in parts:
        for i, x in zip(sel.tolist(), values_of(v, len(sel))):
            out[i] = x
    return col_of(out)


def num_kind(v) -> "str | None":
    """int / float / bool for numeric columns and plain numbers, else None."""
    if isinstance(v, Col):
        k = v.a.dtype.kind
        return "int" if k == "i" else "float" if k == "f" else "bool" if k == "b" else None
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int" if -INT_LIMIT < v < INT_LIMIT else None
    if isinstance(v, float):
        return "float"
    return None


def where_true(mask: np.ndarray) -> np.ndarray:
    """np.flatnonzero of a 1-d mask, without its Python-level wrappers (tens of calls a pod)."""
    return mask.nonzero()[0]


def abs_max(v) -> int:
    """The largest absolute value of a number or numeric column (0 for an empty one)."""
    a = array_of(v)
    return int(np.abs(a).max(initial=0)) if isinstance(a, np.ndarray) else abs(a)


def array_of(v):
    return v.a if isinstance(v, Col) else v


def truth(v, n: int):
    """The value as a condition: a bool, or a bool array when it varies."""
    if isinstance(v, Col):
        kind = v.a.dtype.kind
        if kind == "b":
            return v.a
        if kind in "if":
            return True
        return np.fromiter((x is not None and x is not False for x in v.a), dtype=bool, count=n)
    if isinstance(v, (Rec, Seq)):
        return True
    return _truthy(v)


def bool_value(t, n: int):
    return Col(t) if isinstance(t, np.ndarray) else bool(t)


def as_mask(t, n: int) -> np.ndarray:
    return t if isinstance(t, np.ndarray) else np.full(n, bool(t))


NUMPY_COMPARE = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
                  ">": np.greater, ">=": np.greater_equal}


def comparable(a, b) -> bool:
    ka, kb = num_kind(a), num_kind(b)
    if ka is None or kb is None or "bool" in (ka, kb):
        return ka == kb == "bool"
    if ka == kb:
        return True
    ints = a if ka == "int" else b
    return abs_max(ints) < FLOAT_EXACT


def arith_ok(op: str, a, b) -> bool:
    ka, kb = num_kind(a), num_kind(b)
    if ka not in ("int", "float") or kb not in ("int", "float"):
        return False
    if ka == kb == "int":
        x = abs_max(a)
        y = abs_max(b)
        bound = x * y if op == "*" else x + y
        return bound < INT_LIMIT
    return comparable(a, b)


def numeric_arith(op: str, a, b):
    x, y = array_of(a), array_of(b)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if np.any(np.asarray(y) == 0):
        raise EvalError("division by zero")
    if op == "/":
        if num_kind(a) == num_kind(b) == "int":
            q = np.abs(x) // np.abs(y)
            return np.where((np.asarray(x) >= 0) == (np.asarray(y) >= 0), q, -q)
        return np.true_divide(x, y)
    if num_kind(a) == num_kind(b) == "int":
        q = np.abs(x) // np.abs(y)
        q = np.where((np.asarray(x) >= 0) == (np.asarray(y) >= 0), q, -q)
        return x - y * q
    return np.fmod(x, y)


def node_by_node(ref: Callable, venv: dict, varying: list, n: int):
    """The reference interpreter on each node, for what has no vector form."""
    columns = [(name, values_of(venv[name], n)) for name in varying]
    env = dict(venv)
    out = []
    for i in range(n):
        for name, xs in columns:
            env[name] = xs[i]
        out.append(ref(env))
    return col_of(out)


def on(fn: VFn, venv: dict, n: int, mask, names: "frozenset | None" = None):
    """fn (reading ``names``, when known) on the nodes where mask holds (all when True); the
    result as a batch-wide value."""
    if mask is True:
        return fn(venv, n)
    sel = where_true(mask)
    if len(sel) == n:
        return fn(venv, n)
    if not len(sel):
        return None
    return expand(fn(restrict(venv, sel, names), len(sel)), sel, n)


def elementwise(fn: Callable, args: list, n: int):
    if not any(isinstance(a, VARYING) for a in args):
        return fn(*args)
    return col_of(list(map(fn, *[values_of(a, n) if isinstance(a, VARYING) else repeat(a, n) for a in args])))

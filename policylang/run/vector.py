"""The vector executor: plan expressions evaluated for a batch of nodes at once.

Each IR node compiles to ``f(venv, n) -> value`` where a value is either the same for every
node of the batch (a plain Python value, as the reference interpreter has it) or varies by
node: a ``Col`` (a numpy array, int64/float64/bool where the values allow it, else
objects), a ``Rec`` (a record literal whose fields vary) or a ``Seq`` (a list whose members
are chosen per node by masks). An expression whose free variables are all the same for
every node runs once, through the reference interpreter; numbers and booleans are numpy
operations; what has no vector form runs node by node through the reference interpreter.

Where the reference would not evaluate an expression on a node (the right of ``and``, a
branch of ``if``, a comprehension item its ``where`` leaves out) neither does this: such
expressions run on the sub-batch of nodes that reach them. Any policy error is re-raised
for the caller to decide the pod with the reference interpreter, so errors are the
reference's errors.

Two things save repeated work: the NodeCache keeps, per node of a cluster state, the values
of expressions that read nothing but nodes (and plain values), across pods; and a long
comprehension that is the same for every node (a pass over ``cluster.nodes`` in PreFilter)
is "lifted": its members become a batch of their own.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from itertools import chain, compress, repeat
from operator import attrgetter, eq, is_, ne
from typing import Any, Callable

import attrs
import numpy as np

from .. import builtins as bi
from .. import plan as P
from ..builtins import POLICY_ERRORS, EvalError
from ..cluster.model import Node
from ..cluster.quantity import Quantity
from ..types import DERIVED
from .interpret import (AGGREGATES, _ARITH, _api_attrs, _contains, _order, _truthy, compile_ir, field_reader,
                        index_value)

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


def _listy(v) -> bool:
    return isinstance(v, (Seq, list, tuple))


def as_seq(v) -> Seq:
    return v if isinstance(v, Seq) else Seq(list(v), [True] * len(v))


def merge(parts: list, n: int):
    """One value from disjoint parts [(sel, value)] covering the batch."""
    parts = [(sel, v) for sel, v in parts if len(sel)]
    if len(parts) == 1:
        sel, v = parts[0]
        return v if not isinstance(v, VARYING) else expand(v, sel, n)
    if all(_listy(v) for _, v in parts):
        # Lists on either side: one Seq of both sides' members, each where its side holds.
        items, masks = [], []
        for sel, v in parts:
            seq = expand(as_seq(v), sel, n) if len(sel) < n else as_seq(v)
            where = np.zeros(n, dtype=bool)
            where[sel] = True
            items += seq.items
            masks += [where if m is True else m & where for m in seq.masks]
        return Seq(items, masks)
    kinds = {_num_kind(v) for _, v in parts}
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


def _num_kind(v) -> "str | None":
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


def _where(mask: np.ndarray) -> np.ndarray:
    """np.flatnonzero of a 1-d mask, without its Python-level wrappers (tens of calls a pod)."""
    return mask.nonzero()[0]


def _abs_max(v) -> int:
    """The largest absolute value of a number or numeric column (0 for an empty one)."""
    a = _arr(v)
    return int(np.abs(a).max(initial=0)) if isinstance(a, np.ndarray) else abs(a)


def _arr(v):
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


def _bool_value(t, n: int):
    return Col(t) if isinstance(t, np.ndarray) else bool(t)


# ---- compiling -------------------------------------------------------------------------------

@P.by_identity
def vcompile(ir) -> VFn:
    """The vector form of an expression (one per IR object: inlined defs share theirs)."""
    # A variable or a constant is its value, varying or not: nothing to decide per call.
    if isinstance(ir, P.Var):
        return _var(ir)
    if isinstance(ir, P.Const):
        value = ir.value
        return lambda venv, n: value
    ref = compile_ir(ir)
    names = P.free_vars(ir)
    if _params_only(ir):
        return _once_per_params(ref)
    free = tuple(sorted(names))
    special = _VECTOR.get(type(ir))
    vec = special(ir) if special is not None else None
    # A def applied to variables is its body under other names: the body's entry is enough.
    renaming = isinstance(ir, P.Bind) and all(isinstance(v, P.Var) for v in ir.values)
    local = node_local(ir) if not (renaming or _cheap(ir)) else None
    reads = _reads(ir)
    token = object()     # this expression, in cache keys
    lift = _lifted(ir) if isinstance(ir, P.Comp) else None
    # Holding a comprehension over what may be a long list, the expression is evaluated part
    # by part even when nothing varies, so that the comprehension can run as a batch.
    structural = vec is not None and _has_long_comprehension(ir)

    def run(venv: dict, n: int):
        for name in free:
            if isinstance(venv.get(name), VARYING):
                break
        else:   # the same on every node
            if lift is not None:
                return lift(venv, ref)
            return vec(venv, n) if structural else ref(venv)
        cache = venv.get("$cache")
        if local is not None and cache is not None and token not in cache.uncacheable:
            key = _cache_key(token, reads, venv)
            if key is not None:
                # Over a value that depends on the pods on a node, a value does too.
                dynamic = local == "dynamic" or any(isinstance(k, int) and k < 0 for k in key)
                return cache.lookup(key, dynamic, venv, n, vec or by_node, by_node, names)
        return vec(venv, n) if vec is not None else by_node(venv, n)

    def by_node(venv: dict, n: int):
        return node_by_node(ref, venv, [name for name in free if isinstance(venv.get(name), VARYING)], n)
    return run


def _params_only(ir) -> bool:
    """Whether an expression reads nothing but its plugin's params (a check of its args, a
    default list of resources): its value is the same for every pod."""
    return P.free_vars(ir) <= {"params"} and not _reads_state(ir)


@P.by_identity
def _reads_state(ir) -> bool:
    if isinstance(ir, P.CallBuiltin) and bi.REGISTRY[ir.name].needs_state:
        return True
    if isinstance(ir, P.GetField) and ir.name in NODE_DERIVED:
        return True
    return any(_reads_state(part) for part in P.parts(ir))


def _once_per_params(ref: Callable) -> VFn:
    """ref's value, computed once per params object (an error is raised again each time)."""
    memo: list = [_UNSET, None]    # params, value

    def run(venv: dict, n: int):
        params = venv.get("params")
        if memo[0] is not params:
            memo[1] = ref(venv)
            memo[0] = params
        return memo[1]
    return run


_UNSET = object()
_CHEAP_BUILTINS = frozenset({"float", "int", "abs", "sqrt", "min", "max"})


def _cheap(ir) -> bool:
    """Arithmetic, comparisons, logic and number conversions: over numeric and boolean columns
    one numpy operation, cheaper than looking its value up (and than recomputing it on the
    nodes whose pods changed). Such a value is not kept, its parts that are not cheap are."""
    if isinstance(ir, P.Op):
        return ir.op in _NUMPY_COMPARE or ir.op in _ARITH or ir.op in ("and", "or")
    if isinstance(ir, P.CallBuiltin):
        return ir.name in _CHEAP_BUILTINS
    return isinstance(ir, (P.Not, P.Neg))


# ---- the node cache -----------------------------------------------------------------------------

NODE_LOCAL_BUILTINS = frozenset({"requested", "nonzero_requested", "count_on_node"})   # read one node's pods
NODE_STATIC_BUILTINS = frozenset({"has_image"})     # read one node only (through the state's indexes)
NODE_DERIVED = frozenset(DERIVED["Node"])


@P.by_identity
def node_local(ir) -> "str | None":
    """Whether an expression reads nothing but its variables and, through them, nodes:
    "static" (node objects only), "dynamic" (also the pods on a node), or None (it reads the
    wider cluster state)."""
    found = "static"
    if isinstance(ir, P.CallBuiltin) and bi.REGISTRY[ir.name].needs_state and ir.name not in NODE_STATIC_BUILTINS:
        if ir.name not in NODE_LOCAL_BUILTINS:
            return None
        found = "dynamic"
    elif isinstance(ir, P.GetField) and ir.name in NODE_DERIVED:
        found = "dynamic"
    elif isinstance(ir, P.Var) and ir.name == "cluster":
        return None
    for part in P.parts(ir):
        inner = node_local(part)
        if inner is None:
            return None
        if inner == "dynamic":
            found = "dynamic"
    return found


class Unfrozen(Exception):
    pass


def freeze(v, budget: list):
    """A hashable stand-in for a plain value, types kept apart (1, 1.0 and True differ);
    Unfrozen for objects and for values too large to be worth a cache entry."""
    budget[0] -= 1
    if budget[0] < 0:
        raise Unfrozen
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bool, int, float, Quantity)):
        return (type(v), v)
    if isinstance(v, (list, tuple)):
        return ("list", tuple(freeze(x, budget) for x in v))
    if type(v) is dict:     # not the cluster view, whose lists are made as they are read
        return ("map", tuple((k, freeze(x, budget)) for k, x in v.items()))
    if attrs.has(type(v)):   # cluster data (a toleration, a selector): by value, field by field
        return (type(v), tuple(freeze(getattr(v, f.name), budget) for f in attrs.fields(type(v))))
    raise Unfrozen


FREEZE_BUDGET = 64        # values larger than this, all free variables together, are not keys
_FROZEN: dict = {}        # id → (value, frozen or None, cost): a value once made never changes


def _frozen(v) -> tuple:
    """freeze(v) and what it costs of the budget, remembered per object: the same lists and
    records (the pod's tolerations, a constraint) are keys of many expressions of a cycle."""
    kind = type(v)
    if v is None or kind is str:
        return v, 1
    if kind is int or kind is bool or kind is float:
        return (kind, v), 1
    hit = _FROZEN.get(id(v))
    if hit is None or hit[0] is not v:
        budget = [FREEZE_BUDGET]
        try:
            hit = (v, freeze(v, budget), FREEZE_BUDGET - budget[0])
        except Unfrozen:
            hit = (v, None, FREEZE_BUDGET + 1)
        if len(_FROZEN) >= 50_000:
            _FROZEN.clear()
        _FROZEN[id(v)] = hit
    return hit[1], hit[2]


def _reads(ir) -> tuple:
    """Per free variable of ir: (name, paths), the paths as readers of the fields ir reads of
    it, none when it reads the value whole (see plan.free_paths)."""
    by_var: dict = {}
    for path in P.free_paths(ir):
        by_var.setdefault(path[0], set()).add(path[1:])
    out = []
    for name, paths in sorted(by_var.items()):
        kept = () if () in paths else sorted(p for p in paths if not any(p[:k] in paths for k in range(1, len(p))))
        out.append((name, tuple(tuple(map(field_reader, p)) for p in kept)))
    return tuple(out)


def _cache_key(token, reads: tuple, venv: dict):
    """What an expression's value on a node depends on besides the node: the cache keys of the
    columns it reads and the frozen values of the plain fields it reads; None when one of
    these is too large (or not a value) to be worth a key."""
    parts = [token]
    budget = FREEZE_BUDGET
    for name, paths in reads:
        v = venv.get(name)
        if isinstance(v, (Col, Seq)):
            if v.key is None:
                return None
            parts.append(v.key)
            continue
        if isinstance(v, VARYING):
            return None
        for path in paths or ((),):
            x = v
            try:
                for read in path:
                    x = read(x, venv)
            except POLICY_ERRORS:
                return None     # the expression will fail as the reference does
            frozen, cost = _frozen(x)
            budget -= cost
            if budget < 0:
                return None
            parts.append(frozen)
    return tuple(parts)


class _Entry:
    __slots__ = ("id", "values", "versions", "last", "born", "met_again", "members", "synced", "encoded")

    def __init__(self, ident: int, size: int, born: int):
        self.id = ident      # what keys of expressions over this one's value name it by
        self.born = born     # the state's generation when it was made
        self.met_again = False   # looked up after a bind
        self.values = None
        # Per node, the node's version its value was computed at; -1: not computed yet.
        self.versions = np.full(size, -1, dtype=np.int32)
        # The last answer: (positions, state generation, column). The same positions (the same
        # list of nodes: cluster.nodes, a chunk) get it again while no pod moved.
        self.last = None
        # For lists of plain members (NodeResourcesFit's short resources, say): the candidate
        # members, and per node in `values` a code whose bit i says members[i] is in its list.
        # Read back as a Seq, the lists stay masks that vector operations work on.
        self.members = None
        # A generation of the state at which every node's value was up to date: while no pod
        # moved since (ever, for a value that reads no pods), a look-up checks no node.
        self.synced = None
        self.encoded = None     # see codes

    def column(self, pos):
        if self.members is None:
            return Col(self.values[pos], self.id, (self, pos))
        codes = self.values[pos]
        return Seq(self.members, [(codes & (1 << bit)) != 0 for bit in range(len(self.members))], self.id)

    def complete(self) -> bool:
        """Every node's value kept for good (a value that reads no pods, once all are in)."""
        return self.synced is not None and self.id > 0

    def codes(self) -> "tuple[np.ndarray, list] | None":
        """The values as (per node, which of a few distinct values it has; those values), for
        look-ups by them to be made once per distinct value; None unless every node's value
        is kept for good and they are few and hashable."""
        if self.encoded is None and self.complete() and self.values.dtype == object:
            self.encoded = False
            index: dict = {}
            try:
                codes = [index.setdefault(x, len(index)) for x in self.values.tolist()]
            except TypeError:   # unhashable values (lists, maps)
                return None
            if len(index) <= FEW_DISTINCT:
                self.encoded = (np.array(codes, dtype=np.int64), list(index))
        return self.encoded or None

    def store(self, idx: np.ndarray, v) -> None:
        size = len(self.versions)
        if self.values is None and isinstance(v, Seq):
            self.members, self.values = list(v.items), np.zeros(size, dtype=np.int64)
        if self.members is not None:
            codes = _codes_among(self.members, v, len(idx))
            if codes is not None:
                self.values[idx] = codes
                return
            self._as_lists()
        if isinstance(v, (Rec, Seq, list, tuple, dict)):
            # A per-node value after all (an empty list where a node has no pods with
            # affinity, say): stored per node like the rest.
            v = Col(np.fromiter(values_of(v, len(idx)), dtype=object, count=len(idx)))
        if isinstance(v, Col):
            dtype, data = v.a.dtype, v.a
        else:
            kind = _num_kind(v)
            dtype = {"int": np.int64, "float": np.float64, "bool": bool}.get(kind, object)
            data = v
            if dtype is object:
                data = np.empty(len(idx), dtype=object)
                for i in range(len(idx)):
                    data[i] = v
        if self.values is None:
            self.values = np.zeros(size, dtype=dtype) if dtype != object else np.full(size, None, dtype=object)
        elif self.values.dtype != np.dtype(dtype):
            self.values = np.fromiter(self.values.tolist(), dtype=object, count=size)
            if not isinstance(data, np.ndarray) or data.dtype != object:
                data = np.fromiter(values_of(v, len(idx)), dtype=object, count=len(idx))
        self.values[idx] = data

    def _as_lists(self) -> None:
        """Codes back to a list per node, for values whose members do not fit the codes."""
        size = len(self.versions)
        self.values = np.fromiter(values_of(self.column(slice(None)), size), dtype=object, count=size)
        self.members = None


def _codes_among(members: list, v, n: int) -> "np.ndarray | None":
    """Per node, the code of its list of v among ``members``; None when a list has a member
    that is not a candidate or members out of the candidates' order."""
    if isinstance(v, Seq):
        bits = _bits_of(members, v.items) if plain_members(v) else None
        if bits is None:
            return None
        codes = np.zeros(n, dtype=np.int64)
        for bit, mask in zip(bits, v.masks):
            codes |= np.asarray(mask, dtype=np.int64) << bit
        return codes
    lists = [v] * n if isinstance(v, list) else v.a.tolist() if isinstance(v, Col) and v.a.dtype == object else None
    if lists is None:
        return None
    codes = []
    for xs in lists:
        bits = _bits_of(members, xs) if isinstance(xs, list) else None
        if bits is None:
            return None
        codes.append(sum(1 << bit for bit in bits))
    return np.array(codes, dtype=np.int64)


def _bits_of(members: list, items) -> "list[int] | None":
    """The positions among ``members`` of ``items`` taken in order (values of the same type
    and equal), or None."""
    bits, j = [], 0
    for x in items:
        while j < len(members) and not (type(members[j]) is type(x) and members[j] == x):
            j += 1
        if j == len(members):
            return None
        bits.append(j)
        j += 1
    return bits


class NodeCache:
    """Values of node-local expressions, per node of one cluster state, kept across pods:
    what depends on a node's objects only is computed once; what depends on the pods on a node
    is recomputed for the nodes whose version changed (a pod bound or removed there)."""

    # Cached values in all, across entries, at 12 bytes each (a value or reference, a version):
    # up to ~550 MiB, room for the ~2,000 entries of the default profile on 15,000 nodes.
    MAX_VALUES = 48_000_000

    def __init__(self, state):
        self.state = state
        self.entries: OrderedDict = OrderedDict()
        self.uncacheable: set = set()     # expressions' tokens
        self.keys_made: dict = {}         # token → (generation of its first key, keys made)
        self.met_again: Counter = Counter()   # token → its keys looked up again after a bind
        self.created = 0
        self.max_entries = max(64, self.MAX_VALUES // max(1, len(state.node_index)))

    @classmethod
    def of(cls, state) -> "NodeCache":
        cache = state.cache.get("vector")
        if cache is None:
            cache = state.cache["vector"] = cls(state)
        return cache

    def lookup(self, key, dynamic: bool, venv: dict, n: int, vec: VFn, by_node: VFn, free: frozenset = frozenset()):
        """The expression's column over the batch: kept values, and those of the nodes not
        computed yet or whose pods changed computed now (a few such nodes one by one: a batch
        operation's fixed cost is more than the reference's work on a node or two). When a key
        seen before misses many nodes of a batch of some of the nodes (a sample, a chunk) and
        nothing the value reads (its ``free`` variables) varies but the nodes (and columns kept
        for every node), it is computed on every node missing it: a batch costs little more
        than part of one, and the next sample finds it kept. (A key seen once may never come
        again: one of counts that change with every bind, say.)"""
        pos = venv["$pos"]
        entry = self.entries.get(key)
        if entry is None:
            if self._one_off(key[0]):
                self.uncacheable.add(key[0])
                return vec(venv, n)
            self.created += 1
            ident = -self.created if dynamic else self.created   # negative: recomputed as pods move
            entry = self.entries[key] = _Entry(ident, len(self.state.node_index), self.state.generation)
            if len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)
            seen = False
        else:
            seen = True
            self.entries.move_to_end(key)
            if entry.born != self.state.generation and not entry.met_again:
                entry.met_again = True
                self.met_again[key[0]] += 1
            last = entry.last
            if last is not None and last[0] is pos and (not dynamic or last[1] == self.state.generation):
                return last[2]
        sub = self._stale(entry, dynamic, pos)
        widen = _widening(venv, free) if seen and len(sub) > FEW_NODES and n < len(entry.versions) else None
        if widen is not None:
            everywhere = self._stale(entry, dynamic, None)
            try:
                v = vec(self._at(venv, widen, everywhere), len(everywhere))
            except POLICY_ERRORS:
                pass      # perhaps on a node beyond the batch: the batch alone says
            else:
                if not self._keep(key, entry, everywhere, v):
                    return vec(venv, n)
                sub = sub[:0]
        if len(sub):
            compute = by_node if len(sub) <= FEW_NODES and entry.values is not None else vec
            v = compute(restrict(venv, sub, free) if len(sub) < n else dict(venv), len(sub))
            if not self._keep(key, entry, pos[sub], v):
                return vec(venv, n) if len(sub) < n else v
        if entry.synced != self.state.generation and (widen is not None or len(sub)):
            self._sync(entry, dynamic)
        col = entry.column(pos)
        entry.last = (pos, self.state.generation, col)
        return col

    def _one_off(self, token) -> bool:
        """Whether an expression's keys are mostly used in one cycle only (keys over counts
        that change with every bind, say): ONE_OFF_KEYS keys made over as many binds, fewer
        than one in MET_AGAIN_ONE_IN of them looked up again after a bind. Such values are
        computed, not kept."""
        first, made = self.keys_made.get(token, (self.state.generation, 0))
        self.keys_made[token] = (first, made + 1)
        return made >= ONE_OFF_KEYS and self.state.generation - first >= ONE_OFF_KEYS \
            and self.met_again[token] * MET_AGAIN_ONE_IN < made

    def _stale(self, entry: _Entry, dynamic: bool, pos: "np.ndarray | None") -> np.ndarray:
        """Where in pos (None: every node) the nodes are whose values are missing or out of
        date: none while the entry is in sync."""
        state = self.state
        if entry.synced is not None and (not dynamic or entry.synced == state.generation):
            return _NOWHERE
        if pos is None:
            pos = slice(None)
        if dynamic:
            return _where(entry.versions[pos] != state.node_versions[pos])
        return _where(entry.versions[pos] < 0)

    def _sync(self, entry: _Entry, dynamic: bool) -> None:
        """Note the entry in sync when, values just computed, every node's is up to date."""
        state = self.state
        if entry.synced is not None and dynamic:
            changed = state.changed_since(entry.synced)
            if changed is not None and len(changed) <= FEW_CHANGED:
                if (entry.versions[changed] == state.node_versions[changed]).all():
                    entry.synced = state.generation
                return
        done = entry.versions == state.node_versions if dynamic else entry.versions >= 0
        if done.all():
            entry.synced = state.generation

    def _at(self, venv: dict, widening: tuple, pos: np.ndarray) -> dict:
        """venv's plain values, the nodes at ``pos`` of the state, and the kept columns there."""
        var, kept = widening
        out = {k: v for k, v in venv.items() if not isinstance(v, (VARYING, np.ndarray))}
        out["$pos"] = pos
        if var is not None:
            out[var] = Col(by_position(self.state)[0][pos], NODES_KEY)
        for name, entry in kept:
            out[name] = entry.column(pos)
        return out

    def _keep(self, key, entry: _Entry, at: np.ndarray, v) -> bool:
        """Store the values of the nodes at ``at``; False (and the expression uncacheable)
        when they are not kept per node."""
        # Kept in their own (cheaper) forms, but for lists of plain members, kept as codes.
        if entry.values is None and isinstance(v, (Rec, Seq, list, tuple, dict)) \
                and not (isinstance(v, Seq) and plain_members(v)):
            self.uncacheable.add(key[0])
            del self.entries[key]
            return False
        entry.store(at, v)
        entry.versions[at] = self.state.node_versions[at]
        return True


NODES_KEY = ("node",)   # the key of a batch's own node column (venv["$pos"] says where its nodes are)


def _batch_nodes(v) -> bool:
    return isinstance(v, Col) and v.key == NODES_KEY


def _widening(venv: dict, free) -> "tuple[str | None, list] | None":
    """When what a value reads varies only with the nodes: the variable that is the batch's
    nodes, and the others that vary (columns kept for every node, for good), with their
    entries; else None."""
    node, kept = None, []
    for name in free:
        v = venv.get(name)
        if not isinstance(v, VARYING):
            continue
        if _batch_nodes(v) and node is None:
            node = name
        elif isinstance(v, Col) and v.source is not None and v.source[0].complete():
            kept.append((name, v.source[0]))
        else:
            return None
    return (node, kept) if node is not None or kept else None


LIFT_MIN = 16
ONE_OFF_KEYS = 16   # see NodeCache._one_off
MET_AGAIN_ONE_IN = 4
EXPLODE_MIN = 16    # lists per node with at least this many members in all are one batch
FEW_NODES = 8       # missing values of at most this many nodes are computed node by node
FEW_CHANGED = 16    # an entry that was in sync is checked again at the nodes changed since, up to this many
_NOWHERE = np.zeros(0, dtype=np.int64)
FEW_DISTINCT = 64   # kept columns with at most this many distinct values are looked up per value


POD_SIZED = frozenset({"pod", "params"})     # what lists read from are as long as a pod spec


@P.by_identity
def _has_long_comprehension(ir) -> bool:
    """Whether ir holds a comprehension over a list that may be long: one neither written out
    nor read from the pod or params alone (a pod's terms, containers, tolerations), or from
    members of such lists. Comprehensions over those are the reference's to run."""
    return _long_within(ir, POD_SIZED)


@P.by_identity
def _long_within(ir, short: frozenset) -> bool:
    """_has_long_comprehension, with the variables in ``short`` known to be pod-sized."""
    if isinstance(ir, P.Comp):
        sized = _pod_sized(ir.source, short)
        inner = short | {ir.var} if sized else short - {ir.var}
        return (not sized and not isinstance(ir.source, P.MakeList)) or _long_within(ir.source, short) \
            or any(_long_within(x, inner) for x in (ir.element, ir.where, ir.by) if x is not None)
    if isinstance(ir, P.Bind):
        inner = (short - set(ir.names)) | {name for name, v in zip(ir.names, ir.values) if _pod_sized(v, short)}
        return any(_long_within(v, short) for v in ir.values) or _long_within(ir.body, inner)
    if isinstance(ir, P.Fold):
        return _long_within(ir.init, short) or _long_within(ir.source, short) \
            or _long_within(ir.body, short - {ir.acc, ir.var})
    return any(_long_within(part, short) for part in P.parts(ir))


def _pod_sized(ir, short: frozenset) -> bool:
    return P.free_vars(ir) <= short and not _reads_state(ir)


def node_positions(state, seq) -> "np.ndarray | None":
    """Where each item is in the state's node order, when every item is one of its nodes."""
    if not len(seq):
        return np.zeros(0, dtype=np.int64)
    if state is None or not isinstance(seq[0], Node):
        return None
    return state.positions(seq)


def by_position(state) -> "tuple[np.ndarray, np.ndarray]":
    """The state's nodes and their names as arrays in position order, to be picked by positions."""
    arrays = state.cache.get("nodes by position")
    if arrays is None:
        nodes = state.node_list
        arrays = state.cache["nodes by position"] = (np.fromiter(nodes, dtype=object, count=len(nodes)),
                                                     np.fromiter(state.nodes, dtype=object, count=len(nodes)))
    return arrays


_MEMBERS = "$members"   # see _lifted


def _lifted(ir: P.Comp):
    """A comprehension that is the same for every node (a pod-stage one over the cluster's
    nodes, say) but long: its members form a batch of their own, evaluated at once."""
    kind, var = ir.kind, ir.var
    source = vcompile(ir.source)
    element = vcompile(ir.element) if ir.element is not None else None
    where = vcompile(ir.where) if ir.where is not None else None
    by = vcompile(ir.by) if ir.by is not None else None
    # A short list whose members' parts hold nothing to lift is the reference's loop, over the
    # members already computed.
    nothing_to_lift = not any(_has_long_comprehension(x) for x in (ir.element, ir.where, ir.by) if x is not None)
    given = compile_ir(P.Comp(kind, var, P.Var(_MEMBERS), ir.element, ir.where, ir.by)) if nothing_to_lift else None

    def lift(venv: dict, ref: Callable):
        seq = source(venv, 1)
        if not isinstance(seq, (list, tuple)):
            return ref(venv)
        if element is None and where is None and kind != "group":    # max(xs), sum(xs): no batch needed
            try:
                return _AGGREGATE[kind](seq)
            except POLICY_ERRORS:
                return ref(venv)
        if len(seq) < LIFT_MIN:
            if given is not None:
                venv[_MEMBERS] = seq
                return given(venv)
            return one_by_one(venv, seq)
        m = len(seq)
        env = {k: v for k, v in venv.items()
               if k not in ("$pos", "$cache") and not isinstance(v, (*VARYING, np.ndarray))}
        pos = node_positions(venv.get("$state"), seq)
        if pos is not None:     # the state's nodes: a node batch, with the node cache
            env[var] = Col(by_position(venv["$state"])[0][pos], NODES_KEY)
            env["$pos"], env["$cache"] = pos, NodeCache.of(venv["$state"])
        else:
            env[var] = col_of(list(seq))
        try:
            if kind in ("any", "all") and element is None and where is not None:
                t = truth(where(env, m), m)
                hits = t if isinstance(t, np.ndarray) else np.full(m, bool(t))
                return bool(hits.any()) if kind == "any" else bool(hits.all())
            mask = truth(where(env, m), m) if where is not None else True
            if mask is False or (isinstance(mask, np.ndarray) and not mask.any()):
                return _AGGREGATE[kind]([])
            values = values_of(on(element, env, m, mask), m) if element is not None else list(seq)
            if mask is not True:
                values = list(compress(values, mask.tolist()))
            if kind == "list" and element is None and pos is not None:     # the state's nodes: say where
                venv["$state"].remember_positions(values, pos if mask is True else pos[mask])
                return values
            if kind == "group":
                keys = values_of(on(by, env, m, mask), m)
                groups: dict = {}
                for key, v in zip(keys if mask is True else compress(keys, mask.tolist()), values):
                    groups.setdefault(key, []).append(v)
                return groups
        except POLICY_ERRORS:
            return ref(venv)    # the reference stops where it stops; its error, if any, is the answer
        return _AGGREGATE[kind](values)

    def one_by_one(venv: dict, seq):
        """The reference's loop, its parts in vector form (they may hold long comprehensions)."""
        out: list = []
        groups: dict = {}
        quantifier = kind in ("any", "all") and element is None and where is not None
        for x in seq:
            venv[var] = x
            if quantifier:
                if _truthy(where(venv, 1)) == (kind == "any"):
                    return kind == "any"
                continue
            if where is not None and not _truthy(where(venv, 1)):
                continue
            v = element(venv, 1) if element is not None else x
            if kind == "group":
                groups.setdefault(by(venv, 1), []).append(v)
            elif kind == "first":
                return v
            elif kind in ("any", "all") and _truthy(v) == (kind == "any"):
                return kind == "any"
            else:
                out.append(v)
        if quantifier or kind in ("any", "all"):
            return kind == "all"
        return groups if kind == "group" else _AGGREGATE[kind](out)
    return lift


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
    sel = _where(mask)
    if len(sel) == n:
        return fn(venv, n)
    if not len(sel):
        return None
    return expand(fn(restrict(venv, sel, names), len(sel)), sel, n)


def elementwise(fn: Callable, args: list, n: int):
    if not any(isinstance(a, VARYING) for a in args):
        return fn(*args)
    return col_of(list(map(fn, *[values_of(a, n) if isinstance(a, VARYING) else repeat(a, n) for a in args])))


def _var(ir):
    name = ir.name
    return lambda venv, n: venv[name]


def _field(ir: P.GetField):
    target, name = vcompile(ir.target), ir.name
    read = field_reader(name)

    def run(venv, n):
        obj = target(venv, n)
        if isinstance(obj, Rec):
            return obj.fields.get(name)
        if not isinstance(obj, VARYING):
            return read(obj, venv)
        xs = values_of(obj, n)
        kinds = set(map(type, xs))
        if len(kinds) == 1:     # one kind of object: its field read without a call per node
            kind = kinds.pop()
            if kind is dict:
                return col_of([x.get(name) for x in xs])
            attr = _api_attrs(kind).get(name) if attrs.has(kind) else None
            if attr is not None:
                return col_of(list(map(attrgetter(attr), xs)))
        return col_of([read(x, venv) for x in xs])
    return run


def _index(ir: P.GetIndex):
    target, key = vcompile(ir.target), vcompile(ir.key)

    def run(venv, n):
        obj, k = target(venv, n), key(venv, n)
        if isinstance(obj, Seq) and not isinstance(k, VARYING) and isinstance(k, int) and not isinstance(k, bool) \
                and k >= 0:
            return _member(obj, k, n)
        if isinstance(obj, (list, tuple)) and isinstance(k, Col) and k.a.dtype.kind == "i":
            items = np.full(len(obj) + 1, None, dtype=object)   # the last slot: null, for out of range
            for j, x in enumerate(obj):
                items[j] = x
            i = np.where((k.a >= -len(obj)) & (k.a < len(obj)), k.a % max(len(obj), 1), len(obj))
            return col_of(items[i].tolist())
        # A map looked up per node, or each node's map looked up by one key: the reference's
        # index_value, without a call per node where the answer is a dict lookup.
        if isinstance(obj, dict) and isinstance(k, Col):
            encoded = codes_of(k)
            keys = encoded[1] if encoded is not None else k.a.tolist()
            if None in obj:     # a null key finds nothing, even where a map has one
                found = col_of([None if x is None else obj.get(x) for x in keys])
            else:
                found = col_of(list(map(obj.get, keys)))
            return Col(found.a[encoded[0]]) if encoded is not None else found
        if isinstance(obj, Col) and k is not None and not isinstance(k, VARYING):
            objs = obj.a.tolist()
            if set(map(type, objs)) == {dict}:     # every node's map: one C loop of look-ups
                return col_of(list(map(dict.get, objs, repeat(k))))
            return col_of([o.get(k) if type(o) is dict else index_value(o, k) for o in objs])
        return elementwise(index_value, [obj, k], n)
    return run


def _member(seq: Seq, k: int, n: int):
    """The k-th member of a Seq on each node (null where it has fewer)."""
    if all(m is True for m in seq.masks[:k + 1]):
        return seq.items[k] if k < len(seq.items) else None
    before = np.zeros(n, dtype=np.int64)    # members so far, per node
    parts, taken = [], np.zeros(n, dtype=bool)
    for item, m in zip(seq.items, seq.masks):
        hit = (before == k) if m is True else (m & (before == k))
        if hit.any():
            sel = _where(hit)
            parts.append((sel, take(item, sel) if isinstance(item, VARYING) else item))
            taken |= hit
        before = before + (1 if m is True else m)
    return merge(parts + [(_where(~taken), None)], n)


_NUMPY_COMPARE = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
                  ">": np.greater, ">=": np.greater_equal}


def _comparable(a, b) -> bool:
    ka, kb = _num_kind(a), _num_kind(b)
    if ka is None or kb is None or "bool" in (ka, kb):
        return ka == kb == "bool"
    if ka == kb:
        return True
    ints = a if ka == "int" else b
    return _abs_max(ints) < FLOAT_EXACT


def _arith_ok(op: str, a, b) -> bool:
    ka, kb = _num_kind(a), _num_kind(b)
    if ka not in ("int", "float") or kb not in ("int", "float"):
        return False
    if ka == kb == "int":
        x = _abs_max(a)
        y = _abs_max(b)
        bound = x * y if op == "*" else x + y
        return bound < INT_LIMIT
    return _comparable(a, b)


def _numeric_arith(op: str, a, b):
    x, y = _arr(a), _arr(b)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if np.any(np.asarray(y) == 0):
        raise EvalError("division by zero")
    if op == "/":
        if _num_kind(a) == _num_kind(b) == "int":
            q = np.abs(x) // np.abs(y)
            return np.where((np.asarray(x) >= 0) == (np.asarray(y) >= 0), q, -q)
        return np.true_divide(x, y)
    if _num_kind(a) == _num_kind(b) == "int":
        q = np.abs(x) // np.abs(y)
        q = np.where((np.asarray(x) >= 0) == (np.asarray(y) >= 0), q, -q)
        return x - y * q
    return np.fmod(x, y)


def _op(ir: P.Op):
    op, left, right = ir.op, vcompile(ir.left), vcompile(ir.right)
    right_reads = P.free_vars(ir.right)
    if op in ("and", "or"):
        def logic(venv, n):
            a = truth(left(venv, n), n)
            if not isinstance(a, np.ndarray):
                if a == (op == "or"):
                    return a
                return _bool_value(truth(right(venv, n), n), n)
            undecided = a if op == "and" else ~a
            sel = _where(undecided)
            if not len(sel):
                return Col(a)
            b = truth(right(restrict(venv, sel, right_reads), len(sel)), len(sel))
            out = a.copy()
            out[sel] = b
            return Col(out)
        return logic
    if op == "??":
        constant = isinstance(ir.right, P.Const)    # `m[k] ?? 0`: the filler needs no sub-batch

        def coalesce(venv, n):
            a = left(venv, n)
            if not isinstance(a, VARYING):
                return right(venv, n) if a is None else a
            if not isinstance(a, Col) or a.a.dtype != object:
                return a
            if constant:
                filler = ir.right.value
                return col_of([filler if x is None else x for x in a.a.tolist()])
            missing = np.fromiter(map(is_, a.a.tolist(), repeat(None)), dtype=bool, count=n)
            sel = _where(missing)
            if not len(sel):
                return a
            keep = _where(~missing)
            return merge([(keep, take(a, keep)), (sel, right(restrict(venv, sel, right_reads), len(sel)))], n)
        return coalesce
    if op in _NUMPY_COMPARE:
        compare = _NUMPY_COMPARE[op]

        def cmp(venv, n):
            a, b = left(venv, n), right(venv, n)
            if (isinstance(a, Col) or isinstance(b, Col)) and _comparable(a, b) and (op in ("==", "!=") or _num_kind(a) != "bool"):
                return Col(np.asarray(compare(_arr(a), _arr(b)), dtype=bool))
            if op in ("==", "!="):
                return _equal_each(a, b, n, op == "!=")
            return elementwise(lambda x, y: _order(op, x, y), [a, b], n)
        return cmp
    if op in ("in", "notin"):
        negate = op == "notin"

        def member(venv, n):
            x, c = left(venv, n), right(venv, n)
            if isinstance(c, (dict, list, tuple)) and not c:     # nothing is in an empty one
                return Col(np.full(n, negate)) if isinstance(x, VARYING) else negate
            if isinstance(c, Col) and not isinstance(x, VARYING):
                hits = _contains_in_each(repeat(x), c.a)
            elif isinstance(c, Col) and isinstance(x, Col):
                hits = _contains_in_each(x.a.tolist(), c.a)
            elif isinstance(x, Col) and isinstance(c, (dict, list, tuple)):
                encoded = codes_of(x)
                if encoded is not None:     # once per distinct value
                    hits = np.fromiter(map(c.__contains__, encoded[1]), dtype=bool, count=len(encoded[1]))[encoded[0]]
                else:
                    hits = np.fromiter(map(c.__contains__, x.a.tolist()), dtype=bool, count=n)
            else:
                return elementwise(lambda x, c: _contains(c, x) != negate, [x, c], n)
            return Col(~hits if negate else hits)
        return member
    arith = _ARITH[op]

    def calc(venv, n):
        a, b = left(venv, n), right(venv, n)
        if op == "+" and _listy(a) and _listy(b) and (isinstance(a, Seq) or isinstance(b, Seq)):
            a, b = as_seq(a), as_seq(b)
            return Seq(a.items + b.items, a.masks + b.masks)
        if (isinstance(a, Col) or isinstance(b, Col)) and _arith_ok(op, a, b):
            return Col(np.asarray(_numeric_arith(op, a, b)))
        return elementwise(lambda x, y: None if x is None or y is None else arith(x, y), [a, b], n)
    return calc


def _contains_in_each(items, containers: np.ndarray) -> np.ndarray:
    """`x in c` for every container c of a column and its item x, as the reference's _contains."""
    cs = containers.tolist()
    kinds = set(map(type, cs))
    if len(kinds) == 1 and kinds <= {dict, list}:    # one kind of container: membership in C
        return np.fromiter(map(kinds.pop().__contains__, cs, items), dtype=bool, count=len(cs))
    return np.fromiter(map(_contains, cs, items), dtype=bool, count=len(cs))


def _equal_each(a, b, n: int, negate: bool):
    """`a == b` (or !=) node by node for values numpy cannot compare: Python's equality, each
    distinct value of a kept column compared once."""
    same = ne if negate else eq
    if isinstance(a, Col) and not isinstance(b, VARYING):
        encoded = codes_of(a)
        if encoded is not None:
            return Col(np.fromiter(map(same, encoded[1], repeat(b)), dtype=bool, count=len(encoded[1]))[encoded[0]])
        return Col(np.fromiter(map(same, a.a.tolist(), repeat(b)), dtype=bool, count=n))
    if isinstance(b, Col) and not isinstance(a, VARYING):
        return Col(np.fromiter(map(same, repeat(a), b.a.tolist()), dtype=bool, count=n))
    if isinstance(a, Col) and isinstance(b, Col):
        return Col(np.fromiter(map(same, a.a.tolist(), b.a.tolist()), dtype=bool, count=n))
    return elementwise(same, [a, b], n)


def _not(ir: P.Not):
    operand = vcompile(ir.operand)

    def run(venv, n):
        t = truth(operand(venv, n), n)
        return Col(~t) if isinstance(t, np.ndarray) else not t
    return run


def _neg(ir: P.Neg):
    operand = vcompile(ir.operand)

    def run(venv, n):
        v = operand(venv, n)
        if isinstance(v, Col) and _num_kind(v) in ("int", "float"):
            return Col(-v.a)
        return elementwise(lambda x: None if x is None else -x, [v], n)
    return run


def _cond(ir: P.Cond):
    cond, then, else_ = vcompile(ir.cond), vcompile(ir.then), vcompile(ir.else_)
    then_reads, else_reads = P.free_vars(ir.then), P.free_vars(ir.else_)
    # Branches of arithmetic on numbers: both computed over the batch and picked from, when
    # neither fails anywhere (cheaper than a sub-batch each, and the values are the same).
    arithmetic = _arithmetic(ir.then) and _arithmetic(ir.else_)

    def run(venv, n):
        c = truth(cond(venv, n), n)
        if not isinstance(c, np.ndarray):
            return then(venv, n) if c else else_(venv, n)
        if arithmetic:
            picked = _picked(c, then, else_, venv, n)
            if picked is not None:
                return picked
        yes, no = _where(c), _where(~c)
        parts = []
        if len(yes):
            parts.append((yes, then(restrict(venv, yes, then_reads), len(yes)) if len(yes) < n else then(venv, n)))
        if len(no):
            parts.append((no, else_(restrict(venv, no, else_reads), len(no)) if len(no) < n else else_(venv, n)))
        return merge(parts, n)
    return run


def _arithmetic(ir) -> bool:
    """Numbers, variables, fields and arithmetic on them only: nothing that is costly or could
    mean anything but a number."""
    if isinstance(ir, (P.Const, P.Var)):
        return True
    if isinstance(ir, P.GetField):
        return _arithmetic(ir.target)
    if isinstance(ir, P.Op) and ir.op not in _ARITH:
        return False
    return _cheap(ir) and all(_arithmetic(part) for part in P.parts(ir))


def _picked(c: np.ndarray, then: VFn, else_: VFn, venv: dict, n: int) -> "Col | None":
    """Where c holds then's value, else else_'s, both computed over the batch; None when either
    fails somewhere or their numbers are not of one kind (the branches are then taken apart)."""
    try:
        a, b = then(dict(venv), n), else_(dict(venv), n)
    except POLICY_ERRORS:
        return None
    kind = _num_kind(a)
    if kind not in ("int", "float") or _num_kind(b) != kind:
        return None
    return Col(np.where(c, _arr(a), _arr(b)))


def _list(ir: P.MakeList):
    items = [vcompile(i) for i in ir.items]

    def run(venv, n):
        values = [f(venv, n) for f in items]
        if not any(isinstance(v, VARYING) for v in values):
            return values
        return Seq(values, [True] * len(values))
    return run


def _map(ir: P.MakeMap):
    keys, values = ir.keys, [vcompile(v) for v in ir.values]

    def run(venv, n):
        fields = {k: f(venv, n) for k, f in zip(keys, values)}
        return Rec(fields) if any(isinstance(v, VARYING) for v in fields.values()) else fields
    return run


# ---- comprehensions --------------------------------------------------------------------------

def _members(source, n: int):
    """(item, mask) pairs of a list that is the same for every node or a Seq; None for a
    list per node, which has no vector form."""
    if isinstance(source, Seq):
        return list(zip(source.items, source.masks))
    if isinstance(source, VARYING):
        return None
    return [(x, True) for x in (source or ())]


def _comp(ir: P.Comp):
    kind, var = ir.kind, ir.var
    source = vcompile(ir.source)
    element = vcompile(ir.element) if ir.element is not None else None
    where = vcompile(ir.where) if ir.where is not None else None
    ref = compile_ir(ir)
    inner = tuple(sorted(P.free_vars(ir)))
    where_reads = P.free_vars(ir.where) if ir.where is not None else None
    element_reads = P.free_vars(ir.element) if ir.element is not None else None

    def member_mask(venv, n, mask):
        """Where the item is a member and its `where` holds."""
        if where is None:
            return mask
        t = on(lambda e, k: truth(where(e, k), k), venv, n, mask, where_reads)
        if t is None:
            return np.zeros(n, dtype=bool)
        if mask is not True:
            t = mask & t
        return t if isinstance(t, np.ndarray) else bool(t)

    def run(venv, n):
        src = source(venv, n)
        members = _members(src, n)
        if members is None or kind == "group":
            return per_node(venv, n, src)
        if kind in ("any", "all", "first"):
            return until_decided(venv, n, members)
        chosen = []   # (value, mask) of the members that pass `where`
        for x, mask in members:
            venv[var] = x
            m = member_mask(venv, n, mask)
            if m is False:
                continue
            chosen.append((on(element, venv, n, m, element_reads) if element is not None else x, m))
        return aggregate(kind, chosen, n)

    def per_node(venv, n, src):
        """Node by node, but only where the list has members: lists of pods, taints or
        images are often empty, and an empty list's answer is known. Lists with many members
        in all are one batch of their members instead."""
        varying = [v for v in inner if isinstance(venv.get(v), VARYING)]
        if not isinstance(src, Col):
            return node_by_node(ref, venv, varying, n)
        if kind != "group":
            try:    # a node's null (or a value with no members) is the reference's to judge
                sizes = np.fromiter(map(len, src.a), dtype=np.int64, count=n)
            except TypeError:
                sizes = None
            if sizes is not None and sizes.sum() >= EXPLODE_MIN:
                return exploded(venv, n, src.a, sizes)
        full = np.fromiter((bool(x) for x in src.a), dtype=bool, count=n)
        if full.all():
            return node_by_node(ref, venv, varying, n)
        empty = {} if kind == "group" else _AGGREGATE[kind]([])
        some = _where(full)
        if not len(some):
            return empty
        parts = [(some, node_by_node(ref, restrict(venv, some), varying, len(some)))]
        if kind == "list":   # a list of its own for every node, as the reference makes
            rest = _where(~full)
            return merge(parts + [(rest, col_of([[] for _ in range(len(rest))]))], n)
        return merge(parts + [(_where(~full), empty)], n)

    def exploded(venv, n, lists, sizes):
        """Every node's members as one batch of items, each knowing its node; the answers
        gathered per node, in member order. The reference stops any / all / first at the
        member that decides: a policy error on a later one makes the caller ask it."""
        owner = np.repeat(np.arange(n), sizes)
        m = len(owner)
        env = restrict(venv, owner)
        env[var] = Col(np.fromiter(chain.from_iterable(lists), dtype=object, count=m))
        if kind in ("any", "all") and element is None and where is not None:
            member, values = np.ones(m, dtype=bool), Col(_as_mask(truth(where(env, m), m), m))
        else:
            member = _as_mask(member_mask(env, m, True), m)
            values = on(element, env, m, member) if element is not None else env[var]
        chosen = _where(member)
        if kind in ("any", "all"):
            t = _as_mask(truth(values, m), m)[chosen] if len(chosen) else np.zeros(0, dtype=bool)
            hits = np.bincount(owner[chosen][t if kind == "any" else ~t], minlength=n)
            return Col(hits > 0 if kind == "any" else hits == 0)
        per_node_values: list = [[] for _ in range(n)]
        for o, x in zip(owner[chosen].tolist(), values_of(take(values, chosen), len(chosen))):
            per_node_values[o].append(x)
        if kind == "list":
            return Col(np.fromiter(per_node_values, dtype=object, count=n))
        return col_of([_AGGREGATE[kind](xs) for xs in per_node_values])

    def until_decided(venv, n, members):
        """any / all / first look at the members in order and stop, node by node, at the one
        that decides, as the reference does (later members are not evaluated there)."""
        decided = np.zeros(n, dtype=bool)
        found = []      # first: (value, mask) per deciding member
        want = kind != "all"
        for x, mask in members:
            venv[var] = x
            open_ = ~decided if mask is True else mask & ~decided
            if not open_.any():
                continue
            # `any(x in xs where c)`: c is the predicate; otherwise `where` chooses the members.
            predicate = where if kind != "first" and element is None else element
            m = open_ if predicate is where else member_mask(venv, n, open_)
            if m is False or not np.any(m):
                continue
            m = np.broadcast_to(m, (n,)) & open_
            if kind == "first":
                found.append((on(element, venv, n, m, element_reads) if element is not None else x, m))
                decided |= m
                continue
            if predicate is None:
                t = on(lambda e, k: truth(e[var], k), venv, n, m, frozenset((var,)))
            else:
                t = on(lambda e, k: truth(predicate(e, k), k), venv, n, m,
                       where_reads if predicate is where else element_reads)
            decided |= m & (t == want) if isinstance(t, np.ndarray) else (m if bool(t) == want else False)
            if decided.all():
                break
        if kind == "first":
            parts = [(_where(m), take(v, _where(m)) if isinstance(v, VARYING) else v)
                     for v, m in found]
            rest = _where(~decided)
            return merge(parts + [(rest, None)], n)
        return Col(decided if want else ~decided)

    return run


def _as_mask(t, n: int) -> np.ndarray:
    return t if isinstance(t, np.ndarray) else np.full(n, bool(t))


def aggregate(kind: str, chosen: list, n: int):
    if kind == "list":
        return Seq([v for v, _ in chosen], [m for _, m in chosen])
    if kind == "count":
        total = 0
        for _, m in chosen:
            total = total + (m.astype(np.int64) if isinstance(m, np.ndarray) else int(bool(m)))
        return Col(total) if isinstance(total, np.ndarray) else total
    if kind == "sum":
        fast = _sum(chosen, n)
        if fast is not None:
            return fast
    return _per_node_aggregate(kind, chosen, n)


def _sum(chosen: list, n: int):
    """Sum of numbers, when every member is a number of one kind (and, for floats, every
    node has a member, so no node keeps the int 0 a sum starts from)."""
    kinds = {_num_kind(v) for v, _ in chosen}
    if not chosen or len(kinds) != 1 or kinds & {None, "bool"}:
        return None
    kind = kinds.pop()
    if kind == "float":
        present = np.zeros(n, dtype=bool)
        for _, m in chosen:
            present |= m
        if not present.all():
            return None
    bound = sum(_abs_max(v) for v, _ in chosen) if kind == "int" else 0
    if bound >= INT_LIMIT:
        return None
    total = np.zeros(n, dtype=np.int64 if kind == "int" else np.float64)
    for v, m in chosen:
        x = _arr(v)
        total = total + (x if m is True else np.where(m, x, 0))
    return Col(total)


def _per_node_aggregate(kind: str, chosen: list, n: int):
    values = [values_of(v, n) for v, _ in chosen]
    masks = [m.tolist() if isinstance(m, np.ndarray) else [m] * n for _, m in chosen]
    out = []
    for i in range(n):
        xs = [vs[i] for vs, ms in zip(values, masks) if ms[i]]
        out.append(_AGGREGATE[kind](xs))
    return col_of(out)


# The reference's aggregates, and answers for a list with no members.
_AGGREGATE = {**AGGREGATES, "list": list, "count": len, "group": lambda xs: {}}


def _fold(ir: P.Fold):
    acc, var = ir.acc, ir.var
    init, source, body = vcompile(ir.init), vcompile(ir.source), vcompile(ir.body)
    ref = compile_ir(ir)
    inner = tuple(sorted(P.free_vars(ir)))

    def run(venv, n):
        seq = source(venv, n)
        if isinstance(seq, VARYING):
            return node_by_node(ref, venv, [v for v in inner if isinstance(venv.get(v), VARYING)], n)
        value = init(venv, n)
        for x in seq or ():
            venv[acc], venv[var] = value, x
            value = body(venv, n)
        return value
    return run


# ---- builtins --------------------------------------------------------------------------------

def _len(args, n):
    (x,) = args
    if isinstance(x, Seq):
        return aggregate("count", [(None, m) for m in x.masks], n)
    return None


def _float(args, n):
    (x,) = args
    if not isinstance(x, Col):
        return None
    if _num_kind(x) == "float":
        return x
    if _num_kind(x) == "int":
        return Col(x.a.astype(np.float64))
    return None


def _int(args, n):
    (x,) = args
    if not isinstance(x, Col):
        return None
    if _num_kind(x) == "int":
        return x
    if _num_kind(x) == "float" and np.isfinite(x.a).all() and np.abs(x.a).max(initial=0) < INT_LIMIT:
        return Col(np.trunc(x.a).astype(np.int64))
    return None


def _abs(args, n):
    (x,) = args
    return Col(np.abs(x.a)) if isinstance(x, Col) and _num_kind(x) in ("int", "float") else None


def _sqrt(args, n):
    (x,) = args
    if isinstance(x, Col) and _num_kind(x) == "float" and (x.a >= 0).all():
        return Col(np.sqrt(x.a))
    return None


def _min_max(pick):
    def run(args, n):
        if len(args) == 2 and any(isinstance(a, Col) for a in args) and _comparable(*args) and _num_kind(args[0]) in ("int", "float"):
            a, b = args
            # Python's min/max return the first argument on ties; same kind, same value.
            return Col(np.asarray(pick(_arr(a), _arr(b))))
        return None
    return run


def _quantity_amount(convert):
    def run(args, n):
        (x,) = args
        if isinstance(x, Col) and x.a.dtype == object:
            return col_of([convert(q) for q in x.a.tolist()])
        return None
    return run


def _count_on_node(venv, args, n):
    nodes, namespace, selector = args
    if not isinstance(nodes, Col) or isinstance(namespace, VARYING) or isinstance(selector, VARYING):
        return None
    state = venv.get("$state")
    if _batch_nodes(nodes):     # the batch's nodes: their counts read at their positions
        return Col(state.count_matching_by_position(namespace, selector)[venv["$pos"]])
    each = nodes.a.tolist()
    if set(map(type, each)) != {Node}:
        return None
    counts = state.count_matching(namespace, selector)    # asked once, not once per node
    return Col(np.fromiter((counts.get(x.metadata.name, 0) for x in each), dtype=np.int64, count=n))


def _has_image(venv, args, n):
    nodes, name = args
    if not _batch_nodes(nodes) or isinstance(name, VARYING):
        return None
    return Col(venv["$state"].image_holder_mask(name)[venv["$pos"]])


def _node_named(venv, args, n):
    (names,) = args
    if not isinstance(names, Col):
        return None
    return Col(np.fromiter(map(venv["$state"].nodes.get, names.a.tolist()), dtype=object, count=n))


_VECTOR_BUILTINS = {
    "len": _len, "float": _float, "int": _int, "abs": _abs, "sqrt": _sqrt,
    "min": _min_max(np.minimum), "max": _min_max(np.maximum),
    "milli": _quantity_amount(bi.milli), "value": _quantity_amount(bi.value),
}
# These are given the batch's venv too.
_VECTOR_STATE_BUILTINS = {"count_on_node": _count_on_node, "has_image": _has_image, "node_named": _node_named}


def _call(ir: P.CallBuiltin):
    b = bi.REGISTRY[ir.name]
    args = [vcompile(a) for a in ir.args]
    fast = _VECTOR_BUILTINS.get(ir.name)
    with_state = _VECTOR_STATE_BUILTINS.get(ir.name)
    impl = b.impl

    def run(venv, n):
        values = [a(venv, n) for a in args]
        if fast is not None:
            out = fast(values, n)
            if out is not None:
                return out
        if b.needs_state:
            state = venv.get("$state")
            out = with_state(venv, values, n) if with_state is not None else None
            if out is not None:
                return out
            return elementwise(lambda *xs: impl(state, *xs), values, n)
        return elementwise(impl, values, n)
    return run


def _bind(ir: P.Bind):
    names, values, body = ir.names, [vcompile(v) for v in ir.values], vcompile(ir.body)

    def run(venv, n):
        for name, v in zip(names, values):
            venv[name] = v(venv, n)
        return body(venv, n)
    return run


def _format(ir: P.Format):
    parts = [p if isinstance(p, str) else vcompile(p) for p in ir.parts]

    def run(venv, n):
        texts = []
        for p in parts:
            v = p if isinstance(p, str) else p(venv, n)
            texts.append(map(_text, values_of(v, n)) if isinstance(v, VARYING) else repeat(bi.to_string(v), n))
        return col_of(list(map("".join, zip(*texts))))
    return run


def _text(x) -> str:
    return x if type(x) is str else bi.to_string(x)


# (Var and Const are their own vector forms: see vcompile.)
_VECTOR = {
    P.GetField: _field, P.GetIndex: _index, P.Op: _op, P.Not: _not, P.Neg: _neg,
    P.Cond: _cond, P.MakeList: _list, P.MakeMap: _map, P.Comp: _comp, P.Fold: _fold,
    P.CallBuiltin: _call, P.Bind: _bind, P.Format: _format,
}


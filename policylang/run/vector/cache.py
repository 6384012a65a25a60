"""The node cache: per node of a cluster state, the values of expressions that read nothing
but nodes (and plain values), kept across pods, and the keys they are kept under.

What depends on a node's objects only is computed once per node; what depends on the pods on
a node is recomputed for the nodes whose version changed (a pod bound or removed there). An
entry is keyed by what its expression reads (``analysis.field_reads``): the cache keys of the
columns it reads and the frozen values of the plain fields.
"""

from __future__ import annotations

import weakref
from collections import Counter, OrderedDict

import attrs
import numpy as np

from ...builtins import POLICY_ERRORS
from ...api.model import Node
from ...api.quantity import Quantity
from . import tuning
from .values import VARYING, Col, Rec, Seq, VFn, num_kind, plain_members, restrict, values_of, where_true

_NOWHERE = np.zeros(0, dtype=np.int64)


class Unfrozen(Exception):
    pass


def freeze(v, budget: list):
    """A hashable stand-in for a plain value, types kept apart (1, 1.0 and True differ);
    Unfrozen for objects and for values too large to be worth a cache entry.

    Each value costs one of the budget, so a list, map or record with more members than the
    budget has left is refused before any of them is frozen (the feasible nodes, a list of
    hundreds of Nodes, are read by score expressions on every pod)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise Unfrozen
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bool, int, float, Quantity)):
        return (type(v), v)
    if isinstance(v, (list, tuple)):
        _afford(len(v), budget)
        return ("list", tuple(freeze(x, budget) for x in v))
    if type(v) is dict:     # not the cluster view, whose lists are made as they are read
        _afford(len(v), budget)
        return ("map", tuple((k, freeze(x, budget)) for k, x in v.items()))
    if attrs.has(type(v)):   # cluster data (a toleration, a selector): by value, field by field
        fields = attrs.fields(type(v))
        _afford(len(fields), budget)
        return (type(v), tuple(freeze(getattr(v, f.name), budget) for f in fields))
    raise Unfrozen


def _afford(members: int, budget: list) -> None:
    if members > budget[0]:
        raise Unfrozen


def _frozen(v, memo: dict) -> tuple:
    """freeze(v) and what it costs of the budget, remembered per object in ``memo`` (id →
    (value, frozen or None, cost): a value once made never changes): the same lists and
    records (the pod's tolerations, a constraint) are keys of many expressions of a cycle."""
    kind = type(v)
    if v is None or kind is str:
        return v, 1
    if kind is int or kind is bool or kind is float:
        return (kind, v), 1
    if (kind is list or kind is tuple or kind is dict) and len(v) > tuning.FREEZE_BUDGET:
        # Refused at once (the feasible nodes, say): nothing to remember, and remembering would
        # keep every such list of every cycle alive until the memo starts afresh.
        return None, tuning.FREEZE_BUDGET + 1
    hit = memo.get(id(v))
    if hit is None or hit[0] is not v:
        budget = [tuning.FREEZE_BUDGET]
        try:
            hit = (v, freeze(v, budget), tuning.FREEZE_BUDGET - budget[0])
        except Unfrozen:
            hit = (v, None, tuning.FREEZE_BUDGET + 1)
        if len(memo) >= tuning.FROZEN_MAX:
            memo.clear()
        memo[id(v)] = hit
    return hit[1], hit[2]


def cache_key(token, reads: tuple, venv: dict, memo: dict):
    """What an expression's value on a node depends on besides the node: the cache keys of the
    columns it reads and the frozen values of the plain fields it reads; None when one of
    these is too large (or not a value) to be worth a key."""
    parts = [token]
    budget = tuning.FREEZE_BUDGET
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
            frozen, cost = _frozen(x, memo)
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
            if len(index) <= tuning.FEW_DISTINCT:
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
            kind = num_kind(v)
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
    is recomputed for the nodes whose version changed (a pod bound or removed there).

    The executor keeps one per state (``NodeCache.of``), weakly: reading a state writes nothing
    into it, executors of several plans share a state's cache (their expressions' keys differ),
    and a state no one holds any longer is dropped with its cache."""

    def __init__(self, state):
        self._state = weakref.ref(state)    # the state holds no cache, a cache no state
        self._by_position = None
        self.frozen: dict = {}      # see _frozen
        self.entries: OrderedDict = OrderedDict()
        self.uncacheable: set = set()     # expressions' tokens
        self.keys_made: dict = {}         # token → (generation of its first key, keys made)
        self.met_again: Counter = Counter()   # token → its keys looked up again after a bind
        self.created = 0
        self.max_entries = max(64, tuning.MAX_VALUES // max(1, len(state.node_index)))

    @classmethod
    def of(cls, state) -> "NodeCache":
        cache = _CACHES.get(state)
        if cache is None:
            cache = _CACHES[state] = cls(state)
        return cache

    @classmethod
    def forget(cls, state) -> None:
        """Drop what is kept for ``state``: the plans whose expressions it holds were replaced (a
        server's policy reloaded), and their keys would never be met again."""
        _CACHES.pop(state, None)

    @property
    def state(self):
        return self._state()

    def by_position(self) -> "tuple[np.ndarray, np.ndarray]":
        """The state's nodes and their names as arrays in position order, to be picked by positions."""
        if self._by_position is None:
            state = self._state()
            nodes = state.node_list
            self._by_position = (np.fromiter(nodes, dtype=object, count=len(nodes)),
                                 np.fromiter(state.nodes, dtype=object, count=len(nodes)))
        return self._by_position

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
        state = self._state()
        entry = self.entries.get(key)
        if entry is None:
            if self._one_off(key[0]):
                self.uncacheable.add(key[0])
                return vec(venv, n)
            self.created += 1
            ident = -self.created if dynamic else self.created   # negative: recomputed as pods move
            entry = self.entries[key] = _Entry(ident, len(state.node_index), state.generation)
            if len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)
            seen = False
        else:
            seen = True
            self.entries.move_to_end(key)
            if entry.born != state.generation and not entry.met_again:
                entry.met_again = True
                self.met_again[key[0]] += 1
            last = entry.last
            if last is not None and last[0] is pos and (not dynamic or last[1] == state.generation):
                return last[2]
        sub = self._stale(entry, dynamic, pos)
        widen = _widening(venv, free) if seen and len(sub) > tuning.FEW_NODES and n < len(entry.versions) else None
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
            compute = by_node if len(sub) <= tuning.FEW_NODES and entry.values is not None else vec
            v = compute(restrict(venv, sub, free) if len(sub) < n else dict(venv), len(sub))
            if not self._keep(key, entry, pos[sub], v):
                return vec(venv, n) if len(sub) < n else v
        if entry.synced != state.generation and (widen is not None or len(sub)):
            self._sync(entry, dynamic)
        col = entry.column(pos)
        entry.last = (pos, state.generation, col)
        return col

    def _one_off(self, token) -> bool:
        """Whether an expression's keys are mostly used in one cycle only (keys over counts
        that change with every bind, say): ONE_OFF_KEYS keys made over as many binds, fewer
        than one in MET_AGAIN_ONE_IN of them looked up again after a bind. Such values are
        computed, not kept."""
        generation = self._state().generation
        first, made = self.keys_made.get(token, (generation, 0))
        self.keys_made[token] = (first, made + 1)
        return made >= tuning.ONE_OFF_KEYS and generation - first >= tuning.ONE_OFF_KEYS \
            and self.met_again[token] * tuning.MET_AGAIN_ONE_IN < made

    def _stale(self, entry: _Entry, dynamic: bool, pos: "np.ndarray | None") -> np.ndarray:
        """Where in pos (None: every node) the nodes are whose values are missing or out of
        date: none while the entry is in sync."""
        state = self._state()
        if entry.synced is not None and (not dynamic or entry.synced == state.generation):
            return _NOWHERE
        if pos is None:
            pos = slice(None)
        if dynamic:
            return where_true(entry.versions[pos] != state.node_versions[pos])
        return where_true(entry.versions[pos] < 0)

    def _sync(self, entry: _Entry, dynamic: bool) -> None:
        """Note the entry in sync when, values just computed, every node's is up to date."""
        state = self._state()
        if entry.synced is not None and dynamic:
            changed = state.changed_since(entry.synced)
            if changed is not None and len(changed) <= tuning.FEW_CHANGED:
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
            out[var] = Col(self.by_position()[0][pos], NODES_KEY)
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
        entry.versions[at] = self._state().node_versions[at]
        return True


NODES_KEY = ("node",)   # the key of a batch's own node column (venv["$pos"] says where its nodes are)


def is_batch_nodes(v) -> bool:
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
        if is_batch_nodes(v) and node is None:
            node = name
        elif isinstance(v, Col) and v.source is not None and v.source[0].complete():
            kept.append((name, v.source[0]))
        else:
            return None
    return (node, kept) if node is not None or kept else None


def node_positions(state, seq) -> "np.ndarray | None":
    """Where each item is in the state's node order, when every item is one of its nodes."""
    if not len(seq):
        return np.zeros(0, dtype=np.int64)
    if state is None or not isinstance(seq[0], Node):
        return None
    return state.positions(seq)


def by_position(state) -> "tuple[np.ndarray, np.ndarray]":
    """The state's nodes and their names as arrays in position order, to be picked by positions."""
    return NodeCache.of(state).by_position()


# The executor's node cache of each state, for as long as something else holds the state.
_CACHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

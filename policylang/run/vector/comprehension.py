"""Comprehensions over a batch of nodes, by strategy: a list that is the same for every node
(or a Seq) member by member, each member's parts over the nodes it is a member on; any / all /
first member by member until each node is decided; a list per node node by node where it has
members, or, when the lists are long in all, as one batch of every node's members."""

from __future__ import annotations

from itertools import chain

import numpy as np

from ... import plan as P
from ...cost import charge
from ..interpret import AGGREGATES, compile_ir
from . import tuning
from .values import (INT_LIMIT, VARYING, Col, Seq, abs_max, array_of, as_mask, col_of, merge, node_by_node, num_kind,
                     on, restrict, take, truth, values_of, where_true)


def _members(source, n: int):
    """(item, mask) pairs of a list that is the same for every node or a Seq; None for a
    list per node, which has no vector form."""
    if isinstance(source, Seq):
        return list(zip(source.items, source.masks))
    if isinstance(source, VARYING):
        return None
    return [(x, True) for x in (source or ())]


def comprehension_form(ir: P.Comp, sub):
    kind, var = ir.kind, ir.var
    source = sub(ir.source)
    element = sub(ir.element) if ir.element is not None else None
    where = sub(ir.where) if ir.where is not None else None
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
        charge(len(members) * n)    # as the reference, which goes through the list on each node
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
            if sizes is not None and sizes.sum() >= tuning.EXPLODE_MIN:
                return exploded(venv, n, src.a, sizes)
        full = np.fromiter((bool(x) for x in src.a), dtype=bool, count=n)
        if full.all():
            return node_by_node(ref, venv, varying, n)
        empty = {} if kind == "group" else AGGREGATE[kind]([])
        some = where_true(full)
        if not len(some):
            return empty
        parts = [(some, node_by_node(ref, restrict(venv, some), varying, len(some)))]
        if kind == "list":   # a list of its own for every node, as the reference makes
            rest = where_true(~full)
            return merge(parts + [(rest, col_of([[] for _ in range(len(rest))]))], n)
        return merge(parts + [(where_true(~full), empty)], n)

    def exploded(venv, n, lists, sizes):
        """Every node's members as one batch of items, each knowing its node; the answers
        gathered per node, in member order. The reference stops any / all / first at the
        member that decides: a policy error on a later one makes the caller ask it."""
        owner = np.repeat(np.arange(n), sizes)
        m = len(owner)
        charge(m)
        env = restrict(venv, owner)
        env[var] = Col(np.fromiter(chain.from_iterable(lists), dtype=object, count=m))
        if kind in ("any", "all") and element is None and where is not None:
            member, values = np.ones(m, dtype=bool), Col(as_mask(truth(where(env, m), m), m))
        else:
            member = as_mask(member_mask(env, m, True), m)
            values = on(element, env, m, member) if element is not None else env[var]
        chosen = where_true(member)
        if kind in ("any", "all"):
            t = as_mask(truth(values, m), m)[chosen] if len(chosen) else np.zeros(0, dtype=bool)
            hits = np.bincount(owner[chosen][t if kind == "any" else ~t], minlength=n)
            return Col(hits > 0 if kind == "any" else hits == 0)
        per_node_values: list = [[] for _ in range(n)]
        for o, x in zip(owner[chosen].tolist(), values_of(take(values, chosen), len(chosen))):
            per_node_values[o].append(x)
        if kind == "list":
            return Col(np.fromiter(per_node_values, dtype=object, count=n))
        return col_of([AGGREGATE[kind](xs) for xs in per_node_values])

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
            parts = [(where_true(m), take(v, where_true(m)) if isinstance(v, VARYING) else v)
                     for v, m in found]
            rest = where_true(~decided)
            return merge(parts + [(rest, None)], n)
        return Col(decided if want else ~decided)

    return run


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
    kinds = {num_kind(v) for v, _ in chosen}
    if not chosen or len(kinds) != 1 or kinds & {None, "bool"}:
        return None
    kind = kinds.pop()
    if kind == "float":
        present = np.zeros(n, dtype=bool)
        for _, m in chosen:
            present |= m
        if not present.all():
            return None
    bound = sum(abs_max(v) for v, _ in chosen) if kind == "int" else 0
    if bound >= INT_LIMIT:
        return None
    total = np.zeros(n, dtype=np.int64 if kind == "int" else np.float64)
    for v, m in chosen:
        x = array_of(v)
        total = total + (x if m is True else np.where(m, x, 0))
    return Col(total)


def _per_node_aggregate(kind: str, chosen: list, n: int):
    values = [values_of(v, n) for v, _ in chosen]
    masks = [m.tolist() if isinstance(m, np.ndarray) else [m] * n for _, m in chosen]
    out = []
    for i in range(n):
        xs = [vs[i] for vs, ms in zip(values, masks) if ms[i]]
        out.append(AGGREGATE[kind](xs))
    return col_of(out)


# The reference's aggregates, and answers for a list with no members.
AGGREGATE = {**AGGREGATES, "list": list, "count": len, "group": lambda xs: {}}

"""Filter and Score for a batch of nodes at once, with the vector executor.

The same cycle as the reference's node-by-node loops in schedule.py: a node meets a
plugin's filter only if every earlier plugin passed it, a filter's steps stop at its first
rejection, scores are raw values then normalised. A policy error raises
``PolicyErrorInBatch`` so that the caller decides the pod with the reference interpreter,
which reports the error exactly as it would.
"""

from __future__ import annotations

import numpy as np

from itertools import repeat
from operator import is_

from ..cost import CostExceeded
from . import reference
from .framework import MAX_NODE_SCORE, NORMALIZERS, Status, normalize_named, reasons_of
from .phases import nominated_ahead, run_filters_with_nominated
from .vector import (INT_LIMIT, NODES_KEY, POLICY_ERRORS, Col, NodeCache, Rec, Seq, member_codes, node_positions,
                     plain_members, restrict, truth, values_of, vcompile_lazily)


class PolicyErrorInBatch(Exception):
    """A policy failed on some node of the batch; the reference interpreter will say how."""


class Batch:
    """Nodes as columns: the objects, and where each is in the state's node order (for the
    node cache)."""

    def __init__(self, state, nodes: list):
        self.nodes = np.fromiter(nodes, dtype=object, count=len(nodes))
        self.pos = node_positions(state, nodes)
        if self.pos is None:
            raise ValueError("a batch holds the cluster state's own nodes")
        self.cache = NodeCache.of(state)

    def env(self, base: dict, sel: "np.ndarray | None" = None) -> dict:
        nodes, pos = (self.nodes, self.pos) if sel is None else (self.nodes[sel], self.pos[sel])
        return {**base, "node": Col(nodes, NODES_KEY), "$pos": pos, "$cache": self.cache}


def filter_batch(exe, pre, nodes: list) -> list:
    """For each node, the first failing plugin's Status, or None when it fits."""
    out: list = [None] * len(nodes)
    alive = np.arange(len(nodes))
    statuses: dict = {}
    if not nodes:
        return out
    columns = None
    try:
        for plugin in exe.plugins:
            for f in pre.active.get(plugin.name, ()):
                if not len(alive):
                    return out
                base = pre.envs[plugin.name]
                columns = columns or Batch(base["$state"], nodes)
                venv = columns.env(base, alive)
                for step in f.node_steps:
                    n = len(alive)
                    if step.kind == "let":
                        venv[step.name] = step.vfn(venv, n)
                        continue
                    hit = truth(step.vfn(venv, n), n)
                    if not isinstance(hit, np.ndarray):
                        hit = np.full(n, bool(hit))
                    if not hit.any():
                        continue
                    rejected = np.flatnonzero(hit)
                    groups, reasons = reason_groups(step.vreason(restrict(venv, rejected), len(rejected)),
                                                    len(rejected))
                    found = []
                    for r in reasons:
                        key = (plugin.name, id(step), r)
                        if key not in statuses:
                            statuses[key] = Status(step.code, r, plugin.name, step.origin)
                        found.append(statuses[key])
                    for i, g in zip(alive[rejected].tolist(), groups):
                        out[i] = found[g]
                    keep = np.flatnonzero(~hit)
                    alive = alive[keep]
                    venv = restrict(venv, keep)
                    if not len(alive):
                        break
    except POLICY_ERRORS as err:
        raise PolicyErrorInBatch(str(err)) from err
    except CostExceeded as err:
        err.plugin = err.plugin or plugin.name
        raise
    return out


def reason_groups(v, n: int) -> tuple[list[int], list[tuple]]:
    """The rejected nodes' reasons as (each node's group, each group's reasons): nodes with the
    same reasons share a group. A list of plain reasons chosen per node (`Seq`) is grouped by
    which members each node has, without making each node's list."""
    if not isinstance(v, (Col, Rec, Seq)):
        return [0] * n, [reasons_of(v)]
    if isinstance(v, Seq) and plain_members(v):
        groups, lists = member_codes(v, n)
        return groups, [reasons_of(x) for x in lists]
    index: dict = {}
    # Keys as plain as the values allow (a string, a list's tuple): reasons_of once per group.
    groups = [index.setdefault(r if type(r) is str else tuple(r) if type(r) is list else reasons_of(r), len(index))
              for r in values_of(v, n)]
    return groups, [reasons_of(r) for r in index]


def raw_scores(plugin, env: dict, feasible: Batch) -> np.ndarray:
    """The plugin's raw score on each feasible node, as int64 (or objects when too large)."""
    s = plugin.score
    venv = feasible.env(env)
    n = len(feasible.nodes)
    try:
        for step in s.node_steps:
            venv[step.name] = step.vfn(venv, n)
        raw = s.vvalue(venv, n)
    except POLICY_ERRORS as err:
        raise PolicyErrorInBatch(str(err)) from err
    except CostExceeded as err:
        err.plugin = err.plugin or plugin.name
        raise
    if isinstance(raw, Col) and raw.a.dtype.kind == "i":
        return raw.a
    if type(raw) is int and -INT_LIMIT < raw < INT_LIMIT:
        return np.full(n, raw, dtype=np.int64)
    values = [int(r or 0) for r in values_of(raw, n)]
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array(values, dtype=object)


def normalize(s, raws: np.ndarray, env: dict, feasible: Batch, plugin: str) -> np.ndarray:
    """NormalizeScore over the batch, with the reference's integer (and float) arithmetic."""
    limit = (1 << 62) // MAX_NODE_SCORE     # (not np.abs: the smallest int64 is its own absolute value)
    large = raws.dtype == object or (len(raws) and (raws.max() >= limit or raws.min() <= -limit))
    if s.normalize in NORMALIZERS:
        return normalize_named(s.normalize, np.array(raws.tolist(), dtype=object) if large else raws)
    if large:
        return np.array(reference.normalize(s, raws.tolist(), feasible.nodes.tolist(), env, plugin), dtype=object)
    venv = feasible.env({**env, "scores": raws.tolist()})
    venv["score"] = Col(raws)
    n = len(feasible.nodes)
    try:
        out = s.vnormalize(venv, n)
    except POLICY_ERRORS as err:
        raise PolicyErrorInBatch(str(err)) from err
    if isinstance(out, Col) and out.a.dtype.kind == "i":
        return out.a
    values = [int(v or 0) for v in values_of(out, n)]
    return np.array(values, dtype=object)


# ---- the executor ------------------------------------------------------------------------------

class VectorExecutor:
    """Filter and Score for every node at once (a chunk of nodes at a time when sampling), node by
    node where nominated pods must be counted on the node."""
    name = "vector"

    def compile(self, ir) -> tuple:
        # The closure is the vector form's, which evaluates long comprehensions as a batch.
        vfn = vcompile_lazily(ir)
        return (lambda env: vfn(env, 1)), vfn

    def compile_vector(self, ir):
        return vcompile_lazily(ir)

    def filter_in_order(self, exe, state, pod, pre, order: list, sampling):
        whole = node_positions(state, order)
        start = fits = 0
        while start < len(order):
            size = sampling.chunk(pod, fits, start) if sampling is not None else len(order)
            part = order if start == 0 and size >= len(order) else order[start:start + size]
            if part is not order and whole is not None:
                state.remember_positions(part, whole[start:start + size])
            start += len(part)
            if not state.nominated:
                found = filter_batch(exe, pre, part)
            else:
                nominated = {n.metadata.name for n in part if nominated_ahead(state, pod, n.metadata.name)}
                plain = [n for n in part if n.metadata.name not in nominated]
                by_name = dict(zip((n.metadata.name for n in plain), filter_batch(exe, pre, plain)))
                found = [by_name[n.metadata.name] if n.metadata.name in by_name
                         else run_filters_with_nominated(exe, state, pod, pre, n) for n in part]
            passed = np.fromiter(map(is_, found, repeat(None)), dtype=bool, count=len(found))
            fits += int(np.count_nonzero(passed))
            yield part, found, passed, node_positions(state, part)

    def scorer(self, exe, pre, feasible: list):
        columns = None

        def score(plugin, env: dict) -> tuple:
            nonlocal columns
            columns = columns or Batch(env["$state"], feasible)
            raws = raw_scores(plugin, env, columns)
            return raws, normalize(plugin.score, raws, env, columns, plugin.name)
        return score

"""Lifting: a comprehension that is the same for every node but long (a pod-stage pass over
``cluster.nodes``) runs as a batch of its own members."""

from __future__ import annotations

from itertools import compress
from typing import Callable

import numpy as np

from ... import plan as P
from ...builtins import POLICY_ERRORS
from ..interpret import _truthy, compile_ir
from . import tuning
from .analysis import has_long_comprehension
from .cache import NODES_KEY, NodeCache, by_position, node_positions
from .comprehension import AGGREGATE
from .values import VARYING, Col, col_of, on, truth, values_of


_MEMBERS = "$members"   # see lifted_form


def lifted_form(ir: P.Comp, sub, ref: Callable):
    """A comprehension that is the same for every node (a pod-stage one over the cluster's
    nodes, say) but long: its members form a batch of their own, evaluated at once."""
    kind, var = ir.kind, ir.var
    source = sub(ir.source)
    element = sub(ir.element) if ir.element is not None else None
    where = sub(ir.where) if ir.where is not None else None
    by = sub(ir.by) if ir.by is not None else None
    # A short list whose members' parts hold nothing to lift is the reference's loop, over the
    # members already computed.
    nothing_to_lift = not any(has_long_comprehension(x) for x in (ir.element, ir.where, ir.by) if x is not None)
    given = compile_ir(P.Comp(kind, var, P.Var(_MEMBERS), ir.element, ir.where, ir.by)) if nothing_to_lift else None

    def lift(venv: dict, n: int):
        seq = source(venv, 1)
        if not isinstance(seq, (list, tuple)):
            return ref(venv)
        if element is None and where is None and kind != "group":    # max(xs), sum(xs): no batch needed
            try:
                return AGGREGATE[kind](seq)
            except POLICY_ERRORS:
                return ref(venv)
        if len(seq) < tuning.LIFT_MIN:
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
                return AGGREGATE[kind]([])
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
        return AGGREGATE[kind](values)

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
        return groups if kind == "group" else AGGREGATE[kind](out)
    return lift

"""The reference executor: Filter and Score node by node, with the closures of interpret.py.

Simple on purpose: it is the oracle the vector executor (batch.py) is tested against, and what
decides a pod whenever a policy fails somewhere in a batch.
"""

from __future__ import annotations

import numpy as np

from .. import plan as P
from .framework import NORMALIZERS, call, normalize_named
from .interpret import compile_ir, compile_lazily
from .phases import run_filters_with_nominated


class ReferenceExecutor:
    name = "reference"

    def compile(self, ir) -> tuple:
        return compile_lazily(ir), None

    def compile_vector(self, ir):
        return None

    def filter_in_order(self, exe, state, pod, pre, order: list, sampling):
        for node in order:
            status = run_filters_with_nominated(exe, state, pod, pre, node)
            yield [node], [status], np.array([status is None]), None

    def scorer(self, exe, pre, feasible: list):
        def score(plugin, env: dict) -> tuple:
            s = plugin.score
            raws = []
            for node in feasible:
                env["node"] = node
                for step in s.node_steps:
                    env[step.name] = call(step.fn, env, plugin.name, "Score")
                raw = call(s.value, env, plugin.name, "Score")
                raws.append(int(raw or 0))
            return raws, normalize(s, raws, feasible, env, plugin.name)
        return score


def normalize(s, raws: list[int], feasible: list, env: dict, plugin: str):
    """NormalizeScore over Python ints: a named normaliser, or the policy's `normalize with`
    node by node."""
    if s.normalize in NORMALIZERS:
        return normalize_named(s.normalize, np.array(raws, dtype=object))
    body, invariants = s.normalize_fn
    loop = _LoopEnv({**env, "scores": raws}, invariants)
    out = []
    for node, raw in zip(feasible, raws):
        loop["node"], loop["score"] = node, raw
        out.append(int(call(body, loop, plugin, "NormalizeScore") or 0))
    return out


def per_node_loop(ir: P.IR) -> tuple:
    """An expression evaluated for node after node (NormalizeScore's): its parts that read
    neither ``node`` nor ``score`` (an aggregate over ``scores``, say) compiled apart, to be
    evaluated once per loop rather than once per node."""
    body, invariants = P.hoisted(ir, frozenset({"node", "score"}))
    return compile_ir(body), {name: compile_ir(x) for name, x in invariants}


class _LoopEnv(dict):
    """An env whose invariant parts are computed on first read and kept for the whole loop.
    An invariant inside an inlined def may read the def's parameters: the def has bound them
    in this env (names are unique) before its body reads the invariant."""

    def __init__(self, env: dict, invariants: dict):
        super().__init__(env)
        self.invariants = invariants

    def __missing__(self, name: str):
        value = self[name] = self.invariants[name](self)
        return value

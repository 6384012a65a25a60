"""A Plan compiled once into closures, for the executor that will run it.

Each statement becomes a ``_Step`` holding its closure over one env and, for the vector
executor, its vector form; the executor (framework.Executor) decides how expressions compile and
how Filter and Score run over the nodes.
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs

from .. import plan as P
from ..api.model import LabelSelector, Pod
from ..cluster.state import ClusterState
from ..builtins import IntegerOverflow
from ..cost import CostExceeded
from ..frozen import frozen
from .batch import VectorExecutor
from .framework import call, truthy
from .interpret import compile_lazily
from .phases import base_env
from .reference import ReferenceExecutor, per_node_loop
from .vector import tuning

# The executors by name, the default first.
BACKENDS = {"vector": VectorExecutor(), "reference": ReferenceExecutor()}
EXECUTORS = tuple(BACKENDS)


def auto_executor(nodes: int, pods: int) -> str:
    """What `--executor auto` runs for ``pods`` pods over ``nodes`` nodes: the reference
    interpreter for a small run (tuning.AUTO_REFERENCE_WORK), else the vector executor."""
    return "reference" if nodes * max(pods, 1) < tuning.AUTO_REFERENCE_WORK else "vector"


@frozen
class _Step:
    kind: str      # let | skip | reject | restrict
    name: str
    fn: Any
    reason: Any = None
    code: str = ""
    origin: Any = None
    vfn: Any = None       # the vector executor's forms of fn and reason
    vreason: Any = None


def _steps(steps: Iterable, backend) -> tuple:
    """Each step as a closure over one env (and, for the vector executor, also in vector form)."""
    out = []
    for s in steps:
        compile = lambda ir: tuple(map(_naming, backend.compile(ir), (s.origin, s.origin)))  # noqa: E731
        if isinstance(s, P.LetStep):
            fn, vfn = compile(s.expr)
            out.append(_Step("let", s.name, fn, vfn=vfn))
        elif isinstance(s, P.SkipStep):
            out.append(_Step("skip", "", compile(s.cond)[0]))
        elif isinstance(s, P.RejectStep):
            (fn, vfn), (reason, vreason) = compile(s.cond), compile(s.reason)
            out.append(_Step("reject", "", fn, reason, s.code, s.origin, vfn, vreason))
        elif isinstance(s, P.RestrictStep):
            out.append(_Step("restrict", "", compile(s.names)[0]))
    return tuple(out)


def _naming(fn, origin):
    """fn, naming ``origin`` as the statement that ran out when the cost budget does, or where an
    integer overflowed."""
    if fn is None:
        return None

    def run(*args):
        try:
            return fn(*args)
        except (CostExceeded, IntegerOverflow) as err:
            if err.origin is None:
                err.origin = origin
            raise
    return run


def _named_loop(loop: tuple, origin) -> tuple:
    """per_node_loop's (body, invariants), its body named as _naming does (invariants are computed
    while it reads them)."""
    body, invariants = loop
    return _naming(body, origin), invariants


@frozen
class _Filter:
    pod_steps: tuple
    node_steps: tuple


@frozen
class _Score:
    pod_steps: tuple
    feasible_steps: tuple
    node_steps: tuple
    value: Any
    normalize: str
    normalize_fn: Any
    vvalue: Any = None
    vnormalize: Any = None


@frozen
class _Plugin:
    name: str
    weight: int
    params: dict
    filters: tuple
    score: "_Score | None"
    postfilter: bool


class Executable:
    """A Plan whose expressions are compiled to closures, ready to schedule many pods.

    ``executor`` names how Filter and Score run over the nodes (``EXECUTORS``): "vector" (every
    node at once, see batch.py) or "reference" (node by node, the oracle the other is tested
    against); ``backend`` is that executor."""

    def __init__(self, plan: P.Plan, executor: str = "vector"):
        if executor not in EXECUTORS:
            raise ValueError(f"unknown executor {executor!r}")
        self.plan = plan
        self.executor = executor
        self.backend = BACKENDS[executor]
        self.plugins = tuple(self._plugin(p, self.backend) for p in plan.plugins)
        self.rules = tuple((r, compile_lazily(r.when) if r.when is not None else None)
                           for p in plan.plugins for r in p.rules)

    def reference(self) -> "Executable":
        """The same plan on the reference interpreter."""
        if isinstance(self.backend, ReferenceExecutor):
            return self
        if not hasattr(self, "_reference"):
            self._reference = Executable(self.plan, "reference")
        return self._reference

    def apply_rules(self, state: ClusterState, pod: Pod) -> Pod:
        """The pod as the plugins see it: with what matching rules add (tolerations, spread)."""
        if not self.rules:
            return pod
        env = base_env(state, pod)
        tolerations, spreads = list(pod.spec.tolerations), list(pod.spec.topology_spread_constraints)
        for rule, when in self.rules:
            if when is not None and not truthy(call(when, env, f"rule {rule.name}", "rule")):
                continue
            tolerations += rule.tolerations
            selector = LabelSelector(match_labels=dict(pod.metadata.labels))
            spreads += [attrs.evolve(s, label_selector=selector) for s in rule.spreads]
        return attrs.evolve(pod, spec=attrs.evolve(pod.spec, tolerations=tuple(tolerations),
                                                   topology_spread_constraints=tuple(spreads)))

    @staticmethod
    def _plugin(p: P.PluginPlan, backend) -> _Plugin:
        filters = tuple(_Filter(_steps(f.pod_steps, backend), _steps(f.node_steps, backend)) for f in p.filters)
        score = None
        if p.score is not None:
            s = p.score
            custom = s.normalize_expr is not None
            score = _Score(_steps(s.pod_steps, backend),
                           _steps(s.feasible_steps, backend), _steps(s.node_steps, backend),
                           _naming(compile_lazily(s.value), s.value_origin),
                           s.normalize, _named_loop(per_node_loop(s.normalize_expr), s.origin) if custom else None,
                           _naming(backend.compile_vector(s.value), s.value_origin),
                           _naming(backend.compile_vector(s.normalize_expr), s.origin) if custom else None)
        return _Plugin(p.name, p.weight, dict(p.params), filters, score, p.postfilter)

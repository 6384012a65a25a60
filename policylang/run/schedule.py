"""Run a Plan for one pod, as kube-scheduler's scheduling cycle does.

PreFilter (pod-stage steps, once) → Filter (node by node, stopping at a node's first
failing plugin) → PostFilter when nothing fits → PreScore/Score/NormalizeScore → the
weighted total → the best node (ties: smallest name, or seeded random).
"""

from __future__ import annotations

import contextlib
import gc
import math
import random
from itertools import repeat
from operator import is_
from typing import Any, Iterable

import attrs
import numpy as np

from .. import plan as P
from ..builtins import POLICY_ERRORS, error_text
from ..cluster.model import LabelSelector, Node, Pod
from ..cluster.state import ClusterState
from ..decision import UNRESOLVABLE, Decision, LazyNodes, NodeResult, PluginScore, Status, reasons_of
from .interpret import compile_ir
from . import batch, vector
from .vector import vcompile

EXECUTORS = ("vector", "reference")

MAX_NODE_SCORE = 100


class PlanRuntimeError(Exception):
    """A policy failed while running (the framework's Error status): scheduling stops."""


# ---- the plan, compiled to closures once --------------------------------------------

@attrs.frozen
class _Step:
    kind: str      # let | skip | reject | restrict
    name: str
    fn: Any
    reason: Any = None
    code: str = ""
    origin: Any = None
    vfn: Any = None       # the vector executor's forms of fn and reason
    vreason: Any = None


def _steps(steps: Iterable, vector: bool = False) -> tuple:
    """Each step as a closure over one env (and, for the vector executor, also in vector form:
    its closure is then the vector form's, which evaluates long comprehensions as a batch)."""
    def both(ir):
        if not vector:
            return compile_ir(ir), None
        vfn = vcompile(ir)
        return (lambda env: vfn(env, 1)), vfn

    out = []
    for s in steps:
        if isinstance(s, P.LetStep):
            fn, vfn = both(s.expr)
            out.append(_Step("let", s.name, fn, vfn=vfn))
        elif isinstance(s, P.SkipStep):
            out.append(_Step("skip", "", both(s.cond)[0]))
        elif isinstance(s, P.RejectStep):
            (fn, vfn), (reason, vreason) = both(s.cond), both(s.reason)
            out.append(_Step("reject", "", fn, reason, s.code, s.origin, vfn, vreason))
        elif isinstance(s, P.RestrictStep):
            out.append(_Step("restrict", "", both(s.names)[0]))
    return tuple(out)


@attrs.frozen
class _Filter:
    pod_steps: tuple
    node_steps: tuple


@attrs.frozen
class _Score:
    pod_steps: tuple
    feasible_steps: tuple
    node_steps: tuple
    value: Any
    normalize: str
    normalize_fn: Any
    vvalue: Any = None
    vnormalize: Any = None


@attrs.frozen
class _Plugin:
    name: str
    weight: int
    params: dict
    filters: tuple
    score: "_Score | None"
    postfilter: bool


class Executable:
    """A Plan whose expressions are compiled to closures, ready to schedule many pods.

    ``executor`` decides how Filter and Score run over the nodes: "vector" (every node at
    once, see vector.py) or "reference" (node by node, the oracle the other is tested against)."""

    def __init__(self, plan: P.Plan, executor: str = "vector"):
        if executor not in EXECUTORS:
            raise ValueError(f"unknown executor {executor!r}")
        self.plan = plan
        self.executor = executor
        self.plugins = tuple(self._plugin(p, executor == "vector") for p in plan.plugins)
        self.rules = tuple((r, compile_ir(r.when) if r.when is not None else None)
                           for p in plan.plugins for r in p.rules)

    def reference(self) -> "Executable":
        """The same plan on the reference interpreter."""
        if self.executor == "reference":
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
            if when is not None and not _truthy(_call(when, env, f"rule {rule.name}", "rule")):
                continue
            tolerations += rule.tolerations
            selector = LabelSelector(match_labels=dict(pod.metadata.labels))
            spreads += [attrs.evolve(s, label_selector=selector) for s in rule.spreads]
        return attrs.evolve(pod, spec=attrs.evolve(pod.spec, tolerations=tuple(tolerations),
                                                   topology_spread_constraints=tuple(spreads)))

    @staticmethod
    def _plugin(p: P.PluginPlan, vector: bool) -> _Plugin:
        filters = tuple(_Filter(_steps(f.pod_steps, vector), _steps(f.node_steps, vector)) for f in p.filters)
        score = None
        if p.score is not None:
            s = p.score
            score = _Score(_steps(s.pod_steps, vector),
                           _steps(s.feasible_steps, vector), _steps(s.node_steps, vector), compile_ir(s.value),
                           s.normalize, _per_node_loop(s.normalize_expr) if s.normalize_expr is not None else None,
                           vcompile(s.value) if vector else None,
                           vcompile(s.normalize_expr) if vector and s.normalize_expr is not None else None)
        return _Plugin(p.name, p.weight, dict(p.params), filters, score, p.postfilter)


def _per_node_loop(ir: P.IR) -> tuple:
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


# ---- one scheduling cycle ----------------------------------------------------------------

@attrs.define
class PreFilterOutcome:
    envs: dict                     # plugin name → env after its pod-stage steps
    active: dict                   # plugin name → filters not skipped
    status: "Status | None" = None  # a PreFilter rejection
    allowed: "set | None" = None   # restrict nodes to
    restricted_by: tuple = ()      # plugins that restricted the node set
    reached: set = attrs.Factory(set)


_CLUSTER_LISTS = {
    "nodes": lambda s: s.node_list,
    "nodesWithPodsWithAffinity": lambda s: s.nodes_having(s.pods_with_affinity),
    "nodesWithPodsWithRequiredAntiAffinity": lambda s: s.nodes_having(s.pods_with_required_anti_affinity),
    "pods": lambda s: s.bound_pods,
    "namespaces": lambda s: list(s.namespaces.values()),
    "services": lambda s: s.services,
    "workloads": lambda s: s.workloads,
    "priorityClasses": lambda s: list(s.priority_classes.values()),
    "podDisruptionBudgets": lambda s: s.pdbs,
    "persistentVolumes": lambda s: list(s.persistent_volumes.values()),
    "persistentVolumeClaims": lambda s: list(s.claims.values()),
    "storageClasses": lambda s: list(s.storage_classes.values()),
    "csiNodes": lambda s: list(s.csi_nodes.values()),
    "csiDrivers": lambda s: list(s.csi_drivers.values()),
    "csiStorageCapacities": lambda s: s.csi_storage_capacities,
    "volumeAttachments": lambda s: s.volume_attachments,
}


class ClusterView(dict):
    """`cluster` in a policy: each list made when first read in a cycle (every bound pod of a
    large cluster is a long list that most policies never read)."""

    def __init__(self, state: ClusterState):
        super().__init__()
        self.state = state

    def __missing__(self, name: str):
        value = self[name] = _CLUSTER_LISTS[name](self.state)
        return value

    def get(self, name: str, default=None):
        return self[name] if name in _CLUSTER_LISTS else super().get(name, default)


def base_env(state: ClusterState, pod: Pod) -> dict:
    return {"pod": pod, "cluster": ClusterView(state), "$state": state}


def run_prefilter(exe: Executable, state: ClusterState, pod: Pod, base: dict) -> PreFilterOutcome:
    out = PreFilterOutcome(envs={}, active={})
    restricting: list[str] = []
    for plugin in exe.plugins:
        env = {**base, "params": plugin.params}
        out.envs[plugin.name] = env
        if not plugin.filters:
            continue
        out.reached.add(plugin.name)
        active = []
        for f in plugin.filters:
            skipped = False
            for step in f.pod_steps:
                if step.kind == "skip":
                    if _truthy(_call(step.fn, env, plugin.name, "PreFilter")):
                        skipped = True
                        break
                elif step.kind == "let":
                    env[step.name] = _call(step.fn, env, plugin.name, "PreFilter")
                elif step.kind == "restrict":
                    names = _call(step.fn, env, plugin.name, "PreFilter")
                    if names is not None:
                        restricting.append(plugin.name)
                        names = set(names)
                        out.allowed = names if out.allowed is None else out.allowed & names
                elif _truthy(_call(step.fn, env, plugin.name, "PreFilter")):
                    status = Status(step.code, reasons_of(_call(step.reason, env, plugin.name, "PreFilter")),
                                    plugin.name, step.origin)
                    out.status = status
                    if status.code == UNRESOLVABLE:
                        out.active[plugin.name] = active
                        return out
                    break
            if not skipped:
                active.append(f)
        out.active[plugin.name] = active
        if out.allowed is not None and not out.allowed:
            plugins = sorted(set(restricting))
            text = (f"node(s) didn't satisfy plugin {plugins[0]}" if len(plugins) == 1 else
                    f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}] simultaneously")
            out.status = Status(UNRESOLVABLE, (text,), "")
            return out
    out.restricted_by = tuple(sorted(set(restricting)))
    return out


def run_filters(exe: Executable, pre: PreFilterOutcome, node: Node) -> "Status | None":
    """The first failing plugin's status on this node, or None when the node fits."""
    for plugin in exe.plugins:
        for f in pre.active.get(plugin.name, ()):
            env = pre.envs[plugin.name]
            env["node"] = node
            for step in f.node_steps:
                if step.kind == "let":
                    env[step.name] = _call(step.fn, env, plugin.name, "filter")
                elif _truthy(_call(step.fn, env, plugin.name, "filter")):
                    return Status(step.code, reasons_of(_call(step.reason, env, plugin.name, "filter")), plugin.name,
                                  step.origin)
    return None


def run_filters_with_nominated(exe: Executable, state: ClusterState, pod: Pod, pre: PreFilterOutcome,
                               node: Node) -> "Status | None":
    """RunFilterPluginsWithNominatedPods: the pending pods nominated to this node with a priority
    at least the pod's count as already there (the pod must not take the room they were promised);
    if the node passes with them, it must pass without them too (their pods may never arrive, so
    the pod must not rely on them, e.g. for pod affinity)."""
    if not state.nominated:
        return run_filters(exe, pre, node)
    name = node.metadata.name
    ahead = _nominated_ahead(state, pod, name)
    if not ahead:
        return run_filters(exe, pre, node)
    # Placing them changes what PreFilter computed (spread counts, affinity terms), as the
    # framework's AddPod extensions do; so run PreFilter again on a state that has them.
    keys = {p.key for p in ahead}
    placed = [attrs.evolve(p, spec=attrs.evolve(p.spec, node_name=name)) for p in ahead]
    trial = ClusterState.build([o for o in state.objects() if not (isinstance(o, Pod) and o.key in keys)] + placed)
    with_them = run_prefilter(exe, trial, pod, base_env(trial, pod))
    status = with_them.status or run_filters(exe, with_them, trial.nodes[name])
    return status if status is not None else run_filters(exe, pre, node)


@attrs.define
class ScoreTable:
    """Every score plugin's raw and normalised scores over the feasible nodes, as columns."""
    names: list                     # the feasible nodes, in order
    plugins: list = attrs.Factory(list)   # (plugin, weight, raws, normalized)

    def totals(self) -> np.ndarray:
        """The weighted sum per node (int64 unless weights are large enough to overflow it)."""
        bound = sum(abs(weight) * MAX_NODE_SCORE for _, weight, _, _ in self.plugins)
        totals = np.zeros(len(self.names), dtype=np.int64 if bound < 1 << 62 else object)
        for _, weight, _, normalized in self.plugins:
            totals = totals + np.asarray(normalized, dtype=totals.dtype) * weight
        return totals

    def by_node(self) -> dict[str, dict[str, PluginScore]]:
        out: dict[str, dict[str, PluginScore]] = {name: {} for name in self.names}
        for plugin, weight, raws, normalized in self.plugins:
            for name, raw, norm in zip(self.names, _plain(raws), _plain(normalized)):
                out[name][plugin] = PluginScore(raw, norm, weight)
        return out


def _plain(column) -> list:
    return column.tolist() if isinstance(column, np.ndarray) else column


def run_scores(exe: Executable, pre: PreFilterOutcome, feasible: list[Node],
               names: "list[str] | None" = None) -> ScoreTable:
    """Raw and normalised scores of every score plugin that does not skip itself (``names``:
    the feasible nodes' names, when the caller has them)."""
    table = ScoreTable(names if names is not None else [n.metadata.name for n in feasible])
    columns = None
    for plugin in exe.plugins:
        s = plugin.score
        if s is None:
            continue
        env = {**pre.envs[plugin.name], "feasible": feasible}
        if _skipped(s.pod_steps + s.feasible_steps, env, plugin.name):
            continue
        if exe.executor == "vector":
            columns = columns or batch.Batch(pre.envs[plugin.name]["$state"], feasible)
            raws = batch.raw_scores(plugin, env, columns)
            normalized = batch.normalize(s, raws, env, columns)
        else:
            raws = []
            for node in feasible:
                env["node"] = node
                for step in s.node_steps:
                    env[step.name] = _call(step.fn, env, plugin.name, "Score")
                raw = _call(s.value, env, plugin.name, "Score")
                raws.append(int(raw or 0))
            normalized = _normalize(s, raws, feasible, env, plugin.name)
        column = np.asarray(normalized)
        out_of_range = np.flatnonzero((column < 0) | (column > MAX_NODE_SCORE))
        if len(out_of_range):
            norm = normalized[out_of_range[0]]
            raise PlanRuntimeError(f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" returns '
                                   f"an invalid score {norm}, it should in the range of [0, {MAX_NODE_SCORE}] after "
                                   "normalizing")
        table.plugins.append((plugin.name, plugin.weight, raws, normalized))
    return table


def _skipped(steps: tuple, env: dict, plugin: str) -> bool:
    """Run PreScore's steps; True when a `skip when` holds."""
    for step in steps:
        if step.kind == "skip":
            if _truthy(_call(step.fn, env, plugin, "PreScore")):
                return True
        else:
            env[step.name] = _call(step.fn, env, plugin, "PreScore")
    return False


def _normalize(s: _Score, raws: list[int], feasible: list[Node], env: dict, plugin: str) -> list[int]:
    method = s.normalize
    if method == "none":
        return list(raws)
    if method in ("max", "reverse"):
        return default_normalize(raws, reverse=method == "reverse")
    if method == "minmax":
        lo, hi = min(raws, default=0), max(raws, default=0)
        if hi == lo:
            return [0 for _ in raws]
        return [int(float(MAX_NODE_SCORE) * (float(r - lo) / float(hi - lo))) for r in raws]
    body, invariants = s.normalize_fn
    loop = _LoopEnv({**env, "scores": raws}, invariants)
    out = []
    for node, raw in zip(feasible, raws):
        loop["node"], loop["score"] = node, raw
        out.append(int(_call(body, loop, plugin, "NormalizeScore") or 0))
    return out


def default_normalize(raws: list[int], reverse: bool) -> list[int]:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)."""
    top = max([0, *raws])
    if top == 0:
        return [MAX_NODE_SCORE if reverse else 0 for _ in raws]
    out = []
    for r in raws:
        v = MAX_NODE_SCORE * r // top if r >= 0 else -((MAX_NODE_SCORE * -r) // top)
        out.append(MAX_NODE_SCORE - v if reverse else v)
    return out


def _truthy(v) -> bool:
    return v is not None and v is not False


# The framework's words for a plugin's Error status at each extension point
# (pkg/scheduler/framework/runtime/framework.go), which become the pod's message.
_ERROR_AT = {
    "PreFilter": 'running PreFilter plugin "{plugin}": {error}',
    "filter": 'running "{plugin}" filter plugin: {error}',
    "PreScore": 'running PreScore plugin "{plugin}": {error}',
    "Score": 'running Score plugins: plugin "{plugin}" failed with: {error}',
    "NormalizeScore": 'running Normalize on Score plugins: plugin "{plugin}" failed with: {error}',
}


def _call(fn, env, plugin: str, point: str):
    try:
        return fn(env)
    except POLICY_ERRORS as err:
        text = error_text(err)
        failure = PlanRuntimeError(_ERROR_AT.get(point, 'running {point} of plugin "{plugin}": {error}')
                                   .format(point=point, plugin=plugin, error=text))
        failure.detail = text       # the plugin's own error, without the framework's words
        raise failure from None


# ---- messages -----------------------------------------------------------------------------

def fit_error_text(num_nodes: int, statuses: dict[str, Status], absent: "Status | None",
                   prefilter_msg: str | None) -> str:
    """framework.FitError.Error() without the PostFilter part."""
    text = f"0/{num_nodes} nodes are available:"
    if prefilter_msg:
        return text + f" {prefilter_msg}."
    counts: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    if absent is not None and len(statuses) < num_nodes:
        for reason in absent.reasons:
            counts[reason] = counts.get(reason, 0) + num_nodes - len(statuses)
    histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
    if histogram:
        text += f" {', '.join(histogram)}."
    return text


# ---- the cycle ------------------------------------------------------------------------------

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: "int | None", num_nodes: int) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops filtering
    (percentageOfNodesToScore; 0 or unset is adaptive)."""
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_nodes
    if not percentage:
        percentage = max(50 - num_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    found = num_nodes * percentage // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


@attrs.define
class Sampling:
    """Node sampling as upstream: a percentage (None/0 adaptive, 100 every node) and the
    rotating index the next search starts from, kept across pods."""
    percentage: "int | None" = None
    next_start: int = 0
    wanted: int = 0   # feasible nodes to find in the current search
    # Per kind of pod (see _kind_of), the share of the nodes its last search visited that fit.
    # The vector executor filters a chunk of nodes at a time, and a chunk costs about as much
    # again for its first nodes as for a thousand more: the chunk should find every node
    # wanted, without going far past the last one.
    fit_share: dict = attrs.Factory(dict)

    def chunk(self, pod: Pod, fits: int, visited: int) -> int:
        """How many nodes to filter next, having visited some and found some that fit."""
        share = fits / visited if visited else self.fit_share.get(_kind_of(pod), DEFAULT_FIT_SHARE)
        if share <= 0:
            return 1 << 62      # nothing fits so far: the rest at once
        return max(math.ceil((self.wanted - fits) * CHUNK_MARGIN / share), MIN_FEASIBLE_NODES_TO_FIND)

    def learn(self, pod: Pod, fits: int, visited: int) -> None:
        if visited:
            if len(self.fit_share) >= 4096:
                self.fit_share.clear()
            self.fit_share[_kind_of(pod)] = fits / visited


DEFAULT_FIT_SHARE = 0.5
CHUNK_MARGIN = 1.2      # a second chunk costs more than a fifth of a chunk's nodes past the last wanted


def _kind_of(pod: Pod) -> tuple:
    """Which kinds of constraints that rule nodes out the pod has (node selection, tolerations,
    hard topology spread, required pod affinity or anti-affinity): pods alike in these fit
    alike shares of the nodes, as far as a guess goes."""
    spec, affinity = pod.spec, pod.spec.affinity
    node_affinity = affinity.node_affinity if affinity else None
    return (bool(spec.node_selector)
            or bool(node_affinity and node_affinity.required_during_scheduling_ignored_during_execution),
            bool(spec.tolerations),
            any(c.when_unsatisfiable == "DoNotSchedule" for c in spec.topology_spread_constraints),
            bool(affinity and (affinity.pod_affinity or affinity.pod_anti_affinity)))


@contextlib.contextmanager
def collector_paused():
    """Scheduling pods one after another with Python's cyclic garbage collector paused. The
    vector executor's node cache grows with long-lived values that every full collection would
    scan again (~1-2 ms a pod on 5,000 nodes, and single pauses of 0.2 s), while a cycle makes
    almost no reference cycles (measured: ~60 objects per 100 pods), left to the collector
    when it resumes."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def schedule(exe: Executable, state: ClusterState, pod: Pod, *, rng: "random.Random | None" = None,
             preemption: bool = True, sampling: "Sampling | None" = None) -> Decision:
    from .postfilter import run_postfilter

    pod = state.with_priority(pod)
    ident = dict(pod_namespace=pod.metadata.namespace, pod_name=pod.metadata.name, profile=exe.plan.profile)
    nodes = state.node_list
    if not nodes:
        msg = "no nodes available to schedule pods"
        return Decision(**ident, nodes=(), fit_error=None, message=msg)
    try:
        pod = exe.apply_rules(state, pod)
        pre = run_prefilter(exe, state, pod, base_env(state, pod))
        statuses: dict[str, Status] = {}
        absent: Status | None = None
        feasible: list[Node] = []
        if pre.status is not None:
            for node in nodes:
                statuses[node.metadata.name] = pre.status
            prefilter_msg = pre.status.message
            explicit: dict[str, Status] = {}
        else:
            prefilter_msg = None
            # evaluateNominatedNode: a node nominated by an earlier preemption is most likely the
            # only one with room, so it is tried alone first and taken if it fits, without scoring.
            nominated = state.nodes.get(pod.status.nominated_node_name)
            if nominated is not None:
                status = run_filters_with_nominated(exe, state, pod, pre, nominated)
                if status is None:
                    return Decision(**ident, selected=nominated.metadata.name, nodes=tuple(
                        NodeResult(n.metadata.name, scores={} if n is nominated else None, evaluated=n is nominated)
                        for n in nodes))
                statuses[nominated.metadata.name] = status
            considered = nodes if pre.allowed is None else [n for n in nodes if n.metadata.name in pre.allowed]
            if pre.allowed is not None:
                absent = Status(UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{' '.join(pre.restricted_by)}]",))
            positions = []      # of the feasible nodes in the state, for the vector executor
            feasible_names = None
            for part, found, passed in _filter_in_order(exe, state, pod, pre,
                                                        _visit_order(state, considered, sampling), sampling):
                fit = np.flatnonzero(passed)
                part_positions = vector.node_positions(state, part) if exe.executor == "vector" else None
                enough = sampling is not None and len(feasible) + len(fit) >= sampling.wanted
                if enough:      # the search stops at the feasible node it wanted last
                    fit = fit[:sampling.wanted - len(feasible)]
                    last = int(fit[-1]) if len(fit) else -1
                    part, found, passed = part[:last + 1], found[:last + 1], passed[:last + 1]
                feasible += map(part.__getitem__, fit.tolist())
                rejected = np.flatnonzero(~passed).tolist()
                if part_positions is not None:
                    positions.append(part_positions[fit])
                    names = vector.by_position(state)[1][part_positions[rejected]].tolist()
                else:
                    names = [part[i].metadata.name for i in rejected]
                statuses.update(zip(names, map(found.__getitem__, rejected)))
                if enough:
                    break
            if positions:
                feasible_positions = np.concatenate(positions)
                state.remember_positions(feasible, feasible_positions)
                feasible_names = vector.by_position(state)[1][feasible_positions].tolist()
            if sampling is not None:
                sampling.next_start = (sampling.next_start + len(feasible) + len(statuses)) % len(nodes)
                sampling.learn(pod, len(feasible), len(feasible) + len(statuses))
            explicit = dict(statuses)
            if pre.allowed is not None:     # the nodes PreFilter left out (unvisited ones have no status)
                for node in nodes:
                    name = node.metadata.name
                    if name not in pre.allowed and name not in statuses:
                        statuses[name] = absent
        if not feasible:
            fit_error = fit_error_text(len(nodes), explicit, absent, prefilter_msg)
            outcome = run_postfilter(exe, state, pod, pre, statuses, enabled=preemption, rng=rng)
            message = fit_error + (f" {outcome.message}" if outcome.message else "")
            results = tuple(NodeResult(n.metadata.name, statuses[n.metadata.name]) for n in nodes)
            return Decision(**ident, nodes=results, fit_error=fit_error, message=message,
                            nominated_node=outcome.nominated, victims=outcome.victims)
        table = (run_scores(exe, pre, feasible, feasible_names) if len(feasible) > 1
                 else ScoreTable([feasible[0].metadata.name]))
    except PlanRuntimeError as err:
        return Decision(**ident, nodes=(), message=str(err))
    except batch.PolicyErrorInBatch:
        # A policy error on some node: the reference interpreter decides the pod, so the
        # error (or the node sampling that stops before it) is exactly the reference's.
        return schedule(exe.reference(), state, pod, rng=rng, preemption=preemption, sampling=sampling)

    def results():
        scores = table.by_node()
        for n in nodes:
            name = n.metadata.name
            yield NodeResult(name, statuses.get(name), scores.get(name), evaluated=name in statuses or name in scores)
    return Decision(**ident, nodes=LazyNodes(results), selected=_select(table, rng))


def _filter_in_order(exe: Executable, state: ClusterState, pod: Pod, pre: PreFilterOutcome, order: list[Node],
                     sampling: "Sampling | None") -> Iterable[tuple[list[Node], list["Status | None"], np.ndarray]]:
    """(nodes, their statuses, which passed) in visit order, a chunk at a time: the reference
    executor goes node by node; the vector executor filters the nodes in chunks (one chunk of
    every node unless sampling will stop early: see Sampling.chunk), node by node where
    nominated pods must be counted on the node."""
    if exe.executor == "reference":
        for node in order:
            status = run_filters_with_nominated(exe, state, pod, pre, node)
            yield [node], [status], np.array([status is None])
        return
    whole = vector.node_positions(state, order)
    start = fits = 0
    while start < len(order):
        size = sampling.chunk(pod, fits, start) if sampling is not None else len(order)
        part = order if start == 0 and size >= len(order) else order[start:start + size]
        if part is not order and whole is not None:
            state.remember_positions(part, whole[start:start + size])
        start += len(part)
        if not state.nominated:
            found = batch.filter_batch(exe, pre, part)
        else:
            nominated = {n.metadata.name for n in part if _nominated_ahead(state, pod, n.metadata.name)}
            plain = [n for n in part if n.metadata.name not in nominated]
            by_name = dict(zip((n.metadata.name for n in plain), batch.filter_batch(exe, pre, plain)))
            found = [by_name[n.metadata.name] if n.metadata.name in by_name
                     else run_filters_with_nominated(exe, state, pod, pre, n) for n in part]
        passed = np.fromiter(map(is_, found, repeat(None)), dtype=bool, count=len(found))
        fits += int(np.count_nonzero(passed))
        yield part, found, passed


def _nominated_ahead(state: ClusterState, pod: Pod, node_name: str) -> list[Pod]:
    """The pending pods nominated to this node that the pod must leave room for: those of at
    least its priority."""
    priority = pod.spec.priority or 0
    return [p for p in state.nominated_pods_for(node_name) if (p.spec.priority or 0) >= priority and p.key != pod.key]


def _visit_order(state: ClusterState, nodes: list[Node], sampling: "Sampling | None") -> list[Node]:
    """Every node, in name order; or, when sampling, the scheduler's node-tree order (zones
    interleaved) from the rotating start index, as findNodesThatPassFilters walks it."""
    if sampling is None:
        return nodes
    if len(nodes) == len(state.nodes):
        ordered = state.node_tree_order()
    else:
        allowed = {n.metadata.name for n in nodes}
        ordered = [n for n in state.node_tree_order() if n.metadata.name in allowed]
    sampling.wanted = num_feasible_nodes_to_find(sampling.percentage, len(ordered))
    start = sampling.next_start % len(ordered) if ordered else 0
    rotated = ordered[start:] + ordered[:start]
    if len(nodes) == len(state.nodes):     # a new list of every node each cycle: say where they are
        pos = vector.node_positions(state, ordered)
        state.remember_positions(rotated, np.concatenate((pos[start:], pos[:start])))
    return rotated


def _select(table: ScoreTable, rng: "random.Random | None") -> str:
    """The feasible node with the highest weighted total; ties: smallest name, or seeded random."""
    totals = table.totals()
    tied = sorted(table.names[i] for i in np.flatnonzero(totals == totals.max()).tolist())
    return rng.choice(tied) if rng is not None else tied[0]

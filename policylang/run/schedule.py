"""Run a Plan for one pod, as kube-scheduler's scheduling cycle does.

PreFilter (pod-stage steps, once) → Filter (node by node, stopping at a node's first
failing plugin) → PostFilter when nothing fits → PreScore/Score/NormalizeScore → the
weighted total → the best node (ties: smallest name, or seeded random).

The cycle is the same for both executors: how Filter and Score run over the nodes is the
executor's (``exe.backend``, framework.Executor); PreFilter and a node's filters are phases.py's;
PostFilter is each plugin's companion's (run/companions.py).
"""

from __future__ import annotations

import contextlib
import gc
import math
import random

import attrs
import numpy as np

from ..api.model import Node, Pod
from ..cluster.state import ClusterState
from .decision import UNRESOLVABLE, Decision, LazyNodes, NodeResult, PluginScore, Status
from . import companions
from . import vector
from .batch import PolicyErrorInBatch
from .executable import EXECUTORS, Executable, auto_executor  # noqa: F401 (the cycle's public names)
from ..cost import CostExceeded, start_pod
from .framework import (MAX_NODE_SCORE, PlanRuntimeError, PostFilterOutcome, call, fit_error_text,  # noqa: F401
                        restricted_text, truthy)
from .phases import (PreFilterOutcome, base_env, run_filters, run_filters_with_nominated,  # noqa: F401
                     run_prefilter)


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
    score = exe.backend.scorer(exe, pre, feasible)
    for plugin in exe.plugins:
        s = plugin.score
        if s is None:
            continue
        env = {**pre.envs[plugin.name], "feasible": feasible}
        if _skipped(s.pod_steps + s.feasible_steps, env, plugin.name):
            continue
        raws, normalized = score(plugin, env)
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
            if truthy(call(step.fn, env, plugin, "PreScore")):
                return True
        else:
            env[step.name] = call(step.fn, env, plugin, "PreScore")
    return False


def run_postfilter(exe: Executable, state: ClusterState, pod: Pod, pre: PreFilterOutcome, statuses: dict, *,
                   enabled: bool = True, rng=None) -> PostFilterOutcome:
    """RunPostFilterPlugins: each PostFilter plugin's companion in profile order, until one
    nominates a node or fails; otherwise their messages, joined."""
    reasons: list[str] = []
    deallocated: tuple = ()
    for plugin in exe.plugins:
        hook = companions.hook(plugin.name, "postfilter") if plugin.postfilter else None
        if hook is None:
            continue
        outcome = hook(exe, state, pod, pre, statuses, plugin=plugin, preemption=enabled, rng=rng)
        if outcome is None:
            continue
        deallocated += outcome.deallocate
        if outcome.nominated is not None or outcome.error:
            return attrs.evolve(outcome, deallocate=deallocated)
        if outcome.message:     # a status without reasons adds none (v1.37's DynamicResources)
            reasons.append(outcome.message)
    return PostFilterOutcome(", ".join(reasons), deallocate=deallocated)


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
        # The search ends at the feasible node after the last one wanted (see schedule).
        return max(math.ceil((self.wanted + 1 - fits) * CHUNK_MARGIN / share), MIN_FEASIBLE_NODES_TO_FIND)

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
    pod = state.with_priority(pod)
    ident = dict(pod_namespace=pod.metadata.namespace, pod_name=pod.metadata.name, profile=exe.plan.profile)
    nodes = state.node_list
    if not nodes:
        msg = "no nodes available to schedule pods"
        return Decision(**ident, nodes=(), fit_error=None, message=msg)
    start_pod()
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
                absent = Status(UNRESOLVABLE, (restricted_text(pre.restricted_by),))
            positions = []      # of the feasible nodes in the state, for the vector executor
            feasible_names = None
            order = _visit_order(state, considered, sampling)
            for part, found, passed, part_positions in exe.backend.filter_in_order(exe, state, pod, pre, order,
                                                                                   sampling):
                fit = np.flatnonzero(passed)
                # The search stops at the first feasible node past those it wanted: with one
                # worker, findNodesThatPassFilters (schedule_one.go) cancels only when the count
                # exceeds numNodesToFind, so the nodes that fail after the last one wanted are
                # visited too (and counted into the next start index); that node is dropped.
                enough = sampling is not None and len(feasible) + len(fit) > sampling.wanted
                if enough:
                    beyond = int(fit[sampling.wanted - len(feasible)])
                    fit = fit[:sampling.wanted - len(feasible)]
                    part, found, passed = part[:beyond], found[:beyond], passed[:beyond]
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
                            nominated_node=outcome.nominated, victims=outcome.victims,
                            deallocated=outcome.deallocate)
        table = (run_scores(exe, pre, feasible, feasible_names) if len(feasible) > 1
                 else ScoreTable([feasible[0].metadata.name]))
    except PlanRuntimeError as err:
        return Decision(**ident, nodes=(), message=str(err))
    except CostExceeded as err:
        err.pod = err.pod or f"{pod.metadata.namespace}/{pod.metadata.name}"
        raise
    except PolicyErrorInBatch:
        # A policy error on some node: the reference interpreter decides the pod, so the
        # error (or the node sampling that stops before it) is exactly the reference's.
        return schedule(exe.reference(), state, pod, rng=rng, preemption=preemption, sampling=sampling)

    def results():
        scores = table.by_node()
        for n in nodes:
            name = n.metadata.name
            yield NodeResult(name, statuses.get(name), scores.get(name), evaluated=name in statuses or name in scores)
    return Decision(**ident, nodes=LazyNodes(results), selected=_select(table, rng))


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

"""Explain: why a pod is Pending, and the smallest changes that would let it schedule.

For every node, every filter plugin's verdict as if it ran alone (kube-scheduler stops at
the first); the causes (each plugin's reason, with the nodes it rejects); the near misses (nodes
only one plugin rejects); and counterfactuals — each a concrete change to the pod or the
cluster, checked by running the plan again on the changed input before it is shown. Changes to
the cluster's own machinery (uncordoning, tolerating a node-lifecycle taint) are held back
unless asked for: they are kept apart, so that a user can be told when they are the only way.
"""

from __future__ import annotations

from typing import Iterator

import attrs

from .api.model import Pod
from .cluster.state import ClusterState
from .run.decision import SUCCESS, Decision, Status
from .frozen import frozen
from .run import companions
from .run.framework import ERROR
from .run.schedule import Executable, PlanRuntimeError, base_env, run_filters, run_prefilter, schedule

SKIP = "Skip"

# How many near misses explain tries fixes on, closest first: each try schedules the pod again on a
# changed cluster, and the closest are the ones worth a user's reading.
FIX_TRIES = 25


@frozen
class Suggestion:
    change: str
    nodes: tuple              # the near misses it makes room on (checked on the first)
    result: str               # the node the pod then goes to
    infrastructure: bool = False


@frozen
class Cause:
    """One plugin's reason, and every node it rejects for it (as if the plugin ran alone)."""
    plugin: str
    reason: str
    nodes: tuple              # node names, sorted
    detail: "str | None"      # what it amounts to across them: "needs 4, the most free is 3500m on a"


@frozen
class Explanation:
    decision: Decision
    filters: dict             # node → plugin → Status (Success / Skip included)
    causes: tuple             # of Cause, the most nodes first
    near_misses: tuple        # (node, Status) of nodes a single plugin rejects, closest first
    suggestions: tuple        # of Suggestion, verified
    withheld: tuple           # of Suggestion, verified, that change the cluster's machinery


def filters_alone(exe: Executable, state: ClusterState, pod: Pod) -> dict[str, dict[str, Status]]:
    """node → plugin → that plugin's verdict as if it were the only filter."""
    pre = run_prefilter(exe, state, exe.apply_rules(state, pod), base_env(state, exe.apply_rules(state, pod)))
    out: dict[str, dict[str, Status]] = {name: {} for name in state.nodes}
    rejecting = pre.status.plugin if pre.status is not None else None
    for plugin in exe.plugins:
        if not plugin.filters and plugin.name != rejecting:
            continue
        if plugin.name == rejecting:
            # A PreFilter rejection is its plugin's verdict on every node (the framework gives
            # each node its status); the filters whose PreFilter ran before it are still shown alone.
            for name in state.nodes:
                out[name][plugin.name] = pre.status
            continue
        if not pre.active.get(plugin.name):
            for name in state.nodes:
                out[name][plugin.name] = Status(SKIP, (), plugin.name)
            continue
        alone = attrs.evolve(pre, active={plugin.name: pre.active[plugin.name]}, status=None)
        for name, node in state.nodes.items():
            try:
                status = run_filters(exe, alone, node)
            except PlanRuntimeError as err:
                # The plugin fails on this node (a CEL runtime error in a device selector): an
                # Error status, which stops kube-scheduler's cycle; the others are still shown.
                status = Status(ERROR, (err.detail or str(err),), plugin.name)
            out[name][plugin.name] = status or Status(SUCCESS, (), plugin.name)
    return out


def explain(exe: Executable, state: ClusterState, pod: Pod, *, preemption: bool = True,
            infrastructure: bool = False, fix_tries: "int | None" = FIX_TRIES) -> Explanation:
    """``preemption``: run PostFilter's preemption search, as kube-scheduler does;
    ``infrastructure``: offer changes to the cluster's machinery among the suggestions;
    ``fix_tries``: how many near misses to try fixes on (None: all)."""
    decision = schedule(exe, state, pod, preemption=preemption)
    verdicts = filters_alone(exe, state, pod)
    near = []
    for name, by_plugin in verdicts.items():
        failing = [s for s in by_plugin.values() if s.code not in (SUCCESS, SKIP)]
        if len(failing) == 1:
            near.append((name, failing[0]))
    near.sort(key=lambda ns: (_distance(state, pod, *ns), ns[0]))
    found = [] if decision.selected else list(_suggest(exe, state, pod, decision, near[:fix_tries]))
    offered = [s for s in found if infrastructure or not s.infrastructure]
    withheld = [s for s in found if not infrastructure and s.infrastructure]
    return Explanation(decision, verdicts, _causes(state, pod, verdicts), tuple(near), tuple(offered), tuple(withheld))


def _causes(state: ClusterState, pod: Pod, verdicts: dict) -> tuple:
    rejected: dict[tuple[str, str], list[str]] = {}
    for name, by_plugin in verdicts.items():
        for plugin, status in by_plugin.items():
            if status.code not in (SUCCESS, SKIP):
                for reason in status.reasons or (status.code,):
                    rejected.setdefault((plugin, reason), []).append(name)
    causes = []
    for (plugin, reason), nodes in rejected.items():
        detail = companions.hook(plugin, "detail")
        causes.append(Cause(plugin, reason, tuple(sorted(nodes)),
                            detail(state, pod, reason, nodes) if detail is not None else None))
    return tuple(sorted(causes, key=lambda c: (-len(c.nodes), c.plugin, c.reason)))


def _distance(state: ClusterState, pod: Pod, node_name: str, status: Status) -> float:
    """How far a near miss is from fitting: what the rejecting plugin's companion says (the share of
    a resource request that does not fit), 0.5 for any other reason, and one more for what
    preemption cannot help."""
    base = 0.0 if status.code == "Unschedulable" else 1.0
    distance = companions.hook(status.plugin, "distance")
    return base + (distance(state, pod, node_name, status) if distance is not None else 0.5)


# ---- counterfactuals ------------------------------------------------------------------

def _suggest(exe, state, pod, decision, near) -> Iterator[Suggestion]:
    if decision.nominated_node:
        victims = ", ".join(f"{v.namespace}/{v.name}" for v in decision.victims)
        yield Suggestion(f"{len(decision.victims)} pod(s) would have to be preempted on {decision.nominated_node}: "
                         f"{victims}", (decision.nominated_node,), decision.nominated_node)
    found: dict[str, Suggestion] = {}
    for node_name, status in near:
        fixer = companions.hook(status.plugin, "fix")
        if fixer is None:
            continue
        # A fixer proposes changes smallest first; the first that works is the suggestion. The
        # same change found for another node is one suggestion, making room on both.
        for change in fixer(state, pod, state.nodes[node_name], status):
            if change.text in found:
                same = found[change.text]
                found[change.text] = attrs.evolve(same, nodes=(*same.nodes, node_name))
                break
            result = schedule(exe, change.state, change.pod, preemption=False).selected
            if result is not None:
                found[change.text] = Suggestion(change.text, (node_name,), result, change.infrastructure)
                break
    yield from found.values()

"""Explain: why a pod is Pending, and the smallest changes that would let it schedule.

For every node, every filter plugin's verdict as if it ran alone (kube-scheduler stops at
the first); the near misses (nodes only one plugin rejects); and counterfactuals — each a
concrete change to the pod or the cluster, checked by running the plan again on the changed
input before it is shown.
"""

from __future__ import annotations

from typing import Iterator

import attrs

from .cluster.model import Pod
from .cluster.state import ClusterState
from .decision import SUCCESS, Decision, Status
from .plugins import registry
from .run.schedule import Executable, base_env, run_filters, run_prefilter, schedule

SKIP = "Skip"


@attrs.frozen
class Suggestion:
    change: str
    node: str                 # the node it makes room on
    result: str               # the node the pod then goes to


@attrs.frozen
class Explanation:
    decision: Decision
    filters: dict             # node → plugin → Status (Success / Skip included)
    near_misses: tuple        # (node, Status) of nodes a single plugin rejects, closest first
    suggestions: tuple        # of Suggestion, verified


def filters_alone(exe: Executable, state: ClusterState, pod: Pod) -> dict[str, dict[str, Status]]:
    """node → plugin → that plugin's verdict as if it were the only filter."""
    pre = run_prefilter(exe, state, exe.apply_rules(state, pod), base_env(state, exe.apply_rules(state, pod)))
    out: dict[str, dict[str, Status]] = {name: {} for name in state.nodes}
    for plugin in exe.plugins:
        if not plugin.filters:
            continue
        if not pre.active.get(plugin.name):
            for name in state.nodes:
                out[name][plugin.name] = Status(SKIP, (), plugin.name)
            continue
        alone = attrs.evolve(pre, active={plugin.name: pre.active[plugin.name]})
        for name, node in state.nodes.items():
            if pre.status is not None:
                out[name][plugin.name] = pre.status
                continue
            status = run_filters(exe, alone, node)
            out[name][plugin.name] = status or Status(SUCCESS, (), plugin.name)
    return out


def explain(exe: Executable, state: ClusterState, pod: Pod) -> Explanation:
    decision = schedule(exe, state, pod)
    verdicts = filters_alone(exe, state, pod)
    near = []
    for name, by_plugin in verdicts.items():
        failing = [s for s in by_plugin.values() if s.code not in (SUCCESS, SKIP)]
        if len(failing) == 1:
            near.append((name, failing[0]))
    near.sort(key=lambda ns: (_distance(state, pod, *ns), ns[0]))
    suggestions = [] if decision.selected else list(_suggest(exe, state, pod, decision, near))
    return Explanation(decision, verdicts, tuple(near), tuple(suggestions))


def _distance(state: ClusterState, pod: Pod, node_name: str, status: Status) -> float:
    """How far a near miss is from fitting: what the rejecting plugin's companion says (the share of
    a resource request that does not fit), 0.5 for any other reason, and one more for what
    preemption cannot help."""
    base = 0.0 if status.code == "Unschedulable" else 1.0
    distance = registry.hook(status.plugin, "distance")
    return base + (distance(state, pod, node_name, status) if distance is not None else 0.5)


# ---- counterfactuals ------------------------------------------------------------------

def _suggest(exe, state, pod, decision, near) -> Iterator[Suggestion]:
    seen = set()
    if decision.nominated_node:
        victims = ", ".join(f"{v.namespace}/{v.name}" for v in decision.victims)
        yield Suggestion(f"{len(decision.victims)} pod(s) would have to be preempted on {decision.nominated_node}: "
                         f"{victims}", decision.nominated_node, decision.nominated_node)
    for node_name, status in near:
        fixer = registry.hook(status.plugin, "fix")
        if fixer is None:
            continue
        # A fixer proposes changes smallest first; the first that works is the suggestion.
        for change, new_pod, new_state in fixer(state, pod, state.nodes[node_name], status):
            if change in seen:
                break
            result = schedule(exe, new_state, new_pod, preemption=False).selected
            if result is not None:
                seen.add(change)
                yield Suggestion(change, node_name, result)
                break

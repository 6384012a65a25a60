"""Simulate: schedule a batch of pending pods one by one, as kube-scheduler's queue would.

Queue order is PrioritySort's (higher priority first, then earlier creation). Each
decision is bound into the state (requested resources, ports, topology and affinity all
follow) before the next pod is scheduled, after Reserve has assumed the volumes it binds and the
devices it was allocated (`run_reserve`: VolumeBinding's and DynamicResources' companions). A
pod's claims from ResourceClaimTemplates are made first, as the resourceclaim controller makes
them (`cluster/resourceclaims.py`). When preemption nominates a node, its victims are
evicted at once (their graceful termination is not modelled) and the pod is scheduled again,
nominated to that node, as the next cycle would: the nominated node is tried first.
"""

from __future__ import annotations

from typing import Callable, Iterable

import attrs

from ..cluster import resourceclaims
from ..api.model import Pod
from ..cluster.state import ClusterState
from ..run.decision import Decision, Victim
from ..frozen import frozen
from ..run import companions
from ..run.schedule import Executable, Sampling, collector_paused, schedule


@frozen
class Placement:
    pod: Pod
    decision: "Decision | None"          # None: no profile for the pod's schedulerName
    node: "str | None" = None
    nominated_node: "str | None" = None
    victims: tuple = ()
    gates: tuple = ()                     # non-empty: held by scheduling gates, never attempted

    @property
    def message(self) -> "str | None":
        if self.gates:
            from ..pending import GATED_MESSAGE
            return f"{GATED_MESSAGE} ({', '.join(self.gates)})"
        if self.decision is None:
            return f"no profile for schedulerName \"{self.pod.spec.scheduler_name}\""
        return None if self.node else self.decision.message


def queue_order(pods: Iterable[Pod]) -> list[Pod]:
    """PrioritySort: priority descending, then creation time; input order breaks ties."""
    indexed = list(enumerate(pods))
    indexed.sort(key=lambda ip: (-(ip[1].spec.priority or 0), ip[1].metadata.creation_timestamp or "", ip[0]))
    return [p for _, p in indexed]


def simulate(profile_for: "Callable[[Pod], Executable | None] | dict[str, Executable]", state: ClusterState,
             pods: Iterable[Pod], *,
             preemption: bool = True, rng=None,
             progress: Callable[[int, int], None] | None = None,
             into: list | None = None, percentage: "int | None" = None,
             until: "Callable[[Placement], bool] | None" = None) -> list[Placement]:
    """Schedule ``pods`` into ``state`` (which is changed in place); one Placement per pod,
    appended to ``into`` as they are decided so an interrupted run keeps what it did.

    Nodes are sampled as upstream does: ``percentage`` (else the profile's
    percentage_of_nodes_to_score, else adaptive), from a start index that rotates across pods.
    With ``until``, the batch stops after the first placement it is true of (capacity stops at
    the first pod that does not fit).
    """
    queue = queue_order(state.with_priority(p) for p in pods)
    placements = into if into is not None else []
    with collector_paused():
        sampling = Sampling()
        for i, pod in enumerate(queue):
            if pod.spec.scheduling_gates:
                # PreEnqueue (SchedulingGates): kube-scheduler never attempts it; it stays Pending.
                placements.append(Placement(pod, None, gates=tuple(g.name for g in pod.spec.scheduling_gates)))
                continue
            exe = profile_for.get(pod.spec.scheduler_name) if isinstance(profile_for, dict) else profile_for(pod)
            if exe is None:
                placements.append(Placement(pod, None))
                continue
            if pod.spec.resource_claims:
                # The resourceclaim controller runs first: claims from the pod's templates.
                pod = resourceclaims.instantiate(state, pod)
            sampling.percentage = percentage if percentage is not None else exe.plan.percentage_of_nodes_to_score
            decision = schedule(exe, state, pod, rng=rng, preemption=preemption, sampling=sampling)
            victims: tuple[Victim, ...] = ()
            nominated = decision.nominated_node
            if decision.selected is None and decision.deallocated:
                # DynamicResources' PostFilter deallocated a claim; its update requeues the pod,
                # and the next cycle may allocate it elsewhere. (The scheduler's claim for the
                # pod's extended resources, deleted instead, requeues nothing: the pod waits.)
                requeued = [state.deallocate_claim(key) for key in decision.deallocated]
                if nominated is None and any(requeued):
                    decision = schedule(exe, state, pod, rng=rng, preemption=preemption, sampling=sampling)
                    nominated = decision.nominated_node
            if decision.selected is None and nominated is not None:
                victims = decision.victims
                evicted = {(v.namespace, v.name) for v in victims}
                state.evict([p for p in state.pods_by_node[nominated]
                             if (p.metadata.namespace, p.metadata.name) in evicted])
                # The next cycle sees the pod nominated to the node, and tries that node first.
                retry = attrs.evolve(pod, status=attrs.evolve(pod.status, nominated_node_name=nominated))
                decision = schedule(exe, state, retry, rng=rng, preemption=preemption, sampling=sampling)
            node = decision.selected
            if node is not None:
                failure = run_reserve(exe, state, pod, node)
                if failure is None:
                    state.bind(pod, node)
                else:       # the binding cycle failed: the pod stays pending with the error
                    decision, node = attrs.evolve(decision, selected=None, message=failure), None
            placements.append(Placement(pod, decision, node, nominated, victims))
            if progress is not None:
                progress(i + 1, len(queue))
            if until is not None and until(placements[-1]):
                break
    return placements


def run_reserve(exe: Executable, state: ClusterState, pod: Pod, node_name: str) -> "str | None":
    """The Reserve of each plugin whose companion has one (VolumeBinding's assumes the volumes
    the pod binds, DynamicResources' the devices), before the pod is bound to ``node_name``; the
    error that stops the binding (a PreBind's API call the API server refuses), or None."""
    for plugin in exe.plan.plugins:
        reserve = companions.hook(plugin.name, "reserve")
        if reserve is not None:
            failure = reserve(exe, state, pod, node_name, plugin)
            if failure is not None:
                return failure
    return None

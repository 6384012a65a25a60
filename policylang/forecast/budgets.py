"""PodDisruptionBudgets: which budget covers a pod, and each budget's status computed from its
spec and the pods in the state, as the disruption controller computes it
(pkg/controller/disruption/disruption.go: getExpectedPodCount, countHealthyPods,
updatePdbStatus), so that a simulated drain sees the budget recover as replacement pods run.

The eviction API's verdict on one pod (pkg/registry/core/pod/storage/eviction.go) is
``eviction_refusal``: the message the API server answers with, or None when it evicts.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional

from ..api.model import Pod, PodDisruptionBudget
from ..api.selectors import selector_matches
from ..cluster.state import TERMINAL_PHASES, ClusterState
from ..frozen import frozen

# The eviction API's words (pkg/registry/core/pod/storage/eviction.go).
TOO_MANY_REQUESTS = "Cannot evict pod as it would violate the pod's disruption budget."
MORE_THAN_ONE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


def key(pdb: PodDisruptionBudget) -> str:
    return f"{pdb.metadata.namespace}/{pdb.metadata.name}"


def selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """getPodDisruptionBudgets: same namespace, and a selector that is neither null nor empty
    ("it should match nothing, not everything") matching the pod's labels; a pod without labels
    has no budget."""
    selector = pdb.spec.selector
    if not pod.metadata.labels or pdb.metadata.namespace != pod.metadata.namespace or selector is None:
        return False
    if not selector.match_labels and not selector.match_expressions:
        return False
    return selector_matches(selector, pod.metadata.labels)


def healthy(pod: Pod) -> bool:
    """countHealthyPods: running on a node, not being deleted, and Ready. A pod the simulation
    binds counts as Ready (its containers are taken to start); a dump's pod whose Ready
    condition is False does not."""
    if not pod.spec.node_name or pod.metadata.deletion_timestamp or pod.status.phase in TERMINAL_PHASES:
        return False
    ready = next((c for c in pod.status.conditions if c.type == "Ready"), None)
    return ready is None or ready.status == "True"


@frozen
class Budget:
    pdb: PodDisruptionBudget
    expected: int
    desired_healthy: int
    current_healthy: int
    sync_error: Optional[str] = None      # the controller could not compute it: nothing may be evicted

    @property
    def key(self) -> str:
        return key(self.pdb)

    @property
    def disruptions_allowed(self) -> int:
        if self.sync_error:
            return 0
        return max(self.current_healthy - self.desired_healthy, 0)

    @property
    def violated(self) -> bool:
        return self.current_healthy < self.desired_healthy


def _int_or_percent(value: "int | str", total: int) -> "int | None":
    """intstr.GetScaledValueFromIntOrPercent with roundUp (as the controller calls it)."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%") and text[:-1].isdigit():
        return math.ceil(int(text[:-1]) * total / 100)
    if text.lstrip("-").isdigit():
        return int(text)
    return None


def budget(pdb: PodDisruptionBudget, state: ClusterState, pending: Iterable[Pod] = ()) -> Budget:
    """The budget's status now. ``pending`` are pods that exist but are not in the state (a
    replacement the scheduler could not place): the controller counts them as expected pods."""
    pods = [p for p in [*state.pods, *pending] if selects(pdb, p) and p.status.phase not in TERMINAL_PHASES]
    current = sum(1 for p in pods if healthy(p))
    spec = pdb.spec
    if spec.max_unavailable is not None:
        expected = _expected_scale(pods, state)
        unavailable = _int_or_percent(spec.max_unavailable, expected)
        desired = max(expected - (unavailable or 0), 0)
        bad = unavailable is None and spec.max_unavailable
    elif isinstance(spec.min_available, str) and spec.min_available.strip().endswith("%"):
        expected = _expected_scale(pods, state)
        minimum = _int_or_percent(spec.min_available, expected)
        desired, bad = minimum or 0, minimum is None and spec.min_available
    elif spec.min_available is not None:
        expected, minimum = len(pods), _int_or_percent(spec.min_available, len(pods))
        desired, bad = minimum or 0, minimum is None and spec.min_available
    else:
        expected, desired, bad = 0, 0, None     # neither set: the controller asks for nothing
    error = f"invalid value for IntOrString: {bad!r}" if bad else None
    return Budget(pdb, expected, desired, current, error)


def _expected_scale(pods: list[Pod], state: ClusterState) -> int:
    """getExpectedScale: the sum of the scale of each controller of the budget's pods, counted
    once each; pods without a controller are left out (unmanagedPods). A controller the state
    does not hold (a dump of nodes and pods only), or one without spec.replicas, counts the pods
    it owns here."""
    scales: dict[tuple, int] = {}
    owned: dict[tuple, int] = {}
    for pod in pods:
        ref = controller_of(pod)
        if ref is None:
            continue
        ident = (ref.kind, pod.metadata.namespace, ref.name)
        owned[ident] = owned.get(ident, 0) + 1
        workload = state.workload(ref.kind, pod.metadata.namespace, ref.name)
        if workload is not None and workload.spec.replicas is not None:
            scales[ident] = workload.spec.replicas
    return sum(scales.get(ident, count) for ident, count in owned.items())


def controller_of(pod: Pod):
    """metav1.GetControllerOf: the owner reference with controller: true."""
    return next((ref for ref in pod.metadata.owner_references if ref.controller), None)


def can_ignore_budgets(pod: Pod) -> bool:
    """canIgnorePDB: a finished, Pending or terminating pod is evicted without a budget check."""
    return (pod.status.phase in (*TERMINAL_PHASES, "Pending") or not pod.spec.node_name
            or bool(pod.metadata.deletion_timestamp))


def eviction_refusal(pod: Pod, covering: list[Budget], allowed: dict[str, int]) -> "tuple[str | None, str] | None":
    """None when the eviction API would evict the pod now (and then one disruption of its budget is
    spent from ``allowed``); else (the blocking budget's key or None, the API's message)."""
    if can_ignore_budgets(pod) or not covering:
        return None
    if len(covering) > 1:
        return None, MORE_THAN_ONE
    b = covering[0]
    if b.sync_error:
        return b.key, (f"{TOO_MANY_REQUESTS} The disruption budget {b.pdb.metadata.name} does not allow evicting "
                       f"pods currently because it failed sync: {b.sync_error}")
    # An unhealthy pod may go while the budget is met (unhealthyPodEvictionPolicy IfHealthyBudget).
    if not healthy(pod) and b.current_healthy >= b.desired_healthy > 0:
        return None
    if allowed[b.key] <= 0:
        return b.key, (f"{TOO_MANY_REQUESTS} The disruption budget {b.pdb.metadata.name} needs "
                       f"{b.desired_healthy} healthy pods and has {b.current_healthy} currently")
    allowed[b.key] -= 1
    return None

"""The rest of the state a scheduler reads about pods: namespaces, priority classes, services,
workloads (ReplicaSet, StatefulSet, ReplicationController) and disruption budgets."""

from __future__ import annotations

from typing import Optional

import attrs

from ...frozen import frozen
from .meta import IntOrString, LabelSelector, ObjectMeta, _map


@frozen
class Namespace:
    kind: str = "Namespace"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)


@frozen
class PriorityClass:
    kind: str = "PriorityClass"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


@frozen
class ServiceSpec:
    selector: dict[str, str] = _map()


@frozen
class Service:
    kind: str = "Service"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: ServiceSpec = attrs.field(factory=ServiceSpec)


@frozen
class WorkloadSpec:
    """The selector of a ReplicaSet, StatefulSet or ReplicationController."""
    selector: Optional[LabelSelector] = None
    replicas: Optional[int] = None


@frozen
class Workload:
    kind: str = ""
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: WorkloadSpec = attrs.field(factory=WorkloadSpec)


@frozen
class PodDisruptionBudgetSpec:
    selector: Optional[LabelSelector] = None
    min_available: Optional[IntOrString] = None
    max_unavailable: Optional[IntOrString] = None


@frozen
class PodDisruptionBudgetStatus:
    disruptions_allowed: int = 0
    # pod name → when the API server processed its eviction (not yet seen by the controller).
    disrupted_pods: dict[str, str] = _map()


@frozen
class PodDisruptionBudget:
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = attrs.field(factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = attrs.field(factory=PodDisruptionBudgetStatus)

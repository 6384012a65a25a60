"""ClusterState: the typed objects plus the indexes an executor needs.

Indexes are kept up to date on ``bind`` instead of being recomputed, so a simulation can
place thousands of pods without re-scanning the cluster.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable

import attrs

from . import model
from .quantity import Quantity, ZERO
from .resources import nonzero_pod_requests, pod_requests

TERMINAL_PHASES = ("Succeeded", "Failed")


class ClusterState:
    def __init__(self) -> None:
        self.nodes: dict[str, model.Node] = {}
        self.pods: list[model.Pod] = []
        self.namespaces: dict[str, model.Namespace] = {}
        self.priority_classes: dict[str, model.PriorityClass] = {}
        self.services: list[model.Service] = []
        self.workloads: list[model.Workload] = []
        self.pdbs: list[model.PodDisruptionBudget] = []
        self.pods_by_node: dict[str, list[model.Pod]] = {}
        self.requested: dict[str, dict[str, Quantity]] = {}
        self.nonzero_requested: dict[str, dict[str, Quantity]] = {}
        self._tree_order: list[model.Node] | None = None
        # (namespace, label key, label value) → bound pods, for selector look-ups.
        self.label_index: dict[tuple, dict[str, model.Pod]] = {}
        self.pods_by_namespace: dict[str, dict[str, model.Pod]] = {}
        # NodeInfo's lists of pods with (anti-)affinity, so InterPodAffinity need not scan every pod.
        self.pods_with_affinity: dict[str, list[model.Pod]] = {}
        self.pods_with_required_anti_affinity: dict[str, list[model.Pod]] = {}

    @classmethod
    def build(cls, objects: Iterable) -> "ClusterState":
        state = cls()
        pods = []
        for obj in objects:
            if isinstance(obj, model.Node):
                state.nodes[obj.name] = obj
            elif isinstance(obj, model.Pod):
                pods.append(obj)
            elif isinstance(obj, model.Namespace):
                state.namespaces[obj.metadata.name] = obj
            elif isinstance(obj, model.PriorityClass):
                state.priority_classes[obj.metadata.name] = obj
            elif isinstance(obj, model.Service):
                state.services.append(obj)
            elif isinstance(obj, model.Workload):
                state.workloads.append(obj)
            elif isinstance(obj, model.PodDisruptionBudget):
                state.pdbs.append(obj)
        state.nodes = dict(sorted(state.nodes.items()))
        for name in state.nodes:
            state.pods_by_node[name] = []
            state.pods_with_affinity[name] = []
            state.pods_with_required_anti_affinity[name] = []
            state.requested[name] = {}
            state.nonzero_requested[name] = {}
        for pod in pods:
            pod = state.with_priority(pod)
            state.pods.append(pod)
            if pod.spec.node_name and pod.status.phase not in TERMINAL_PHASES and pod.spec.node_name in state.nodes:
                state._account(pod, pod.spec.node_name)
        return state

    # ---- queries ----
    @property
    def node_list(self) -> list[model.Node]:
        return list(self.nodes.values())

    @property
    def bound_pods(self) -> list[model.Pod]:
        return [p for pods in self.pods_by_node.values() for p in pods]

    def node_tree_order(self) -> list[model.Node]:
        """The scheduler cache's node list: zones in order of first appearance, one node of
        each zone in turn (its nodeTree), zones keyed by region and zone labels."""
        if self._tree_order is None:
            zones: dict[str, list[model.Node]] = {}
            for node in self.nodes.values():
                zones.setdefault(zone_key(node), []).append(node)
            columns = list(zones.values())
            depth = max((len(c) for c in columns), default=0)
            self._tree_order = [c[i] for i in range(depth) for c in columns if i < len(c)]
        return self._tree_order

    def namespace_labels(self, name: str) -> dict[str, str]:
        ns = self.namespaces.get(name)
        return ns.metadata.labels if ns else {}

    def with_priority(self, pod: model.Pod) -> model.Pod:
        """Resolve the pod's priority as the Priority admission plugin would."""
        if pod.spec.priority is not None:
            return pod
        value, policy = 0, pod.spec.preemption_policy
        pc = self.priority_classes.get(pod.spec.priority_class_name) if pod.spec.priority_class_name else None
        if pc is None and not pod.spec.priority_class_name:
            pc = next((c for c in self.priority_classes.values() if c.global_default), None)
        if pc is not None:
            value = pc.value
            policy = policy or pc.preemption_policy
        return attrs.evolve(pod, spec=attrs.evolve(pod.spec, priority=value,
                                                   preemption_policy=policy or "PreemptLowerPriority"))

    def without(self, removed: list[model.Pod]) -> "ClusterState":
        """A copy of the state with these pods gone (for preemption's dry run)."""
        keys = {p.key for p in removed}
        objects = [*self.nodes.values(), *self.namespaces.values(), *self.priority_classes.values(),
                   *self.services, *self.workloads, *self.pdbs, *(p for p in self.pods if p.key not in keys)]
        return ClusterState.build(objects)

    # ---- indexes ----
    def _index(self, pod: model.Pod) -> None:
        ns, key = pod.metadata.namespace, pod.key
        self.pods_by_namespace.setdefault(ns, {})[key] = pod
        for k, v in pod.metadata.labels.items():
            self.label_index.setdefault((ns, k, v), {})[key] = pod
        node = pod.spec.node_name
        if _has_affinity(pod):
            self.pods_with_affinity[node].append(pod)
        if _has_required_anti_affinity(pod):
            self.pods_with_required_anti_affinity[node].append(pod)

    def _unindex(self, pod: model.Pod) -> None:
        ns, key = pod.metadata.namespace, pod.key
        self.pods_by_namespace.get(ns, {}).pop(key, None)
        for k, v in pod.metadata.labels.items():
            self.label_index.get((ns, k, v), {}).pop(key, None)
        node = pod.spec.node_name
        for index in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
            if node in index:
                index[node] = [p for p in index[node] if p.key != key]

    # ---- updates ----
    def bind(self, pod: model.Pod, node_name: str) -> model.Pod:
        bound = attrs.evolve(pod, spec=attrs.evolve(pod.spec, node_name=node_name))
        self.pods = [p for p in self.pods if p.key != pod.key] + [bound]
        self._account(bound, node_name)
        return bound

    def evict(self, pods: list[model.Pod]) -> None:
        for pod in pods:
            self.remove(pod)

    def pods_matching(self, namespace: str, selector: "model.LabelSelector | None") -> list[model.Pod]:
        """The bound pods of a namespace that a label selector selects (null selects none)."""
        from ..builtins import selector_matches

        if selector is None:
            return []
        pools = [self.label_index.get((namespace, k, v), {}) for k, v in selector.match_labels.items()]
        pool = min(pools, key=len) if pools else self.pods_by_namespace.get(namespace, {})
        return [p for p in pool.values() if selector_matches(selector, p.metadata.labels)]

    def remove(self, pod: model.Pod) -> None:
        node = pod.spec.node_name
        self.pods = [p for p in self.pods if p.key != pod.key]
        if node in self.pods_by_node:
            self._unindex(pod)
            self.pods_by_node[node] = [p for p in self.pods_by_node[node] if p.key != pod.key]
            _add_into(self.requested[node], pod_requests(pod), -1)
            _add_into(self.nonzero_requested[node], nonzero_pod_requests(pod), -1)

    def _account(self, pod: model.Pod, node: str) -> None:
        self.pods_by_node[node].append(pod)
        self._index(pod)
        _add_into(self.requested[node], pod_requests(pod), 1)
        _add_into(self.nonzero_requested[node], nonzero_pod_requests(pod), 1)


def _has_affinity(pod: model.Pod) -> bool:
    a = pod.spec.affinity
    return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)


def _has_required_anti_affinity(pod: model.Pod) -> bool:
    a = pod.spec.affinity
    return a is not None and a.pod_anti_affinity is not None and \
        bool(a.pod_anti_affinity.required_during_scheduling_ignored_during_execution)


def zone_key(node: model.Node) -> str:
    """utilnode.GetZoneKey: the legacy failure-domain labels win over topology.kubernetes.io."""
    labels = node.metadata.labels
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    return "" if not region and not zone else f"{region}:\x00:{zone}"


def _add_into(total: dict[str, Quantity], more: dict[str, Quantity], sign: int) -> None:
    # A node adds up each pod's request already rounded up, cpu to millicores and the
    # rest to whole units, as its NodeInfo does.
    for name, q in more.items():
        rounded = Quantity(Fraction(q.milli(), 1000)) if name == "cpu" else Quantity(Fraction(q.value()))
        total[name] = total.get(name, ZERO) + (rounded if sign > 0 else -rounded)

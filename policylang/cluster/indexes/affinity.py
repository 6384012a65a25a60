"""The pods with pod (anti-)affinity on each node (NodeInfo.PodsWithAffinity and
PodsWithRequiredAntiAffinity), so that InterPodAffinity need not scan every pod, and the
nodes having such pods (the snapshot's HavePodsWithAffinityList)."""

from __future__ import annotations


class PodsWithAffinity:
    def __init__(self, state) -> None:
        self.state = state
        self.pods_with_affinity: dict[str, list] = {name: [] for name in state.nodes}
        self.pods_with_required_anti_affinity: dict[str, list] = {name: [] for name in state.nodes}
        self._having: dict = {}     # nodes_having's answers, until one of the lists changes

    def arrive(self, pod, node: str) -> None:
        if has_affinity(pod):
            self.pods_with_affinity[node].append(pod)
            self._having.clear()
        if has_required_anti_affinity(pod):
            self.pods_with_required_anti_affinity[node].append(pod)

    def leave(self, pod, node: str) -> None:
        if has_affinity(pod):
            self._having.clear()
        key = pod.key
        for index in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
            if node in index:
                index[node] = [p for p in index[node] if p.key != key]

    def nodes_having(self, pods_by_node: dict[str, list]) -> list:
        """The nodes, in name order, with pods in one of the per-node pod indexes."""
        found = self._having.get(id(pods_by_node))
        if found is None:
            nodes = self.state.nodes
            found = self._having[id(pods_by_node)] = [nodes[name] for name, pods in pods_by_node.items() if pods]
        return found


def has_affinity(pod) -> bool:
    a = pod.spec.affinity
    return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)


def has_required_anti_affinity(pod) -> bool:
    a = pod.spec.affinity
    return a is not None and a.pod_anti_affinity is not None and \
        bool(a.pod_anti_affinity.required_during_scheduling_ignored_during_execution)

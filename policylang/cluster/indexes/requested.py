"""The resources the pods on each node request (NodeInfo.Requested and NonZeroRequested).

How a node counts a pod depends on the version and gates a decision targets when the pod is
being resized in place (api/requests.py Counting): its status counts then. The spec's tables are
kept always; a Counting's own tables are made the first time it is asked for, and only if some
pod's status can change the count (api.requests.resizing), then kept up to date beside them.
"""

from __future__ import annotations

from ...api.quantity import ZERO, Quantity
from ...api.requests import SPEC, Counting, nonzero_pod_requests, pod_requests, resizing


class Requested:
    def __init__(self, state) -> None:
        self._state = state
        # Counting -> (requested, nonzero_requested): SPEC's always, the others once asked for.
        self._tables: dict[Counting, tuple[dict, dict]] = {SPEC: ({name: {} for name in state.nodes},
                                                                   {name: {} for name in state.nodes})}
        self._resizing = 0   # bound pods whose status can count (api.requests.resizing)

    @property
    def requested(self) -> dict[str, dict[str, Quantity]]:
        return self._tables[SPEC][0]

    @property
    def nonzero_requested(self) -> dict[str, dict[str, Quantity]]:
        return self._tables[SPEC][1]

    def tables(self, counting: Counting) -> tuple[dict, dict]:
        """(requested, nonzero_requested) per node, each pod counted as ``counting`` counts it."""
        if counting not in self._tables:
            if not self._resizing:
                return self._tables[SPEC]
            requested: dict[str, dict[str, Quantity]] = {name: {} for name in self._state.nodes}
            nonzero: dict[str, dict[str, Quantity]] = {name: {} for name in self._state.nodes}
            for node, pods in self._state.pods_by_node.items():
                if node in requested:
                    for pod in pods:
                        _add_into(requested[node], pod_requests(pod, counting=counting), 1)
                        _add_into(nonzero[node], nonzero_pod_requests(pod, counting), 1)
            self._tables[counting] = (requested, nonzero)
        return self._tables[counting]

    def arrive(self, pod, node: str) -> None:
        self._count(pod, node, 1)

    def leave(self, pod, node: str) -> None:
        self._count(pod, node, -1)

    def _count(self, pod, node: str, sign: int) -> None:
        spec: "tuple[dict, dict] | None" = None
        status_counts = resizing(pod)
        self._resizing += sign if status_counts else 0
        for counting, (requested, nonzero) in self._tables.items():
            if counting == SPEC or not status_counts:
                if spec is None:
                    spec = pod_requests(pod), nonzero_pod_requests(pod)
                req, non0 = spec
            else:
                req, non0 = pod_requests(pod, counting=counting), nonzero_pod_requests(pod, counting)
            _add_into(requested[node], req, sign)
            _add_into(nonzero[node], non0, sign)


def _add_into(total: dict[str, Quantity], more: dict[str, Quantity], sign: int) -> None:
    # A node adds up each pod's request already rounded up, cpu to millicores and the
    # rest to whole units, as its NodeInfo does.
    for name, q in more.items():
        rounded = Quantity(nanos=q.milli() * 10**6) if name == "cpu" else Quantity(nanos=q.value() * 10**9)
        total[name] = total.get(name, ZERO) + (rounded if sign > 0 else -rounded)

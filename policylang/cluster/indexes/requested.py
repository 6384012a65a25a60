"""The resources the pods on each node request (NodeInfo.Requested and NonZeroRequested)."""

from __future__ import annotations

from ...api.quantity import ZERO, Quantity
from ...api.requests import nonzero_pod_requests, pod_requests


class Requested:
    def __init__(self, state) -> None:
        self.requested: dict[str, dict[str, Quantity]] = {name: {} for name in state.nodes}
        self.nonzero_requested: dict[str, dict[str, Quantity]] = {name: {} for name in state.nodes}

    def arrive(self, pod, node: str) -> None:
        _add_into(self.requested[node], pod_requests(pod), 1)
        _add_into(self.nonzero_requested[node], nonzero_pod_requests(pod), 1)

    def leave(self, pod, node: str) -> None:
        _add_into(self.requested[node], pod_requests(pod), -1)
        _add_into(self.nonzero_requested[node], nonzero_pod_requests(pod), -1)


def _add_into(total: dict[str, Quantity], more: dict[str, Quantity], sign: int) -> None:
    # A node adds up each pod's request already rounded up, cpu to millicores and the
    # rest to whole units, as its NodeInfo does.
    for name, q in more.items():
        rounded = Quantity(nanos=q.milli() * 10**6) if name == "cpu" else Quantity(nanos=q.value() * 10**9)
        total[name] = total.get(name, ZERO) + (rounded if sign > 0 else -rounded)

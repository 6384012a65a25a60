"""NodeResourcesFit's explain fixer (room for one more pod, or smaller requests), how far a node is
from fitting the pod's requests, and what a shortage amounts to across nodes."""

from __future__ import annotations

import attrs

from ..api.quantity import Quantity, ZERO, readable_quantity
from .edits import Change, with_node, with_spec


def fix(state, pod, node, status):
    from ..api.requests import pod_requests
    alloc = node.status.allocatable
    if "Too many pods" in status.reasons:
        more = (alloc.get("pods") or ZERO) + Quantity(1)
        bigger = attrs.evolve(node, status=attrs.evolve(node.status, allocatable={**alloc, "pods": more}))
        yield Change(f"{node.metadata.name} needs 1 more free pod slot", pod, with_node(state, bigger))
        return
    request, first = pod_requests(pod), pod.spec.containers[0] if pod.spec.containers else None
    lowered, texts = dict(first.resources.requests) if first else {}, []
    for reason in status.reasons:
        resource = reason.removeprefix("Insufficient ")
        free = _free(state, node.metadata.name, resource)
        excess = request.get(resource, ZERO) - free
        if first is None or free <= ZERO or lowered.get(resource, ZERO) < excess:
            return  # no request small enough fits here
        lowered[resource] = lowered[resource] - excess
        texts.append(f"{resource} request to ≤ {readable_quantity(request[resource] - excess, down=True)}")
    smaller = attrs.evolve(first, resources=attrs.evolve(
        first.resources, requests=lowered, limits={k: v for k, v in first.resources.limits.items() if k not in lowered}))
    yield Change("lower the " + " and the ".join(texts), with_spec(pod, containers=(smaller, *pod.spec.containers[1:])),
                 state)


def distance(state, pod, node_name: str, status) -> float:
    """The largest share of a resource request that does not fit on the node."""
    from ..api.requests import pod_requests
    request = pod_requests(pod)
    shares = []
    for reason in status.reasons:
        resource = reason.removeprefix("Insufficient ")
        wanted = request.get(resource, ZERO)
        free = _free(state, node_name, resource)
        shares.append(float((wanted - free).amount / wanted.amount) if wanted.amount else 1.0)
    return max(shares, default=0.5)


def detail(state, pod, reason: str, node_names) -> "str | None":
    """What a shortage on these nodes amounts to: "needs 4, the most free is 3500m on node-a"."""
    from ..api.requests import pod_requests
    if not reason.startswith("Insufficient "):
        return None
    resource = reason.removeprefix("Insufficient ")
    wanted = pod_requests(pod).get(resource, ZERO)
    most = min(node_names, key=lambda name: (-_free(state, name, resource).amount, name))
    free = _free(state, most, resource)
    return (f"needs {readable_quantity(wanted)}, the most free is {readable_quantity(max(free, ZERO), down=True)} "
            f"on {most}")


def _free(state, node_name: str, resource: str) -> Quantity:
    node = state.nodes[node_name]
    return node.status.allocatable.get(resource, ZERO) - state.requested.get(node_name, {}).get(resource, ZERO)

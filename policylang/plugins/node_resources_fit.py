"""NodeResourcesFit's explain fixer (room for one more pod, or smaller requests) and how far a
node is from fitting the pod's requests."""

from __future__ import annotations

import attrs

from ..cluster.quantity import Quantity, ZERO, format_quantity
from .edits import with_node, with_spec


def fix(state, pod, node, status):
    from ..cluster.resources import pod_requests
    alloc, used = node.status.allocatable, state.requested.get(node.metadata.name, {})
    if "Too many pods" in status.reasons:
        more = (alloc.get("pods") or ZERO) + Quantity(1)
        bigger = attrs.evolve(node, status=attrs.evolve(node.status, allocatable={**alloc, "pods": more}))
        yield f"{node.metadata.name} needs 1 more free pod slot", pod, with_node(state, bigger)
        return
    request, first = pod_requests(pod), pod.spec.containers[0] if pod.spec.containers else None
    lowered, texts = dict(first.resources.requests) if first else {}, []
    for reason in status.reasons:
        resource = reason.removeprefix("Insufficient ")
        free = alloc.get(resource, ZERO) - used.get(resource, ZERO)
        excess = request.get(resource, ZERO) - free
        if first is None or free <= ZERO or lowered.get(resource, ZERO) < excess:
            return  # no request small enough fits here
        lowered[resource] = lowered[resource] - excess
        texts.append(f"{resource} request to ≤ {format_quantity(request[resource] - excess)} "
                     f"({node.metadata.name} has {format_quantity(free)} free)")
    smaller = attrs.evolve(first, resources=attrs.evolve(
        first.resources, requests=lowered, limits={k: v for k, v in first.resources.limits.items() if k not in lowered}))
    yield "lower the " + " and the ".join(texts), with_spec(pod, containers=(smaller, *pod.spec.containers[1:])), state


def distance(state, pod, node_name: str, status) -> float:
    """The largest share of a resource request that does not fit on the node."""
    from ..cluster.resources import pod_requests
    node, request, used = state.nodes[node_name], pod_requests(pod), state.requested.get(node_name, {})
    shares = []
    for reason in status.reasons:
        resource = reason.removeprefix("Insufficient ")
        wanted = request.get(resource, ZERO)
        free = node.status.allocatable.get(resource, ZERO) - used.get(resource, ZERO)
        shares.append(float((wanted - free).amount / wanted.amount) if wanted.amount else 1.0)
    return max(shares, default=0.5)

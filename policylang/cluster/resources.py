"""A pod's effective resource requests, by the API's rules (component-helpers PodRequests).

Shared by every plugin that counts resources, so it lives with the cluster model, not in a
policy: containers add up; an init container needs its requests plus the sidecars started
before it; restartable (sidecar) init containers keep running and add to the total; the
pod needs the larger of the two; pod-level ``spec.resources`` replaces the per-container
sum for cpu and memory; ``spec.overhead`` is added last.
"""

from __future__ import annotations

from typing import Mapping

from .model import Pod
from .quantity import Quantity, ZERO

# The requests kube-scheduler assumes for scoring when a container states none.
DEFAULT_MILLI_CPU_REQUEST = Quantity(__import__("fractions").Fraction(1, 10))  # 100m
DEFAULT_MEMORY_REQUEST = Quantity(__import__("fractions").Fraction(200 * 1024 * 1024))  # 200Mi
NON_ZERO_DEFAULTS = {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}

POD_LEVEL_RESOURCES = ("cpu", "memory")


def _add(into: dict, more: Mapping[str, Quantity]) -> None:
    for name, q in more.items():
        into[name] = into.get(name, ZERO) + q


def _max(into: dict, other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        if name not in into or q > into[name]:
            into[name] = q


def _container_requests(requests: Mapping[str, Quantity], non_missing: Mapping[str, Quantity] | None) -> dict:
    out = dict(requests)
    if non_missing:
        for name, q in non_missing.items():
            if name not in out:
                out[name] = q
    return out


def pod_requests(pod: Pod, non_missing: Mapping[str, Quantity] | None = None) -> dict[str, Quantity]:
    """The pod's requests; ``non_missing`` fills in a container's absent requests (for scoring)."""
    spec = pod.spec
    reqs: dict[str, Quantity] = {}
    for c in spec.containers:
        _add(reqs, _container_requests(c.resources.requests, non_missing))

    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for c in spec.init_containers:
        own = _container_requests(c.resources.requests, non_missing)
        if c.restart_policy == "Always":
            _add(reqs, own)
            _add(sidecars, own)
            needed = dict(sidecars)
        else:
            needed = dict(own)
            _add(needed, sidecars)
        _max(init_peak, needed)
    _max(reqs, init_peak)

    if spec.resources is not None and spec.resources.requests:
        for name in POD_LEVEL_RESOURCES:
            if name in spec.resources.requests:
                reqs[name] = spec.resources.requests[name]

    _add(reqs, spec.overhead)
    return reqs

"""A pod's effective resource requests, by the API's rules (component-helpers PodRequests).

Shared by every plugin that counts resources, so it lives with the cluster model, not in a
policy: containers add up; an init container needs its requests plus the sidecars started
before it; restartable (sidecar) init containers keep running and add to the total; the
pod needs the larger of the two; pod-level ``spec.resources`` replaces the per-container
sum for cpu, memory and hugepages-*; ``spec.overhead`` is added last.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Mapping

from .quantity import Quantity, ZERO
from .selectors import valid_label_key

if TYPE_CHECKING:   # annotations only: the builtins import this module for `policylang check`
    from .model import Pod

# The requests kube-scheduler assumes for scoring when a container states none.
NON_ZERO_DEFAULTS = {"cpu": Quantity(Fraction(1, 10)), "memory": Quantity(Fraction(200 * 1024 * 1024))}


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_level_requests_set(pod: Pod) -> bool:
    res = pod.spec.resources
    return res is not None and any(_pod_level_supported(n) for n in res.requests)


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


def pod_requests(pod: Pod, non_missing: Mapping[str, Quantity] | None = None,
                 pod_level: bool = True) -> dict[str, Quantity]:
    """The pod's requests; ``non_missing`` fills in a container's absent requests (for scoring);
    ``pod_level=False`` ignores ``spec.resources`` as kube-scheduler's Fit scoring does."""
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

    if pod_level and pod_level_requests_set(pod):
        for name, q in spec.resources.requests.items():
            if _pod_level_supported(name):
                reqs[name] = q

    _add(reqs, spec.overhead)
    return reqs


def nonzero_pod_requests(pod: Pod) -> dict[str, Quantity]:
    """What a node's NonZeroRequested counts for a pod: a container without a cpu or memory
    request counts 100m / 200Mi, unless pod-level requests already state that resource."""
    requests = pod_requests(pod)
    if not pod_level_requests_set(pod):
        return pod_requests(pod, NON_ZERO_DEFAULTS)
    missing = {k: v for k, v in NON_ZERO_DEFAULTS.items() if k not in requests}
    return pod_requests(pod, missing) if missing else requests


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName (pkg/apis/core/v1/helper/helpers.go): not native (it has a
    domain, and not kubernetes.io's), not requests.*, and "requests." + name a qualified name."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and valid_label_key("requests." + name)

"""A pod's effective resource requests, by the API's rules (component-helpers PodRequests).

Shared by every plugin that counts resources, so it lives with the cluster model, not in a
policy: containers add up; an init container needs its requests plus the sidecars started
before it; restartable (sidecar) init containers keep running and add to the total; the
pod needs the larger of the two; pod-level ``spec.resources`` replaces the per-container
sum for cpu, memory and hugepages-*; ``spec.overhead`` is added last.

A pod being resized in place (InPlacePodVerticalScaling) is counted, where kube-scheduler
counts it with ``UseStatusResources`` (a node's NodeInfo, BalancedAllocation), as the larger
per resource of its spec's requests, the ones the kubelet applied (``status.containerStatuses[]
.resources``) and the ones it allocated (``.allocatedResources``), or of the last two only when
the resize is infeasible (condition PodResizePending, reason Infeasible). How depends on the
version (``Counting``): up to 1.36 container by container, sidecars only among init containers;
from 1.37 each of the three summed over every container first (k8s.io/component-helpers
resource/helpers.go, v0.34.4 to v0.37.2).
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import TYPE_CHECKING, Callable, Mapping, Optional

from ..frozen import frozen
from .quantity import Quantity, ZERO
from .selectors import valid_label_key

if TYPE_CHECKING:   # annotations only: the builtins import this module for `policylang check`
    from .model import Container, ContainerStatus, Pod

# The requests kube-scheduler assumes for scoring when a container states none.
NON_ZERO_DEFAULTS = {"cpu": Quantity(Fraction(1, 10)), "memory": Quantity(Fraction(200 * 1024 * 1024))}

Resources = Mapping[str, Quantity]


@frozen
class Counting:
    """How a version of kube-scheduler, with its gates, counts a pod's requests where it reads
    the pod's status (framework/types.go CalculateResource; noderesources/resource_allocation.go
    for BalancedAllocation): the PodResourcesOptions it passes."""
    status: bool = False            # UseStatusResources: gate InPlacePodVerticalScaling
    pod_level_status: bool = False  # gate InPlacePodLevelResourcesVerticalScaling (alpha 1.35, beta 1.36)
    summed: bool = False            # v0.37's helpers: spec, applied, allocated each summed, then the max

    @property
    def key(self) -> str:
        """The counting as a plan constant (what the compiler passes a counting builtin)."""
        return ",".join(name for name in ("status", "pod_level_status", "summed") if getattr(self, name)) or "spec"


SPEC = Counting()   # the spec alone: a pod being scheduled (Fit's PreFilter), or the gate off


@functools.cache
def counting_of_key(key: str) -> Counting:
    names = () if key == "spec" else tuple(key.split(","))
    return Counting(**{name: True for name in names})


def counting_of(target) -> Counting:
    """The Counting of a target (target.Target): its version and modelled gates."""
    status = target.gate("InPlacePodVerticalScaling")
    return Counting(status=status, pod_level_status=status and target.gate("InPlacePodLevelResourcesVerticalScaling"),
                    summed=status and target.minor >= 37)


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_level_requests_set(pod: Pod) -> bool:
    res = pod.spec.resources
    return res is not None and any(_pod_level_supported(n) for n in res.requests)


def _add(into: dict, more: Optional[Resources]) -> None:
    for name, q in (more or {}).items():
        into[name] = into.get(name, ZERO) + q


def _max(into: dict, other: Optional[Resources]) -> None:
    for name, q in (other or {}).items():
        if name not in into or q > into[name]:
            into[name] = q


def _largest(first: Optional[Resources], *others: Optional[Resources]) -> dict:
    """helpers.go max(a, b...): per resource, the largest of the lists that name it."""
    out = dict(first or {})
    for other in others:
        _max(out, other)
    return out


def _container_requests(requests: Optional[Resources], non_missing: Optional[Resources]) -> dict:
    out = dict(requests or {})
    if non_missing:
        for name, q in non_missing.items():
            if name not in out:
                out[name] = q
    return out


def resize_infeasible(pod: Pod) -> bool:
    """helpers.go IsPodResizeInfeasible: the first PodResizePending condition says Infeasible."""
    for c in pod.status.conditions:
        if c.type == "PodResizePending":
            return c.reason == "Infeasible"
    return False


def resizing(pod: Pod) -> bool:
    """Whether counting the pod's status can give other requests than its spec's: it reports
    resources (a container's, or the pod's), or a resize it found infeasible. For any other pod
    every Counting is the spec's."""
    s = pod.status
    return (s.resources is not None or s.allocated_resources is not None
            or any(cs.resources is not None or cs.allocated_resources is not None
                   for cs in (*s.container_statuses, *s.init_container_statuses))
            or resize_infeasible(pod))


# ---- one container's requests, as each version reads its status ----
# A getter: (container, its status or None, whether the resize is infeasible) -> its requests.
Getter = Callable[["Container", "Optional[ContainerStatus]", bool], Optional[Resources]]


def _spec(c, _cs, _infeasible):
    return c.resources.requests


def _effective(c, cs, infeasible):
    """v0.34–v0.36 determineEffectiveRequests, for a container whose status reports resources."""
    if cs is None or cs.resources is None:
        return c.resources.requests
    if infeasible:
        return _largest(cs.resources.requests, cs.allocated_resources)
    return _largest(c.resources.requests, cs.resources.requests, cs.allocated_resources)


def _allocated(c, cs, infeasible):
    """v0.37 containerAllocatedRequests."""
    if cs is not None and cs.allocated_resources is not None:
        return cs.allocated_resources
    return None if infeasible else c.resources.requests


def _actuated(c, cs, infeasible):
    """v0.37 containerActuatedRequests: applied, else allocated, else (feasible) the spec."""
    if cs is not None and cs.resources is not None and cs.resources.requests is not None:
        return cs.resources.requests
    if cs is not None and cs.allocated_resources is not None:
        return cs.allocated_resources
    return None if infeasible else c.resources.requests


def _aggregate(pod: Pod, get: Getter, non_missing: Optional[Resources], statuses: Optional[Callable],
               sidecars_only: bool = False) -> dict:
    """The containers' sum, each init container needing its own plus the sidecars before it
    (helpers.go aggregateContainerResourcesByFn). ``statuses``: a container's status by name,
    or None (the status is not read); ``sidecars_only``: up to v0.36 a non-restartable init
    container is counted by its spec whatever its status."""
    infeasible = statuses is not None and resize_infeasible(pod)
    reqs: dict = {}
    for c in pod.spec.containers:
        cs = statuses(c.name) if statuses is not None else None
        _add(reqs, _container_requests(get(c, cs, infeasible), non_missing))
    sidecars: dict = {}
    init_peak: dict = {}
    for c in pod.spec.init_containers:
        sidecar = c.restart_policy == "Always"
        cs = statuses(c.name) if statuses is not None and (sidecar or not sidecars_only) else None
        own = _container_requests(get(c, cs, infeasible), non_missing)
        if sidecar:
            _add(reqs, own)
            _add(sidecars, own)
            needed = dict(sidecars)
        else:
            needed = dict(own)
            _add(needed, sidecars)
        _max(init_peak, needed)
    _max(reqs, init_peak)
    return reqs


def _status_finder(pod: Pod, init_last: bool) -> Callable:
    """A container's status by name: v0.34–v0.36 build a map, init containers' written last;
    v0.37 findContainerStatus takes the first, containers' before init containers'."""
    found: dict = {}
    ordered = (*pod.status.container_statuses, *pod.status.init_container_statuses)
    for cs in (ordered if init_last else reversed(ordered)):
        found[cs.name] = cs
    return found.get


def _container_level(pod: Pod, non_missing: Optional[Resources], counting: Counting) -> dict:
    """helpers.go AggregateContainerRequests."""
    if not counting.status:
        return _aggregate(pod, _spec, non_missing, None)
    if not counting.summed:
        return _aggregate(pod, _effective, non_missing, _status_finder(pod, True), sidecars_only=True)
    infeasible = resize_infeasible(pod)
    statuses = _status_finder(pod, False)
    spec = _aggregate(pod, _spec, non_missing, statuses)
    s = pod.status
    if (counting.pod_level_status and s.allocated_resources is not None and s.resources is not None
            and s.resources.requests is not None):
        # The pod-level status already holds the sum over the containers.
        allocated, actuated = s.allocated_resources, s.resources.requests
    else:
        allocated = _aggregate(pod, _allocated, non_missing, statuses)
        actuated = _aggregate(pod, _actuated, non_missing, statuses)
    return _largest(actuated, allocated) if infeasible else _largest(spec, actuated, allocated)


def _apply_pod_level(reqs: dict, pod: Pod, counting: Counting) -> None:
    """Pod-level requests replace the containers' sum for cpu, memory and hugepages-*; read with
    the pod's status under InPlacePodLevelResourcesVerticalScaling (helpers.go PodRequests)."""
    assert pod.spec.resources is not None     # pod_level_requests_set
    spec = pod.spec.resources.requests
    status = pod.status.resources
    if not (counting.status and counting.pod_level_status and status is not None):
        effective: Resources = spec
    elif counting.summed:   # v0.37 effectivePodLevelResources: every resource it names
        effective = _largest(None if resize_infeasible(pod) else spec, status.requests, pod.status.allocated_resources)
    else:                   # v0.35–v0.36: the spec's resources, each zero if the status lacks it
        chosen = (_largest(status.requests, pod.status.allocated_resources) if resize_infeasible(pod)
                  else _largest(spec, status.requests, pod.status.allocated_resources))
        effective = {name: chosen.get(name, ZERO) for name in spec}
    for name, q in effective.items():
        if _pod_level_supported(name):
            reqs[name] = q


def pod_requests(pod: Pod, non_missing: Optional[Resources] = None, pod_level: bool = True,
                 counting: Counting = SPEC) -> dict[str, Quantity]:
    """The pod's requests; ``non_missing`` fills in a container's absent requests (for scoring);
    ``pod_level=False`` ignores ``spec.resources`` as kube-scheduler's Fit scoring does;
    ``counting`` reads the pod's status as a version does (SPEC: the spec alone)."""
    reqs = _container_level(pod, non_missing, counting)
    if pod_level and pod_level_requests_set(pod):
        _apply_pod_level(reqs, pod, counting)
    _add(reqs, pod.spec.overhead)
    return reqs


def nonzero_pod_requests(pod: Pod, counting: Counting = SPEC) -> dict[str, Quantity]:
    """What a node's NonZeroRequested counts for a pod: a container without a cpu or memory
    request counts 100m / 200Mi, unless pod-level requests already state that resource
    (framework/types.go getNonMissingContainerRequests)."""
    requests = pod_requests(pod, counting=counting)
    if not pod_level_requests_set(pod):
        return pod_requests(pod, NON_ZERO_DEFAULTS, counting=counting)
    missing = {k: v for k, v in NON_ZERO_DEFAULTS.items() if k not in requests}
    return pod_requests(pod, missing, counting=counting) if missing else requests


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName (pkg/apis/core/v1/helper/helpers.go): not native (it has a
    domain, and not kubernetes.io's), not requests.*, and "requests." + name a qualified name."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and valid_label_key("requests." + name)

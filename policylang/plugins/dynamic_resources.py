"""DynamicResources' engine code: its PostFilter (deallocating a claim that keeps the pod off every
node), its Reserve (the allocation the chosen node got, written into the claims, as Reserve and
PreBind do), and explain's changes for the nodes only it rejects (fewer devices, another class)
and what a "cannot allocate all claims" amounts to across nodes.

Upstream: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (PostFilter,
Reserve, bindClaim)."""

from __future__ import annotations

import attrs

from ..api.selectors import node_selector_matches
from ..cluster.validation.resource import RESERVED_FOR_MAX_SIZE
from ..run.framework import PostFilterOutcome
from ..run.phases import filter_lets_on, lets_of
from .edits import Change, with_objects

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
# The lets through which the policy's filter hands Reserve the chosen node's allocation.
RESERVE_LETS = ("claims", "reserved_allocations")


def postfilter(exe, state, pod, pre, statuses, *, plugin, preemption: bool, rng=None):
    if not exe.plan.target.gate("DynamicResourceAllocation"):
        # The gate off (v1.34 only): the default profile has no DynamicResources at all
        # (apis/config/v1/default_plugins.go applyFeatureGates), so no PostFilter of it runs.
        return None
    if plugin.name not in pre.reached:
        # Its PreFilter never ran (an earlier PreFilter rejected the pod), so it has no state.
        return PostFilterOutcome("not found", error=True)
    claims = lets_of(pre.envs.get(plugin.name, {})).get("claims")
    rejected_here = pre.status is not None and pre.status.plugin == plugin.name
    # v1.37 says nothing where earlier versions say why nothing was deallocated
    # (dynamicresources.go PostFilter, deallocateOrDeletePodClaims: fwk.NewStatus(fwk.Unschedulable)).
    quiet = exe.plan.target.minor >= 37
    if not pre.active.get(plugin.name) or not claims or rejected_here:
        # Its state holds claims only once its PreFilter passed with some.
        return PostFilterOutcome("" if quiet else "no new claims to deallocate")
    # The allocated claims unavailable on a node where the rest could be allocated (Filter's
    # unavailableClaims). Upstream picks one at random (a map's order); here the first.
    unavailable = sorted({i for name, status in statuses.items()
                          if status is not None and status.plugin == plugin.name and NOT_AVAILABLE in status.reasons
                          for i, c in enumerate(claims)
                          if _unavailable_on(c, state.nodes.get(name))
                          or (exe.plan.target.minor >= 36 and _binding_failed(c))})
    for i in unavailable:
        reserved = claims[i].status.reserved_for
        if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.metadata.uid):
            claim = claims[i].metadata
            return PostFilterOutcome("deallocation of ResourceClaim completed",
                                     deallocate=((claim.namespace, claim.name),))
    return PostFilterOutcome("" if quiet else "still not schedulable")


def _unavailable_on(claim, node) -> bool:
    allocation = claim.status.allocation
    return (node is not None and allocation is not None and allocation.node_selector is not None
            and not node_selector_matches(allocation.node_selector, node))


def _binding_failed(claim) -> bool:
    """isClaimReadyForBinding's error (v1.36+; dynamic_resources.sched binding_failed): the
    results with binding conditions, in order up to the first not ready, meet one whose device
    status has a binding failure condition True."""
    allocation = claim.status.allocation
    if allocation is None:
        return False
    for r in allocation.devices.results:
        if not r.binding_conditions:
            continue
        status = next((d for d in claim.status.devices
                       if d.driver == r.driver and d.pool == r.pool and d.device == r.device), None)
        if status is None:
            return False
        true = {c.type for c in status.conditions if c.status == "True"}
        if any(t in true for t in r.binding_failure_conditions):
            return True
        if not all(t in true for t in r.binding_conditions):
            return False
    return False


def reserve(exe, state, pod, node_name: str, plugin) -> "str | None":
    """The filter, run again for the chosen node, leaves `claims` (the pod's claims) and
    `reserved_allocations` (one AllocationResult per claim it allocated there) in its
    environment; the state assumes them (ClusterState.assume_allocation): the allocations go
    into the claims' status.allocation and the pod into their status.reservedFor, so the next
    pod finds those devices in use. A claim already reserved for 256 pods cannot take one more:
    the API server refuses PreBind's update, and that error is the pod's (None otherwise)."""
    lets = filter_lets_on(exe, state, pod, node_name, plugin, RESERVE_LETS[1]) if pod.spec.resource_claims else None
    if lets is None:
        return None
    claims = lets.get(RESERVE_LETS[0]) or []
    full = next((c for c in claims if len(c.status.reserved_for) >= RESERVED_FOR_MAX_SIZE
                 and not any(r.uid == pod.metadata.uid for r in c.status.reserved_for)), None)
    if full is not None:
        # PreBind's status update (bindClaim) is refused by the API server's validation.
        meta = full.metadata
        return (f'running PreBind plugin "DynamicResources": add reservation to claim {meta.namespace}/{meta.name}: '
                f'ResourceClaim.resource.k8s.io "{meta.name}" is invalid: status.reservedFor: Too many: '
                f"{len(full.status.reserved_for) + 1}: must have at most {RESERVED_FOR_MAX_SIZE} items")
    state.assume_allocation(pod, claims, lets.get(RESERVE_LETS[1]) or [])
    return None


# ---- explain --------------------------------------------------------------------------------

def _pending_claims(state, pod) -> list:
    """The pod's claims that are still to be allocated, in its order."""
    out = []
    for pc in pod.spec.resource_claims:
        name = pc.resource_claim_name
        if name is None and pc.resource_claim_template_name is not None:
            name = next((s.resource_claim_name for s in pod.status.resource_claim_statuses if s.name == pc.name), None)
        claim = state.resource_claims.get((pod.metadata.namespace, name)) if name is not None else None
        if claim is not None and claim.status.allocation is None:
            out.append(claim)
    return out


def _with_request(claim, index: int, request):
    requests = list(claim.spec.devices.requests)
    requests[index] = request
    return attrs.evolve(claim, spec=attrs.evolve(claim.spec, devices=attrs.evolve(claim.spec.devices,
                                                                                 requests=tuple(requests))))


def _claim_key(claim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def fix(state, pod, node, status):
    """For a node where the claims cannot be allocated: ask for fewer devices (one fewer first),
    then for another device class, request by request, each tried on the whole cluster."""
    if CANNOT_ALLOCATE not in status.reasons:
        return
    claims = _pending_claims(state, pod)
    for claim in claims:
        for i, request in enumerate(claim.spec.devices.requests):
            exact = request.exactly
            if exact is None or exact.allocation_mode != "ExactCount":
                continue
            for count in range(exact.count - 1, 0, -1):
                fewer = _with_request(claim, i, attrs.evolve(request, exactly=attrs.evolve(exact, count=count)))
                yield Change(f"claim {_claim_key(claim)}: request {request.name} asks for {count} device(s) "
                             f"instead of {exact.count}", pod, with_objects(state, [fewer]))
    for claim in claims:
        for i, request in enumerate(claim.spec.devices.requests):
            exact = request.exactly
            if exact is None:
                continue
            for name in sorted(state.device_classes):
                if name == exact.device_class_name:
                    continue
                other = _with_request(claim, i, attrs.evolve(request, exactly=attrs.evolve(exact,
                                                                                           device_class_name=name)))
                yield Change(f"claim {_claim_key(claim)}: request {request.name} uses device class {name} "
                             f"instead of {exact.device_class_name}", pod, with_objects(state, [other]))


def _shortfalls(state, pod, node) -> tuple:
    """(claim, shortfall) for each request of the pod's pending claims that the node cannot meet
    even alone; empty when each could be met alone or an error stops the allocator."""
    from ..dra.structured import AllocationError
    claims = _pending_claims(state, pod)
    try:
        return tuple((claims[s.claim], s) for s in state.device_shortfalls(node, claims))
    except AllocationError:
        return ()


def detail(state, pod, reason: str, node_names) -> "str | None":
    """What "cannot allocate all claims" amounts to across the nodes it rejects: the claim and
    request that block, how many devices it wants, and per node (the most first, a few) how many
    free ones it would accept there."""
    if reason != CANNOT_ALLOCATE or not node_names:
        return None
    found = {name: _shortfalls(state, pod, state.nodes[name]) for name in sorted(node_names)}
    blocking = [f[0] for f in found.values() if f]
    if not blocking:
        return "each request fits alone: the requests together, or their constraints, do not"
    claim, short = blocking[0]
    same = {name: next((s for c, s in f if c.metadata.name == claim.metadata.name and s.request == short.request),
                       None) for name, f in found.items()}
    short_on = sorted((name for name, s in same.items() if s is not None), key=lambda n: (-same[n].available, n))
    shown = ", ".join(f"{same[n].available} on {n}{_excluded(same[n])}" for n in short_on[:DETAIL_NODES])
    more = f" … and {len(short_on) - DETAIL_NODES} more" if len(short_on) > DETAIL_NODES else ""
    return (f"claim {_claim_key(claim)} request {short.request} needs {short.wanted} device(s); "
            f"free devices it accepts: {shown}{more}")


def _excluded(short) -> str:
    """The devices it accepts that are out all the same (v1.36+: tainted, an exhausted counter,
    exhausted capacity), as " (2 tainted example.com/health=bad:NoSchedule, ...)"."""
    if not short.excluded:
        return ""
    return " (" + ", ".join(f"{n} {why}" for why, n in short.excluded) + ")"


# How many nodes a detail names.
DETAIL_NODES = 3

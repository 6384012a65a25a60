"""DynamicResources' engine code: its PostFilter (deallocating a claim that keeps the pod off every
node, or deleting the claim an earlier cycle made for the pod's extended resources), its Reserve
(the allocation the chosen node got, written into the claims, and the claim for the pod's extended
resources created, as Reserve and PreBind do), and explain's changes for the nodes only it rejects
(fewer devices, another class, a smaller extended resource request) and what a "cannot allocate
all claims" amounts to across nodes.

Upstream: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (PostFilter,
Reserve, bindClaim), extendeddynamicresources.go."""

from __future__ import annotations

import attrs

from ..api.quantity import ZERO
from ..api.selectors import node_selector_matches
from ..cluster.validation.resource import RESERVED_FOR_MAX_SIZE
from ..run.framework import PostFilterOutcome
from ..run.phases import filter_lets_on, lets_of
from .edits import Change, with_objects

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
# The lets through which the policy's filter hands Reserve the chosen node's allocation.
RESERVE_LETS = ("claims", "reserved_allocations", "extended_claim")


def postfilter(exe, state, pod, pre, statuses, *, plugin, preemption: bool, rng=None):
    if not exe.plan.target.gate("DynamicResourceAllocation"):
        # The gate off (v1.34 only): the default profile has no DynamicResources at all
        # (apis/config/v1/default_plugins.go applyFeatureGates), so no PostFilter of it runs.
        return None
    if plugin.name not in pre.reached:
        # Its PreFilter never ran (an earlier PreFilter rejected the pod), so it has no state.
        return PostFilterOutcome("not found", error=True)
    lets = lets_of(pre.envs.get(plugin.name, {}))
    claims = lets.get("claims")
    rejected_here = pre.status is not None and pre.status.plugin == plugin.name
    if not pre.active.get(plugin.name) or not (claims or lets.get("has_extended")) or rejected_here:
        # Its state holds claims (the pod's, or its special claim for extended resources) only
        # once its PreFilter passed with some.
        return PostFilterOutcome(_unschedulable(exe, "no new claims to deallocate"))
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
    earlier = lets.get("earlier") if lets.get("has_extended") else None
    if earlier is not None:
        # The special claim an earlier cycle created (its binding failed): deleted, so that the
        # next cycle makes it anew (extendeddynamicresources.go deleteClaim).
        meta = earlier.metadata
        return PostFilterOutcome("deletion of ResourceClaim completed", deallocate=((meta.namespace, meta.name),))
    return PostFilterOutcome(_unschedulable(exe, "still not schedulable"))


def _unschedulable(exe, text: str) -> str:
    """The message of PostFilter's Unschedulable status when it deallocated nothing: v1.37 gives
    none (fwk.NewStatus(fwk.Unschedulable), so the FitError names only the other PostFilter
    plugins' reasons), earlier versions this text."""
    return "" if exe.plan.target.minor >= 37 else text


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
    lets = (filter_lets_on(exe, state, pod, node_name, plugin, RESERVE_LETS[1])
            if pod.spec.resource_claims or _asks_extended(exe, state, pod) else None)
    if lets is None:
        return None
    claims = list(lets.get(RESERVE_LETS[0]) or [])
    allocations = lets.get(RESERVE_LETS[1]) or []
    full = next((c for c in claims if len(c.status.reserved_for) >= RESERVED_FOR_MAX_SIZE
                 and not any(r.uid == pod.metadata.uid for r in c.status.reserved_for)), None)
    if full is not None:
        # PreBind's status update (bindClaim) is refused by the API server's validation.
        meta = full.metadata
        return (f'running PreBind plugin "DynamicResources": add reservation to claim {meta.namespace}/{meta.name}: '
                f'ResourceClaim.resource.k8s.io "{meta.name}" is invalid: status.reservedFor: Too many: '
                f"{len(full.status.reserved_for) + 1}: must have at most {RESERVED_FOR_MAX_SIZE} items")
    extended = lets.get(RESERVE_LETS[2])
    if extended is not None:
        # PreBind binds the special claim after the pod's own (claimStore: it comes last).
        failure = _bind_extended(state, pod, extended)
        if isinstance(failure, str):
            # PreBind bound the pod's own claims before it failed on the special claim; Unreserve
            # takes the pod out of their reservedFor, and deletes the special claim. Their
            # allocations stay (dynamicresources.go Unreserve).
            state.assume_allocation(pod, claims, allocations[:len([c for c in claims if c.status.allocation is None])])
            _unreserve(state, pod, claims)
            return failure
        claims.append(failure)
    state.assume_allocation(pod, claims, allocations)
    return None


def _unreserve(state, pod, claims) -> None:
    """Unreserve's patch of the pod's claims: the pod out of their status.reservedFor."""
    for c in claims:
        key = (c.metadata.namespace, c.metadata.name)
        current = state.resource_claims.get(key)
        if current is not None:
            left = tuple(r for r in current.status.reserved_for if r.uid != pod.metadata.uid)
            state.resource_claims[key] = attrs.evolve(current, status=attrs.evolve(current.status, reserved_for=left))


def _asks_extended(exe, state, pod) -> bool:
    """Whether the pod asks for an extended resource some DeviceClass serves (with
    DRAExtendedResource on): DynamicResources then has a claim of its own for it."""
    if not exe.plan.target.gate("DRAExtendedResource"):
        return False
    from ..api.requests import pod_requests
    from ..dra.extended import resource_classes
    classes = resource_classes(state.device_classes)
    return any(name in classes and quantity.amount != 0 for name, quantity in pod_requests(pod).items())


def _bind_extended(state, pod, claim):
    """PreBind's bindClaim for the special claim: created through the API (named by the API
    server from <pod>-extended-resources-) unless an earlier cycle created it; the claim to
    allocate and reserve, or PreBind's error. A claim with no requests (the node serves the
    extended resources through a device plugin, and the pod has claims of its own) is created
    too, but then the pod's status has no request to map, and PreBind fails
    (patchPodExtendedResourceClaimStatus)."""
    from ..dra.extended import IN_MEMORY_NAME, created_claim
    if not claim.spec.devices.requests:
        meta = pod.metadata
        return (f'running PreBind plugin "DynamicResources": nil or empty request mappings, no update of pod '
                f'{meta.namespace}/{meta.name} ExtendedResourceClaimStatus')
    if claim.metadata.name != IN_MEMORY_NAME:
        return claim
    created = created_claim(pod, claim)
    state.add_resource_claim(created)
    return created


# ---- explain --------------------------------------------------------------------------------

def _node_extended_claim(state, pod, node):
    """The claim DynamicResources makes for the pod's extended resources on this node
    (filterExtendedResources), or None: no class serves them, or the node serves them all through
    a device plugin. (explain does not know the target's gates; a pod whose extended resources a
    class serves was decided with DRAExtendedResource on, or the API server of the dump would
    have dropped the classes' extendedResourceName.)"""
    from ..api.requests import pod_requests
    from ..dra.extended import IN_MEMORY_NAME, is_dra_extended_resource_name, node_claim, resource_classes
    classes = resource_classes(state.device_classes)
    names = [r for r, q in pod_requests(pod).items()
             if is_dra_extended_resource_name(r) and q.amount != 0 and r in classes
             and node.status.allocatable.get(r, ZERO).value() == 0]
    if not names:
        return None
    claim = node_claim(pod, names, classes)
    return claim if claim.metadata.name == IN_MEMORY_NAME and claim.spec.devices.requests else None


def _pending_claims(state, pod, node=None) -> list:
    """The pod's claims that are still to be allocated, in its order, and on ``node`` the one
    DynamicResources makes for its extended resources there, last."""
    extended = _node_extended_claim(state, pod, node) if node is not None else None
    return _user_pending_claims(state, pod) + ([extended] if extended is not None else [])


def _user_pending_claims(state, pod) -> list:
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
    then for another device class, request by request, each tried on the whole cluster; for an
    extended resource the node serves through DRA, a smaller request of the container."""
    if CANNOT_ALLOCATE not in status.reasons:
        return
    yield from _fewer_extended(state, pod, node)
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


def _fewer_extended(state, pod, node):
    """A container asking for fewer of an extended resource the node serves through DRA: as many
    as the node has free devices of the class for, down to one."""
    claim = _node_extended_claim(state, pod, node)
    if claim is None:
        return
    from ..dra.extended import resource_classes
    from .edits import with_spec
    classes = resource_classes(state.device_classes)
    for short in _shortfalls(state, pod, node, claims=[claim]):
        _, request = short
        resource = _extended_resource_of(pod, claim, request.request, classes)
        if resource is None or request.available <= 0:
            continue
        container, name = resource
        wanted = container.resources.requests[name].value()
        fewer = wanted - (request.wanted - request.available)
        if fewer <= 0:
            continue
        from ..api.quantity import Quantity
        smaller = attrs.evolve(container, resources=attrs.evolve(
            container.resources,
            requests={**container.resources.requests, name: Quantity(fewer)},
            limits={**container.resources.limits, name: Quantity(fewer)} if name in container.resources.limits
            else container.resources.limits))
        containers = tuple(smaller if c is container else c for c in pod.spec.containers)
        init = tuple(smaller if c is container else c for c in pod.spec.init_containers)
        yield Change(f"container {container.name}: ask for {name}: {fewer} instead of {wanted} "
                     f"(DRA devices of class {classes[name].metadata.name})",
                     with_spec(pod, containers=containers, init_containers=init), state)


def _extended_resource_of(pod, claim, request_name: str, classes):
    """(container, resource) of the special claim's request ``container-<i>-request-<j>``."""
    parts = request_name.split("-")
    if len(parts) != 4 or parts[0] != "container" or parts[2] != "request":
        return None
    containers = list(pod.spec.init_containers) + list(pod.spec.containers)
    i, j = int(parts[1]), int(parts[3])
    if i >= len(containers):
        return None
    names = sorted(containers[i].resources.requests)
    return (containers[i], names[j]) if j < len(names) and names[j] in classes else None


def _shortfalls(state, pod, node, claims=None) -> tuple:
    """(claim, shortfall) for each request of the pod's pending claims that the node cannot meet
    even alone; empty when each could be met alone or an error stops the allocator."""
    from ..dra.structured import AllocationError
    claims = _pending_claims(state, pod, node) if claims is None else claims
    try:
        return tuple((claims[s.claim], s) for s in state.device_shortfalls(node, claims))
    except AllocationError:
        return ()


def distance(state, pod, node_name: str, status) -> float:
    """How far a node is from allocating the pod's claims: the largest share of a request's
    devices missing there (0.5, as for any other reason, when each request fits alone)."""
    if CANNOT_ALLOCATE not in status.reasons:
        return 0.5
    shares = [(s.wanted - s.available) / s.wanted for _, s in _shortfalls(state, pod, state.nodes[node_name])
              if s.wanted]
    return max(shares, default=0.5)


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
    return f"{_request_text(state, pod, claim, short)} needs {short.wanted} device(s); free devices it accepts: {shown}{more}"


def _request_text(state, pod, claim, short) -> str:
    """A claim's request as a user knows it: the container's extended resource for the special claim."""
    from ..dra.extended import IN_MEMORY_NAME, resource_classes
    if claim.metadata.name == IN_MEMORY_NAME:
        classes = resource_classes(state.device_classes)
        found = _extended_resource_of(pod, claim, short.request, classes)
        if found is not None:
            container, name = found
            return f"container {container.name}'s {name} (DRA devices of class {classes[name].metadata.name})"
    return f"claim {_claim_key(claim)} request {short.request}"


def _excluded(short) -> str:
    """The devices it accepts that are out all the same (v1.36+: tainted, an exhausted counter,
    exhausted capacity), as " (2 tainted example.com/health=bad:NoSchedule, ...)"."""
    if not short.excluded:
        return ""
    return " (" + ", ".join(f"{n} {why}" for why, n in short.excluded) + ")"


# How many nodes a detail names.
DETAIL_NODES = 3

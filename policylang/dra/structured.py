"""The structured-parameters allocator of Dynamic Resource Allocation: which devices of the
ResourceSlices a node can reach satisfy a pod's ResourceClaims, as kube-scheduler v1.34 to v1.37
pick them (FEATURES: each version's features with its default gates).

v1.36 and v1.37 (k8s.io/dynamic-resource-allocation@v0.36.3 and @v0.37.2): their default gates
turn on partitionable devices, device taints, binding conditions and consumable capacity, which
only internal/incubating supports, so allocator.go picks it; it is v1.35's experimental one
matured. What it changes for claims and slices without the new fields: pools come sorted by
driver and pool name (those with a device with binding conditions last), a pool's slices by
name; the devices of one request are tried as sets, in the pools' order (a start location),
not as orderings, which finds the same first solution; a subrequest's selectors are cached under
its own key; v1.37 checks the claim limit request by request (its own message), gives a class or
claim config that names every request no request names, and names the device in a CEL runtime
error. With the new fields: slices with perDeviceNodeSelection and shared counters take part,
counters are consumed (those of allocated devices of the pool's slices for other nodes too),
taints not tolerated keep a device out, devices with allowMultipleAllocations are shared with
capacity consumed per share (policylang/dra/capacity.py), distinctAttribute constraints hold,
results carry binding conditions, consumed capacity and a shareID, and a device that binds to
its node pins the allocation to it. Below, v1.35's:

Transcribed from k8s.io/dynamic-resource-allocation@v0.35.4/structured: allocator.go picks the
first implementation whose supported features cover the enabled ones. With v1.35's default
gates (pkg/features/kube_features.go: DRAAdminAccess and DRAPrioritizedList beta and on;
DRADeviceTaints, DRAPartitionableDevices, DRAConsumableCapacity, DRADeviceBindingConditions
alpha and off, so the scheduler's Features.DeviceBindingAndStatus is off too) that is
internal/incubating (internal/stable supports no feature at all), and this module follows
allocator_incubating.go and pools_incubating.go:

- GatherPools: the slices for the node (nodeName, allNodes, nodeSelector), the newest
  generation of each pool, pools that are incomplete (not all resourceSliceCount slices seen)
  or invalid (a device name twice) recorded as such;
- an exhaustive depth-first search, claim by claim, request by request, device by device, in
  pool, slice and device order; the first full solution wins. ``allocate`` returns None where
  upstream returns a nil result (unsatisfiable on this node) and raises AllocationError with
  upstream's error text where upstream returns an error.

Upstream's pools come out of a Go map, so its order among pools is unspecified: here pools
come in the order their first slice has in ``slices`` (a dump's order), which makes every
decision reproducible. Within a pool, slices and devices keep their order, as upstream's.

The search is bounded by policylang's cost budget (cost.charge, one step per search call and
per device looked at), so a hostile claim cannot hang a cycle; CEL's own cost limit bounds a
selector.

What is pure is kept: a selector's verdict by what CEL sees of a device (500 nodes of the same
GPUs evaluate it once per kind of GPU); whether a device passes a class and a request's
selectors; the slices and pools of each node (SliceIndex, once per sequence of slices); and
the outcome of a search by position, for every node whose pools look the same to the search
(the same kinds of devices in the same order, the same positions in use): 500 nodes of the
same GPUs search about once per pod and shape.

This module is the allocator's API; the work is in pools.py (the slice index, GatherPools,
NodeMatches, selector verdicts), search.py (the depth-first search, its features and errors)
and outcomes.py (outcomes kept by shape and made a node's AllocationResults).
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

import attrs

from ..api import model
from ..api.quantity import Quantity
from ..frozen import frozen
from .outcomes import _OUTCOMES_KEPT, _materialize, _outcome_key
from .pools import (
    DeviceID, Pool, SliceIndex, gather_pools, node_matches, slice_index)
from .capacity import CapacityError
from .search import (
    ALLOCATION_RESULTS_MAX_SIZE, AllocationError, FailedAllocationOnNode, Features, _allocate,
    _Allocation, lookup_attribute, tolerates)

# The allocator's API, importable from here whichever module holds it.
__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "AllocationError", "DeviceID", "FailedAllocationOnNode", "Features",
           "Pool", "Shortfall", "SliceIndex", "V1_34", "V1_35", "V1_36", "V1_37", "allocate", "gather_pools", "lookup_attribute",
           "node_matches", "shortfalls", "slice_index"]

# dynamicresources.go AllocatorFeatures with v1.35's default gates.
V1_35 = Features(admin_access=True, prioritized_list=True)
# v1.34's default gates are the same (pkg/features/kube_features.go); its allocator is v1.34.4's.
V1_34 = Features(admin_access=True, prioritized_list=True, kubernetes="1.34")
# dynamicresources.go AllocatorFeatures with v1.36's default gates (pkg/features/kube_features.go:
# DRAAdminAccess and DRAPrioritizedList GA; DRAPartitionableDevices, DRADeviceTaints,
# DRAConsumableCapacity, DRADeviceBindingConditions and DRAResourceClaimDeviceStatus beta and on;
# DRAListTypeAttributes alpha and off). Not a subset of internal/stable's features (no binding
# conditions, no consumable capacity): allocator.go picks internal/incubating of v0.36.3.
V1_36 = Features(admin_access=True, prioritized_list=True, partitionable_devices=True, device_taints=True,
                 device_binding_and_status=True, consumable_capacity=True, kubernetes="1.36")
# v1.37's add DRAFractionalCapacityRange (beta, on); DRAListTypeAttributes, DRADerivedAttributes,
# DRADeviceCompatibilityGroups and DRAOptionalNodeOperations stay alpha and off: internal/incubating
# of v0.37.2.
V1_37 = Features(admin_access=True, prioritized_list=True, partitionable_devices=True, device_taints=True,
                 device_binding_and_status=True, consumable_capacity=True, fractional_capacity_range=True,
                 kubernetes="1.37")
FEATURES = {"1.34": V1_34, "1.35": V1_35, "1.36": V1_36, "1.37": V1_37}

# What this transcription implements, per allocator release: v1.34's and v1.35's incubating
# less the features off there; v1.36's and v1.37's incubating, whole (internal/incubating's
# SupportedFeatures of v0.36.3 and v0.37.2).
_IMPLEMENTED = {
    "1.34": {"admin_access", "prioritized_list"},
    "1.35": {"admin_access", "prioritized_list"},
    "1.36": {"admin_access", "prioritized_list", "partitionable_devices", "device_taints",
             "device_binding_and_status", "consumable_capacity"},
    "1.37": {"admin_access", "prioritized_list", "partitionable_devices", "device_taints",
             "device_binding_and_status", "consumable_capacity", "fractional_capacity_range"},
}

# ---- the API -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _check_features(features: Features) -> None:
    if features.kubernetes not in _IMPLEMENTED:
        raise ValueError(f"no allocator of Kubernetes {features.kubernetes!r}")
    implemented = _IMPLEMENTED[features.kubernetes]
    unsupported = sorted(f.name for f in attrs.fields(Features)
                         if f.name != "kubernetes" and getattr(features, f.name) and f.name not in implemented)
    if unsupported:
        raise ValueError(f"allocator features not implemented: {', '.join(unsupported)}")


def allocate(node: "model.Node | None", claims: Sequence[model.ResourceClaim], *,
             classes: Mapping[str, model.DeviceClass],
             slices: "Sequence[model.ResourceSlice] | SliceIndex",
             allocated: "frozenset[DeviceID] | set[DeviceID]" = frozenset(),
             features: Features = V1_35,
             shared: "Mapping[DeviceID, Mapping[str, Quantity]] | None" = None,
             ) -> "tuple[model.AllocationResult, ...] | None":
    """Allocator.Allocate for one node: one AllocationResult per claim (in the claims' order,
    as it goes into the claim's status.allocation, nodeSelector included), or None when the
    claims cannot all be allocated on this node. Raises AllocationError (upstream's error
    text) for a problem with the claims, classes or slices, FailedAllocationOnNode where only
    this node is out ("invalid resource pools were encountered").

    ``slices`` are all of the state's slices, never a node's share of them: those for the node
    are picked here, and whether a pool is complete, or replaced by a newer generation, is
    judged over all of the pool's slices, those of other nodes included (checkSlicesInPool).
    Give the same sequence every time, or a SliceIndex: the index is built once for it.
    ``allocated``: the devices other claims hold (allocated with admin access or not, as the
    caller's DRA manager counts them; from v1.36, with DRAConsumableCapacity, those allocated
    whole). ``shared`` (v1.36+): the devices shares of which are allocated (results with a
    shareID), each with the capacity the shares consume together (AllocatedSharedDeviceIDs and
    AggregatedCapacity; {} where they name none)."""
    if features is not V1_35:
        _check_features(features)
    claims = tuple(claims)
    index = slice_index(slices)
    view = index.view(node, features.kubernetes, features.partitionable_devices)
    if features.incubating_136 and (shared or not view.plain):
        # Counters, shares and per-device node selection make an outcome depend on more than
        # the node's shape: search.
        return _materialize(_allocate(node, claims, classes, index, view, allocated, features, shared),
                            claims, view, index)
    key, pinned = _outcome_key(view, claims, classes, allocated, features)
    kept = index.outcomes.get(key)
    if kept is not None and kept[0] == pinned:
        return _materialize(kept[1], claims, view, index)
    positional = _allocate(node, claims, classes, index, view, allocated, features)
    if len(index.outcomes) >= _OUTCOMES_KEPT:
        index.outcomes.clear()
    index.outcomes[key] = (pinned, positional)
    return _materialize(positional, claims, view, index)

# ---- why not: for explain --------------------------------------------------------------

@frozen
class Shortfall:
    """A request that cannot be met on a node even alone: ``wanted`` devices, ``available``
    free ones on the node that its class and selectors accept."""
    claim: int          # the claim's index in the claims given
    request: str        # the request's name ("request/subrequest" for a firstAvailable one)
    wanted: int
    available: int
    # v1.36+: the devices free and accepted that are out all the same, by why, each once with
    # how many: "tainted <key>=<value>:<effect>" (a taint the request does not tolerate),
    # "counter <set>/<counter> exhausted in pool <driver>/<pool>" (what allocated devices left of
    # a shared counter is less than the device consumes), "capacity <name> exhausted" (what its
    # shares left of a device's capacity, or its request policy, does not allow the request).
    excluded: tuple[tuple[str, int], ...] = ()


def shortfalls(node: model.Node, claims: Sequence[model.ResourceClaim], *,
               classes: Mapping[str, model.DeviceClass],
               slices: "Sequence[model.ResourceSlice] | SliceIndex",
               allocated: "frozenset[DeviceID] | set[DeviceID]" = frozenset(),
               features: Features = V1_35,
               shared: "Mapping[DeviceID, Mapping[str, Quantity]] | None" = None) -> tuple[Shortfall, ...]:
    """Why ``allocate`` found no solution on this node, request by request: each request taken
    alone, with the devices in complete, valid pools for the node that are free (any, for admin
    access) and that the class's and the request's selectors accept. A firstAvailable request
    falls short when every subrequest does; it is reported by its first subrequest.

    Not upstream's: the scheduler only says "cannot allocate all claims". Empty when every
    request could be met alone (then constraints, or requests competing for the same devices,
    are what fail). A selector that errs counts its device out; the errors themselves are
    ``allocate``'s to raise."""
    claims = tuple(claims)
    if features is not V1_35:
        _check_features(features)
    alloc = _Allocation(node, claims, classes, slice_index(slices), allocated, features, shared)
    alloc.prepare()
    found = []
    for ci, claim in enumerate(claims):
        for ri, request in enumerate(claim.spec.devices.requests):
            subs = range(len(request.first_available)) if request.first_available else (0,)
            counts = [(alloc.request_data[(ci, ri, si)], *_available(alloc, (ci, ri, si))) for si in subs]
            if any(have >= data.num_devices and (data.num_devices or have) for data, have, _ in counts):
                continue
            data, have, excluded = counts[0]
            found.append(Shortfall(ci, data.request_name(), data.num_devices, have, excluded))
    return tuple(found)


def _available(alloc: _Allocation, key) -> tuple[int, tuple[tuple[str, int], ...]]:
    """How many devices the request could take alone, and (v1.36+) why the others it accepts
    that are free are out."""
    data = alloc.request_data[key]
    count = 0
    excluded: dict[str, int] = {}
    for pool in alloc.pools:
        if pool.incomplete or pool.invalid:
            continue
        for pos in pool.slices:
            for di, device_id in enumerate(alloc.index.device_ids[pos]):
                if not data.request.admin_access and alloc.device_in_use(device_id):
                    continue
                try:
                    if not alloc.selectable(key, data, pos, di):
                        continue
                except AllocationError:
                    continue
                why = _excluded(alloc, data, pool, pos, di) if alloc.v136 else None
                if why is None:
                    count += 1
                else:
                    excluded[why] = excluded.get(why, 0) + 1
    return count, tuple(excluded.items())


def _excluded(alloc: _Allocation, data, pool, pos: int, di: int) -> "str | None":
    """Why v1.36's allocateDevice would turn a free, accepted device away when the request is
    alone: a taint it does not tolerate, a shared counter allocated devices exhausted, or capacity
    its shares (or its request policy) leave too little of."""
    device = alloc.index.slices[pos].spec.devices[di]
    request = data.request
    if alloc.features.device_taints:
        for taint in device.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in request.tolerations):
                return f"tainted {taint.key}={taint.value}:{taint.effect}"
    multiple = alloc.features.consumable_capacity and bool(device.allow_multiple_allocations)
    if device.consumes_counters and not (multiple and alloc.capacity_in_use(alloc.index.device_ids[pos][di])):
        short = _short_counter(alloc, pool, device)
        if short is not None:
            return f"counter {short} exhausted in pool {pool}"
    if alloc.features.consumable_capacity:
        try:
            fits = alloc.capacity_fits(request, alloc.index.device_ids[pos][di], device)
        except CapacityError:
            fits = False
        if not fits:
            asked = request.capacity.requests if request.capacity is not None else {}
            names = sorted(asked) if asked else sorted(device.capacity)
            return f"capacity {'/'.join(names)} exhausted"
    return None


def _short_counter(alloc: _Allocation, pool, device) -> "str | None":
    """The first counter (set/counter) the device consumes more of than allocated devices left."""
    if not alloc._take_counters(pool, device):
        key = (pool.driver, pool.pool) if alloc.features.kubernetes != "1.36" else ("", pool.pool)
        available = alloc.available_counters[key]
        for consumption in device.consumes_counters:
            for name, c in sorted(consumption.counters.items()):
                have = available.get(consumption.counter_set, {}).get(name)
                if have is not None and have < c.value:
                    return f"{consumption.counter_set}/{name}"
        return "?"
    alloc._give_counters(pool, device)
    return None

"""The structured-parameters allocator of Dynamic Resource Allocation: which devices of the
ResourceSlices a node can reach satisfy a pod's ResourceClaims, as kube-scheduler v1.35 picks
them.

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
from ..frozen import frozen
from .outcomes import _OUTCOMES_KEPT, _materialize, _outcome_key
from .pools import (
    DeviceID, Pool, SliceIndex, gather_pools, node_matches, slice_index)
from .search import (
    ALLOCATION_RESULTS_MAX_SIZE, AllocationError, FailedAllocationOnNode, Features, _allocate,
    _Allocation, lookup_attribute)

# The allocator's API, importable from here whichever module holds it.
__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "AllocationError", "DeviceID", "FailedAllocationOnNode", "Features",
           "Pool", "Shortfall", "SliceIndex", "V1_34", "V1_35", "allocate", "gather_pools", "lookup_attribute",
           "node_matches", "shortfalls", "slice_index"]

# dynamicresources.go AllocatorFeatures with v1.35's default gates.
V1_35 = Features(admin_access=True, prioritized_list=True)
# v1.34's default gates are the same (pkg/features/kube_features.go); its allocator is v1.34.4's.
V1_34 = Features(admin_access=True, prioritized_list=True, kubernetes="1.34")
FEATURES = {"1.34": V1_34, "1.35": V1_35,
            # Interim (branch draext): v1.35's allocator for v1.36 and v1.37 until their own (branch
            # draalloc) replaces these two entries; they agree on devices without taints, counters,
            # consumable capacity or binding conditions, which is all the extended resource tests use.
            "1.36": V1_35, "1.37": V1_35}

# What this transcription implements: incubating's features less the ones off in v1.35.
_IMPLEMENTED = {"admin_access", "prioritized_list", "kubernetes"}

# ---- the API -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _check_features(features: Features) -> None:
    unsupported = sorted(f.name for f in attrs.fields(Features)
                         if getattr(features, f.name) and f.name not in _IMPLEMENTED)
    if unsupported:
        raise ValueError(f"allocator features not implemented: {', '.join(unsupported)}")


def allocate(node: "model.Node | None", claims: Sequence[model.ResourceClaim], *,
             classes: Mapping[str, model.DeviceClass],
             slices: "Sequence[model.ResourceSlice] | SliceIndex",
             allocated: "frozenset[DeviceID] | set[DeviceID]" = frozenset(),
             features: Features = V1_35) -> "tuple[model.AllocationResult, ...] | None":
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
    caller's DRA manager counts them)."""
    if features is not V1_35:
        _check_features(features)
    claims = tuple(claims)
    index = slice_index(slices)
    view = index.view(node, features.kubernetes)
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


def shortfalls(node: model.Node, claims: Sequence[model.ResourceClaim], *,
               classes: Mapping[str, model.DeviceClass],
               slices: "Sequence[model.ResourceSlice] | SliceIndex",
               allocated: "frozenset[DeviceID] | set[DeviceID]" = frozenset(),
               features: Features = V1_35) -> tuple[Shortfall, ...]:
    """Why ``allocate`` found no solution on this node, request by request: each request taken
    alone, with the devices in complete, valid pools for the node that are free (any, for admin
    access) and that the class's and the request's selectors accept. A firstAvailable request
    falls short when every subrequest does; it is reported by its first subrequest.

    Not upstream's: the scheduler only says "cannot allocate all claims". Empty when every
    request could be met alone (then constraints, or requests competing for the same devices,
    are what fail). A selector that errs counts its device out; the errors themselves are
    ``allocate``'s to raise."""
    claims = tuple(claims)
    alloc = _Allocation(node, claims, classes, slice_index(slices), allocated, features)
    alloc.prepare()
    found = []
    for ci, claim in enumerate(claims):
        for ri, request in enumerate(claim.spec.devices.requests):
            subs = range(len(request.first_available)) if request.first_available else (0,)
            counts = [(alloc.request_data[(ci, ri, si)], _available(alloc, (ci, ri, si))) for si in subs]
            if any(have >= data.num_devices and (data.num_devices or have) for data, have in counts):
                continue
            data, have = counts[0]
            found.append(Shortfall(ci, data.request_name(), data.num_devices, have))
    return tuple(found)


def _available(alloc: _Allocation, key) -> int:
    data = alloc.request_data[key]
    count = 0
    for pool in alloc.pools:
        if pool.incomplete or pool.invalid:
            continue
        for pos in pool.slices:
            for di, device_id in enumerate(alloc.index.device_ids[pos]):
                if not data.request.admin_access and device_id in alloc.allocated:
                    continue
                try:
                    count += alloc.selectable(key, data, pos, di)
                except AllocationError:
                    continue
    return count

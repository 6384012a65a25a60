"""The depth-first search of the DRA structured-parameters allocator (allocator_incubating.go
of k8s.io/dynamic-resource-allocation@v0.35.4/structured): claim by claim, request by request,
device by device, in pool, slice and device order, the first full solution wins; with the
features it may use, its errors, the requests as it sees them and the matchAttribute
constraint. Its outcome is by position in a node's reachable devices (policylang/dra/outcomes.py
makes it a node's AllocationResults)."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

import attrs

from ..api import model
from ..cost import charge
from ..frozen import frozen
from . import cel
from .pools import DeviceID, SliceIndex, _NodeView


# resourceapi.AllocationResultsMaxSize (k8s.io/api resource/v1 types.go)
ALLOCATION_RESULTS_MAX_SIZE = 32


@frozen
class Features:
    """structured.Features (internal/types.go): what the allocator may do beyond the basics."""
    admin_access: bool = False
    consumable_capacity: bool = False
    device_binding_and_status: bool = False
    device_taints: bool = False
    partitionable_devices: bool = False
    prioritized_list: bool = False
    # Not a gate: the release whose allocator this is. v1.34.4's incubating allocator uses the
    # devices of an incomplete pool, fails the whole attempt on an invalid one ("pool P is
    # invalid: ..."), and judges a pool complete by the slices for the node alone; v1.35.4's skips
    # both kinds and counts every slice of the pool (allocator_incubating.go allocateDevice,
    # pools_incubating.go GatherPools).
    kubernetes: str = "1.35"


class AllocationError(Exception):
    """A problem with the claims, classes or slices (a CEL error, a missing class): upstream
    aborts the pod's scheduling attempt with it. str() is upstream's error text."""
    on_node = False     # upstream's errors.Is(err, ErrFailedAllocationOnNode)


class FailedAllocationOnNode(AllocationError):
    """upstream's ErrFailedAllocationOnNode: the node cannot be used ("invalid resource pools
    were encountered"), but other nodes may; the scheduler reports it as the node's reason."""
    on_node = True


# ---- requests ----------------------------------------------------------------------------

@frozen
class _Request:
    """requestAccessor: an exactly request or a subrequest, seen alike."""
    name: str
    device_class_name: str
    allocation_mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: tuple[model.DeviceSelector, ...]
    tolerations: tuple[model.DeviceToleration, ...]


def _exact(request: model.DeviceRequest) -> _Request:
    e = request.exactly or model.ExactDeviceRequest(device_class_name="", allocation_mode="", count=0)
    return _Request(request.name, e.device_class_name, e.allocation_mode, e.count, bool(e.admin_access),
                    e.admin_access is not None, e.selectors, e.tolerations)


def _sub(sub: model.DeviceSubRequest) -> _Request:
    return _Request(sub.name, sub.device_class_name, sub.allocation_mode, sub.count, False, False,
                    sub.selectors, sub.tolerations)


@attrs.define
class _RequestData:
    request: _Request
    parent: Optional[_Request]
    cls: Optional[model.DeviceClass] = None
    num_devices: int = 0
    selected_sub_index: int = 0
    all_devices: list = attrs.field(factory=list)    # [(DeviceID, slice position, device index)]
    selectors: tuple = ()   # the class's selector expressions and the request's, as a key


    def request_name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent is not None else self.request.name


@attrs.define
class _DeviceResult:
    request: str
    parent: str
    id: DeviceID
    pos: int
    index: int
    admin_access: Optional[bool]
    # The (sub)request's tolerations, which upstream looks up again by the request's name.
    tolerations: tuple[model.DeviceToleration, ...]

    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


class _MatchAttribute:
    """matchAttributeConstraint: every device of the requests it names has the attribute, with
    one value; the first device sets it."""

    def __init__(self, requests: Sequence[str], attribute: str):
        self.requests = frozenset(requests)
        self.attribute_name = attribute
        self.attribute: Optional[model.DeviceAttribute] = None
        self.num_devices = 0

    def _applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (sub != "" and f"{request}/{sub}" in self.requests)

    def add(self, request: str, sub: str, device: model.Device, device_id: DeviceID) -> bool:
        if not self._applies(request, sub):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.attribute, self.num_devices = attribute, 1
            return True
        if not _same_value(attribute, self.attribute):
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self._applies(request, sub):
            self.num_devices -= 1


def _same_value(new: model.DeviceAttribute, first: model.DeviceAttribute) -> bool:
    # Versions are semver 2.0.0 in minimal form, so equal versions are equal strings.
    for field in ("string", "int_", "bool_", "version"):
        value = getattr(new, field)
        if value is not None:
            return getattr(first, field) is not None and value == getattr(first, field)
    return False


def lookup_attribute(device: model.Device, device_id: DeviceID, name: str) -> Optional[model.DeviceAttribute]:
    """lookupAttribute: by its fully qualified name, or by its id where the domain is the driver's."""
    found = device.attributes.get(name)
    if found is not None:
        return found
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id.driver:
        return None
    return device.attributes.get(ident)


def _kobj(claim: model.ResourceClaim) -> str:
    """klog.KObj: namespace/name, or the name alone."""
    meta = claim.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


# ---- the search ----------------------------------------------------------------------------

class _AllocationMaxSizeExceeded(Exception):
    """errAllocationResultMaxSizeExceeded: backtrack further, another subrequest may need fewer."""


class _Allocation:
    """One Allocate call (upstream's allocator struct): the claims, the pools, the search's
    state (devices being allocated, constraint sets, results)."""

    def __init__(self, node, claims, classes, index: SliceIndex, allocated, features: Features):
        self.node = node
        self.claims = claims
        self.classes = classes
        self.index = index
        self.allocated = allocated
        self.features = features
        self.pools = index.pools_for(node, features.kubernetes)
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[_MatchAttribute]] = [[] for _ in claims]
        self.matches: dict[tuple, dict[DeviceID, bool]] = {}    # by request key, then device
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[_DeviceResult]] = [[] for _ in claims]

    # -- checking the claims before the search (Allocate's first loop) --
    def prepare(self) -> int:
        total = 0
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.spec.devices.requests):
                if request.first_available:
                    if not self.features.prioritized_list:
                        raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: has subrequests, "
                                              "but the DRAPrioritizedList feature is disabled")
                    least = sys.maxsize
                    key = (ci, ri, 0)
                    for si, sub in enumerate(request.first_available):
                        # As upstream: the key a subrequest is checked under is the previous one's
                        # (it is moved on after the check), which the match cache sees.
                        data = self.validate(_sub(sub), _exact(request), key)
                        key = (ci, ri, si)
                        self.request_data[key] = data
                        least = min(least, data.num_devices)
                    min_devices += least
                else:
                    data = self.validate(_exact(request), None, (ci, ri, 0))
                    self.request_data[(ci, ri, 0)] = data
                    min_devices += data.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {_kobj(claim)}: number of requested devices {min_devices} exceeds "
                                      f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            for i, c in enumerate(claim.spec.devices.constraints):
                if c.match_attribute is None:
                    raise AllocationError(f"claim {_kobj(claim)}, constraint #{i}: empty constraint "
                                          "(unsupported constraint type?)")
                self.constraints[ci].append(_MatchAttribute(c.requests, c.match_attribute))
            total += min_devices
        # Selecting a device is independent of what is allocated: the search starts a fresh cache.
        self.matches = {}
        return total

    def validate(self, request: _Request, parent: Optional[_Request], key) -> _RequestData:
        """validateDeviceRequest."""
        claim = self.claims[key[0]]
        data = _RequestData(request, parent)
        for i, selector in enumerate(request.selectors):
            if selector.cel is None:
                raise AllocationError(f"claim {_kobj(claim)}, request {request.name}, selector #{i}: "
                                      "CEL expression empty (unsupported selector type?)")
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: admin access is requested, "
                                  "but the feature is disabled")
        if request.device_class_name == "":
            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: missing device class name "
                                  "(unsupported request type?)")
        cls = self.classes.get(request.device_class_name)
        if cls is None:
            # The scheduler's DeviceClass lister answers with the API's NotFound error.
            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: could not retrieve device class "
                                  f"{request.device_class_name}: deviceclass.resource.k8s.io "
                                  f"\"{request.device_class_name}\" not found")
        data.cls = cls
        data.selectors = (tuple(sel.cel.expression for sel in cls.spec.selectors if sel.cel is not None),
                          tuple(sel.cel.expression for sel in request.selectors))
        if request.allocation_mode == model.ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == model.ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: asks for all devices, "
                                          f"but resource pool {pool} is currently being updated")
                if pool.invalid:
                    raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: asks for all devices, "
                                          f"but resource pool {pool} is currently invalid")
                for pos in pool.slices:
                    for di in range(len(self.index.slices[pos].spec.devices)):
                        charge(1)
                        if self.selectable(key, data, pos, di):
                            data.all_devices.append((self.index.device_ids[pos][di], pos, di))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: unsupported count mode "
                                  f"{request.allocation_mode}")
        return data

    # -- selectors --
    def selectable(self, key, data: _RequestData, pos: int, di: int) -> bool:
        """isSelectable: the class's selectors and the request's all match the device."""
        device = self.index.slices[pos].spec.devices[di]
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        device_id = self.index.device_ids[pos][di]
        per_request = self.matches.get(key)
        if per_request is None:
            per_request = self.matches[key] = {}
        found = per_request.get(device_id)
        if found is not None:
            return found
        # The class's and the request's selectors on this device, as any earlier call found them
        # (errors are not kept: they are raised again, in the same order).
        pure = (data.selectors, pos, di)
        result = self.index.selectable.get(pure)
        if result is None:
            result = (data.cls is None or self.selectors_match(key, pos, di, data.cls, data.cls.spec.selectors)) \
                and self.selectors_match(key, pos, di, None, data.request.selectors)
            self.index.selectable[pure] = result
        # With perDeviceNodeSelection each device would be matched against the node here; such
        # slices need DRAPartitionableDevices, and GatherPools left them out.
        per_request[device_id] = result
        return result

    def selectors_match(self, key, pos: int, di: int, cls, selectors) -> bool:
        verdicts = self.index.verdicts
        for i, selector in enumerate(selectors):
            if selector.cel is None:
                # Only a class can get here (a request's selectors were checked first); upstream
                # would dereference nil. API validation refuses both.
                raise AllocationError(f"{self._owner(key, cls)}: selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
            verdict = verdicts.get((selector.cel.expression, pos, di))
            if verdict is None:
                verdict = self.index.verdict(selector.cel.expression, pos, di)
            if verdict is True:
                continue
            if verdict is False:
                return False
            if isinstance(verdict, cel.CompileError):
                raise AllocationError(f"{self._owner(key, cls)}: selector #{i}: CEL compile error: {verdict}")
            raise AllocationError(f"{self._owner(key, cls)}: selector #{i}: CEL runtime error: {verdict}")
        return True

    def _owner(self, key, cls) -> str:
        return f"class {cls.metadata.name}" if cls is not None else f"claim {_kobj(self.claims[key[0]])}"

    # -- the depth-first search (allocateOne) --
    def allocate_one(self, ci: int, ri: int, si: int, di: int, allocate_sub: bool) -> bool:
        charge(1)
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.devices.requests):
            try:
                return self.allocate_one(ci + 1, 0, 0, 0, False)
            except _AllocationMaxSizeExceeded:
                # Not fatal: another allocation of an earlier claim may let this one use a
                # subrequest that needs fewer devices.
                return False
        key = (ci, ri, si)
        data = self.request_data[key]
        if not allocate_sub and data.parent is not None:
            all_exceeded = True
            sub = 0
            while True:
                if (ci, ri, sub) not in self.request_data:
                    if all_exceeded:
                        raise _AllocationMaxSizeExceeded()
                    return False
                try:
                    success = self.allocate_one(ci, ri, sub, di, True)
                except _AllocationMaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    data.selected_sub_index = sub
                    return True
                sub += 1

        request = data.request
        all_devices = request.allocation_mode == model.ALLOCATION_MODE_ALL
        if all_devices and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self.allocate_one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _AllocationMaxSizeExceeded()

        if all_devices:
            device_id, pos, index = data.all_devices[di]
            undo = self.allocate_device(ci, ri, si, device_id, pos, index, must=True)
            if undo is None:
                return False
            # As upstream: the next device of an "all" request is looked for under subrequest 0.
            try:
                done = self.allocate_one(ci, ri, 0, di + 1, allocate_sub)
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done

        matches = self.matches.get(key)
        if matches is None:
            matches = self.matches[key] = {}
        allocated, allocating, device_ids = self.allocated, self.allocating, self.index.device_ids
        for pool in self.pools:
            if pool.invalid and self.features.kubernetes == "1.34":
                raise AllocationError(f"pool {pool.pool} is invalid: {pool.invalid_reason}")
            if not pool.usable:
                continue
            for pos in pool.slices:
                ids = device_ids[pos]
                charge(len(ids))
                for index in range(len(ids)):
                    device_id = ids[index]
                    if request.admin_access:
                        if ci in allocating.get(device_id, ()):
                            continue
                    elif device_id in allocated or allocating.get(device_id):
                        continue
                    selectable = matches.get(device_id)
                    if selectable is None:
                        selectable = self.selectable(key, data, pos, index)
                    if not selectable:
                        continue
                    undo = self.allocate_device(ci, ri, si, device_id, pos, index, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self.allocate_one(ci, ri, si, di + 1, allocate_sub)
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def allocate_device(self, ci, ri, si, device_id: DeviceID, pos: int, index: int, must: bool):
        """allocateDevice: the candidate taken, if it is free and keeps the constraints; the
        function that gives it back, or None."""
        data = self.request_data[(ci, ri, si)]
        request = data.request
        if request.admin_access:
            if ci in self.allocating.get(device_id, ()):
                return None
        elif device_id in self.allocated or self.allocating.get(device_id):
            return None
        device = self.index.slices[pos].spec.devices[index]
        if not self.features.partitionable_devices and device.consumes_counters:
            return None
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name
        constraints = self.constraints[ci]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device, device_id):
                if must:
                    raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {request.name}: cannot add "
                                          f"device {device_id} because a claim constraint would not be satisfied")
                for earlier in constraints[:i]:
                    earlier.remove(base, sub)
                return None
        self.allocating.setdefault(device_id, set()).add(ci)
        results = self.results[ci]
        results.append(_DeviceResult(request.name, data.parent.name if data.parent else "", device_id, pos,
                                     index, True if request.admin_access else None, request.tolerations))
        before = len(results) - 1

        def undo():
            for constraint in constraints:
                constraint.remove(base, sub)
            self.allocating[device_id].discard(ci)
            del results[before:]
        return undo

    # -- the results (Allocate's last loop) --
    def config(self, ci: int) -> tuple:
        claim = self.claims[ci]
        config: list[model.DeviceAllocationConfiguration] = []
        ranges: dict[str, tuple[int, int]] = {}    # the class's configs, added once
        for ri in range(len(claim.spec.devices.requests)):
            data = self.request_data[(ci, ri, 0)]
            if data.parent is not None:
                data = self.request_data[(ci, ri, data.selected_sub_index)]
            cls = data.cls
            if cls is None:
                continue
            name = cls.metadata.name
            if name in ranges:
                start, end = ranges[name]
                for i in range(start, end):
                    config[i] = attrs.evolve(config[i], requests=config[i].requests + (data.request_name(),))
                continue
            start = len(config)
            for c in cls.spec.config:
                config.append(model.DeviceAllocationConfiguration(source="FromClass", requests=(data.request_name(),),
                                                                  opaque=c.opaque))
            ranges[name] = (start, len(config))
        for c in claim.spec.devices.config:
            entry = model.DeviceAllocationConfiguration(source="FromClaim", requests=c.requests, opaque=c.opaque)
            if not c.requests:
                config.append(entry)
                continue
            # As upstream: once for every request (or chosen subrequest) the config names.
            for ri, request in enumerate(claim.spec.devices.requests):
                if request.name in c.requests:
                    config.append(entry)
                    continue
                data = self.request_data[(ci, ri, 0)]
                if data.parent is None:
                    continue
                chosen = request.first_available[data.selected_sub_index]
                if f"{request.name}/{chosen.name}" in c.requests:
                    config.append(entry)
        return tuple(config)


def _depth_needed(claims: Sequence[model.ResourceClaim]) -> int:
    """The search's recursion: a frame per claim, request, subrequest and device (at most 32
    devices a claim). Python 3.11+ keeps Python-to-Python calls off the C stack, so the limit
    can grow with the claims."""
    return sum(3 * len(c.spec.devices.requests) + 2 * ALLOCATION_RESULTS_MAX_SIZE + 4 for c in claims)


def _allocate(node, claims, classes, index: SliceIndex, view: _NodeView, allocated, features):
    """Allocate's search; its outcome by position in the node's reachable devices: per claim,
    the (request name, position, adminAccess, tolerations) of each device, and the config."""
    alloc = _Allocation(node, claims, classes, index, allocated, features)
    alloc.prepare()
    need = _depth_needed(claims)
    limit = sys.getrecursionlimit()
    if need > 200:      # beyond the default limit's headroom
        sys.setrecursionlimit(limit + need)
    try:
        done = alloc.allocate_one(0, 0, 0, 0, False)
    except _AllocationMaxSizeExceeded:
        # Only a later claim turns it into "no solution"; from the first claim it is
        # Allocate's error, as upstream's.
        raise AllocationError("allocation max size exceeded") from None
    finally:
        if need > 200:
            sys.setrecursionlimit(limit)
    if not done:
        if any(p.invalid for p in alloc.pools) and alloc.features.kubernetes != "1.34":
            raise FailedAllocationOnNode("invalid resource pools were encountered")
        return None
    return tuple((tuple((r.request_name(), view.position[r.id], r.admin_access, r.tolerations)
                        for r in alloc.results[ci]), alloc.config(ci))
                 for ci in range(len(claims)))

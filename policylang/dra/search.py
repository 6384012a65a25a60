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
from ..api.quantity import Quantity
from ..cost import charge
from ..frozen import frozen
from . import capacity, cel
from .pools import DeviceID, SliceIndex, _NodeView, node_matches


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
    fractional_capacity_range: bool = False
    # Not a gate: the release whose allocator this is. v1.34.4's incubating allocator uses the
    # devices of an incomplete pool, fails the whole attempt on an invalid one ("pool P is
    # invalid: ..."), and judges a pool complete by the slices for the node alone; v1.35.4's skips
    # both kinds and counts every slice of the pool (allocator_incubating.go allocateDevice,
    # pools_incubating.go GatherPools).
    kubernetes: str = "1.35"

    @property
    def incubating_136(self) -> bool:
        """Whether this is v1.36's or v1.37's allocator (v0.36.3 / v0.37.2 incubating)."""
        return self.kubernetes not in ("1.34", "1.35")


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
    capacity: Optional[model.CapacityRequirements] = None


def _exact(request: model.DeviceRequest) -> _Request:
    e = request.exactly or model.ExactDeviceRequest(device_class_name="", allocation_mode="", count=0)
    return _Request(request.name, e.device_class_name, e.allocation_mode, e.count, bool(e.admin_access),
                    e.admin_access is not None, e.selectors, e.tolerations, e.capacity)


def _sub(sub: model.DeviceSubRequest) -> _Request:
    return _Request(sub.name, sub.device_class_name, sub.allocation_mode, sub.count, False, False,
                    sub.selectors, sub.tolerations, sub.capacity)


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
    # v1.36+: what the result carries beyond (binding conditions, consumed capacity, whether it
    # is one share of a device that allows multiple allocations): see _extra.
    extra: tuple = ()

    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


def _constrains(requests: frozenset, request: str, sub: str) -> bool:
    """Whether a constraint naming ``requests`` (none: all) covers a device of ``request`` (or its
    subrequest ``sub``): constraint.go's check of the request names."""
    if not requests:
        return True
    return request in requests or (sub != "" and f"{request}/{sub}" in requests)


class _AttributeConstraint:
    """What the attribute constraints share (constraint.go): the requests they name (none: all),
    the attribute they read, and how many devices they hold."""

    def __init__(self, requests: Sequence[str], attribute: str):
        self.requests = frozenset(requests)
        self.attribute_name = attribute
        self.num_devices = 0

    def _applies(self, request: str, sub: str) -> bool:
        return _constrains(self.requests, request, sub)


class _MatchAttribute(_AttributeConstraint):
    """matchAttributeConstraint: every device of the requests it names has the attribute, with
    one value; the first device sets it."""

    def __init__(self, requests: Sequence[str], attribute: str):
        super().__init__(requests, attribute)
        self.attribute: Optional[model.DeviceAttribute] = None

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


class _DistinctAttribute(_AttributeConstraint):
    """distinctAttributeConstraint (v1.36+, constraint.go): the devices of the requests it
    names each have the attribute, with values that differ. As upstream, the values are kept
    by request name, so the devices of one request replace each other's value."""

    def __init__(self, requests: Sequence[str], attribute: str, by_request: bool = True):
        super().__init__(requests, attribute)
        # v1.36 keeps one value per request name; v1.37 the value of each device, as a stack.
        self.by_request = by_request
        self.attributes: dict = {}
        self.stack: list[model.DeviceAttribute] = []

    def add(self, request: str, sub: str, device: model.Device, device_id: DeviceID) -> bool:
        if not self._applies(request, sub):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if not self.by_request:
            if not self._distinct_from(attribute, self.stack):
                return False
            self.stack.append(attribute)
            return True
        if self.num_devices == 0:
            self.attributes[request] = attribute
            self.num_devices = 1
            return True
        if not self._distinct(attribute):
            return False
        self.attributes[request] = attribute
        self.num_devices += 1
        return True

    def _distinct(self, attribute: model.DeviceAttribute) -> bool:
        return self._distinct_from(attribute, self.attributes.values())

    @staticmethod
    def _distinct_from(attribute: model.DeviceAttribute, values) -> bool:
        for have in values:
            for field in ("string", "int_", "bool_", "version"):
                value = getattr(attribute, field)
                if value is not None:
                    if getattr(have, field) is not None and getattr(have, field) == value:
                        return False
                    break
            else:
                return False
        return True

    def remove(self, request: str, sub: str) -> None:
        if not self._applies(request, sub):
            return
        if not self.by_request:
            self.stack.pop()
            return
        self.attributes.pop(request, None)
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


def _taint_prevents(device: model.Device, request: _Request) -> bool:
    """taintPreventsAllocation: a NoSchedule or NoExecute taint (other effects, None included,
    do not count) that none of the request's tolerations tolerates."""
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and \
                not any(tolerates(t, taint) for t in request.tolerations):
            return True
    return False


def tolerates(toleration: model.DeviceToleration, taint: model.DeviceTaint) -> bool:
    """resourceclaim.ToleratesTaint (devicetoleration.go)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def _extra(device: model.Device, share: bool, consumed: dict, binding: bool) -> tuple:
    """What a v1.36+ result carries beyond the v1.35 fields, hashable: the device's binding
    conditions and binding failure conditions (with DeviceBindingAndStatus), whether it binds to
    the node, whether it is a share, and the capacity the share consumes (by name)."""
    return ((device.binding_conditions if binding else ()),
            (device.binding_failure_conditions if binding else ()),
            bool(device.binds_to_node), share, tuple(sorted(consumed.items())))


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

    def __init__(self, node, claims, classes, index: SliceIndex, allocated, features: Features, shared=None):
        self.node = node
        self.claims = claims
        self.classes = classes
        self.index = index
        self.allocated = allocated
        self.features = features
        self.pools = index.pools_for(node, features.kubernetes, features.partitionable_devices)
        # v1.36+ (allocator_incubating.go of v0.36.3 / v0.37.2): the devices shared by
        # allocations (AllocatedSharedDeviceIDs) with the capacity they consume together
        # (AggregatedCapacity; {} where the shares name none), the capacity being allocated, the
        # counters each pool has left once allocated devices took theirs, and those being taken.
        self.v136 = features.incubating_136
        self.shared: dict = shared or {}
        self.allocating_capacity: dict[DeviceID, dict] = {}
        self.available_counters: dict[tuple[str, str], dict] = {}
        self.consumed_counters: dict[tuple[str, str], dict] = {}
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
                self._check_capacity_requests(claim, request)
                if request.first_available:
                    least = sys.maxsize
                    key = (ci, ri, 0)
                    for si, sub in enumerate(request.first_available):
                        # v1.34/v1.35, as upstream: the key a subrequest is checked under is the
                        # previous one's (it is moved on after the check), which the match cache
                        # sees. v1.36 checks each under its own.
                        if self.v136:
                            key = (ci, ri, si)
                        data = self.validate(_sub(sub), _exact(request), key)
                        key = (ci, ri, si)
                        self.request_data[key] = data
                        least = min(least, data.num_devices)
                else:
                    data = self.validate(_exact(request), None, (ci, ri, 0))
                    self.request_data[(ci, ri, 0)] = data
                    least = data.num_devices
                if self.features.kubernetes == "1.37" and least > ALLOCATION_RESULTS_MAX_SIZE - min_devices:
                    # v0.37.2 checks each request against what is left of the limit.
                    raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: adding {least} devices "
                                          f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}, with "
                                          f"{min_devices} already accounted for")
                min_devices += least
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {_kobj(claim)}: number of requested devices {min_devices} exceeds "
                                      f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            for i, c in enumerate(claim.spec.devices.constraints):
                if c.match_attribute is not None:
                    self.constraints[ci].append(_MatchAttribute(c.requests, c.match_attribute))
                elif c.distinct_attribute is not None and self.v136:
                    self.constraints[ci].append(_DistinctAttribute(c.requests, c.distinct_attribute,
                                                                   self.features.kubernetes == "1.36"))
                else:
                    raise AllocationError(f"claim {_kobj(claim)}, constraint #{i}: empty constraint "
                                          "(unsupported constraint type?)")
            total += min_devices
        # Selecting a device is independent of what is allocated: the search starts a fresh cache.
        self.matches = {}
        return total

    def _check_capacity_requests(self, claim, request: model.DeviceRequest) -> None:
        """Capacity requests need DRAConsumableCapacity (v1.36's allocator refuses them without)."""
        if not self.v136 or self.features.consumable_capacity:
            return
        if request.exactly is not None and request.exactly.capacity is not None:
            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: has capacity requests, "
                                  "but the DRAConsumableCapacity feature is disabled")
        for sub in request.first_available:
            if sub.capacity is not None:
                raise AllocationError(f"claim {_kobj(claim)}, subrequest {sub.name}: has capacity requests, "
                                      "but the DRAConsumableCapacity feature is disabled")

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
                            if self.v136 and self.features.consumable_capacity and \
                                    not self._all_mode_fits(claim, request, pos, di):
                                continue
                            data.all_devices.append((self.index.device_ids[pos][di], pos, di, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: unsupported count mode "
                                  f"{request.allocation_mode}")
        return data

    def _all_mode_fits(self, claim, request: _Request, pos: int, di: int) -> bool:
        """An "all" request takes a device only where its capacity allows the request: v1.36 as
        the search checks it (an error skips the device), v1.37 against the device's capacity
        alone (remaining capacity is allocateDevice's to check; an error is Allocate's)."""
        device = self.index.slices[pos].spec.devices[di]
        if self.features.kubernetes == "1.36":
            try:
                return self.capacity_fits(request, self.index.device_ids[pos][di], device)
            except capacity.CapacityError:
                return False
        try:
            return capacity.fits({}, request.capacity, device.capacity, {}, self.features.kubernetes,
                                 self.features.fractional_capacity_range)
        except capacity.CapacityError as err:
            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: checking capacity for device "
                                  f"{device.name}: {err}") from None

    def capacity_fits(self, request: _Request, device_id: DeviceID, device: model.Device) -> bool:
        """allocator.CmpRequestOverCapacity: against what allocated shares and this search's
        allocations consume of the device."""
        return capacity.fits(self.shared.get(device_id) or {}, request.capacity, device.capacity,
                             self.allocating_capacity.get(device_id, {}), self.features.kubernetes,
                             self.features.fractional_capacity_range)

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
        multi = self.v136 and bool(device.allow_multiple_allocations)
        pure = (data.selectors, pos, di, multi)
        result = self.index.selectable.get(pure)
        if result is None:
            result = (data.cls is None or self.selectors_match(key, pos, di, data.cls, data.cls.spec.selectors)) \
                and self.selectors_match(key, pos, di, None, data.request.selectors)
            self.index.selectable[pure] = result
        # With perDeviceNodeSelection (v1.36+: v1.35's GatherPools left such slices out) each
        # device must reach the node too.
        if result and self.v136 and self.index.slices[pos].spec.per_device_node_selection:
            result = node_matches(self.node, device.node_name or "", bool(device.all_nodes), device.node_selector)
        per_request[device_id] = result
        return result

    def selectors_match(self, key, pos: int, di: int, cls, selectors) -> bool:
        verdicts = self.index.verdicts
        multi = self.v136 and bool(self.index.slices[pos].spec.devices[di].allow_multiple_allocations)
        for i, selector in enumerate(selectors):
            if selector.cel is None:
                # Only a class can get here (a request's selectors were checked first); upstream
                # would dereference nil. API validation refuses both.
                raise AllocationError(f"{self._owner(key, cls)}: selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
            verdict = verdicts.get((selector.cel.expression, pos, di, multi))
            if verdict is None:
                verdict = self.index.verdict(selector.cel.expression, pos, di, multi)
            if verdict is True:
                continue
            if verdict is False:
                return False
            if isinstance(verdict, cel.CompileError):
                raise AllocationError(f"{self._owner(key, cls)}: selector #{i}: CEL compile error: {verdict}")
            if self.features.kubernetes == "1.37":
                # v0.37.2 names the device, and suggests optional chaining for a missing key
                # (cel/errors.go EnhanceRuntimeError).
                text = str(verdict)
                if "no such key:" in text:
                    text += (". consider using CEL optional chaining (.? followed by orValue()) or guarding the "
                             "check with has() for optional fields")
                raise AllocationError(f"{self._owner(key, cls)}: selector #{i} on device "
                                      f"{self.index.device_ids[pos][di]}: CEL runtime error: {text}")
            raise AllocationError(f"{self._owner(key, cls)}: selector #{i}: CEL runtime error: {verdict}")
        return True

    def _owner(self, key, cls) -> str:
        return f"class {cls.metadata.name}" if cls is not None else f"claim {_kobj(self.claims[key[0]])}"

    # -- the depth-first search (allocateOne) --
    def allocate_one(self, ci: int, ri: int, si: int, di: int, allocate_sub: bool, start=(0, 0, 0)) -> bool:
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
            device_id, pos, index, pool = data.all_devices[di]
            undo = self.allocate_device(ci, ri, si, device_id, pos, index, must=True, pool=pool)
            if undo is None:
                return False
            # v1.34/v1.35, as upstream: the next device of an "all" request is looked for under
            # subrequest 0 (v1.36: under its own).
            try:
                done = self.allocate_one(ci, ri, si if self.v136 else 0, di + 1, allocate_sub)
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done

        if self.v136:
            return self._search_136(ci, ri, si, di, allocate_sub, start, key, data)
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

    def _search_136(self, ci, ri, si, di, allocate_sub, start, key, data) -> bool:
        """v1.36's loop over the candidates of one device of a request: from ``start`` (pool,
        slice, device) on, so the devices of one request come in the pools' order and each set
        of devices is tried once (combinations, not orderings); a device that allows multiple
        allocations is not taken twice by one request either."""
        request = data.request
        claim = self.claims[ci]
        device_ids = self.index.device_ids
        for pool_index in range(start[0], len(self.pools)):
            pool = self.pools[pool_index]
            if not pool.usable:
                continue
            slice_start = start[1] if pool_index == start[0] else 0
            for slice_index in range(slice_start, len(pool.slices)):
                pos = pool.slices[slice_index]
                ids = device_ids[pos]
                charge(len(ids))
                device_start = start[2] if pool_index == start[0] and slice_index == start[1] else 0
                for index in range(device_start, len(ids)):
                    device_id = ids[index]
                    if request.admin_access:
                        if ci in self.allocating.get(device_id, ()):
                            continue
                    elif self.device_in_use(device_id):
                        continue
                    if not self.selectable(key, data, pos, index):
                        continue
                    if self.features.consumable_capacity:
                        device = self.index.slices[pos].spec.devices[index]
                        try:
                            fits = self.capacity_fits(request, device_id, device)
                        except capacity.CapacityError as err:
                            if self.features.kubernetes == "1.36":
                                continue
                            raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: checking capacity "
                                                  f"for device {device_id}: {err}") from None
                        if not fits:
                            continue
                    undo = self.allocate_device(ci, ri, si, device_id, pos, index, must=False, pool=pool)
                    if undo is None:
                        continue
                    try:
                        done = self.allocate_one(ci, ri, si, di + 1, allocate_sub, (pool_index, slice_index, index + 1))
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def device_in_use(self, device_id: DeviceID) -> bool:
        """deviceInUse: allocated to a claim as a whole (not shared), or being allocated."""
        return device_id in self.allocated or bool(self.allocating.get(device_id))

    def device_allocated(self, device_id: DeviceID) -> bool:
        """internal.IsDeviceAllocated: allocated whole, or shared by an allocation."""
        return device_id in self.allocated or device_id in self.shared

    def capacity_in_use(self, device_id: DeviceID) -> bool:
        """deviceCapacityInUse: some share of the device is allocated (v1.36: one that consumes
        capacity) or being allocated."""
        if self.features.kubernetes == "1.36":
            in_use = bool(self.shared.get(device_id))
        else:
            in_use = device_id in self.shared
        return in_use or device_id in self.allocating_capacity

    def allocate_device(self, ci, ri, si, device_id: DeviceID, pos: int, index: int, must: bool, pool=None):
        """allocateDevice: the candidate taken, if it is free and keeps the constraints; the
        function that gives it back, or None."""
        if self.v136:
            return self._allocate_device_136(ci, ri, si, device_id, pos, index, must, pool)
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

    def _allocate_device_136(self, ci, ri, si, device_id: DeviceID, pos: int, index: int, must: bool, pool):
        """allocateDevice of v0.36.3 / v0.37.2: free (a device allowing multiple allocations
        may be taken by several requests), its counters available, its taints tolerated, the
        constraints kept, its capacity enough; it consumes its counters and, shared, capacity."""
        data = self.request_data[(ci, ri, si)]
        request = data.request
        device = self.index.slices[pos].spec.devices[index]
        multiple = self.features.consumable_capacity and bool(device.allow_multiple_allocations)
        if not multiple and request.admin_access and ci in self.allocating.get(device_id, ()):
            return None
        if not request.admin_access and self.device_in_use(device_id):
            return None
        if not self.features.partitionable_devices and device.consumes_counters:
            return None
        skip_counters = multiple and self.capacity_in_use(device_id)
        counters = not skip_counters and bool(device.consumes_counters)
        if counters and not self._take_counters(pool, device):
            return None
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name
        constraints = self.constraints[ci]
        added = 0

        def rollback():
            for constraint in reversed(constraints[:added]):
                constraint.remove(base, sub)
            if counters:
                self._give_counters(pool, device)

        if self.features.device_taints and _taint_prevents(device, request):
            rollback()
            return None
        for constraint in constraints:
            if not constraint.add(base, sub, device, device_id):
                rollback()
                if must:
                    raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {request.name}: cannot add "
                                          f"device {device_id} because a claim constraint would not be satisfied")
                return None
            added += 1
        if not multiple:
            self.allocating.setdefault(device_id, set()).add(ci)
        consumed: dict = {}
        share = False
        if self.features.consumable_capacity:
            try:
                fits = self.capacity_fits(request, device_id, device)
            except capacity.CapacityError as err:
                fits = None
                error = err
            if not fits:
                if not multiple:
                    self.allocating[device_id].discard(ci)
                rollback()
                if fits is None and self.features.kubernetes != "1.36":
                    raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {request.name}: rechecking "
                                          f"capacity for device {device_id}: {error}")
                return None
            if multiple:
                try:
                    consumed = capacity.consumed_from_request(request.capacity, device.capacity,
                                                              self.features.fractional_capacity_range,
                                                              self.features.kubernetes)
                except capacity.CapacityError as err:
                    rollback()
                    raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {request.name}: computing "
                                          f"consumed capacity for device {device_id}: {err}") from None
                share = True
                existed = device_id in self.allocating_capacity
                held = self.allocating_capacity.setdefault(device_id, {})
                for name, amount in consumed.items():
                    held[name] = held[name] + amount if name in held else amount
        results = self.results[ci]
        extra = _extra(device, share, consumed, self.features.device_binding_and_status)
        results.append(_DeviceResult(request.name, data.parent.name if data.parent else "", device_id, pos,
                                     index, True if request.admin_access else None, request.tolerations, extra))
        before = len(results) - 1

        def undo():
            del results[before:]
            if share:
                held = self.allocating_capacity[device_id]
                for name, amount in consumed.items():
                    held[name] = held[name] - amount
                    if held[name].nanos == 0:
                        del held[name]
                if not held and not existed:
                    del self.allocating_capacity[device_id]
            if not multiple:
                self.allocating[device_id].discard(ci)
            rollback()
        return undo

    def _take_counters(self, pool, device: model.Device) -> bool:
        """checkAvailableCounters: the device's counters added to those being consumed in its
        pool, if every counter of the pool still covers what is consumed of it (else nothing
        changes). The pool's counters are less what allocated devices of the pool's generation,
        for this node or not, consume."""
        key = (pool.driver, pool.pool)
        if self.features.kubernetes == "1.36":
            key = ("", pool.pool)     # v0.36.3 keys the counters by the pool's name alone
        available = self.available_counters.get(key)
        if available is None:
            available = {cs.name: {name: c.value for name, c in cs.counters.items()} for cs in pool.counter_sets}
            for pos in (*pool.slices, *pool.not_targeting):
                spec = self.index.slices[pos].spec
                for d in spec.devices:
                    if not self.device_allocated(DeviceID(spec.driver, spec.pool.name, d.name)):
                        continue
                    for consumption in d.consumes_counters:
                        counter_set = available.get(consumption.counter_set)
                        if counter_set is None:
                            continue
                        for name, c in consumption.counters.items():
                            if name in counter_set:
                                counter_set[name] = counter_set[name] - c.value
            self.available_counters[key] = available
        consumed = self.consumed_counters.setdefault(key, {})
        for consumption in device.consumes_counters:
            in_set = consumed.setdefault(consumption.counter_set, {})
            for name, c in consumption.counters.items():
                in_set[name] = in_set[name] + c.value if name in in_set else c.value
        for set_name, counters in available.items():
            taken = consumed.get(set_name, {})
            for name, have in counters.items():
                if have < taken.get(name, Quantity(0)):
                    self._give_counters(pool, device)
                    return False
        return True

    def _give_counters(self, pool, device: model.Device) -> None:
        """deallocateCountersForDevice."""
        key = (pool.driver, pool.pool) if self.features.kubernetes != "1.36" else ("", pool.pool)
        consumed = self.consumed_counters[key]
        for consumption in device.consumes_counters:
            in_set = consumed[consumption.counter_set]
            for name, c in consumption.counters.items():
                in_set[name] = in_set[name] - c.value

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
            # As upstream: once for every request (or chosen subrequest) the config names
            # (v1.37: once, for the first).
            once = self.features.kubernetes == "1.37"
            for ri, request in enumerate(claim.spec.devices.requests):
                if request.name in c.requests:
                    config.append(entry)
                    if once:
                        break
                    continue
                data = self.request_data[(ci, ri, 0)]
                if data.parent is None:
                    continue
                chosen = request.first_available[data.selected_sub_index]
                if f"{request.name}/{chosen.name}" in c.requests:
                    config.append(entry)
                    if once:
                        break
        if self.features.kubernetes == "1.37":
            # v0.37.2: a config naming every request (or its chosen subrequest) names none,
            # which means all of them.
            config = [attrs.evolve(c, requests=()) if c.requests and self._names_all(ci, c.requests) else c
                      for c in config]
        return tuple(config)

    def _names_all(self, ci: int, requests) -> bool:
        claim = self.claims[ci]
        for ri, request in enumerate(claim.spec.devices.requests):
            if request.name in requests:
                continue
            data = self.request_data[(ci, ri, 0)]
            if data.parent is not None:
                chosen = request.first_available[data.selected_sub_index]
                if f"{request.name}/{chosen.name}" in requests:
                    continue
            return False
        return True


def _depth_needed(claims: Sequence[model.ResourceClaim]) -> int:
    """The search's recursion: a frame per claim, request, subrequest and device (at most 32
    devices a claim). Python 3.11+ keeps Python-to-Python calls off the C stack, so the limit
    can grow with the claims."""
    return sum(3 * len(c.spec.devices.requests) + 2 * ALLOCATION_RESULTS_MAX_SIZE + 4 for c in claims)


def _allocate(node, claims, classes, index: SliceIndex, view: _NodeView, allocated, features, shared=None):
    """Allocate's search; its outcome by position in the node's reachable devices: per claim,
    the (request name, position, adminAccess, tolerations) of each device, and the config."""
    alloc = _Allocation(node, claims, classes, index, allocated, features, shared)
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
    return tuple((tuple((r.request_name(), view.position[r.id], r.admin_access, r.tolerations, r.extra)
                        for r in alloc.results[ci]), alloc.config(ci))
                 for ci in range(len(claims)))

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
"""

from __future__ import annotations

import functools
import sys
from typing import Iterable, Mapping, NamedTuple, Optional, Sequence

import attrs

from ..cluster import model
from ..cluster.selectors import node_selector_matches
from ..cost import charge
from . import cel

# resourceapi.AllocationResultsMaxSize (k8s.io/api resource/v1 types.go)
ALLOCATION_RESULTS_MAX_SIZE = 32


@attrs.frozen
class Features:
    """structured.Features (internal/types.go): what the allocator may do beyond the basics."""
    admin_access: bool = False
    consumable_capacity: bool = False
    device_binding_and_status: bool = False
    device_taints: bool = False
    partitionable_devices: bool = False
    prioritized_list: bool = False


# dynamicresources.go AllocatorFeatures with v1.35's default gates.
V1_35 = Features(admin_access=True, prioritized_list=True)

# What this transcription implements: incubating's features less the ones off in v1.35.
_IMPLEMENTED = {"admin_access", "prioritized_list"}


class DeviceID(NamedTuple):
    """MakeDeviceID: a device by driver, pool and name; str() is upstream's "driver/pool/device".
    A named tuple, not an attrs class: the search hashes device IDs by the thousand, and a
    tuple's hash and equality run in C."""
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class AllocationError(Exception):
    """A problem with the claims, classes or slices (a CEL error, a missing class): upstream
    aborts the pod's scheduling attempt with it. str() is upstream's error text."""
    on_node = False     # upstream's errors.Is(err, ErrFailedAllocationOnNode)


class FailedAllocationOnNode(AllocationError):
    """upstream's ErrFailedAllocationOnNode: the node cannot be used ("invalid resource pools
    were encountered"), but other nodes may; the scheduler reports it as the node's reason."""
    on_node = True


# ---- slices, indexed once per state ------------------------------------------------------

@attrs.frozen
class Pool:
    """A resource pool as GatherPools sees it from one node."""
    driver: str
    pool: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: tuple[int, ...] = ()   # positions in the SliceIndex of the slices targeting the node

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


class SliceIndex:
    """All ResourceSlices of a state, indexed once: the slices of each node name, those for
    all nodes and those with a node selector (slices whose devices each say where they are,
    and those with shared counters, need DRAPartitionableDevices, off in v1.35: GatherPools
    skips them); the slices of each pool; each device's ID; the pools each node sees; and
    every selector's verdict on every device it met."""

    def __init__(self, slices: Iterable[model.ResourceSlice]):
        self.slices: tuple[model.ResourceSlice, ...] = tuple(slices)
        self.by_node_name: dict[str, list[int]] = {}
        self.for_all_nodes: list[int] = []
        self.with_selector: list[int] = []
        self.by_pool: dict[tuple[str, str], list[int]] = {}
        self.device_ids: list[tuple[DeviceID, ...]] = []
        for pos, s in enumerate(self.slices):
            spec = s.spec
            self.device_ids.append(tuple(DeviceID(spec.driver, spec.pool.name, d.name) for d in spec.devices))
            self.by_pool.setdefault((spec.driver, spec.pool.name), []).append(pos)
            if spec.per_device_node_selection is not None or spec.shared_counters:
                continue
            if spec.node_name:
                self.by_node_name.setdefault(spec.node_name, []).append(pos)
            elif spec.all_nodes:
                self.for_all_nodes.append(pos)
            elif spec.node_selector is not None:
                self.with_selector.append(pos)
        self._views: dict[str, _NodeView] = {}
        self.verdicts: dict[tuple[str, int, int], "bool | str"] = {}
        # (the class's and a request's selector expressions, slice position, device index) → bool
        self.selectable: dict[tuple, bool] = {}
        self._kinds: dict[tuple, int] = {}      # what the search sees of a device → a number
        self._slice_kinds: dict[int, tuple[int, ...]] = {}
        self._shapes: dict[tuple, int] = {}     # what the search sees of a node's pools → a number
        self.outcomes: dict[tuple, tuple] = {}

    def pools_for(self, node: "model.Node | None") -> tuple[Pool, ...]:
        return self.view(node).pools

    def view(self, node: "model.Node | None") -> "_NodeView":
        """The node's pools and the devices the search can look at, made once per node object."""
        name = node.metadata.name if node is not None else None
        kept = self._views.get(name)
        if kept is None or kept.node is not node:
            kept = self._views[name] = _NodeView(self, node, gather_pools(self, node))
        return kept

    def shape(self, pools: tuple[Pool, ...]) -> int:
        """A number for what the search sees of these pools: each pool's driver and state, and
        of each device its kind (CEL's view of it, binding conditions and counters, or not)."""
        key = tuple((p.driver, p.incomplete, p.invalid, tuple(self._kinds_of(pos) for pos in p.slices))
                    for p in pools)
        return self._shapes.setdefault(key, len(self._shapes))

    def _kinds_of(self, pos: int) -> tuple[int, ...]:
        found = self._slice_kinds.get(pos)
        if found is None:
            found = self._slice_kinds[pos] = tuple(
                self._kinds.setdefault((_signature(d), bool(d.binding_conditions), bool(d.consumes_counters)),
                                       len(self._kinds))
                for d in self.slices[pos].spec.devices)
        return found

    def verdict(self, expression: str, pos: int, index: int) -> "bool | str | cel.CompileError":
        """A selector's verdict on a device (True, False or the text of its runtime error), or
        the selector's CompileError. Kept here by position, and across devices by what CEL
        sees of a device (its driver, attributes and capacity): 500 nodes of the same GPUs
        evaluate a selector once per kind of GPU."""
        found = self.verdicts.get((expression, pos, index))
        if found is not None:
            return found
        spec = self.slices[pos].spec
        key = (expression, spec.driver, _signature(spec.devices[index]))
        found = _VERDICTS.get(key)
        if found is None:
            compiled = _compiled(expression)
            if isinstance(compiled, cel.CompileError):
                return compiled
            found = _evaluate(compiled, _cel_device(spec.driver, spec.devices[index]))
            if len(_VERDICTS) >= _VERDICTS_KEPT:
                _VERDICTS.clear()
            _VERDICTS[key] = found
        self.verdicts[(expression, pos, index)] = found
        return found


# Verdicts by (expression, driver, device signature); bounded.
_VERDICTS: dict[tuple, "bool | str"] = {}
_VERDICTS_KEPT = 1_000_000


def _signature(device: model.Device) -> tuple:
    """All a selector sees of a device but its driver: each attribute's four values (so int 1
    and bool true differ) and each capacity as written (equal quantities written differently
    only miss the cache)."""
    return (tuple(sorted((name, a.int_, a.bool_, a.string, a.version) for name, a in device.attributes.items())),
            tuple(sorted((name, str(c.value)) for name, c in device.capacity.items())))


@functools.lru_cache(maxsize=4096)
def _compiled(expression: str) -> "cel.Selector | cel.CompileError":
    try:
        return cel.compile_selector(expression)
    except cel.CompileError as err:
        return err


class _NodeView:
    """One node's side of the index: its pools, the devices of its usable pools in search
    order (``reachable``, with where each is, ``places``), and the number of its shape."""

    def __init__(self, index: SliceIndex, node, pools: tuple[Pool, ...]):
        self.node = node
        self.pools = pools
        self.places = tuple((pos, di) for p in pools if not (p.incomplete or p.invalid)
                            for pos in p.slices for di in range(len(index.device_ids[pos])))
        self.reachable = tuple(index.device_ids[pos][di] for pos, di in self.places)
        self.position = {d: i for i, d in enumerate(self.reachable)}
        self.shape = index.shape(pools)


class AllocationErrorText(str):
    """An error a device's attributes make in every CEL evaluation (kept as its text)."""


def _cel_device(driver: str, device: model.Device) -> "cel.Device | AllocationErrorText":
    attributes = {}
    for name, attr in device.attributes.items():
        # cel/compile.go getAttributeValue
        if attr.int_ is not None:
            attributes[name] = attr.int_
        elif attr.bool_ is not None:
            attributes[name] = attr.bool_
        elif attr.string is not None:
            attributes[name] = attr.string
        elif attr.version is not None:
            try:
                attributes[name] = cel.Version(attr.version)
            except ValueError as err:
                return AllocationErrorText(f"attribute {name}: parse semantic version: {err}")
        else:
            return AllocationErrorText(f"attribute {name}: unsupported attribute value")
    capacity = {name: c.value for name, c in device.capacity.items()}
    return cel.Device(driver=driver, attributes=attributes, capacity=capacity)


_INDEXES: dict[int, tuple[Sequence, SliceIndex]] = {}


def slice_index(slices: "Sequence[model.ResourceSlice] | SliceIndex") -> SliceIndex:
    """The index of these slices: made once per sequence (the same list object, as a state
    keeps it, gets the same index), or the index itself."""
    if isinstance(slices, SliceIndex):
        return slices
    kept = _INDEXES.get(id(slices))
    # A list grown or shrunk in place since is indexed again (one changed in place, item for
    # item, is not noticed: give a new sequence, or a new SliceIndex, when slices change).
    if kept is not None and kept[0] is slices and len(kept[1].slices) == len(slices):
        return kept[1]
    index = SliceIndex(slices)
    if len(_INDEXES) >= 8:
        _INDEXES.pop(next(iter(_INDEXES)))
    _INDEXES[id(slices)] = (slices, index)
    return index


# ---- node matching and pools ---------------------------------------------------------------

def node_matches(node: Optional[model.Node], node_name: str, all_nodes: bool,
                 node_selector: Optional[model.NodeSelector]) -> bool:
    """NodeMatches (pools_incubating.go): a node name, else all nodes, else a node selector."""
    if node_name:
        return node is not None and node.metadata.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        return node is not None and node_selector_matches(node_selector, node)
    return False


def gather_pools(index: SliceIndex, node: model.Node) -> tuple[Pool, ...]:
    """GatherPools: the pools with devices the node can reach, each from its newest generation
    among the slices for the node; incomplete and invalid ones marked."""
    candidates = list(index.by_node_name.get(node.metadata.name, ()) if node is not None else ())
    candidates += index.for_all_nodes
    candidates += [pos for pos in index.with_selector
                   if node_matches(node, "", False, index.slices[pos].spec.node_selector)]
    candidates.sort()
    pools: dict[tuple[str, str], list[int]] = {}
    for pos in candidates:
        spec = index.slices[pos].spec
        key = (spec.driver, spec.pool.name)
        have = pools.get(key)
        # addSlice: an older generation is out of date, a newer one replaces the pool's slices.
        if have is None or spec.pool.generation > index.slices[have[0]].spec.pool.generation:
            pools[key] = [pos]
        elif spec.pool.generation == index.slices[have[0]].spec.pool.generation:
            have.append(pos)
    result = []
    for (driver, pool_name), positions in pools.items():
        first = index.slices[positions[0]].spec.pool
        if len(positions) == first.resource_slice_count:
            result.append(_build_pool(index, driver, pool_name, positions))
            continue
        # checkSlicesInPool: the slices filtered out above (for other nodes) count too.
        in_pool = [index.slices[p].spec.pool.generation for p in index.by_pool[(driver, pool_name)]]
        if any(g > first.generation for g in in_pool):
            continue    # the driver is replacing this generation: ignore the pool
        if sum(g == first.generation for g in in_pool) != first.resource_slice_count:
            result.append(Pool(driver, pool_name, incomplete=True))
            continue
        result.append(_build_pool(index, driver, pool_name, positions))
    return tuple(result)


def _build_pool(index: SliceIndex, driver: str, pool_name: str, positions: list[int]) -> Pool:
    """buildPool without partitionable devices: invalid when a device name is there twice."""
    seen: set[str] = set()
    for pos in positions:
        for device in index.slices[pos].spec.devices:
            if device.name in seen:
                return Pool(driver, pool_name, invalid=True, invalid_reason=f"duplicate device name {device.name}")
            seen.add(device.name)
    return Pool(driver, pool_name, slices=tuple(positions))


# ---- requests ----------------------------------------------------------------------------

@attrs.frozen
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
        self.pools = index.pools_for(node)
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
            if pool.incomplete or pool.invalid:
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

def _node_selector(index: SliceIndex, claim, positions: Sequence[int]) -> Optional[model.NodeSelector]:
    """createNodeSelector: the node of a node-local device, else the requirements of the
    slices' node selectors in one term, else None (every node)."""
    fields: list[model.NodeSelectorRequirement] = []
    expressions: list[model.NodeSelectorRequirement] = []
    for pos in positions:
        spec = index.slices[pos].spec
        if spec.node_name is not None:
            return _local_node_selector(spec.node_name)
        if spec.node_selector is not None:
            terms = spec.node_selector.node_selector_terms
            if len(terms) == 1:
                _add_new(terms[0].match_fields, fields)
                _add_new(terms[0].match_expressions, expressions)
            elif len(terms) > 1:
                raise AllocationError(f"create NodeSelector for claim {claim.metadata.name}: "
                                      f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
    if fields or expressions:
        return model.NodeSelector(node_selector_terms=(model.NodeSelectorTerm(
            match_expressions=tuple(expressions), match_fields=tuple(fields)),))
    return None


@functools.lru_cache(maxsize=65536)
def _device_result(request: str, device: DeviceID, admin_access, tolerations) -> model.DeviceRequestAllocationResult:
    """One result (frozen, so the same one serves every allocation that takes the device)."""
    return model.DeviceRequestAllocationResult(request=request, driver=device.driver, pool=device.pool,
                                               device=device.device, admin_access=admin_access,
                                               tolerations=tolerations)


@functools.lru_cache(maxsize=65536)
def _local_node_selector(node_name: str) -> model.NodeSelector:
    """The allocation's selector when a device is local to one node (frozen, so shared)."""
    return model.NodeSelector(node_selector_terms=(model.NodeSelectorTerm(match_fields=(
        model.NodeSelectorRequirement(key="metadata.name", operator="In", values=(node_name,)),)),))


def _add_new(requirements, to: list) -> None:
    for req in requirements:
        if not any(have.key == req.key and have.operator == req.operator and set(have.values) == set(req.values)
                   for have in to):
            to.append(req)


def _evaluate(compiled, device) -> "bool | str":
    """A selector's verdict on a device, or the text of its runtime error (kept: CEL is pure)."""
    if isinstance(device, AllocationErrorText):
        return str(device)
    try:
        return bool(compiled.matches(device))
    except cel.EvalError as err:
        return str(err)


def _depth_needed(claims: Sequence[model.ResourceClaim]) -> int:
    """The search's recursion: a frame per claim, request, subrequest and device (at most 32
    devices a claim). Python 3.11+ keeps Python-to-Python calls off the C stack, so the limit
    can grow with the claims."""
    return sum(3 * len(c.spec.devices.requests) + 2 * ALLOCATION_RESULTS_MAX_SIZE + 4 for c in claims)


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
    view = index.view(node)
    key, pinned = _outcome_key(view, claims, classes, allocated, features)
    kept = index.outcomes.get(key)
    if kept is not None and kept[0] == pinned:
        return _materialize(kept[1], claims, view, index)
    positional = _allocate(node, claims, classes, index, view, allocated, features)
    if len(index.outcomes) >= _OUTCOMES_KEPT:
        index.outcomes.clear()
    index.outcomes[key] = (pinned, positional)
    return _materialize(positional, claims, view, index)


_OUTCOMES_KEPT = 100_000


def _outcome_key(view: _NodeView, claims, classes, allocated, features):
    """What an allocation depends on, so that a node whose pools look the same to the search as
    an earlier node's (the same kinds of devices in the same order, the same ones in use) gets
    that node's outcome, by position, without a search: 500 nodes of the same GPUs search once
    per pod and shape. It depends on the shape of the node's pools, the claims' specs (not
    their names: only errors name claims, and errors are not kept), the classes they name, the
    positions of the devices in use, the features. The key, and the classes it holds by
    identity (compared with ``is`` on a hit)."""
    specs = [_spec_key(c) for c in claims]
    names = [r.exactly.device_class_name if r.exactly else None for c in claims for r in c.spec.devices.requests]
    names += [sub.device_class_name for c in claims for r in c.spec.devices.requests for sub in r.first_available]
    held = tuple(classes.get(n) for n in names)
    used = tuple(i for i, d in enumerate(view.reachable) if d in allocated) if allocated else ()
    return (view.shape, tuple(specs), tuple(map(id, held)), used, features), _Pinned(held)


def _materialize(positional, claims, view: _NodeView, index: SliceIndex):
    """An outcome by position made this node's: its devices, and the node selector of its
    slices."""
    if positional is None:
        return None
    out = []
    for claim, (devices, config) in zip(claims, positional):
        results = tuple(_device_result(name, view.reachable[p], admin, tolerations)
                        for name, p, admin, tolerations in devices)
        selector = _node_selector(index, claim, [view.places[p][0] for _, p, _, _ in devices])
        out.append(model.AllocationResult(devices=model.DeviceAllocationResult(results=results, config=config),
                                          node_selector=selector))
    return tuple(out)


def _spec_key(claim: model.ResourceClaim):
    """The claim's spec as a key, hashed once per claim object (a pod's claims are asked of
    every node): the spec itself, or its repr where a dict inside (opaque parameters) has no
    hash (equal specs whose dicts list keys in another order only miss)."""
    kept = _SPEC_KEYS.get(id(claim))
    if kept is not None and kept[0] is claim:
        return kept[1]
    try:
        key = _Hashed(claim.spec)
    except TypeError:
        key = _Hashed(repr(claim.spec))
    if len(_SPEC_KEYS) >= 4096:
        _SPEC_KEYS.clear()
    _SPEC_KEYS[id(claim)] = (claim, key)
    return key


_SPEC_KEYS: dict[int, tuple] = {}


class _Hashed:
    """A value with its hash worked out once."""
    __slots__ = ("value", "hash")

    def __init__(self, value):
        self.value, self.hash = value, hash(value)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Hashed) and self.hash == other.hash and self.value == other.value


class _Pinned(tuple):
    """Objects compared by identity: a kept outcome is only for the very same classes."""

    def __eq__(self, other):
        return len(self) == len(other) and all(a is b for a, b in zip(self, other))

    __hash__ = tuple.__hash__


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
        if any(p.invalid for p in alloc.pools):
            raise FailedAllocationOnNode("invalid resource pools were encountered")
        return None
    return tuple((tuple((r.request_name(), view.position[r.id], r.admin_access, r.tolerations)
                        for r in alloc.results[ci]), alloc.config(ci))
                 for ci in range(len(claims)))


# ---- why not: for explain --------------------------------------------------------------

@attrs.frozen
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


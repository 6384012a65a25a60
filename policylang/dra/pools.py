"""The slices a DRA allocation looks at, indexed once per state: GatherPools (the pools a node
can reach, each from its newest generation, incomplete and invalid ones marked), NodeMatches,
the device IDs, and each selector's verdict on each device, kept.

Transcribed from k8s.io/dynamic-resource-allocation@v0.35.4/structured: pools_incubating.go
(the allocator of policylang/dra/structured.py is internal/incubating's)."""

from __future__ import annotations

import functools
from typing import Iterable, NamedTuple, Optional, Sequence

import attrs

from ..api import model
from ..api.selectors import node_selector_matches
from ..frozen import frozen
from . import cel


class DeviceID(NamedTuple):
    """MakeDeviceID: a device by driver, pool and name; str() is upstream's "driver/pool/device".
    A named tuple, not an attrs class: the search hashes device IDs by the thousand, and a
    tuple's hash and equality run in C."""
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


# ---- slices, indexed once per state ------------------------------------------------------

@frozen
class Pool:
    """A resource pool as GatherPools sees it from one node."""
    driver: str
    pool: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: tuple[int, ...] = ()   # positions in the SliceIndex of the slices targeting the node
    usable: bool = True            # whether the search takes devices from it (v1.34: incomplete ones too)
    # From v1.36 (partitionable devices): the pool's counter sets, by name, in the order found;
    # the slices of the pool's generation that do not target the node (their allocated devices
    # consume counters too); whether a device of the node's slices has binding conditions.
    counter_sets: tuple[model.CounterSet, ...] = ()
    not_targeting: tuple[int, ...] = ()
    binding: bool = False

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
        self.plain: dict[int, bool] = {}        # slice position → no device the shape misdescribes

    def pools_for(self, node: "model.Node | None", version: str = "1.35",
                  partitionable: bool = True) -> tuple[Pool, ...]:
        return self.view(node, version, partitionable).pools

    def view(self, node: "model.Node | None", version: str = "1.35", partitionable: bool = True) -> "_NodeView":
        """The node's pools and the devices the search can look at, made once per node object
        (and allocator release: search.Features.kubernetes; and, from v1.36, whether
        DRAPartitionableDevices is on, as it is by default)."""
        name = (node.metadata.name if node is not None else None, version, partitionable)
        kept = self._views.get(name)
        if kept is None or kept.node is not node:
            kept = self._views[name] = _NodeView(self, node, gather_pools(self, node, version, partitionable))
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

    def verdict(self, expression: str, pos: int, index: int, multi: bool = False) -> "bool | str | cel.CompileError":
        """A selector's verdict on a device (True, False or the text of its runtime error), or
        the selector's CompileError. Kept here by position, and across devices by what CEL
        sees of a device (its driver, attributes and capacity): 500 nodes of the same GPUs
        evaluate a selector once per kind of GPU."""
        found = self.verdicts.get((expression, pos, index, multi))
        if found is not None:
            return found
        spec = self.slices[pos].spec
        key = (expression, spec.driver, _signature(spec.devices[index]), multi)
        found = _VERDICTS.get(key)
        if found is None:
            compiled = _compiled(expression)
            if isinstance(compiled, cel.CompileError):
                return compiled
            found = _evaluate(compiled, _cel_device(spec.driver, spec.devices[index], multi))
            if len(_VERDICTS) >= _VERDICTS_KEPT:
                _VERDICTS.clear()
            _VERDICTS[key] = found
        self.verdicts[(expression, pos, index, multi)] = found
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
        self.places = tuple((pos, di) for p in pools if p.usable
                            for pos in p.slices for di in range(len(index.device_ids[pos])))
        self.reachable = tuple(index.device_ids[pos][di] for pos, di in self.places)
        self.position = {d: i for i, d in enumerate(self.reachable)}
        self.shape = index.shape(pools)
        # Whether the search sees no more of the node's devices than the shape says: no counters,
        # no devices that say where they are, no taints, shares, request policies or binding
        # conditions (whose names the results carry) (v1.36+).
        self.plain = not any(p.counter_sets or p.not_targeting for p in pools) and all(
            not index.slices[pos].spec.per_device_node_selection and _plain(index, pos)
            for p in pools if p.usable for pos in p.slices)


def _plain(index: SliceIndex, pos: int) -> bool:
    found = index.plain.get(pos)
    if found is None:
        found = index.plain[pos] = all(
            not (d.taints or d.allow_multiple_allocations or d.binds_to_node or d.consumes_counters
                 or d.binding_conditions or d.binding_failure_conditions
                 or any(c.request_policy is not None for c in d.capacity.values()))
            for d in index.slices[pos].spec.devices)
    return found


class AllocationErrorText(str):
    """An error a device's attributes make in every CEL evaluation (kept as its text)."""


def _cel_device(driver: str, device: model.Device, multi: bool = False) -> "cel.Device | AllocationErrorText":
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
    if multi:
        return cel.Device(driver=driver, attributes=attributes, capacity=capacity, allow_multiple_allocations=True)
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


def _add_slice(pools: dict, index: SliceIndex, pos: int) -> None:
    """addSlice (pools_incubating.go): the slice joins its pool's newest generation; an older
    generation is out of date, a newer one replaces the pool's slices so far."""
    spec = index.slices[pos].spec
    key = (spec.driver, spec.pool.name)
    have = pools.get(key)
    if have is None or spec.pool.generation > index.slices[have[0]].spec.pool.generation:
        pools[key] = [pos]
    elif spec.pool.generation == index.slices[have[0]].spec.pool.generation:
        have.append(pos)


def gather_pools(index: SliceIndex, node: model.Node, version: str = "1.35",
                 partitionable: bool = True) -> tuple[Pool, ...]:
    """GatherPools of ``version``'s allocator: v1.34's and v1.35's below, v1.36's and v1.37's in
    gather_pools_136."""
    if version not in ("1.34", "1.35"):
        return gather_pools_136(index, node, version, partitionable)
    return _gather_pools_135(index, node, version)


def _gather_pools_135(index: SliceIndex, node: model.Node, version: str) -> tuple[Pool, ...]:
    """GatherPools: the pools with devices the node can reach, each from its newest generation
    among the slices for the node; incomplete and invalid ones marked. ``version`` 1.34: v1.34.4's
    (pools_incubating.go), which judges completeness by the slices for the node alone, checks
    every pool for duplicate devices, and leaves incomplete pools usable."""
    candidates = list(index.by_node_name.get(node.metadata.name, ()) if node is not None else ())
    candidates += index.for_all_nodes
    candidates += [pos for pos in index.with_selector
                   if node_matches(node, "", False, index.slices[pos].spec.node_selector)]
    candidates.sort()
    pools: dict[tuple[str, str], list[int]] = {}
    for pos in candidates:
        _add_slice(pools, index, pos)
    result = []
    for (driver, pool_name), positions in pools.items():
        first = index.slices[positions[0]].spec.pool
        if version == "1.34":
            pool = _build_pool(index, driver, pool_name, positions)
            if len(positions) != first.resource_slice_count:
                pool = attrs.evolve(pool, incomplete=True, slices=tuple(positions))
            result.append(attrs.evolve(pool, usable=not pool.invalid))
            continue
        if len(positions) == first.resource_slice_count:
            result.append(_build_pool(index, driver, pool_name, positions))
            continue
        # checkSlicesInPool: the slices filtered out above (for other nodes) count too.
        in_pool = [index.slices[p].spec.pool.generation for p in index.by_pool[(driver, pool_name)]]
        if any(g > first.generation for g in in_pool):
            continue    # the driver is replacing this generation: ignore the pool
        if sum(g == first.generation for g in in_pool) != first.resource_slice_count:
            result.append(Pool(driver, pool_name, incomplete=True, usable=False))
            continue
        result.append(_build_pool(index, driver, pool_name, positions))
    return tuple(result)


def _build_pool(index: SliceIndex, driver: str, pool_name: str, positions: list[int]) -> Pool:
    """buildPool without partitionable devices: invalid when a device name is there twice."""
    seen: set[str] = set()
    for pos in positions:
        for device in index.slices[pos].spec.devices:
            if device.name in seen:
                return Pool(driver, pool_name, invalid=True, invalid_reason=f"duplicate device name {device.name}",
                            usable=False)
            seen.add(device.name)
    return Pool(driver, pool_name, slices=tuple(positions))


def _evaluate(compiled, device) -> "bool | str":
    """A selector's verdict on a device, or the text of its runtime error (kept: CEL is pure)."""
    if isinstance(device, AllocationErrorText):
        return str(device)
    try:
        return bool(compiled.matches(device))
    except cel.EvalError as err:
        return str(err)


# ---- v1.36 and v1.37: pools_incubating.go of v0.36.3 and v0.37.2 -----------------------------
# With their default gates the scheduler's allocator is internal/incubating, with partitionable
# devices on: slices whose devices each say where they are (perDeviceNodeSelection) and slices
# of shared counters take part; pools come sorted by driver and name, those with a device with
# binding conditions last; a pool's slices come sorted by name.

def gather_pools_136(index: SliceIndex, node: Optional[model.Node], version: str,
                     partitionable: bool = True) -> tuple[Pool, ...]:
    """GatherPools (v0.36.3 / v0.37.2 pools_incubating.go) for the slices NewAllocator gives a
    node: those with its nodeName, then those with none (v1.36 also puts every slice with shared
    counters there, whatever its nodeName)."""
    node_name = node.metadata.name if node is not None else ""
    shared_any = version == "1.36"
    candidates = []
    for pos, s in enumerate(index.slices):
        spec = s.spec
        on_node = bool(spec.node_name) and not (shared_any and spec.shared_counters)
        if on_node and spec.node_name != node_name:
            continue
        candidates.append((0 if on_node else 1, pos))
    candidates.sort()
    pools: dict[tuple[str, str], list[int]] = {}
    for _, pos in candidates:
        spec = index.slices[pos].spec
        if not partitionable and (spec.per_device_node_selection is not None or spec.shared_counters):
            continue    # they need DRAPartitionableDevices
        if not _relevant(spec, node, shared_any):
            continue
        _add_slice(pools, index, pos)
    plain, binding = [], []
    for (driver, pool_name), positions in pools.items():
        first = index.slices[positions[0]].spec.pool
        every = None
        if len(positions) != first.resource_slice_count:
            # checkSlicesInPool: the pool's slices for other nodes count too (in the state's order).
            in_pool = index.by_pool[(driver, pool_name)]
            if any(index.slices[p].spec.pool.generation > first.generation for p in in_pool):
                continue    # the driver is replacing this generation: ignore the pool
            every = [p for p in in_pool if index.slices[p].spec.pool.generation == first.generation]
            if len(every) != first.resource_slice_count:
                plain.append(Pool(driver, pool_name, incomplete=True, usable=False))
                continue
        pool = _build_pool_136(index, driver, pool_name, positions, every, version, partitionable)
        (binding if pool.binding else plain).append(pool)
    plain.sort(key=lambda p: (p.driver, p.pool))
    binding.sort(key=lambda p: (p.driver, p.pool))
    return tuple(plain + binding)


def _relevant(spec: model.ResourceSliceSpec, node, shared_any: bool) -> bool:
    """Whether GatherPools keeps a slice for the node: v1.36 keeps every slice with shared
    counters; one with a node name, all nodes or a node selector by NodeMatches; one with
    perDeviceNodeSelection when one of its devices matches the node; none other."""
    if shared_any and spec.shared_counters:
        return True
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        return node_matches(node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector)
    if spec.per_device_node_selection:
        return any(node_matches(node, d.node_name or "", bool(d.all_nodes), d.node_selector) for d in spec.devices)
    return False


def _build_pool_136(index: SliceIndex, driver: str, pool_name: str, positions: list[int],
                    every: Optional[list[int]], version: str, partitionable: bool = True) -> Pool:
    """buildPool with partitionable devices: the node's slices sorted by name, split into
    slices of counter sets and of devices; invalid for a device name twice, a counter set name
    twice, or a device consuming a counter set or counter the pool does not have."""
    slices = sorted(positions, key=lambda p: index.slices[p].metadata.name)
    if not partitionable:
        invalid = _duplicate_device(index, slices)
        if invalid is not None:
            return Pool(driver, pool_name, invalid=True, invalid_reason=invalid, usable=False)
        return Pool(driver, pool_name, slices=tuple(slices),
                    binding=any(d.binding_conditions for p in slices for d in index.slices[p].spec.devices))
    counter_slices = [p for p in slices if index.slices[p].spec.shared_counters]
    device_slices = [p for p in slices if not index.slices[p].spec.shared_counters]
    names = {index.slices[p].metadata.name for p in slices}
    others = [p for p in (every or ()) if index.slices[p].metadata.name not in names] \
        if every is not None and len(slices) < len(every) else []
    if version == "1.36":
        not_targeting = others
        checked_here = slices
    else:
        # v1.37: the counter sets of the pool's slices for other nodes count too.
        counter_slices += [p for p in others if index.slices[p].spec.shared_counters]
        not_targeting = [p for p in others if not index.slices[p].spec.shared_counters]
        checked_here = device_slices
    invalid = _duplicate_device(index, device_slices)
    counter_sets: dict[str, model.CounterSet] = {}
    if invalid is None:
        for p in counter_slices:
            for cs in index.slices[p].spec.shared_counters:
                if cs.name in counter_sets:
                    invalid = f"duplicate counter set name {cs.name}"
                    break
                counter_sets[cs.name] = cs
            if invalid is not None:
                break
    if invalid is None:
        invalid = _unknown_counter(index, counter_sets, checked_here) or _unknown_counter(index, counter_sets, not_targeting)
    if invalid is not None:
        return Pool(driver, pool_name, invalid=True, invalid_reason=invalid, usable=False)
    binding = any(d.binding_conditions for p in device_slices for d in index.slices[p].spec.devices)
    return Pool(driver, pool_name, slices=tuple(device_slices), counter_sets=tuple(counter_sets.values()),
                not_targeting=tuple(not_targeting), binding=binding)


def _duplicate_device(index: SliceIndex, positions) -> Optional[str]:
    """validateDeviceNames."""
    seen: set[str] = set()
    for pos in positions:
        for device in index.slices[pos].spec.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return None


def _unknown_counter(index: SliceIndex, counter_sets: dict, positions) -> Optional[str]:
    """validateDeviceCounterConsumption (a consumption's counters in name order: upstream walks
    a Go map)."""
    for pos in positions:
        for device in index.slices[pos].spec.devices:
            for consumption in device.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in sorted(consumption.counters):
                    if name not in counter_set.counters:
                        return f"counter {name} not found in counter set {counter_set.name}"
    return None

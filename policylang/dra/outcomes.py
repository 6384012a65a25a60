"""The search's outcome of a DRA allocation, kept and made a node's: the key an outcome by
position is kept under (so that nodes whose pools look the same to the search share one
search), and the AllocationResults it makes for one node (its devices, the node selector of
their slices: createNodeSelector of allocator_incubating.go)."""

from __future__ import annotations

import functools
import uuid
from typing import Optional, Sequence

from ..api import model
from .pools import DeviceID, SliceIndex, _NodeView
from .search import AllocationError


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
    for ci, (claim, (devices, config)) in enumerate(zip(claims, positional)):
        results = tuple(_device_result(name, view.reachable[p], admin, tolerations, extra,
                                       _share_id(claim, ci, i, view.reachable[p]) if extra and extra[3] else None)
                        for i, (name, p, admin, tolerations, extra) in enumerate(devices))
        if any(extra for *_, extra in devices):
            selector = _node_selector_136(index, claim, [view.places[p] for _, p, _, _, _ in devices], view.node)
        else:
            selector = _node_selector(index, claim, [view.places[p][0] for _, p, _, _, _ in devices])
        out.append(model.AllocationResult(devices=model.DeviceAllocationResult(results=results, config=config),
                                          node_selector=selector))
    return tuple(out)


def _share_id(claim, ci: int, i: int, device) -> str:
    """The shareID of a result that is one share of a device. Upstream draws a random UUID
    (GenerateNewShareID); policylang derives one from the claim, the result and the device, so
    that a decision is reproducible. Only its presence is read by scheduling (AllocatedSharedDeviceIDs)."""
    meta = claim.metadata
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"policylang:{meta.namespace}/{meta.name}/{meta.uid}/{ci}/{i}/{device}"))


def _node_selector_136(index: SliceIndex, claim, places, node) -> Optional[model.NodeSelector]:
    """createNodeSelector of v1.36+: a device with perDeviceNodeSelection says where it is
    itself; a node-local device, or one that binds to its node, pins the allocation to the
    node it was allocated on."""
    fields: list[model.NodeSelectorRequirement] = []
    expressions: list[model.NodeSelectorRequirement] = []
    for pos, di in places:
        spec = index.slices[pos].spec
        device = spec.devices[di]
        if spec.per_device_node_selection:
            node_name, selector = device.node_name, device.node_selector
        else:
            node_name, selector = spec.node_name, spec.node_selector
        if node_name is not None or device.binds_to_node:
            return _local_node_selector(node.metadata.name)
        if selector is not None:
            _add_terms(claim, selector, fields, expressions)
    return _one_term(fields, expressions)


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
            _add_terms(claim, spec.node_selector, fields, expressions)
    return _one_term(fields, expressions)


def _add_terms(claim, selector: model.NodeSelector, fields: list, expressions: list) -> None:
    """createNodeSelector's merge of a slice's (or device's) selector: its one term's requirements
    added to the allocation's, once each; more than one term is an error."""
    terms = selector.node_selector_terms
    if len(terms) == 1:
        _add_new(terms[0].match_fields, fields)
        _add_new(terms[0].match_expressions, expressions)
    elif len(terms) > 1:
        raise AllocationError(f"create NodeSelector for claim {claim.metadata.name}: "
                              f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")


def _one_term(fields: list, expressions: list) -> Optional[model.NodeSelector]:
    """The merged requirements as a selector of one term, or None (every node)."""
    if fields or expressions:
        return model.NodeSelector(node_selector_terms=(model.NodeSelectorTerm(
            match_expressions=tuple(expressions), match_fields=tuple(fields)),))
    return None


@functools.lru_cache(maxsize=65536)
def _device_result(request: str, device: DeviceID, admin_access, tolerations, extra=(),
                   share_id=None) -> model.DeviceRequestAllocationResult:
    """One result (frozen, so the same one serves every allocation that takes the device)."""
    if not extra:
        return model.DeviceRequestAllocationResult(request=request, driver=device.driver, pool=device.pool,
                                                   device=device.device, admin_access=admin_access,
                                                   tolerations=tolerations)
    binding, failure, _, _, consumed = extra
    return model.DeviceRequestAllocationResult(request=request, driver=device.driver, pool=device.pool,
                                               device=device.device, admin_access=admin_access,
                                               tolerations=tolerations, binding_conditions=binding,
                                               binding_failure_conditions=failure, share_id=share_id,
                                               consumed_capacity=dict(consumed))


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

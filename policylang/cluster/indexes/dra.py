"""Dynamic Resource Allocation's look-ups, as the scheduler's DRA manager holds them
(pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go, allocateddevices.go): the
ResourceSlices by node and by pool (the allocator's SliceIndex), the devices in use
(every allocated claim's results, but those allocated with admin access, which do not count as
allocated), and DynamicResources' Reserve and PreBind (assume_allocation), which change the
claims the state holds. From DRA objects alone: no pod hooks."""

from __future__ import annotations

import attrs

from ...api import model


class DeviceAllocations:
    def __init__(self, state) -> None:
        self.state = state
        self._slices = None         # structured.SliceIndex, made when first asked
        self._tainted = None        # the same of the slices with DeviceTaintRules applied (v1.37)
        self._allocated = None      # frozenset of structured.DeviceID, made when first asked
        self._state_136 = None      # (devices allocated whole, shared devices' capacity), v1.36+
        # The version the filter last allocated for: explain's shortfalls follow it.
        self.version = "1.35"
        # Per node, the allocator's answer for each claims' signature (their specs): the same
        # claims asked about again (pods from one template) read it back. A node's answers go
        # when devices its pools offer are allocated (assume_allocation).
        self._answers: dict[str, dict] = {}

    def arrive(self, pod, node: str) -> None:
        pass

    def leave(self, pod, node: str) -> None:
        pass

    def slices(self):
        """The allocator's index of the state's ResourceSlices (structured.SliceIndex): the slices
        of each node name, those for all nodes or a node selector, the slices of each pool, and
        the verdicts of the selectors met on their devices. Made once for the state's list of
        slices, which no scheduling changes."""
        if self._slices is None:
            from ...dra.structured import slice_index
            self._slices = slice_index(self.state.resource_slices)
        return self._slices

    def slices_for(self, version: str):
        """The allocator's index of the slices as ``version``'s scheduler sees them: from v1.37
        (DRADeviceTaintRules GA and on; beta and off in v1.36) with the taints of the
        DeviceTaintRules added to the devices they select, as the ResourceSlice tracker patches
        them (ListWithDeviceTaintRules)."""
        rules = self.state.device_taint_rules
        if version != "1.37" or not rules:
            return self.slices()
        if self._tainted is None:
            from ...dra.structured import slice_index
            self._tainted = slice_index(apply_taint_rules(self.state.resource_slices, rules))
        return self._tainted

    def allocated(self):
        """ListAllAllocatedDevices: the devices of every claim's status.allocation, but those of
        results with adminAccess (foreachAllocatedDevice skips them)."""
        if self._allocated is None:
            from ...dra.structured import DeviceID
            self._allocated = frozenset(
                DeviceID(r.driver, r.pool, r.device)
                for c in self.state.resource_claims.values() if c.status.allocation is not None
                for r in c.status.allocation.devices.results if not r.admin_access)
        return self._allocated

    def allocated_state(self):
        """GatherAllocatedState with DRAConsumableCapacity on (v1.36+, dra_manager.go,
        allocateddevices.go foreachAllocatedDevice): the devices allocated whole (results without
        a shareID), and the devices shares of which are allocated, each with the capacity its
        shares consume together ({} where they name none). Results with adminAccess count as
        neither."""
        if self._state_136 is None:
            from ...dra.structured import DeviceID
            whole, shared = set(), {}
            for c in self.state.resource_claims.values():
                if c.status.allocation is None:
                    continue
                for r in c.status.allocation.devices.results:
                    if r.admin_access:
                        continue
                    device = DeviceID(r.driver, r.pool, r.device)
                    if r.share_id is None:
                        whole.add(device)
                        continue
                    held = shared.setdefault(device, {})
                    for name, amount in r.consumed_capacity.items():
                        held[name] = held[name] + amount if name in held else amount
            self._state_136 = (frozenset(whole), shared)
        return self._state_136

    def allocate(self, node, claims, version: str = "1.35"):
        """structured.allocate (``version``'s allocator, 1.34 to 1.37) for these claims on the
        node, with the slices it can reach, the state's device classes and the devices in use:
        AllocationResults, or None; its AllocationError is the caller's to judge. What it answers
        depends on the claims only through their specs (a result names no claim), so it is kept
        per node, version and signature."""
        from ...dra import structured
        self.version = version
        answers = self._answers.setdefault(node.metadata.name, {})
        key = (version, signature(claims))
        if key in answers:
            answer = answers[key]
            if isinstance(answer, structured.AllocationError):
                raise answer
            return answer
        if len(answers) >= ANSWERS_PER_NODE:
            answers.clear()
        features = structured.FEATURES[version]
        if features.consumable_capacity:
            allocated, shared = self.allocated_state()
        else:
            allocated, shared = self.allocated(), None
        try:
            answer = structured.allocate(node, list(claims), classes=self.state.device_classes,
                                         slices=self.slices_for(version), allocated=allocated,
                                         features=features, shared=shared)
        except structured.AllocationError as err:
            answers[key] = err
            raise
        answers[key] = answer
        return answer

    def shortfalls(self, node, claims):
        """structured.shortfalls: the requests that cannot be met on the node even alone, with
        the allocator of the version the filter last asked for (explain runs the profile first)."""
        from ...dra import structured
        features = structured.FEATURES[self.version]
        if features.consumable_capacity:
            allocated, shared = self.allocated_state()
        else:
            allocated, shared = self.allocated(), None
        return structured.shortfalls(node, list(claims), classes=self.state.device_classes,
                                     slices=self.slices_for(self.version), allocated=allocated, features=features,
                                     shared=shared)

    def assume_allocation(self, pod, claims, allocations) -> None:
        """Reserve and PreBind (bindClaim) as the state then holds them: each claim to allocate
        gets its AllocationResult, and every claim of the pod not reserved for it gets the pod in
        status.reservedFor. (The delete-protection finalizer PreBind adds is not modelled: the
        model keeps no finalizers, and no decision reads them.)"""
        state = self.state
        by_key = dict(zip(((c.metadata.namespace, c.metadata.name) for c in claims if c.status.allocation is None),
                          allocations))
        for c in claims:
            key = (c.metadata.namespace, c.metadata.name)
            current = state.resource_claims.get(key, c)
            status = current.status
            if key in by_key and status.allocation is None:
                status = attrs.evolve(status, allocation=by_key[key])
            if not any(r.uid == pod.metadata.uid for r in status.reserved_for):
                status = attrs.evolve(status, reserved_for=(*status.reserved_for, model.ResourceClaimConsumerReference(
                    resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)))
            state.resource_claims[key] = attrs.evolve(current, status=status)
        self._allocated = self._state_136 = None
        self._forget_answers([r for a in allocations for r in a.devices.results])

    def deallocate(self, key) -> bool:
        """DynamicResources' PostFilter: the claim deallocated, or deleted if it is the special
        claim made for a pod's extended resources (extendeddynamicresources.go deleteClaim). Whether
        the change requeues the pod at once: a deallocation does (its update event); the deletion
        does not (the claim is not one of the pod's own, so isSchedulableAfterClaimChange skips the
        finalizer's update, and v1.36 registers no delete event)."""
        from ...dra.extended import EXTENDED_RESOURCE_CLAIM_ANNOTATION
        claim = self.state.resource_claims.get(key)
        if claim is not None and claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true":
            del self.state.resource_claims[key]
            if claim.status.allocation is not None:
                self._allocated = None
                self._forget_answers(claim.status.allocation.devices.results)
            return False
        if claim is None or claim.status.allocation is None:
            return True
        self.state.resource_claims[key] = attrs.evolve(claim, status=attrs.evolve(
            claim.status, allocation=None, reserved_for=(), devices=()))
        self._allocated = self._state_136 = None
        self._forget_answers(claim.status.allocation.devices.results)
        return True

    def pod_gone(self, pod) -> None:
        """The resourceclaim controller once a pod is deleted (controller.go syncClaim): the pod
        leaves the reservedFor of its claims, a claim reserved for no one any more is deallocated
        (its devices are free again), and the claims made for the pod from its templates are
        deleted with it."""
        uid = pod.metadata.uid
        if not uid:
            return
        state = self.state
        for key, claim in list(state.resource_claims.items()):
            owner = next((r for r in claim.metadata.owner_references if r.controller), None)
            if owner is not None and owner.uid == uid and owner.kind == "Pod":
                del state.resource_claims[key]
                if claim.status.allocation is not None:
                    self._allocated = self._state_136 = None
                    self._forget_answers(claim.status.allocation.devices.results)
                continue
            reserved = claim.status.reserved_for
            if not any(r.uid == uid for r in reserved):
                continue
            left = tuple(r for r in reserved if r.uid != uid)
            allocation = claim.status.allocation
            status = attrs.evolve(claim.status, reserved_for=left, allocation=allocation if left else None)
            state.resource_claims[key] = attrs.evolve(claim, status=status)
            if not left and allocation is not None:
                self._allocated = self._state_136 = None
                self._forget_answers(allocation.devices.results)

    def claims_changed(self) -> None:
        self._allocated = self._state_136 = None
        self._answers.clear()

    def _forget_answers(self, results) -> None:
        """The nodes that see the pools of these newly allocated devices lose their kept answers
        (all nodes do when a pool is not local to one node)."""
        index = self.slices()
        for r in results:
            for pos in index.by_pool.get((r.driver, r.pool), ()):
                node_name = index.slices[pos].spec.node_name
                if not node_name:
                    self._answers.clear()
                    return
                self._answers.pop(node_name, None)


def apply_taint_rules(slices, rules) -> list:
    """applyPatches (k8s.io/dynamic-resource-allocation@v0.37.2 resourceslice/tracker/tracker.go):
    each rule's taint appended, in the rules' order, to the devices of each slice its selector
    names (a rule without a selector names none; a driver, pool or device left out, any)."""
    out = []
    for s in slices:
        spec = s.spec
        taints = [list(d.taints) for d in spec.devices]
        for rule in rules:
            sel = rule.spec.device_selector
            if sel is None or (sel.driver is not None and sel.driver != spec.driver) or \
                    (sel.pool is not None and sel.pool != spec.pool.name):
                continue
            for i, d in enumerate(spec.devices):
                if sel.device is None or sel.device == d.name:
                    taints[i].append(rule.spec.taint)
        if any(len(t) != len(d.taints) for t, d in zip(taints, spec.devices)):
            devices = tuple(attrs.evolve(d, taints=tuple(t)) for d, t in zip(spec.devices, taints))
            s = attrs.evolve(s, spec=attrs.evolve(spec, devices=devices))
        out.append(s)
    return out


# The most claim signatures whose answers a node keeps (beyond, it starts again).
ANSWERS_PER_NODE = 64


def signature(claims) -> tuple:
    """What the allocator's answer depends on in the claims: their specs, in order (by value;
    one that cannot be hashed, with a driver's opaque parameters, by its text)."""
    out = []
    for c in claims:
        spec = c.spec
        try:
            hash(spec)
        except TypeError:
            spec = repr(spec)
        out.append(spec)
    return tuple(out)

"""ClusterState: the typed objects, the pods on each node and each node's version (the core),
and the index objects an executor reads (``indexes.INDEXES``).

Indexes are kept up to date as pods arrive on a node and leave it (each index's ``arrive`` and
``leave`` hooks) instead of being recomputed, so a simulation can place thousands of pods
without re-scanning the cluster. The index look-ups builtins and executors call are methods
here too, each handing over to its index.
"""

from __future__ import annotations

import contextlib
import functools
from collections import OrderedDict
from typing import Iterable

import attrs
import numpy as np

from ..api import model
from ..diagnostics import InputError
from .indexes import INDEXES
from .journal import Journal
from .indexes.placed_terms import PLACED_TERM_KINDS  # noqa: F401  (the kinds placed_terms takes)

TERMINAL_PHASES = ("Succeeded", "Failed")
CHANGES_KEPT = 1 << 16      # node changes remembered for changed_since
# The PriorityClasses the API server creates at start-up (pkg/apis/scheduling/v1/helpers.go:
# systemPriorityClasses; pkg/apis/scheduling/types.go: SystemCriticalPriority is twice
# HighestUserDefinablePriority, 1,000,000,000), whether or not a dump lists them.
SYSTEM_PRIORITY_CLASSES = {
    name: model.PriorityClass(metadata=model.ObjectMeta(name=name), value=value, preemption_policy="PreemptLowerPriority")
    for name, value in (("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000))}


class ClusterState:
    def __init__(self) -> None:
        self.nodes: dict[str, model.Node] = {}
        self._pods: dict[str, model.Pod] = {}   # by key, in arrival order (see pods)
        # Each pod's place in that order: a rolled-back savepoint puts pods back under their old
        # numbers, and the order is mended only when someone reads it (pods), not on every rollback.
        self._serial: dict[str, int] = {}
        self._arrivals = 0
        self._disordered = False
        self.namespaces: dict[str, model.Namespace] = {}
        self.priority_classes: dict[str, model.PriorityClass] = {}
        self.services: list[model.Service] = []
        self.workloads: list[model.Workload] = []
        self.pdbs: list[model.PodDisruptionBudget] = []
        # Storage objects, as the scheduler's informers (and assume caches) hold them.
        self.persistent_volumes: dict[str, model.PersistentVolume] = {}
        self.claims: dict[tuple[str, str], model.PersistentVolumeClaim] = {}
        self.storage_classes: dict[str, model.StorageClass] = {}
        self.csi_nodes: dict[str, model.CSINode] = {}
        self.csi_drivers: dict[str, model.CSIDriver] = {}
        self.csi_storage_capacities: list[model.CSIStorageCapacity] = []
        self.volume_attachments: list[model.VolumeAttachment] = []
        # Dynamic Resource Allocation's objects (resource.k8s.io/v1), as the DRA manager holds
        # them; claims as its assume cache does (DynamicResources' Reserve writes into them).
        self.resource_claims: dict[tuple[str, str], model.ResourceClaim] = {}
        self.resource_claim_templates: dict[tuple[str, str], model.ResourceClaimTemplate] = {}
        self.device_classes: dict[str, model.DeviceClass] = {}
        self.resource_slices: list[model.ResourceSlice] = []
        # DeviceTaintRules (resource.k8s.io/v1, v1beta2): v1.37's allocator sees their taints on
        # the devices they select (cluster/indexes/dra.py).
        self.device_taint_rules: list[model.DeviceTaintRule] = []
        # Pending pods with status.nominatedNodeName (the scheduling queue's PodNominator):
        # filters count them on their nominated node, as if already there.
        self.nominated: dict[str, model.Pod] = {}
        self.pods_by_node: dict[str, list[model.Pod]] = {}
        self._tree_order: list[model.Node] | None = None
        # Node names in the order the objects came (the dump's order), as the scheduler's cache
        # sees nodes arrive: the order of its node tree, which node sampling walks.
        self._arrival: list[str] = []
        # Per node (in name order), a counter bumped whenever a pod arrives or leaves: what an
        # executor's cache of per-node values checks to know which nodes to recompute.
        self.node_index: dict[str, int] = {}
        self.node_versions = np.zeros(0, dtype=np.int64)
        self.generation = 0     # bumped with any node's version
        # The node (its position) whose version each bump changed, from generation changed_from on.
        self.changed: list[int] = []
        self.changed_from = 0
        # Where each node is (by the node's id), and the positions of lists met lately.
        self._node_positions: dict[int, int] | None = None
        self._list_positions: OrderedDict = OrderedDict()
        self.cache: dict = {}   # what executors keep per state, by name
        self._journals: list[Journal] = []    # the open savepoints, innermost last (journal.py)
        self._make_indexes()

    def _make_indexes(self) -> None:
        """The indexes of INDEXES, made in its order (an index may read those before it)."""
        self.indexes: dict = {}
        for name, make in INDEXES:
            self.indexes[name] = make(self)
        self._hooks = tuple(self.indexes.values())
        idx = self.indexes
        self._requested, self._labels, self._counts = idx["requested"], idx["labels"], idx["counts"]
        self._domains, self._affinity, self._placed = idx["domains"], idx["affinity"], idx["placed_terms"]
        self._claims, self._storage, self._images = idx["claims"], idx["storage"], idx["images"]
        self._devices = idx["devices"]

    @classmethod
    def build(cls, objects: Iterable) -> "ClusterState":
        state = cls()
        pods = []
        for obj in objects:
            if isinstance(obj, model.Node):
                state.nodes[obj.name] = obj
                state._arrival.append(obj.name)
            elif isinstance(obj, model.Pod):
                pods.append(obj)
            elif isinstance(obj, model.Namespace):
                state.namespaces[obj.metadata.name] = obj
            elif isinstance(obj, model.PriorityClass):
                state.priority_classes[obj.metadata.name] = obj
            elif isinstance(obj, model.Service):
                state.services.append(obj)
            elif isinstance(obj, model.Workload):
                state.workloads.append(obj)
            elif isinstance(obj, model.PodDisruptionBudget):
                state.pdbs.append(obj)
            elif isinstance(obj, model.PersistentVolume):
                state.persistent_volumes[obj.metadata.name] = obj
            elif isinstance(obj, model.PersistentVolumeClaim):
                state.claims[(obj.metadata.namespace, obj.metadata.name)] = obj
            elif isinstance(obj, model.StorageClass):
                state.storage_classes[obj.metadata.name] = obj
            elif isinstance(obj, model.CSINode):
                state.csi_nodes[obj.metadata.name] = obj
            elif isinstance(obj, model.CSIDriver):
                state.csi_drivers[obj.metadata.name] = obj
            elif isinstance(obj, model.CSIStorageCapacity):
                state.csi_storage_capacities.append(obj)
            elif isinstance(obj, model.VolumeAttachment):
                state.volume_attachments.append(obj)
            elif isinstance(obj, model.ResourceClaim):
                state.resource_claims[(obj.metadata.namespace, obj.metadata.name)] = obj
            elif isinstance(obj, model.ResourceClaimTemplate):
                state.resource_claim_templates[(obj.metadata.namespace, obj.metadata.name)] = obj
            elif isinstance(obj, model.DeviceClass):
                state.device_classes[obj.metadata.name] = obj
            elif isinstance(obj, model.ResourceSlice):
                state.resource_slices.append(obj)
            elif isinstance(obj, model.DeviceTaintRule):
                state.device_taint_rules.append(obj)
        state.persistent_volumes = dict(sorted(state.persistent_volumes.items()))
        state.nodes = dict(sorted(state.nodes.items()))
        state.node_index = {name: i for i, name in enumerate(state.nodes)}
        state.node_versions = np.zeros(len(state.nodes), dtype=np.int64)
        state.pods_by_node = {name: [] for name in state.nodes}
        state._make_indexes()
        for pod in pods:
            pod = state.with_priority(pod)
            state._insert(pod)
            if pod.spec.node_name and pod.status.phase not in TERMINAL_PHASES and pod.spec.node_name in state.nodes:
                state._account(pod, pod.spec.node_name)
            elif not pod.spec.node_name and pod.status.nominated_node_name and pod.status.phase not in TERMINAL_PHASES:
                state.nominated[pod.key] = pod
        state.changed, state.changed_from = [], state.generation    # no one asks what building changed
        return state

    # ---- the core: objects, pods by node, versions ----
    @property
    def pods(self) -> list[model.Pod]:
        if self._disordered:
            self._pods = {key: self._pods[key] for key in sorted(self._pods, key=self._serial.__getitem__)}
            self._disordered = False
        return list(self._pods.values())

    def pod(self, key: str) -> "model.Pod | None":
        """The pod NAMESPACE/NAME, if the state has it."""
        return self._pods.get(key)

    def _insert(self, pod: model.Pod) -> None:
        """The pod, arriving last (its key must not be there)."""
        self._pods[pod.key] = pod
        self._serial[pod.key] = self._arrivals
        self._arrivals += 1

    def _pop(self, key: str) -> "model.Pod | None":
        self._serial.pop(key, None)
        return self._pods.pop(key, None)

    @functools.cached_property
    def node_list(self) -> list[model.Node]:
        """The nodes in name order: one list (not to be changed) for every cycle, so that what
        executors keep per list is kept across pods."""
        return list(self.nodes.values())

    @property
    def bound_pods(self) -> list[model.Pod]:
        return [p for pods in self.pods_by_node.values() for p in pods]

    def workload(self, kind: str, namespace: str, name: str) -> "model.Workload | None":
        """The ReplicaSet, StatefulSet or ReplicationController of this kind, namespace and
        name (the first loaded, should there be two), as the scheduler's listers get it."""
        return self._workloads_by_key.get((kind, namespace, name))

    def add_workloads(self, workloads) -> None:
        """The controllers of pods about to be placed (workload manifests expanded into pods)."""
        self._note_objects()
        self.workloads = [*self.workloads, *workloads]
        self.__dict__.pop("_workloads_by_key", None)

    @functools.cached_property
    def _workloads_by_key(self) -> dict:
        by_key: dict = {}
        for w in self.workloads:
            by_key.setdefault((w.kind, w.metadata.namespace, w.metadata.name), w)
        return by_key

    def node_tree_order(self) -> list[model.Node]:
        """The scheduler cache's node list: zones in order of first appearance, one node of
        each zone in turn (its nodeTree), zones keyed by region and zone labels; nodes in the
        order they arrived (the dump's order, not their names')."""
        if self._tree_order is None:
            zones: dict[str, list[model.Node]] = {}
            for node in self.nodes_as_arrived():
                zones.setdefault(zone_key(node), []).append(node)
            columns = list(zones.values())
            depth = max((len(c) for c in columns), default=0)
            self._tree_order = [c[i] for i in range(depth) for c in columns if i < len(c)]
        return self._tree_order

    def nominated_pods_for(self, node_name: str) -> list[model.Pod]:
        """PodNominator.NominatedPodsForNode: the pending pods nominated to this node."""
        return [p for p in self.nominated.values() if p.status.nominated_node_name == node_name]

    def namespace_labels(self, name: str) -> dict[str, str]:
        ns = self.namespaces.get(name)
        return ns.metadata.labels if ns else {}

    def with_priority(self, pod: model.Pod) -> model.Pod:
        """Resolve the pod's priority as the Priority admission plugin does on create
        (plugin/pkg/admission/priority/admission.go): the class it names, else the global default
        class, else 0; a class that does not exist is refused as the API server refuses the pod.
        The two system classes always exist: the API server creates them at start-up."""
        if pod.spec.priority is not None:
            return pod
        value, policy = 0, pod.spec.preemption_policy
        name = pod.spec.priority_class_name
        if name:
            pc = self.priority_classes.get(name) or SYSTEM_PRIORITY_CLASSES.get(name)
            if pc is None:
                raise InputError(f'pods "{pod.metadata.name}" is forbidden: no PriorityClass with name {name} was found',
                                 obj=f"Pod {pod.key}", field="spec.priorityClassName")
        else:
            pc = next((c for c in self.priority_classes.values() if c.global_default), None)
        if pc is not None:
            value = pc.value
            policy = policy or pc.preemption_policy
        return attrs.evolve(pod, spec=attrs.evolve(pod.spec, priority=value,
                                                   preemption_policy=policy or "PreemptLowerPriority"))

    def nodes_as_arrived(self) -> list[model.Node]:
        """The nodes in the order they came (nodes added since, by name, after them)."""
        arrived = [self.nodes[n] for n in dict.fromkeys(self._arrival) if n in self.nodes]
        seen = {n.metadata.name for n in arrived}
        return arrived + [n for n in self.nodes.values() if n.metadata.name not in seen]

    def objects(self) -> list:
        """Every object of the state, pods last: what `build` makes this state again from (nodes
        in the order they came, which node sampling walks)."""
        return [*self.nodes_as_arrived(), *self.namespaces.values(), *self.priority_classes.values(),
                *self.services, *self.workloads, *self.pdbs, *self.storage_classes.values(),
                *self.persistent_volumes.values(), *self.claims.values(), *self.csi_nodes.values(),
                *self.csi_drivers.values(), *self.csi_storage_capacities, *self.volume_attachments,
                *self.device_classes.values(), *self.resource_slices, *self.device_taint_rules,
                *self.resource_claim_templates.values(),
                *self.resource_claims.values(), *self.pods]

    def with_nodes(self, nodes: list[model.Node], removed: Iterable[str] = ()) -> "ClusterState":
        """A new state of these nodes (in this order: the order they arrived in, which node
        sampling walks) and every other object of this one; the pods bound to the ``removed``
        nodes leave with them. A change to the nodes is a new state, not a savepoint: the node
        order, the per-node arrays and every index are laid out by node."""
        gone = set(removed)
        return ClusterState.build([*nodes, *(o for o in self.objects() if not isinstance(o, model.Node)
                                             and not (isinstance(o, model.Pod) and o.spec.node_name in gone))])

    def without(self, removed: list[model.Pod]) -> "ClusterState":
        """A copy of the state with these pods gone (for preemption's dry run)."""
        keys = {p.key for p in removed}
        return ClusterState.build([o for o in self.objects() if not isinstance(o, model.Pod) or o.key not in keys])

    # ---- savepoints: changes that can be rolled back (journal.py) ----
    def savepoint(self) -> Journal:
        """Open a savepoint: every change from now on can be undone by ``rollback`` of it, or
        kept by ``release`` of it. Savepoints nest; close them innermost first."""
        journal = Journal()
        self._journals.append(journal)
        return journal

    def rollback(self, savepoint: Journal) -> None:
        """Put the state back as it was when ``savepoint`` was opened (its indexes too)."""
        self._close(savepoint).undo(self)

    def release(self, savepoint: Journal) -> None:
        """Keep the changes since ``savepoint``: an enclosing savepoint can still undo them."""
        journal = self._close(savepoint)
        if self._journals:
            self._journals[-1].absorb(journal)

    @contextlib.contextmanager
    def trial(self):
        """Changes made inside are undone when it ends, however it ends."""
        savepoint = self.savepoint()
        try:
            yield self
        finally:
            self.rollback(savepoint)

    def _close(self, savepoint: Journal) -> Journal:
        if not self._journals or self._journals[-1] is not savepoint:
            raise ValueError("savepoints close innermost first, and once")
        return self._journals.pop()

    def _note_pod(self, key: str) -> None:
        if self._journals:
            self._journals[-1].pod(self, key)
            self._journals[-1].nominee(self, key)

    def _note_objects(self) -> None:
        if self._journals:
            self._journals[-1].object_maps(self)

    def objects_changed(self) -> None:
        """The PVs, claims, ResourceClaims or workloads were replaced: forget what was derived."""
        self._storage.forget()
        self._devices.claims_changed()
        self.__dict__.pop("_workloads_by_key", None)

    # ---- updates: a pod arrives on a node or leaves it, and every index is told ----
    def bind(self, pod: model.Pod, node_name: str) -> model.Pod:
        bound = attrs.evolve(pod, spec=attrs.evolve(pod.spec, node_name=node_name))
        self._note_pod(pod.key)
        self._pop(pod.key)
        self._insert(bound)
        self.nominated.pop(pod.key, None)
        self._account(bound, node_name)
        return bound

    def put_pod(self, pod: model.Pod) -> None:
        """A pod added or changed (a watch's event): the old version, if any, leaves its node and
        the new one arrives there, as `build` would place it."""
        self.drop_pod(pod.key)
        pod = self.with_priority(pod)
        self._note_pod(pod.key)
        self._insert(pod)
        node = pod.spec.node_name
        if node and pod.status.phase not in TERMINAL_PHASES and node in self.nodes:
            self._account(pod, node)
        elif not node and pod.status.nominated_node_name and pod.status.phase not in TERMINAL_PHASES:
            self.nominated[pod.key] = pod

    def drop_pod(self, key: str) -> None:
        """A pod deleted (or about to be replaced): off its node, if it was counted on one."""
        self._note_pod(key)
        old = self._pop(key)
        self.nominated.pop(key, None)
        if old is None:
            return
        node = old.spec.node_name
        if node in self.pods_by_node and any(p.key == key for p in self.pods_by_node[node]):
            self._leave(old, node)

    def evict(self, pods: list[model.Pod]) -> None:
        for pod in pods:
            self.remove(pod)

    def remove(self, pod: model.Pod) -> None:
        self._note_objects()
        self._devices.pod_gone(pod)
        node = pod.spec.node_name
        self._note_pod(pod.key)
        self._pop(pod.key)
        self.nominated.pop(pod.key, None)
        if node in self.pods_by_node:
            self._leave(pod, node)

    def _account(self, pod: model.Pod, node: str) -> None:
        if self._journals:
            self._journals[-1].node(self, node, True, pod)
        self.pods_by_node[node].append(pod)
        self._bump(self.node_index[node])
        for index in self._hooks:
            index.arrive(pod, node)

    def _leave(self, pod: model.Pod, node: str) -> None:
        if self._journals:
            self._journals[-1].node(self, node, False, pod)
        key = pod.key
        self.pods_by_node[node] = [p for p in self.pods_by_node[node] if p.key != key]
        self._bump(self.node_index[node])
        for index in self._hooks:
            index.leave(pod, node)

    def _bump(self, position: int) -> None:
        self.node_versions[position] += 1
        self.generation += 1
        self.changed.append(position)
        if len(self.changed) > CHANGES_KEPT:
            # A long-lived state (a server's, an engine forked and reverted for hours) keeps the
            # newer half: asking about an older generation answers "not known", and the asker
            # checks every node, as it would have after that many changes anyway.
            half = len(self.changed) // 2
            del self.changed[:half]
            self.changed_from += half

    def changed_since(self, generation: int) -> "list[int] | None":
        """The positions of the nodes whose pods changed after that generation (None: not known)."""
        return self.changed[generation - self.changed_from:] if generation >= self.changed_from else None

    def positions(self, nodes: list) -> "np.ndarray | None":
        """Where each of these nodes is in the state's node order; None when one is not the
        state's own. A list met again (the node list, a cycle's feasible nodes) is looked up once."""
        recent = self._list_positions
        hit = recent.get(id(nodes))
        if hit is not None and hit[0] is nodes:
            recent.move_to_end(id(nodes))
            return hit[1]
        by_identity = self._node_positions
        if by_identity is None:     # the state holds its nodes, so their ids stay theirs
            by_identity = self._node_positions = {id(node): i for i, node in enumerate(self.nodes.values())}
        try:
            pos = np.fromiter(map(by_identity.__getitem__, map(id, nodes)), dtype=np.int64, count=len(nodes))
        except KeyError:
            pos = None
        self.remember_positions(nodes, pos)
        return pos

    def remember_positions(self, nodes: list, pos: "np.ndarray | None") -> None:
        """Tell positions where a list's nodes are, when its maker knows (the feasible nodes).
        Lists must not change while remembered: cycles make new ones."""
        recent = self._list_positions
        recent[id(nodes)] = (nodes, pos)
        if len(recent) > 64:
            recent.popitem(last=False)

    # ---- the indexes' look-ups (see each index's module) ----
    @property
    def requested(self) -> dict:
        return self._requested.requested

    @property
    def nonzero_requested(self) -> dict:
        return self._requested.nonzero_requested

    def requested_as(self, counting) -> dict:
        """requested, with each pod counted as ``counting`` (api.requests.Counting: how a target
        reads a pod being resized in place) counts it."""
        return self._requested.tables(counting)[0]

    def nonzero_requested_as(self, counting) -> dict:
        return self._requested.tables(counting)[1]

    @property
    def pods_with_affinity(self) -> dict[str, list[model.Pod]]:
        return self._affinity.pods_with_affinity

    @property
    def pods_with_required_anti_affinity(self) -> dict[str, list[model.Pod]]:
        return self._affinity.pods_with_required_anti_affinity

    @property
    def claim_users(self) -> dict[tuple[str, str], int]:
        return self._claims.users

    def nodes_having(self, pods_by_node: dict[str, list[model.Pod]]) -> list[model.Node]:
        return self._affinity.nodes_having(pods_by_node)

    def pods_matching(self, namespace: "str | None", selector: "model.LabelSelector | None") -> list[model.Pod]:
        return self._labels.pods_matching(namespace, selector)

    def count_matching(self, namespace: "str | None", selector: "model.LabelSelector | None") -> dict[str, int]:
        return self._counts.count_matching(namespace, selector)

    def count_matching_by_position(self, namespace: "str | None", selector: "model.LabelSelector | None") \
            -> np.ndarray:
        return self._counts.count_matching_by_position(namespace, selector)

    def count_by_domain(self, namespace: "str | None", selector: "model.LabelSelector | None", key: str,
                        keys: "Iterable[str]") -> dict[str, int]:
        return self._domains.count_by_domain(namespace, selector, key, keys)

    def count_by_domain_on(self, namespace: "str | None", selector: "model.LabelSelector | None", key: str,
                           nodes: list) -> dict[str, int]:
        return self._domains.count_by_domain_on(namespace, selector, key, nodes)

    def domains_of(self, key: str, nodes: list) -> list[str]:
        return self._domains.domains_of(key, nodes)

    def placed_terms(self, kind: str) -> list[dict]:
        return self._placed.placed_terms(kind)

    def placed_terms_for(self, kind: str, labels: "dict[str, str] | None") -> list[dict]:
        return self._placed.placed_terms_for(kind, labels)

    def nodes_with_image(self, name: str) -> list[model.Node]:
        return self._images.nodes_with_image(name)

    def image_holder_mask(self, name: str) -> np.ndarray:
        return self._images.holder_mask(name)

    def persistent_volumes_of_class(self, class_name: str) -> list[model.PersistentVolume]:
        return self._storage.persistent_volumes_of_class(class_name)

    def volume_attachments_on(self, node_name: str) -> list[model.VolumeAttachment]:
        return self._storage.volume_attachments_on(node_name)

    def assume_volumes(self, bindings, provisions, node_name: str) -> None:
        self._note_objects()
        self._storage.assume_volumes(bindings, provisions, node_name)

    def slice_index(self):
        return self._devices.slices()

    def device_shortfalls(self, node: model.Node, claims):
        return self._devices.shortfalls(node, claims)

    def allocated_devices(self):
        return self._devices.allocated()

    def allocate_claims(self, node: model.Node, claims, version: str = "1.35"):
        return self._devices.allocate(node, claims, version)

    def assume_allocation(self, pod: model.Pod, claims, allocations) -> None:
        self._note_objects()
        self._devices.assume_allocation(pod, claims, allocations)

    def deallocate_claim(self, key: tuple[str, str]) -> bool:
        """DynamicResources' PostFilter: the claim without its allocation, reservations and device
        statuses; its devices are free again (the scheduler's claim for a pod's extended resources
        is deleted instead). Whether the change requeues the pod at once (not the deletion)."""
        self._note_objects()
        return self._devices.deallocate(key)

    def add_claim(self, claim: model.PersistentVolumeClaim) -> None:
        """A PersistentVolumeClaim created while simulating (a StatefulSet's, from its template)."""
        self._note_objects()
        self.claims[(claim.metadata.namespace, claim.metadata.name)] = claim

    def add_resource_claim(self, claim: model.ResourceClaim) -> None:
        """A claim created while simulating (the resourceclaim controller's, from a template)."""
        self._note_objects()
        self.resource_claims[(claim.metadata.namespace, claim.metadata.name)] = claim
        if claim.status.allocation is not None:     # its devices are in use from now on
            self._devices.claims_changed()


def zone_key(node: model.Node) -> str:
    """utilnode.GetZoneKey: the legacy failure-domain labels win over topology.kubernetes.io."""
    labels = node.metadata.labels
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    return "" if not region and not zone else f"{region}:\x00:{zone}"

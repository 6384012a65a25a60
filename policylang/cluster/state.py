"""ClusterState: the typed objects plus the indexes an executor needs.

Indexes are kept up to date on ``bind`` instead of being recomputed, so a simulation can
place thousands of pods without re-scanning the cluster.
"""

from __future__ import annotations

import functools
from collections import Counter, OrderedDict
from itertools import repeat
from typing import Iterable

import attrs
import numpy as np

from . import model
from .quantity import Quantity, ZERO
from .resources import nonzero_pod_requests, pod_requests

TERMINAL_PHASES = ("Succeeded", "Failed")


class ClusterState:
    def __init__(self) -> None:
        self.nodes: dict[str, model.Node] = {}
        self._pods: dict[str, model.Pod] = {}   # by key, in arrival order
        self.namespaces: dict[str, model.Namespace] = {}
        self.priority_classes: dict[str, model.PriorityClass] = {}
        self.services: list[model.Service] = []
        self.workloads: list[model.Workload] = []
        self.pdbs: list[model.PodDisruptionBudget] = []
        self.pods_by_node: dict[str, list[model.Pod]] = {}
        self.requested: dict[str, dict[str, Quantity]] = {}
        self.nonzero_requested: dict[str, dict[str, Quantity]] = {}
        self._tree_order: list[model.Node] | None = None
        # Node names in the order the objects came (the dump's order), as the scheduler's cache
        # sees nodes arrive: the order of its node tree, which node sampling walks.
        self._arrival: list[str] = []
        # (namespace, label key, label value) → bound pods, for selector look-ups.
        self.label_index: dict[tuple, dict[str, model.Pod]] = {}
        self.pods_by_namespace: dict[str, dict[str, model.Pod]] = {}
        # NodeInfo's lists of pods with (anti-)affinity, so InterPodAffinity need not scan every pod;
        # nodes_having's answers, until one of these lists changes.
        self.pods_with_affinity: dict[str, list[model.Pod]] = {}
        self.pods_with_required_anti_affinity: dict[str, list[model.Pod]] = {}
        self._having: dict = {}
        # Storage objects, as the scheduler's informers (and assume caches) hold them.
        self.persistent_volumes: dict[str, model.PersistentVolume] = {}
        self.claims: dict[tuple[str, str], model.PersistentVolumeClaim] = {}
        self.storage_classes: dict[str, model.StorageClass] = {}
        self.csi_nodes: dict[str, model.CSINode] = {}
        self.csi_drivers: dict[str, model.CSIDriver] = {}
        self.csi_storage_capacities: list[model.CSIStorageCapacity] = []
        self.volume_attachments: list[model.VolumeAttachment] = []
        self._pvs_by_class: dict[str, list[model.PersistentVolume]] | None = None
        self._attachments_by_node: dict[str, list[model.VolumeAttachment]] | None = None
        # (namespace, claim name) → how many bound pods mount the claim (NodeInfo.PVCRefCounts).
        self.claim_users: dict[tuple[str, str], int] = {}
        # Pending pods with status.nominatedNodeName (the scheduling queue's PodNominator):
        # filters count them on their nominated node, as if already there.
        self.nominated: dict[str, model.Pod] = {}
        # Per node (in name order), a counter bumped whenever a pod arrives or leaves: what an
        # executor's cache of per-node values checks to know which nodes to recompute.
        self.node_index: dict[str, int] = {}
        self.node_versions = np.zeros(0, dtype=np.int64)
        self.generation = 0     # bumped with any node's version
        # The node (its position) whose version each bump changed, from generation changed_from on.
        self.changed: list[int] = []
        self.changed_from = 0
        self.cache: dict = {}   # what executors and the state's own look-ups keep per state, by name
        self._matching: dict = {}   # pods_matching's answers until a pod arrives or leaves
        # Bound pods that count_matching counts: key → node; per label, how many on each node.
        self._counted_on: dict[str, str] = {}
        self._label_nodes: dict[tuple, Counter] = {}
        # The same per node position (for counts by position without a look-up per node name).
        self._label_positions: dict[tuple, Counter] = {}
        # count_matching's answers (selector, counts by node), updated as pods arrive or leave;
        # their keys by label (see _counted_by).
        self._counts: OrderedDict = OrderedDict()
        self._counted_by_label: dict[tuple, set] = {}
        self._counted_other: set = set()
        # count_by_domain's answers per selector and (key, keys), with the count_matching map
        # each was made from (updated with it).
        self._domain_counts: dict = {}
        self._count_arrays: dict = {}   # selector key → (count_matching's map, its counts by node position)
        # The bound pods' pod (anti-)affinity terms by kind, grouped by term (placed_terms), and
        # per kind the answer until one of its groups changes.
        self._placed: dict[str, dict] = {kind: {} for kind in PLACED_TERM_KINDS}
        self._placed_lists: dict[str, list] = {}
        # Per kind and group, the labels its selector requires (None: it selects nothing).
        self._requires: dict[str, dict] = {kind: {} for kind in PLACED_TERM_KINDS}

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
        state.persistent_volumes = dict(sorted(state.persistent_volumes.items()))
        state.nodes = dict(sorted(state.nodes.items()))
        state.node_index = {name: i for i, name in enumerate(state.nodes)}
        state.node_versions = np.zeros(len(state.nodes), dtype=np.int64)
        for name in state.nodes:
            state.pods_by_node[name] = []
            state.pods_with_affinity[name] = []
            state.pods_with_required_anti_affinity[name] = []
            state.requested[name] = {}
            state.nonzero_requested[name] = {}
        for pod in pods:
            pod = state.with_priority(pod)
            state._pods[pod.key] = pod
            if pod.spec.node_name and pod.status.phase not in TERMINAL_PHASES and pod.spec.node_name in state.nodes:
                state._account(pod, pod.spec.node_name)
            elif not pod.spec.node_name and pod.status.nominated_node_name and pod.status.phase not in TERMINAL_PHASES:
                state.nominated[pod.key] = pod
        state.changed, state.changed_from = [], state.generation    # no one asks what building changed
        return state

    # ---- queries ----
    @property
    def pods(self) -> list[model.Pod]:
        return list(self._pods.values())

    @functools.cached_property
    def node_list(self) -> list[model.Node]:
        """The nodes in name order: one list (not to be changed) for every cycle, so that what
        executors keep per list is kept across pods."""
        return list(self.nodes.values())

    def nodes_having(self, pods_by_node: dict[str, list[model.Pod]]) -> list[model.Node]:
        """The nodes, in name order, with pods in one of the per-node pod indexes."""
        found = self._having.get(id(pods_by_node))
        if found is None:
            found = self._having[id(pods_by_node)] = [self.nodes[name] for name, pods in pods_by_node.items() if pods]
        return found

    def workload(self, kind: str, namespace: str, name: str) -> "model.Workload | None":
        """The ReplicaSet, StatefulSet or ReplicationController of this kind, namespace and
        name (the first loaded, should there be two), as the scheduler's listers get it."""
        return self._workloads_by_key.get((kind, namespace, name))

    @functools.cached_property
    def _workloads_by_key(self) -> dict:
        by_key: dict = {}
        for w in self.workloads:
            by_key.setdefault((w.kind, w.metadata.namespace, w.metadata.name), w)
        return by_key

    def nodes_with_image(self, name: str) -> list[model.Node]:
        """The nodes, in name order, holding an image known by this name."""
        return self._image_holders.get(name, [])

    def image_holder_mask(self, name: str) -> np.ndarray:
        """Per node position, whether the node holds an image known by this name."""
        kept = self.cache.setdefault("image holders by position", {})
        if name not in kept:
            mask = np.zeros(len(self.node_index), dtype=bool)
            mask[self.positions(self.nodes_with_image(name))] = True
            kept[name] = mask
        return kept[name]

    @functools.cached_property
    def _image_holders(self) -> dict[str, list[model.Node]]:
        holders: dict[str, list[model.Node]] = {}
        for node in self.nodes.values():
            for name in dict.fromkeys(name for image in node.status.images for name in image.names):
                holders.setdefault(name, []).append(node)
        return holders

    @property
    def bound_pods(self) -> list[model.Pod]:
        return [p for pods in self.pods_by_node.values() for p in pods]

    def node_tree_order(self) -> list[model.Node]:
        """The scheduler cache's node list: zones in order of first appearance, one node of
        each zone in turn (its nodeTree), zones keyed by region and zone labels; nodes in the
        order they arrived (the dump's order, not their names')."""
        if self._tree_order is None:
            zones: dict[str, list[model.Node]] = {}
            arrived = [self.nodes[n] for n in dict.fromkeys(self._arrival) if n in self.nodes]
            seen = {n.metadata.name for n in arrived}
            for node in arrived + [n for n in self.nodes.values() if n.metadata.name not in seen]:
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
        """Resolve the pod's priority as the Priority admission plugin would."""
        if pod.spec.priority is not None:
            return pod
        value, policy = 0, pod.spec.preemption_policy
        pc = self.priority_classes.get(pod.spec.priority_class_name) if pod.spec.priority_class_name else None
        if pc is None and not pod.spec.priority_class_name:
            pc = next((c for c in self.priority_classes.values() if c.global_default), None)
        if pc is not None:
            value = pc.value
            policy = policy or pc.preemption_policy
        return attrs.evolve(pod, spec=attrs.evolve(pod.spec, priority=value,
                                                   preemption_policy=policy or "PreemptLowerPriority"))

    def objects(self) -> list:
        """Every object of the state, pods last: what `build` makes this state again from."""
        return [*self.nodes.values(), *self.namespaces.values(), *self.priority_classes.values(),
                *self.services, *self.workloads, *self.pdbs, *self.storage_classes.values(),
                *self.persistent_volumes.values(), *self.claims.values(), *self.csi_nodes.values(),
                *self.csi_drivers.values(), *self.csi_storage_capacities, *self.volume_attachments, *self.pods]

    def without(self, removed: list[model.Pod]) -> "ClusterState":
        """A copy of the state with these pods gone (for preemption's dry run)."""
        keys = {p.key for p in removed}
        return ClusterState.build([o for o in self.objects() if not isinstance(o, model.Pod) or o.key not in keys])

    # ---- storage ----
    def persistent_volumes_of_class(self, class_name: str) -> list[model.PersistentVolume]:
        """The PV assume cache's ListPVs: the PVs of a storage class (the beta annotation wins
        over spec.storageClassName), in name order (upstream's index order is a map's)."""
        if self._pvs_by_class is None:
            by_class: dict[str, list[model.PersistentVolume]] = {}
            for pv in self.persistent_volumes.values():
                by_class.setdefault(volume_class(pv), []).append(pv)
            self._pvs_by_class = by_class
        return self._pvs_by_class.get(class_name, [])

    def volume_attachments_on(self, node_name: str) -> list[model.VolumeAttachment]:
        """The VolumeAttachments whose spec.nodeName is the node (NodeVolumeLimits' index)."""
        if self._attachments_by_node is None:
            by_node: dict[str, list[model.VolumeAttachment]] = {}
            for va in self.volume_attachments:
                by_node.setdefault(va.spec.node_name, []).append(va)
            self._attachments_by_node = by_node
        return self._attachments_by_node.get(node_name, [])

    def assume_volumes(self, bindings, provisions, node_name: str) -> None:
        """VolumeBinding's Reserve (binder.AssumePodVolumes) as the scheduler's assume caches then
        hold it, until the PV controller completes the binding: each chosen PV ({claim, pv} in
        `bindings`) gets a claimRef to its claim and, unless it was pre-bound to it, the
        bound-by-controller annotation (volume.GetBindVolumeToClaim); each claim to provision
        gets the selected-node annotation."""
        for b in bindings:
            pv, pvc = b["pv"], b["claim"]
            meta, ref, claim = pv.metadata, pv.spec.claim_ref, pvc.metadata
            pre_bound = ref is not None and ref.name == claim.name and ref.namespace == claim.namespace \
                and (not ref.uid or ref.uid == claim.uid)
            spec = pv.spec
            if ref is None or (ref.name, ref.namespace, ref.uid) != (claim.name, claim.namespace, claim.uid):
                spec = attrs.evolve(spec, claim_ref=model.ObjectReference(
                    kind="PersistentVolumeClaim", api_version="v1", namespace=claim.namespace, name=claim.name,
                    uid=claim.uid))
            if not pre_bound and "pv.kubernetes.io/bound-by-controller" not in meta.annotations:
                meta = attrs.evolve(meta, annotations={**meta.annotations,
                                                       "pv.kubernetes.io/bound-by-controller": "yes"})
            self.persistent_volumes[meta.name] = attrs.evolve(pv, metadata=meta, spec=spec)
        for pvc in provisions:
            meta = pvc.metadata
            annotations = {**meta.annotations, "volume.kubernetes.io/selected-node": node_name}
            self.claims[(meta.namespace, meta.name)] = attrs.evolve(
                pvc, metadata=attrs.evolve(meta, annotations=annotations))
        self._pvs_by_class = None

    # ---- indexes ----
    def _index(self, pod: model.Pod) -> None:
        ns, key, node = pod.metadata.namespace, pod.key, pod.spec.node_name
        self.pods_by_namespace.setdefault(ns, {})[key] = pod
        counted = pod.metadata.deletion_timestamp is None
        if counted:
            self._counted_on[key] = node
        position = self.node_index.get(node)
        for k, v in pod.metadata.labels.items():
            self.label_index.setdefault((ns, k, v), {})[key] = pod
            if counted:
                self._label_nodes.setdefault((ns, k, v), Counter())[node] += 1
                if position is not None:
                    self._label_positions.setdefault((ns, k, v), Counter())[position] += 1
        for claim in _claim_names(pod):
            self.claim_users[(ns, claim)] = self.claim_users.get((ns, claim), 0) + 1
        if _has_affinity(pod):
            self.pods_with_affinity[node].append(pod)
            self._having.clear()
            self._place_terms(pod, self.nodes[node], 1)
        if _has_required_anti_affinity(pod):
            self.pods_with_required_anti_affinity[node].append(pod)

    def _unindex(self, pod: model.Pod) -> None:
        ns, key = pod.metadata.namespace, pod.key
        self.pods_by_namespace.get(ns, {}).pop(key, None)
        counted_on = self._counted_on.pop(key, None)
        position = self.node_index.get(counted_on)
        for k, v in pod.metadata.labels.items():
            self.label_index.get((ns, k, v), {}).pop(key, None)
            if counted_on is not None:
                _uncount(self._label_nodes[(ns, k, v)], counted_on)
                if position is not None:
                    _uncount(self._label_positions[(ns, k, v)], position)
        for claim in _claim_names(pod):
            left = self.claim_users.get((ns, claim), 0) - 1
            if left > 0:
                self.claim_users[(ns, claim)] = left
            else:
                self.claim_users.pop((ns, claim), None)
        node = pod.spec.node_name
        if _has_affinity(pod):
            self._having.clear()
            self._place_terms(pod, self.nodes[node], -1)
        for index in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
            if node in index:
                index[node] = [p for p in index[node] if p.key != key]

    # ---- updates ----
    def bind(self, pod: model.Pod, node_name: str) -> model.Pod:
        bound = attrs.evolve(pod, spec=attrs.evolve(pod.spec, node_name=node_name))
        self._pods.pop(pod.key, None)
        self._pods[pod.key] = bound
        self.nominated.pop(pod.key, None)
        self._account(bound, node_name)
        return bound

    def evict(self, pods: list[model.Pod]) -> None:
        for pod in pods:
            self.remove(pod)

    def pods_matching(self, namespace: str, selector: "model.LabelSelector | None") -> list[model.Pod]:
        """The bound pods of a namespace (None: of every namespace) that a label selector selects
        (a None selector selects none)."""
        if selector is None:
            return []
        if namespace is None:
            return [p for ns in sorted(self.pods_by_namespace) for p in self.pods_matching(ns, selector)]
        return self._selected(namespace, selector)[1]

    def _selected(self, namespace: str, selector: "model.LabelSelector") -> tuple[dict, list]:
        """pods_matching's pods of one namespace: by key, and as the list it answers."""
        from ..builtins import selector_matches

        key = _selector_key(namespace, selector)
        found = self._matching.get(key)
        if found is not None:
            return found
        labels, exact = _narrowing(selector)
        # From the label index: the smallest pool, kept where every other pool has the pod.
        pools = sorted((self.label_index.get((namespace, *label), {}) for label in labels), key=len)
        if len(pools) == 1:
            found = dict(pools[0])
        elif pools:
            found = {k: p for k, p in pools[0].items() if all(k in other for other in pools[1:])}
        else:
            found = dict(self.pods_by_namespace.get(namespace, {}))
        if not exact:
            found = {k: p for k, p in found.items() if selector_matches(selector, p.metadata.labels)}
        found = self._matching[key] = (found, list(found.values()))
        return found

    MAX_COUNTED_SELECTORS = 256   # each is checked against every pod that arrives or leaves

    def count_matching(self, namespace: str, selector: "model.LabelSelector | None") -> dict[str, int]:
        """Node name → how many bound pods of the namespace (None: of every namespace) the
        selector selects, terminating pods left out. A changed answer is a new map: callers may
        keep the one they got."""
        if selector is None:
            return {}
        key = _selector_key(namespace, selector)
        hit = self._counts.get(key)
        if hit is not None:
            self._counts.move_to_end(key)
            return hit[1]
        labels, exact = _narrowing(selector)
        counts: Counter = Counter()
        for ns in [namespace] if namespace is not None else list(self.pods_by_namespace):
            if exact and len(labels) == 1:     # one label's pods: counted per node as they come and go
                counts.update(self._label_nodes.get((ns, *labels[0]), {}))
            else:
                counts.update(map(self._counted_on.get, self._selected(ns, selector)[0]))
        counts.pop(None, None)      # terminating pods
        counts = dict(counts)
        self._counts[key] = (selector, counts)
        self._counted_by(namespace, selector).add(key)
        if len(self._counts) > self.MAX_COUNTED_SELECTORS:
            forgotten, (forgotten_selector, _) = self._counts.popitem(last=False)
            self._domain_counts.pop(forgotten, None)
            self._count_arrays.pop(forgotten, None)
            self._counted_by(forgotten[0], forgotten_selector).discard(forgotten)
        return counts

    def _counted_by(self, namespace: "str | None", selector: model.LabelSelector) -> set:
        """Where count_matching's selectors are found when a pod comes or goes: a one-label
        selector under its label (such pods are the ones it selects), any other among the rest."""
        labels, exact = _narrowing(selector)
        if exact and len(labels) == 1:
            return self._counted_by_label.setdefault((namespace, *labels[0]), set())
        return self._counted_other

    def count_by_domain(self, namespace: str, selector: "model.LabelSelector | None", key: str,
                        keys: "Iterable[str]") -> dict[str, int]:
        """Domain (value of node label ``key``, "" for a node without it) → how many pods
        count_matching counts on the nodes having every label of ``keys``; each such node's
        domain is present, 0 when it holds none. A changed answer is a new map."""
        keys = tuple(sorted(set(keys)))
        domains, at, pos, present = self._domains_having(key, keys)
        if selector is None:
            return dict.fromkeys(map(domains.__getitem__, present), 0)
        counts = self.count_matching(namespace, selector)
        derived = self._domain_counts.setdefault(_selector_key(namespace, selector), {})
        hit = derived.get((key, keys))
        if hit is not None and hit[0] is counts:     # kept up to date by _recount
            return hit[1]
        totals = np.bincount(at, weights=self.count_matching_by_position(namespace, selector)[pos],
                             minlength=len(domains))
        by_domain = _by_domain(domains, present, totals)
        derived[(key, keys)] = (counts, by_domain)
        return by_domain

    def _domains_having(self, key: str, keys: tuple) -> tuple:
        """_domains_at over the nodes having every label of ``keys``, and their positions."""
        kept = self.cache.setdefault("domains having", {})
        if (key, keys) not in kept:
            pos = np.array([i for i, n in enumerate(self.nodes.values())
                            if all(k in n.metadata.labels for k in keys)], dtype=np.int64)
            domains, at, present = self._domains_at(key, pos)
            kept[(key, keys)] = (domains, at, pos, present)
        return kept[(key, keys)]

    def count_by_domain_on(self, namespace: str, selector: "model.LabelSelector | None", key: str,
                           nodes: list) -> dict[str, int]:
        """count_by_domain over the given nodes: domain → how many pods count_matching counts on
        them, each node's domain present (in the order the nodes first have it)."""
        pos = self.positions(nodes)
        if pos is None:     # not the state's own nodes (or a null among them, left out)
            counts = self.count_matching(namespace, selector)
            out: dict = {}
            for n in filter(None, nodes):
                domain = n.metadata.labels.get(key, "")
                out[domain] = out.get(domain, 0) + counts.get(n.metadata.name, 0)
            return out
        domains, at, present = self._domains_at(key, pos)
        totals = np.bincount(at, weights=self.count_matching_by_position(namespace, selector)[pos],
                             minlength=len(domains))
        return _by_domain(domains, present, totals)

    def domains_of(self, key: str, nodes: list) -> list[str]:
        """The values of node label ``key`` ("" for a node without it) the nodes have, each once,
        in the order the nodes first have them."""
        pos = self.positions(nodes)
        if pos is None:
            return list(dict.fromkeys(n.metadata.labels.get(key, "") for n in filter(None, nodes)))
        domains, _, present = self._domains_at(key, pos)
        return [domains[i] for i in present]

    def _domains_at(self, key: str, pos: np.ndarray) -> "tuple[list[str], np.ndarray, list[int]]":
        """The label's values (its domains, "" for none); per node at ``pos``, which it has;
        and those present, in the order the nodes first have them."""
        kept = self.cache.setdefault("domain codes", {})
        if key not in kept:
            index: dict = {}
            codes = [index.setdefault(n.metadata.labels.get(key, ""), len(index)) for n in self.nodes.values()]
            kept[key] = (np.array(codes, dtype=np.int64), list(index))
        codes, domains = kept[key]
        at = codes[pos]
        present, first = np.unique(at, return_index=True)
        return domains, at, present[np.argsort(first)].tolist()

    def count_matching_by_position(self, namespace: str, selector: "model.LabelSelector | None") -> np.ndarray:
        """count_matching as an array in the state's node order."""
        counts = self.count_matching(namespace, selector)
        key = _selector_key(namespace, selector) if selector is not None else None
        hit = self._count_arrays.get(key)
        if hit is not None and hit[0] is counts:    # kept up to date by _recount
            return hit[1]
        labels, exact = _narrowing(selector) if selector is not None else ([], False)
        per_node = np.zeros(len(self.node_index), dtype=np.int64)
        if exact and len(labels) == 1:      # counted per position as pods come and go
            for ns in [namespace] if namespace is not None else list(self.pods_by_namespace):
                pool = self._label_positions.get((ns, *labels[0]), {})
                per_node[np.fromiter(pool.keys(), dtype=np.int64, count=len(pool))] += \
                    np.fromiter(pool.values(), dtype=np.int64, count=len(pool))
        else:
            at = np.fromiter(map(self.node_index.get, counts, repeat(-1)), dtype=np.int64, count=len(counts))
            on = at >= 0
            per_node[at[on]] = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))[on]
        if key is not None:
            self._count_arrays[key] = (counts, per_node)
        return per_node

    def positions(self, nodes: list) -> "np.ndarray | None":
        """Where each of these nodes is in the state's node order; None when one is not the
        state's own. A list met again (the node list, a cycle's feasible nodes) is looked up once."""
        recent = self.cache.setdefault("lists' node positions", OrderedDict())
        hit = recent.get(id(nodes))
        if hit is not None and hit[0] is nodes:
            recent.move_to_end(id(nodes))
            return hit[1]
        by_identity = self.cache.get("node positions")
        if by_identity is None:     # the state holds its nodes, so their ids stay theirs
            by_identity = self.cache["node positions"] = {id(node): i for i, node in enumerate(self.nodes.values())}
        try:
            pos = np.fromiter(map(by_identity.__getitem__, map(id, nodes)), dtype=np.int64, count=len(nodes))
        except KeyError:
            pos = None
        self.remember_positions(nodes, pos)
        return pos

    def remember_positions(self, nodes: list, pos: "np.ndarray | None") -> None:
        """Tell positions where a list's nodes are, when its maker knows (the feasible nodes).
        Lists must not change while remembered: cycles make new ones."""
        recent = self.cache.setdefault("lists' node positions", OrderedDict())
        recent[id(nodes)] = (nodes, pos)
        if len(recent) > 64:
            recent.popitem(last=False)

    def placed_terms(self, kind: str) -> list[dict]:
        """The pod (anti-)affinity terms of this kind (PLACED_TERM_KINDS) of the bound pods, one
        group per distinct term: {selector, namespaces, namespaceSelector, topologyKey, weight,
        nodes}, with the namespaces a term names (its pod's own when it names none and has no
        namespaceSelector), weight 0 for required terms, and the node of each pod holding it
        (once per term held). A pod's list with a term whose selectors do not parse is left
        out whole, as the scheduler's cache does. Kept up to date as pods are bound or removed;
        a changed answer is a new list."""
        found = self._placed_lists.get(kind)
        if found is None:
            found = self._placed_lists[kind] = list(self._placed[kind].values())
        return found

    def placed_terms_for(self, kind: str, labels: "dict[str, str] | None") -> list[dict]:
        """placed_terms of this kind that may select a pod with these labels: those whose label
        selector requires (by matchLabels or a one-value In) no label the pod lacks or holds
        with another value; the others select it not. In placed_terms' order."""
        labels = labels or {}
        requires = self._requires[kind]
        return [g for key, g in self._placed[kind].items()
                if requires[key] is not None and all(labels.get(k) == v for k, v in requires[key])]

    def _place_terms(self, pod: model.Pod, node: model.Node, change: int) -> None:
        for kind, terms in _affinity_terms(pod).items():
            groups = self._placed[kind]
            for term, weight in terms:
                namespaces = term.namespaces or (
                    () if term.namespace_selector is not None else (pod.metadata.namespace,))
                key = (_selector_sig(term.label_selector), namespaces, _selector_sig(term.namespace_selector),
                       term.topology_key, weight)
                group = groups.get(key)
                nodes = list(group["nodes"]) if group is not None else []
                if change > 0:
                    nodes.append(node)
                else:
                    nodes.remove(node)
                if nodes:   # a new record: answers given before stay as they were
                    groups[key] = {"selector": term.label_selector, "namespaces": list(namespaces),
                                   "namespaceSelector": term.namespace_selector, "topologyKey": term.topology_key,
                                   "weight": weight, "nodes": nodes}
                    if key not in self._requires[kind]:
                        self._requires[kind][key] = None if term.label_selector is None \
                            else tuple(_narrowing(term.label_selector)[0])
                else:
                    del groups[key]
                    del self._requires[kind][key]
                self._placed_lists.pop(kind, None)

    def _recount(self, pod: model.Pod, node: str, change: int) -> None:
        from ..builtins import selector_matches

        if pod.metadata.deletion_timestamp is not None:
            return
        namespaces = (None, pod.metadata.namespace)
        labels = pod.metadata.labels
        changed = [key for ns in namespaces for k, v in labels.items()
                   for key in self._counted_by_label.get((ns, k, v), ())]
        changed += [key for key in self._counted_other
                    if key[0] in namespaces and selector_matches(self._counts[key][0], labels)]
        for key in changed:
            selector, counts = self._counts[key]
            before = counts
            counts = dict(counts)
            left = counts.get(node, 0) + change
            if left:
                counts[node] = left
            else:
                counts.pop(node, None)
            self._counts[key] = (selector, counts)
            kept = self._count_arrays.get(key)
            if kept is not None and kept[0] is before:
                per_node = kept[1].copy()
                per_node[self.node_index[node]] = left
                self._count_arrays[key] = (counts, per_node)
            derived = self._domain_counts.get(key, {})
            for domain_key, (made_from, by_domain) in derived.items():
                if made_from is not before:
                    continue
                label, keys = domain_key
                labels = self.nodes[node].metadata.labels
                if all(k in labels for k in keys):
                    domain = labels.get(label, "")
                    by_domain = {**by_domain, domain: by_domain[domain] + change}
                derived[domain_key] = (counts, by_domain)

    def remove(self, pod: model.Pod) -> None:
        node = pod.spec.node_name
        self._pods.pop(pod.key, None)
        self.nominated.pop(pod.key, None)
        if node in self.pods_by_node:
            self._unindex(pod)
            self.pods_by_node[node] = [p for p in self.pods_by_node[node] if p.key != pod.key]
            _add_into(self.requested[node], pod_requests(pod), -1)
            _add_into(self.nonzero_requested[node], nonzero_pod_requests(pod), -1)
            self._bump(self.node_index[node])
            self._matching.clear()
            self._recount(pod, node, -1)

    def _bump(self, position: int) -> None:
        self.node_versions[position] += 1
        self.generation += 1
        self.changed.append(position)

    def changed_since(self, generation: int) -> "list[int] | None":
        """The positions of the nodes whose pods changed after that generation (None: not known)."""
        return self.changed[generation - self.changed_from:] if generation >= self.changed_from else None

    def _account(self, pod: model.Pod, node: str) -> None:
        self.pods_by_node[node].append(pod)
        self._index(pod)
        _add_into(self.requested[node], pod_requests(pod), 1)
        _add_into(self.nonzero_requested[node], nonzero_pod_requests(pod), 1)
        self._bump(self.node_index[node])
        self._matching.clear()
        self._recount(pod, node, 1)


def _uncount(counter: Counter, key) -> None:
    counter[key] -= 1
    if not counter[key]:
        del counter[key]


def _by_domain(domains: list, present: list, totals: np.ndarray) -> dict[str, int]:
    """Each present domain's total (a hostname key has one per node: thousands), in order."""
    return dict(zip(map(domains.__getitem__, present), totals[present].astype(np.int64).tolist()))


def _narrowing(selector: model.LabelSelector) -> tuple[list[tuple[str, str]], bool]:
    """The labels whose pools a selector's pods are in: its matchLabels and one-value In
    requirements (what a workload's matchLabels become when a selector is built from
    requirements); and whether being in them is all the selector asks."""
    narrowing = [r for r in selector.match_expressions if r.operator == "In" and len(r.values) == 1]
    labels = list(dict.fromkeys([*selector.match_labels.items(), *((r.key, r.values[0]) for r in narrowing)]))
    return labels, bool(labels) and len(narrowing) == len(selector.match_expressions)


def _selector_key(namespace: str, selector: model.LabelSelector) -> tuple:
    return (namespace, *_selector_sig(selector))


def _selector_sig(selector: "model.LabelSelector | None"):
    """A selector as a hashable value (its matchLabels are a dict)."""
    return None if selector is None else (tuple(sorted(selector.match_labels.items())), selector.match_expressions)


PLACED_TERM_KINDS = ("requiredAffinity", "requiredAntiAffinity", "preferredAffinity", "preferredAntiAffinity")


def _affinity_terms(pod: model.Pod) -> "dict[str, list[tuple[model.PodAffinityTerm, int]]]":
    """The pod's (term, weight) lists by kind, those whose selectors all parse (NewPodInfo)."""
    from ..builtins import label_selector_error

    a = pod.spec.affinity
    affinity = a.pod_affinity or model.PodAffinity()
    anti = a.pod_anti_affinity or model.PodAffinity()
    lists = {
        "requiredAffinity": [(t, 0) for t in affinity.required_during_scheduling_ignored_during_execution],
        "requiredAntiAffinity": [(t, 0) for t in anti.required_during_scheduling_ignored_during_execution],
        "preferredAffinity": [(w.pod_affinity_term, w.weight)
                              for w in affinity.preferred_during_scheduling_ignored_during_execution],
        "preferredAntiAffinity": [(w.pod_affinity_term, w.weight)
                                  for w in anti.preferred_during_scheduling_ignored_during_execution],
    }
    return {kind: terms for kind, terms in lists.items()
            if not any(label_selector_error(t.label_selector) is not None
                       or label_selector_error(t.namespace_selector) is not None for t, _ in terms)}


def _claim_names(pod: model.Pod) -> list[str]:
    return [v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim is not None]


def volume_class(pv: model.PersistentVolume) -> str:
    """storagehelpers.GetPersistentVolumeClass: the beta annotation wins over spec.storageClassName."""
    return pv.metadata.annotations.get("volume.beta.kubernetes.io/storage-class", pv.spec.storage_class_name)


def _has_affinity(pod: model.Pod) -> bool:
    a = pod.spec.affinity
    return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)


def _has_required_anti_affinity(pod: model.Pod) -> bool:
    a = pod.spec.affinity
    return a is not None and a.pod_anti_affinity is not None and \
        bool(a.pod_anti_affinity.required_during_scheduling_ignored_during_execution)


def zone_key(node: model.Node) -> str:
    """utilnode.GetZoneKey: the legacy failure-domain labels win over topology.kubernetes.io."""
    labels = node.metadata.labels
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    return "" if not region and not zone else f"{region}:\x00:{zone}"


def _add_into(total: dict[str, Quantity], more: dict[str, Quantity], sign: int) -> None:
    # A node adds up each pod's request already rounded up, cpu to millicores and the
    # rest to whole units, as its NodeInfo does.
    for name, q in more.items():
        rounded = Quantity(nanos=q.milli() * 10**6) if name == "cpu" else Quantity(nanos=q.value() * 10**9)
        total[name] = total.get(name, ZERO) + (rounded if sign > 0 else -rounded)

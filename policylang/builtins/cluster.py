"""Builtins that read Kubernetes objects and the cluster state: a pod's requests, selectors and
tolerations, the look-ups of nodes, pods, workloads and images, storage objects, and DRA's claims,
classes and allocations.

The few that make a model object import api.model where they run: `policylang check` imports
this module for the builtins' signatures alone, and building the model's classes is most of
what it would otherwise import."""

from __future__ import annotations

import attrs

from ..api.requests import NON_ZERO_DEFAULTS, counting_of_key, is_extended_resource_name, pod_requests
from ..api.selectors import (label_selector_error, node_selector_matches, requirement_error,
                                 selector_matches, term_matches, tolerates)
from ..types import BOOL, INT, QUANTITY, STRING, anon_record, list_of, map_of, record
from .declare import EvalError, builtin

# ---- pods, nodes and selectors ------------------------------------------------------

RESOURCES = map_of(STRING, QUANTITY)


@builtin("requests", [record("Pod")], RESOURCES,
         "The pod's effective requests from its spec: containers, init containers and sidecars, pod-level "
         "resources, overhead (NodeResourcesFit's PreFilter: a pod being scheduled).")
def _requests(pod):
    return pod_requests(pod)


@builtin("counted_requests", [record("Pod")], RESOURCES,
         "The pod's requests as the target's kube-scheduler counts a pod on a node (and BalancedAllocation the "
         "pod it scores): requests(pod), but for a pod being resized in place the larger of its spec's, applied "
         "(status.containerStatuses[].resources) and allocated requests, or of the last two if the resize is "
         "infeasible.", counting=True)
def _counted_requests(pod, counting):
    return pod_requests(pod, counting=counting_of_key(counting))


@builtin("container_requests", [record("Pod"), BOOL], RESOURCES,
         "The requests of the pod's containers and overhead, ignoring pod-level resources; with nonzero=true "
         "a container without a cpu or memory request counts 100m / 200Mi (NodeResourcesFit's scoring).")
def _container_requests(pod, nonzero):
    return pod_requests(pod, NON_ZERO_DEFAULTS if nonzero else None, pod_level=False)


@builtin("requested", [record("Node")], RESOURCES,
         "The sum of counted_requests(p) over the pods on the node (NodeInfo.Requested).", reads="pods", counting=True)
def _requested(state, node, counting):
    return {} if node is None else state.requested_as(counting_of_key(counting)).get(node.metadata.name, {})


@builtin("nonzero_requested", [record("Node")], RESOURCES,
         "The sum over the pods on the node of their counted requests, a container without a cpu or memory request "
         "counting 100m cpu and 200Mi memory (unless pod-level requests state it): the node's non-zero requested "
         "total.", reads="pods", counting=True)
def _nonzero_requested(state, node, counting):
    return {} if node is None else state.nonzero_requested_as(counting_of_key(counting)).get(node.metadata.name, {})


def is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


@builtin("is_extended_resource", [STRING], BOOL,
         "Whether a resource name is an extended resource (example.com/foo): not native, not kubernetes.io/, "
         "not requests.*, and \"requests.\" + name a valid qualified name.")
def is_extended_resource(name):
    return is_extended_resource_name(name)


@builtin("is_scalar_resource", [STRING], BOOL,
         "Whether kube-scheduler tracks the resource as a scalar: extended, hugepages-*, kubernetes.io/* "
         "or attachable-volumes-*.")
def _is_scalar_resource(name):
    return (is_extended_resource(name) or name.startswith("hugepages-") or is_prefixed_native(name)
            or name.startswith("attachable-volumes-"))


@builtin("pods_matching", [STRING, record("LabelSelector")], list_of(record("Pod")),
         "The pods bound to nodes in a namespace that a label selector selects, from an index (a lister's "
         "Pods(namespace).List(selector)); a null namespace means every namespace (in name order), a null "
         "selector selects none.", reads="cluster")
def _pods_matching(state, namespace, selector):
    return state.pods_matching(namespace, selector)


@builtin("node_named", [STRING], record("Node"), "The Node with this name, or null.", reads="cluster", vector="node_named")
def _node_named(state, name):
    return state.nodes.get(name)


@builtin("has_image", [record("Node"), STRING], BOOL,
         "Whether the node holds an image known by this name (one of its status.images[].names).",
         reads="node", vector="has_image")
def _has_image(state, node, name):
    return node is not None and any(name in image.names for image in node.status.images)


@builtin("workload", [STRING, STRING, STRING], record("Workload"),
         "The workload (ReplicaSet, StatefulSet, ReplicationController) of this kind, namespace and name, "
         "or null: the scheduler's listers' Get.", reads="cluster")
def _workload(state, kind, namespace, name):
    return state.workload(kind, namespace, name)


@builtin("nodes_with_image", [STRING], list_of(record("Node")),
         "The Nodes holding an image known by this name (one of status.images[].names), in the order they "
         "reached the cluster (the dump's; the first gave the cache the image's size): "
         "the scheduler snapshot's image states.", reads="cluster")
def _nodes_with_image(state, name):
    return state.nodes_with_image(name)


@builtin("count_on_node", [record("Node"), STRING, record("LabelSelector")], INT,
         "How many pods bound to the node in a namespace a label selector selects, terminating pods "
         "(deletionTimestamp set) left out, as PodTopologySpread counts them (countPodsMatchSelector); a null "
         "namespace means every namespace, a null selector selects none. It changes only with the pods on the "
         "node, so an executor keeps it per node until they change.", reads="pods", vector="count_on_node")
def _count_on_node(state, node, namespace, selector):
    return 0 if node is None else state.count_matching(namespace, selector).get(node.metadata.name, 0)


@builtin("count_by_domain", [STRING, record("LabelSelector"), STRING, list_of(STRING)], map_of(STRING, INT),
         "Value of node label `key` (\"\" for a node without it) → how many pods count_on_node(node, "
         "namespace, selector) counts on the nodes that have every label of `keys`; every such node's value is present, "
         "0 when none is counted there. Kept up to date as pods are bound or removed.", reads="cluster")
def _count_by_domain(state, namespace, selector, key, keys):
    return state.count_by_domain(namespace, selector, key, keys)


@builtin("count_by_domain_on", [STRING, record("LabelSelector"), STRING, list_of(record("Node"))],
         map_of(STRING, INT),
         "As count_by_domain, over the given nodes: value of node label `key` (\"\" for a node without it) → "
         "how many pods count_on_node(node, namespace, selector) counts on those of the nodes that have it; every "
         "node's value is present.", reads="cluster")
def _count_by_domain_on(state, namespace, selector, key, nodes):
    return state.count_by_domain_on(namespace, selector, key, nodes or [])


@builtin("domains_of", [STRING, list_of(record("Node"))], list_of(STRING),
         "The values of node label `key` the nodes have (\"\" for a node without it), each once, in the "
         "order the nodes first have them.", reads="cluster")
def _domains_of(state, key, nodes):
    return state.domains_of(key, nodes or [])


PLACED_TERM = anon_record([
    ("selector", record("LabelSelector")), ("namespaces", list_of(STRING)),
    ("namespaceSelector", record("LabelSelector")), ("ownNamespace", STRING), ("topologyKey", STRING),
    ("weight", INT),
    ("nodes", list_of(record("Node")))])


@builtin("placed_terms_for", [STRING, map_of(STRING, STRING)], list_of(PLACED_TERM),
         "The pod affinity terms of one kind (requiredAffinity, requiredAntiAffinity, preferredAffinity, "
         "preferredAntiAffinity) of the bound pods, as the scheduler's cache parses them, one per distinct "
         "term and namespace of its pods: {selector, namespaces, namespaceSelector, ownNamespace, topologyKey, "
         "weight, nodes}, but only the terms "
         "whose label selector may select a pod with these labels: those whose matchLabels and one-value In "
         "requirements the labels all satisfy (the others select no such pod). namespaces are those the term "
         "lists, ownNamespace its pods' namespace; weight is 0 for required "
         "terms; nodes holds the node of each pod with the term (once per term it holds). A pod's list with a "
         "term whose selectors do not parse is left out whole. In the state's order; an index, not a match: "
         "the selectors are still to be checked. Kept up to date as pods are bound or removed.",
         reads="cluster")
def _placed_terms_for(state, kind, labels):
    # Imported here: cluster.state's indexes import numpy, which `policylang check` never needs.
    from ..cluster.state import PLACED_TERM_KINDS

    if kind not in PLACED_TERM_KINDS:
        raise EvalError(f"placed_terms_for: unknown kind {kind!r} (one of {', '.join(PLACED_TERM_KINDS)})")
    return state.placed_terms_for(kind, labels)


@builtin("namespace_labels", [STRING], map_of(STRING, STRING), "The labels of the named Namespace object.",
         reads="cluster")
def _namespace_labels(state, name):
    return state.namespace_labels(name)


@builtin("taint", [STRING, STRING, STRING], record("Taint"), "A taint with this key, value and effect.")
def _taint(key, value, effect):
    from ..api import model
    return model.Taint(key=key, value=value, effect=effect)


@builtin("tolerates", [record("Toleration"), record("Taint")], BOOL,
         "Whether the toleration tolerates the taint (the API's Toleration.ToleratesTaint; Lt and Gt "
         "tolerate nothing, as without the TaintTolerationComparisonOperators gate).")
def _tolerates(tol, taint):
    return tolerates(tol, taint)


@builtin("tolerates_taint", [record("Toleration"), record("Taint"), BOOL], BOOL,
         "Toleration.ToleratesTaint as v1.35 has it: with the third argument (the "
         "TaintTolerationComparisonOperators gate) true, Lt and Gt compare the taint's value with the "
         "toleration's as decimal integers.")
def _tolerates_taint(tol, taint, comparison_operators):
    return tolerates(tol, taint, comparison_operators)


builtin("selector_matches", [record("LabelSelector"), map_of(STRING, STRING)], BOOL,
        "Whether labels satisfy a LabelSelector. A null selector matches nothing; an empty one everything.")(
    selector_matches)


@builtin("label_selector", [map_of(STRING, STRING)], record("LabelSelector"),
         "A LabelSelector requiring exactly these labels (labels.SelectorFromSet); an empty map gives the "
         "empty selector, which matches everything.")
def _label_selector(labels):
    from ..api import model
    return model.LabelSelector(match_labels=dict(labels or {}))


@builtin("selector_and", [record("LabelSelector"), record("LabelSelector")], record("LabelSelector"),
         "A LabelSelector requiring every requirement of both selectors (selector.Add). A null selector "
         "matches nothing, so the result is null when either one is null.")
def _selector_and(a, b):
    from ..api import model
    if a is None or b is None:
        return None
    extra = tuple(model.LabelSelectorRequirement(key=k, operator="In", values=(v,))
                  for k, v in b.match_labels.items())
    return model.LabelSelector(match_labels=dict(a.match_labels),
                               match_expressions=tuple(a.match_expressions) + extra + tuple(b.match_expressions))


builtin("label_selector_error", [record("LabelSelector")], STRING,
        "Why metav1.LabelSelectorAsSelector rejects the selector (its error text), or null when it parses. "
        "A null selector parses (it matches nothing). matchLabels are checked in key order.")(label_selector_error)


builtin("node_selector_term_matches", [record("NodeSelectorTerm"), record("Node")], BOOL,
        "Whether a node satisfies one NodeSelectorTerm; a term with no requirements matches nothing.")(term_matches)


builtin("node_selector_matches", [record("NodeSelector"), record("Node")], BOOL,
        "Whether a node satisfies a NodeSelector: any of its terms.")(node_selector_matches)


# ---- storage: look-ups the scheduler's listers and caches answer ---------------------

@builtin("claim", [STRING, STRING], record("PersistentVolumeClaim"),
         "The PersistentVolumeClaim with this namespace and name, or null (the claim lister's Get).",
         reads="cluster")
def _claim(state, namespace, name):
    return state.claims.get((namespace, name))


@builtin("persistent_volume", [STRING], record("PersistentVolume"),
         "The PersistentVolume with this name, or null.", reads="cluster")
def _persistent_volume(state, name):
    return state.persistent_volumes.get(name)


@builtin("storage_class", [STRING], record("StorageClass"), "The StorageClass with this name, or null.",
         reads="cluster")
def _storage_class(state, name):
    return state.storage_classes.get(name)


@builtin("csi_node", [STRING], record("CSINode"), "The CSINode of the node with this name, or null.",
         reads="cluster")
def _csi_node(state, name):
    return state.csi_nodes.get(name)


@builtin("csi_driver", [STRING], record("CSIDriver"), "The CSIDriver with this name, or null.", reads="cluster")
def _csi_driver(state, name):
    return state.csi_drivers.get(name)


@builtin("persistent_volumes_of_class", [STRING], list_of(record("PersistentVolume")),
         "The PersistentVolumes of a storage class (the volume.beta.kubernetes.io/storage-class annotation, "
         "else spec.storageClassName), in name order: the PV assume cache's ListPVs.", reads="cluster")
def _persistent_volumes_of_class(state, class_name):
    return state.persistent_volumes_of_class(class_name or "")


@builtin("volume_attachments_on", [STRING], list_of(record("VolumeAttachment")),
         "The VolumeAttachments whose spec.nodeName is this node.", reads="cluster")
def _volume_attachments_on(state, node_name):
    return state.volume_attachments_on(node_name)


@builtin("claim_in_use", [STRING, STRING], BOOL,
         "Whether a pod bound to a node mounts the claim through a persistentVolumeClaim volume "
         "(the scheduler cache's StorageInfos().IsPVCUsedByPods).", reads="cluster")
def _claim_in_use(state, namespace, name):
    return (namespace, name) in state.claim_users


@builtin("volume_node_affinity_matches", [record("PersistentVolume"), record("Node")], BOOL,
         "volume.CheckNodeAffinity: whether the node's labels satisfy the PersistentVolume's required node "
         "affinity (none: yes). Only labels are looked at, so matchFields requirements are ignored.")
def _volume_node_affinity_matches(pv, node):
    from ..api import model
    if pv is None or pv.spec.node_affinity is None or pv.spec.node_affinity.required is None:
        return True
    labels_only = model.Node(metadata=model.ObjectMeta(labels=dict(node.metadata.labels) if node else {}))
    return node_selector_matches(pv.spec.node_affinity.required, labels_only)


# csi-translation-lib plugins/in_tree_volume.go: the zone and region label keys.
_GA_ZONE, _GA_REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
_BETA_ZONE, _BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"


@builtin("csi_translated_topology", [record("PersistentVolume"), STRING], record("PersistentVolume"),
         "csi-translation-lib's translateTopologyFromInTreeToCSI: the in-tree PersistentVolume with its node "
         "affinity on the zone label (GA, else beta; else the volume's zone label) moved to the CSI driver's "
         "topology key, or, with no zone in its affinity, a `key In zones` requirement from its zone label "
         "added to every term; the beta region key becomes the GA one. An empty zone label is an error.")
def _csi_translated_topology(pv, key):
    from ..api import model
    if pv is None:
        return None
    affinity = pv.spec.node_affinity
    terms = affinity.required.node_selector_terms if affinity and affinity.required else ()

    def has(k):
        return any(r.key == k for t in terms for r in t.match_expressions)

    def values(k):     # getTopologyValues
        return {v for t in terms for r in t.match_expressions if r.key == k for v in r.values}

    def renamed(old, new):
        return tuple(attrs.evolve(t, match_expressions=tuple(attrs.evolve(r, key=new) if r.key == old else r
                                                             for r in t.match_expressions)) for t in terms)
    labels = pv.metadata.labels
    # getTopologyLabel: the affinity's GA zone key, its beta one, the volume's GA zone label, its beta one.
    beta = not has(_GA_ZONE) and (has(_BETA_ZONE) or (_GA_ZONE not in labels and _BETA_ZONE in labels))
    zone, region = (_BETA_ZONE, _BETA_REGION) if beta else (_GA_ZONE, _GA_REGION)
    if values(zone):
        terms = renamed(zone, key)
    elif zone in labels:
        zones = sorted({z.strip() for z in labels[zone].split("__") if z.strip()})
        if not zones:
            raise EvalError("failed to translate topology: there are no valid zones to add to pv")
        requirement = model.NodeSelectorRequirement(key=key, operator="In", values=tuple(zones))
        terms = tuple(attrs.evolve(t, match_expressions=(*t.match_expressions, requirement))
                      for t in terms or (model.NodeSelectorTerm(),))
    if region == _BETA_REGION and values(_BETA_REGION):
        terms = renamed(_BETA_REGION, _GA_REGION)
    if not terms:
        return pv
    required = attrs.evolve(affinity.required, node_selector_terms=terms) if affinity and affinity.required \
        else model.NodeSelector(node_selector_terms=terms)
    return attrs.evolve(pv, spec=attrs.evolve(pv.spec, node_affinity=model.VolumeNodeAffinity(required=required)))


@builtin("topology_terms_match", [list_of(record("TopologySelectorTerm")), map_of(STRING, STRING)], BOOL,
         "v1helper.MatchTopologySelectorTerms (a StorageClass's allowedTopologies): no terms match everything; "
         "a term matches when it has expressions, each a valid `key In values` requirement the labels satisfy.")
def _topology_terms_match(terms, labels):
    if not terms:
        return True
    labels = labels or {}
    for term in terms:
        exprs = term.match_label_expressions
        if not exprs:
            continue
        if any(requirement_error(e.key, "In", e.values) for e in exprs):
            continue
        if all(e.key in labels and labels[e.key] in e.values for e in exprs):
            return True
    return False


_CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"


@builtin("csi_attach_limit_key", [STRING], STRING,
         "volumeutil.GetCSIAttachLimitKey: the resource name of a CSI driver's attach limit, "
         "attachable-volumes-csi-<driver>, hashed (sha1) when longer than 63 characters.")
def _csi_attach_limit_key(driver):
    import hashlib

    driver = driver or ""
    if len(_CSI_ATTACH_LIMIT_PREFIX) + len(driver) > 63:
        hashed = hashlib.sha1(driver.encode()).hexdigest()
        return _CSI_ATTACH_LIMIT_PREFIX + hashed[:63 - len(_CSI_ATTACH_LIMIT_PREFIX)]
    return _CSI_ATTACH_LIMIT_PREFIX + driver


# ---- dynamic resources: the DRA manager's look-ups and the structured allocator --------

@builtin("resource_claim", [STRING, STRING], record("ResourceClaim"),
         "The ResourceClaim (resource.k8s.io/v1) with this namespace and name, or null (also for a null "
         "name): the claim assume cache's Get, so claims simulate has allocated read as allocated.",
         reads="cluster")
def _resource_claim(state, namespace, name):
    return None if name is None else state.resource_claims.get((namespace, name))


@builtin("device_class", [STRING], record("DeviceClass"), "The DeviceClass with this name, or null.",
         reads="cluster")
def _device_class(state, name):
    return state.device_classes.get(name)


@builtin("is_dra_extended_resource", [STRING], BOOL,
         "schedutil.IsDRAExtendedResourceName: an extended resource name, or a DeviceClass's implicit one "
         "(deviceclass.resource.kubernetes.io/<class>).")
def _is_dra_extended_resource(name):
    from ..dra.extended import is_dra_extended_resource_name
    return name is not None and is_dra_extended_resource_name(name)


@builtin("extended_resource_class", [STRING], record("DeviceClass"),
         "The DeviceClass that serves an extended resource through DRA (the DRA manager's ExtendedResourceCache, "
         "DeviceClassResolver.GetDeviceClass): the class whose spec.extendedResourceName it is (of two, the one "
         "created last), or the class <c> of deviceclass.resource.kubernetes.io/<c>; null for none.",
         reads="cluster")
def _extended_resource_class(state, name):
    from ..dra.extended import resource_classes
    return None if name is None else resource_classes(state.device_classes).get(name)


@builtin("extended_resource_claim_of", [record("Pod")], record("ResourceClaim"),
         "findExtendedResourceClaim: the ResourceClaim an earlier scheduling cycle created for the pod's extended "
         "resources (annotated resource.kubernetes.io/extended-resource-claim: \"true\", the pod its controller), "
         "or null.", reads="cluster")
def _extended_resource_claim_of(state, pod):
    from ..dra.extended import claim_of_pod
    return claim_of_pod(pod, [state.resource_claims[k] for k in sorted(state.resource_claims)])


@builtin("extended_resource_claim", [record("Pod"), list_of(STRING), record("ResourceClaim")],
         record("ResourceClaim"),
         "DynamicResources' claim for the pod's extended resources on one node (filterExtendedResources): the claim "
         "given (the pod's from an earlier cycle), or a new one in memory named <extended-resources>, with one "
         "ExactCount request of the resource's class per container asking for each of the resources named (the ones "
         "the node serves through DRA; init containers share), as createRequestsAndMappings makes them.",
         reads="cluster")
def _extended_resource_claim(state, pod, names, base):
    from ..dra.extended import node_claim, resource_classes
    return node_claim(pod, names or [], resource_classes(state.device_classes), base)


@builtin("extended_resource_devices", [record("Node"), STRING], anon_record([("capacity", INT), ("allocated", INT)]),
         "NodeResourcesFit's view of an extended resource DRA serves on a node (resource_allocation.go "
         "calculateDRAExtendedResourceAllocatableRequest): {capacity, allocated}, the devices of the resource's "
         "class in every ResourceSlice the node reaches, and those of them allocated; {0, 0} when no class serves "
         "it, or a class selector fails.", reads="cluster")
def _extended_resource_devices(state, node, name):
    from ..dra.extended import Totals, device_totals, resource_classes
    cls = None if name is None or node is None else resource_classes(state.device_classes).get(name)
    totals = Totals(0, 0) if cls is None else device_totals(node, cls, state.resource_slices, state.allocated_devices())
    return {"capacity": totals.capacity, "allocated": totals.allocated}


ALLOCATION = anon_record([("results", list_of(record("AllocationResult"))), ("failure", STRING)])


@builtin("allocate_claims", [record("Node"), list_of(record("ResourceClaim")), STRING], ALLOCATION,
         "The structured-parameters allocator (policylang/dra/structured.py, structured.Allocator's Allocate) "
         "of Kubernetes version (\"1.34\" to \"1.37\": kubernetes.version) "
         "for these claims together on the node, with the ResourceSlices the node can reach, the device "
         "classes and the devices other claims hold: {results, failure}. results: one AllocationResult per "
         "claim, in order, or null when they cannot all be allocated there; failure: upstream's text when the "
         "allocation failed on this node (invalid resource pools), else null. An error of a claim or a class "
         "(a CEL runtime error) is an error of the policy.", reads="cluster")
def _allocate_claims(state, node, claims, version):
    from ..dra.structured import FEATURES, AllocationError, FailedAllocationOnNode
    if version not in FEATURES:
        raise EvalError(f"allocate_claims: no allocator of Kubernetes {version!r} (one of {', '.join(FEATURES)})")
    try:
        results = state.allocate_claims(node, claims or [], version)
    except FailedAllocationOnNode as err:
        return {"results": None, "failure": str(err)}
    except AllocationError as err:
        raise EvalError(str(err)) from None
    return {"results": None if results is None else list(results), "failure": None}

"""Extended resources backed by DRA (the DRAExtendedResource gate, beta and on from v1.36, GA in
v1.37): a pod that asks for ``nvidia.com/gpu: 2`` gets two devices of the DeviceClass whose
``spec.extendedResourceName`` is ``nvidia.com/gpu`` (or, for any class, of the implicit name
``deviceclass.resource.kubernetes.io/<class>``) on a node that does not list the resource in its
allocatable. The DynamicResources plugin allocates them through a claim of its own, one per pod,
made in memory at PreFilter, given requests per node at Filter, and created in the API at PreBind.

What is here is what the policies cannot say: which class serves a resource name (the
DRA manager's ExtendedResourceCache), the special claim's requests (one per container and
resource, init containers sharing), the claim a pod was given in an earlier cycle, and the claim
PreBind creates. Decisions are in stdlib_policies/dynamic_resources.sched and
node_resources_fit.sched.

Upstream: k8s.io/dynamic-resource-allocation deviceclass/extendedresourcecache/
extendedresourcecache.go; pkg/scheduler/framework/plugins/dynamicresources/
extendeddynamicresources.go (v1.35.4 to v1.37.2 alike); pkg/scheduler/util/utils.go
(IsDRAExtendedResourceName).
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Mapping, Sequence

import attrs

from ..api import model
from ..api.requests import is_extended_resource_name
from ..frozen import frozen

# resourceapi.ResourceDeviceClassPrefix: the implicit extended resource name of every class.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# resourceapi.ExtendedResourceClaimAnnotation: marks the claim the scheduler made for a pod.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# specialClaimInMemName: the claim's name until PreBind creates it (not a valid object name).
IN_MEMORY_NAME = "<extended-resources>"
# k8s.io/apimachinery/pkg/util/rand's alphabet and names.SimpleNameGenerator's limit on the base
# (63 characters less the five random ones).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATED_BASE = 58


def is_dra_extended_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource name, or a class's implicit one
    (which, being under kubernetes.io/, is not an extended resource name)."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


# ---- the DRA manager's ExtendedResourceCache ------------------------------------------------

def resource_classes(classes: Mapping[str, model.DeviceClass]) -> dict[str, model.DeviceClass]:
    """The extended resource name -> DeviceClass map the cache holds once the informer has added
    every class, in the order the API server lists them (by name). For each class in turn
    (updateResourceName2class): when another class already holds its extendedResourceName and was
    created later (or at the same second with a smaller name), the class is left out altogether,
    its implicit name too; otherwise it takes its explicit name and its implicit one. So of two
    classes naming the same resource the newest serves it (the smaller name of two as new), and an
    older one added after it serves neither name (one added before keeps its implicit name)."""
    key = tuple((name, id(cls)) for name, cls in sorted(classes.items()))
    kept = _KEPT.get(key)
    if kept is None:
        if len(_KEPT) >= 16:
            _KEPT.clear()
        # The value holds the classes, so the ids of the key stay theirs while it is kept.
        kept = _KEPT[key] = _resource_classes(sorted(classes.items()))
    return kept


_KEPT: dict[tuple, dict] = {}


def _resource_classes(items) -> dict[str, model.DeviceClass]:
    mapping: dict[str, model.DeviceClass] = {}
    for name, cls in items:
        explicit = cls.spec.extended_resource_name
        holder = mapping.get(explicit) if explicit is not None else None
        if holder is not None:
            mine, theirs = _created(cls), _created(holder)
            if mine < theirs or (mine == theirs and name >= holder.metadata.name):
                continue
        if explicit is not None:
            mapping[explicit] = cls
        mapping[DEVICE_CLASS_PREFIX + name] = cls
    return mapping


def _created(cls: model.DeviceClass) -> datetime.datetime:
    """creationTimestamp as the cache compares it (UnixNano); none is Go's zero time, the oldest."""
    text = cls.metadata.creation_timestamp
    if not text:
        return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---- the pod's claim ------------------------------------------------------------------------

def claim_of_pod(pod: model.Pod, claims: Sequence[model.ResourceClaim]) -> "model.ResourceClaim | None":
    """findExtendedResourceClaim: the claim an earlier cycle made for the pod (the annotation
    "true" and the pod, by name and uid, its controller), or None."""
    for claim in claims:
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for ref in claim.metadata.owner_references:
            if ref.name == pod.metadata.name and ref.controller and ref.uid == pod.metadata.uid:
                return claim
    return None


@frozen
class RequestMapping:
    """v1.ContainerExtendedResourceRequest: which request of the claim serves a container's
    resource."""
    container_name: str
    resource_name: str
    request_name: str


def requests_and_mappings(pod: model.Pod, resources: Sequence[str],
                          resolve: Mapping[str, model.DeviceClass]
                          ) -> tuple[tuple[model.DeviceRequest, ...], tuple[RequestMapping, ...]]:
    """createRequestsAndMappings: for each resource (in name order) of those the node must serve
    through DRA, one ExactCount request per long-lived container asking for it (regular containers
    and sidecars: ``container-<i>-request-<j>``, i its index among init containers then containers,
    j the resource's index among the container's sorted request names), and for the short-lived
    init containers, which run one at a time, one request, the largest of what each still needs
    after the requests of the long-lived containers that start after it (a tie keeps the first).
    The requests sorted by name; the mappings long-lived first."""
    containers = list(pod.spec.init_containers) + list(pod.spec.containers)
    num_init = len(pod.spec.init_containers)
    long_lived = [i for i, c in enumerate(containers) if not (i < num_init and c.restart_policy != "Always")]
    short_lived = [i for i in range(num_init) if containers[i].restart_policy != "Always"]
    requests: list[model.DeviceRequest] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(resources):
        cls = resolve.get(resource)
        if cls is None:
            continue
        class_name = cls.metadata.name
        per_container: list = [None] * len(containers)
        long_maps: list[RequestMapping] = []
        for i in long_lived:
            req, maps = _container_request(i, containers[i], resource, class_name, ())
            per_container[i] = req
            long_maps += maps
        biggest = None
        short_names: set[str] = set()
        short_maps: list[RequestMapping] = []
        for i in short_lived:
            req, maps = _container_request(i, containers[i], resource, class_name, per_container[i:])
            if req is not None:
                short_names.add(req.name)
                if biggest is None or biggest.exactly.count < req.exactly.count:
                    biggest = req
            short_maps += maps
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest.name)
            short_maps = [RequestMapping(m.container_name, m.resource_name, biggest.name)
                          if m.request_name in short_names else m for m in short_maps]
        if biggest is not None:
            requests.append(biggest)
        requests += [r for r in per_container if r is not None]
        mappings += long_maps + short_maps
    requests.sort(key=lambda r: r.name)
    return tuple(requests), tuple(mappings)


def _container_request(index: int, container: model.Container, resource: str, class_name: str,
                       reusable: Sequence) -> tuple:
    """createResourceRequestAndMappings: the container's request for the resource (None when it
    asks for none, or the reusable requests of later long-lived containers already cover it) and
    its mappings."""
    quantity = container.resources.requests.get(resource)
    if quantity is None:
        return None, ()
    amount = quantity.amount
    if amount.denominator != 1 or amount == 0:    # AsInt64 fails on a fraction; 0 asks for nothing
        return None, ()
    wanted = int(amount)
    covered = 0
    maps = []
    for r in reusable:
        if r is None:
            continue
        covered += r.exactly.count
        maps.append(RequestMapping(container.name, resource, r.name))
        if covered >= wanted:
            return None, tuple(maps)
    position = sorted(container.resources.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = model.DeviceRequest(name=name, exactly=model.ExactDeviceRequest(
        device_class_name=class_name, allocation_mode=model.ALLOCATION_MODE_EXACT_COUNT, count=wanted - covered))
    return request, (*maps, RequestMapping(container.name, resource, name))


def node_claim(pod: model.Pod, resources: Sequence[str], resolve: Mapping[str, model.DeviceClass],
               base: "model.ResourceClaim | None" = None) -> model.ResourceClaim:
    """filterExtendedResources' claim for one node: the pod's special claim (``base``, the one an
    earlier cycle made, or a new one in memory, owned by the pod and annotated) with a request for
    each of ``resources`` (those the node serves through DRA; none when the node serves them all
    through a device plugin and the pod has claims of its own)."""
    requests, _ = requests_and_mappings(pod, resources, resolve)
    claim = base if base is not None else in_memory_claim(pod)
    return _with_requests(claim, requests)


def in_memory_claim(pod: model.Pod) -> model.ResourceClaim:
    """preFilterExtendedResources' new claim: no requests yet, the pod its controller."""
    meta = pod.metadata
    return model.ResourceClaim(metadata=model.ObjectMeta(
        name=IN_MEMORY_NAME, namespace=meta.namespace,
        annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        owner_references=(model.OwnerReference(api_version="v1", kind="Pod", name=meta.name, uid=meta.uid,
                                               controller=True),)))


def _with_requests(claim: model.ResourceClaim, requests) -> model.ResourceClaim:
    devices = attrs.evolve(claim.spec.devices, requests=tuple(requests))
    return attrs.evolve(claim, spec=attrs.evolve(claim.spec, devices=devices))


def generated_name(pod: model.Pod) -> str:
    """The name the API server gives the claim PreBind creates with generateName
    ``<pod>-extended-resources-`` (createExtendedResourceClaimInAPI): the base cut to 58
    characters and five random ones (names.SimpleNameGenerator); here those five come from a
    SHA-256 of the namespace and the generateName, so a simulation names the same claim every time
    (the oracle names it so too, oracle/claims.go nameGenerated)."""
    generate = f"{pod.metadata.name}-extended-resources-"
    digest = hashlib.sha256(f"{pod.metadata.namespace}/{generate}".encode()).digest()
    return generate[:MAX_GENERATED_BASE] + "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in digest[:5])


def created_claim(pod: model.Pod, claim: model.ResourceClaim) -> model.ResourceClaim:
    """The claim as PreBind creates it: named, with a uid (as the API server would give it;
    here derived from its name, as the oracle does), no allocation yet."""
    name = generated_name(pod)
    meta = attrs.evolve(claim.metadata, name=name, uid=f"claim-{pod.metadata.namespace}/{name}")
    return attrs.evolve(claim, metadata=meta, status=model.ResourceClaimStatus())


# ---- NodeResourcesFit's scoring of a resource DRA serves --------------------------------------

@frozen
class Totals:
    """The devices of a class on a node: how many, and how many of them allocated."""
    capacity: int
    allocated: int


def device_totals(node: model.Node, cls: model.DeviceClass, slices: Sequence[model.ResourceSlice],
                  allocated) -> Totals:
    """calculateDRAResourceTotals (noderesources/resource_allocation.go): every device of every
    slice the node reaches (its nodeName, allNodes, a matching nodeSelector; per device with
    perDeviceNodeSelection), of any pool and generation, that the class's selectors accept, and
    those of them in ``allocated`` (structured.DeviceID). A selector that fails to compile or to
    evaluate makes the whole count fail, which the scorer takes as no devices (0, 0)."""
    from .pools import DeviceID, _cel_device, _compiled, _evaluate, node_matches
    capacity = taken = 0
    for s in slices:
        spec = s.spec
        if spec.per_device_node_selection:
            devices = [d for d in spec.devices
                       if d.all_nodes or (d.node_name and d.node_name == node.metadata.name)
                       or (d.node_selector is not None
                           and node_matches(node, d.node_name or "", bool(d.all_nodes), d.node_selector))]
        else:
            name = spec.node_name or ""
            if not spec.all_nodes and name != node.metadata.name and spec.node_selector is not None:
                if not node_matches(node, name, bool(spec.all_nodes), spec.node_selector):
                    continue
            elif not spec.all_nodes and name and name != node.metadata.name:
                continue
            devices = list(spec.devices)
        for device in devices:
            for selector in cls.spec.selectors:
                if selector.cel is None:
                    continue
                compiled = _compiled(selector.cel.expression)
                if not hasattr(compiled, "matches"):
                    return Totals(0, 0)
                verdict = _evaluate(compiled, _cel_device(spec.driver, device))
                if isinstance(verdict, str):
                    return Totals(0, 0)
                if not verdict:
                    break
            else:
                capacity += 1
                taken += DeviceID(spec.driver, spec.pool.name, device.name) in allocated
    return Totals(capacity, taken)

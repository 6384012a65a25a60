"""Redacting a dump for a bug report (`policylang snapshot --redact`): every field of every kind
the loader reads is kept, hashed or dropped as ``TABLE`` says (one row per model class, one entry
per field, in the API's spelling), so that the dump can be shared while every scheduling
decision on it stays the same, up to the renaming.

- keep: what decisions are made of and what identifies no one: enums, numbers, quantities,
  timestamps, label, taint and topology keys, resource names, CSI and DRA driver names (a
  CSIDriver is named as its driver; DRA's CEL selectors compare ``device.driver`` with a
  literal), device attributes and CEL selectors (an expression does more than compare for
  equality, so neither is rewritten), scheduler names (profiles are chosen by them).
- hash: names, namespaces, UIDs, label values, node names wherever they appear, taint and
  toleration values, container, port, volume and scheduling-gate names, DRA request, device,
  pool and counter-set names, disk and volume identifiers, host IPs, images.
- drop: annotations (but the few the scheduler reads, ``ANNOTATIONS_READ``), StorageClass
  parameters, mount options, CSI volume attributes, DRA drivers' opaque configuration, a
  device's status data and network data, condition messages: nothing the scheduler reads.

Decisions compare hashed strings for equality (a selector and a label, a pod's nodeName and a
node, a hostname label and a node's name, a taint's value and a toleration's) and, for ties, for
order (the smallest node name wins). So one mapping serves every place a string can appear, and
it keeps order: the distinct strings are sorted and the k-th becomes ``n<k>`` (zero-padded). A
string that is a whole integer is kept, everywhere: node affinity's Gt and Lt compare label
values as numbers. Strings the scheduler takes apart are renamed part by part: a label value
listing zones (``a__b``: VolumeZone splits it), the values of the zone and region labels (GCE PD
translation reads a region off ``{locale}-{region}-{zone}``; their parts become ``z<k>``), a
generic ephemeral volume's claim (``<pod>-<volume>``), a DRA request reference
(``request/subrequest``), an AWS EBS volume ID (``aws://<zone>/vol-…``). Images become hashes of
their repository and their tag or digest, after the :latest a tagless image is pulled as
(ImageLocality matches ``nginx`` and ``nginx:latest``).

The input is `dump.dump_state`'s document (only the fields the model has), not an arbitrary
object. A field ``TABLE`` does not classify is an error; tests/test_redact.py checks that the
table classifies every field of the model, and that no marker planted in a field it hashes or
drops is left.
"""

from __future__ import annotations

import functools
import hashlib
import re
import typing
from typing import Any, Callable

# ---- the rules -------------------------------------------------------------------------------

KEEP = "keep"           # as it is
HASH = "hash"           # a string or a list of strings, renamed
DROP = "drop"           # left out
LABELS = "labels"       # a map: keys kept, values renamed
HASH_KEYS = "hash-keys"  # a map: keys renamed, values kept (a PDB's disruptedPods: pod → time)
IMAGE = "image"         # image references, hashed by repository and tag or digest
REQUEST = "request"     # DRA request references: "request" or "request/subrequest", each part renamed
HOST_IP = "host-ip"     # renamed, but for the unspecified addresses NodePorts compares with
EBS_VOLUME = "ebs-volume-id"   # "vol-…" or "aws://<zone>/vol-…", renamed keeping the form the scheduler parses
ANNOTATIONS = "annotations"    # dropped, but for the keys of ANNOTATIONS_READ, each with its rule
HASHED = frozenset({HASH, LABELS, HASH_KEYS, IMAGE, REQUEST, HOST_IP, EBS_VOLUME})


class Into:
    """A field holding objects of a model class (one, a list, or a map with kept keys), redacted
    by that class's row of the table, with these entries overridden."""

    def __init__(self, **overrides: str):
        self.overrides = overrides

    def __repr__(self) -> str:
        return f"Into({self.overrides or ''})"


INTO = Into()

# The annotations the scheduler reads (stdlib_policies/volume_*.sched, cluster/indexes/storage.py,
# forecast/whatif.py); every other annotation is dropped.
ANNOTATIONS_READ = {
    "pv.kubernetes.io/bind-completed": KEEP,
    "pv.kubernetes.io/bound-by-controller": KEEP,
    "storage.alpha.kubernetes.io/migrated-plugins": KEEP,     # in-tree plugin names
    "volume.beta.kubernetes.io/storage-class": HASH,          # a StorageClass's name
    "volume.kubernetes.io/selected-node": HASH,               # a node's name
    "kubernetes.io/config.mirror": HASH,                      # a static pod's hash; its presence matters
    "resource.kubernetes.io/pod-claim-name": HASH,            # a pod's claim name
}

# Values of these labels are zones and regions: their parts are renamed (z<k>), so that a GCE
# zone's region stays the same one (csi-translation-lib splits {locale}-{region}-{zone}).
ZONE_LABELS = frozenset({"topology.kubernetes.io/zone", "topology.kubernetes.io/region",
                         "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"})

_DISK = dict(fsType=KEEP, readOnly=KEEP)   # what every in-tree volume source has

TABLE: dict[str, dict[str, "str | Into"]] = {
    # ---- meta.py
    "ObjectMeta": dict(name=HASH, namespace=HASH, uid=HASH, labels=LABELS, annotations=ANNOTATIONS,
                       ownerReferences=INTO, creationTimestamp=KEEP, deletionTimestamp=KEEP),
    "OwnerReference": dict(kind=KEEP, name=HASH, apiVersion=KEEP, uid=HASH, controller=KEEP),
    "LabelSelector": dict(matchLabels=LABELS, matchExpressions=INTO),
    "LabelSelectorRequirement": dict(key=KEEP, operator=KEEP, values=HASH),
    "NodeSelector": dict(nodeSelectorTerms=INTO),
    "NodeSelectorTerm": dict(matchExpressions=INTO, matchFields=INTO),
    # values: label values, or (matchFields on metadata.name) node names: hashed alike
    "NodeSelectorRequirement": dict(key=KEEP, operator=KEEP, values=HASH),
    # ---- nodes.py
    "Node": dict(kind=KEEP, metadata=INTO, spec=INTO, status=INTO),
    "NodeSpec": dict(unschedulable=KEEP, taints=INTO),
    "Taint": dict(key=KEEP, value=HASH, effect=KEEP, timeAdded=KEEP),
    # Declared features are feature names (NodeDeclaredFeatures matches them against its registry).
    "NodeStatus": dict(capacity=KEEP, allocatable=KEEP, images=INTO, conditions=INTO, declaredFeatures=KEEP),
    "ContainerImage": dict(names=IMAGE, sizeBytes=KEEP),
    "NodeCondition": dict(type=KEEP, status=KEEP),
    # ---- pods.py
    "Pod": dict(kind=KEEP, metadata=INTO, spec=INTO, status=INTO),
    "PodSpec": dict(nodeName=HASH, schedulerName=KEEP, priority=KEEP, priorityClassName=HASH,
                    preemptionPolicy=KEEP, nodeSelector=LABELS, affinity=INTO, tolerations=INTO,
                    topologySpreadConstraints=INTO, containers=INTO, initContainers=INTO, overhead=KEEP,
                    resources=INTO, volumes=INTO, resourceClaims=INTO, hostNetwork=KEEP,
                    schedulingGates=INTO, ephemeralContainers=INTO, hostUsers=KEEP),
    "Toleration": dict(key=KEEP, operator=KEEP, value=HASH, effect=KEEP, tolerationSeconds=KEEP),
    "Affinity": dict(nodeAffinity=INTO, podAffinity=INTO, podAntiAffinity=INTO),
    "NodeAffinity": dict(requiredDuringSchedulingIgnoredDuringExecution=INTO,
                         preferredDuringSchedulingIgnoredDuringExecution=INTO),
    "PreferredSchedulingTerm": dict(weight=KEEP, preference=INTO),
    "PodAffinity": dict(requiredDuringSchedulingIgnoredDuringExecution=INTO,
                        preferredDuringSchedulingIgnoredDuringExecution=INTO),
    "PodAffinityTerm": dict(labelSelector=INTO, namespaces=HASH, topologyKey=KEEP, namespaceSelector=INTO,
                            matchLabelKeys=KEEP, mismatchLabelKeys=KEEP),
    "WeightedPodAffinityTerm": dict(weight=KEEP, podAffinityTerm=INTO),
    "TopologySpreadConstraint": dict(maxSkew=KEEP, topologyKey=KEEP, whenUnsatisfiable=KEEP, labelSelector=INTO,
                                     minDomains=KEEP, nodeAffinityPolicy=KEEP, nodeTaintsPolicy=KEEP,
                                     matchLabelKeys=KEEP),
    "Container": dict(name=HASH, image=IMAGE, resources=INTO, ports=INTO, restartPolicy=KEEP,
                      restartPolicyRules=INTO, volumeMounts=INTO),
    # NodeDeclaredFeatures reads a rule's action and whether a mount has bindMountOptions.
    "ContainerRestartRule": dict(action=KEEP, exitCodes=INTO),
    "ContainerRestartRuleOnExitCodes": dict(operator=KEEP, values=KEEP),
    "VolumeMount": dict(name=HASH, mountPath=DROP, readOnly=KEEP, bindMountOptions=KEEP),
    "ResourceRequirements": dict(requests=KEEP, limits=KEEP),
    "ContainerPort": dict(containerPort=KEEP, hostPort=KEEP, protocol=KEEP, hostIP=HOST_IP, name=HASH),
    "Volume": dict(name=HASH, persistentVolumeClaim=INTO, ephemeral=INTO, gcePersistentDisk=INTO,
                   awsElasticBlockStore=INTO, azureDisk=INTO, cinder=INTO, portworxVolume=INTO, rbd=INTO,
                   iscsi=INTO, csi=INTO, image=INTO),
    # an image volume's reference is an image like a container's: ImageLocality matches them
    "ImageVolumeSource": dict(reference=IMAGE, pullPolicy=KEEP),
    "PersistentVolumeClaimVolumeSource": dict(claimName=HASH, readOnly=KEEP),
    "EphemeralVolumeSource": dict(volumeClaimTemplate=INTO),
    "PersistentVolumeClaimTemplate": dict(metadata=INTO, spec=INTO),
    # Disks and volumes are told apart by these identifiers: VolumeRestrictions and
    # NodeVolumeLimits compare them for equality.
    "GCEPersistentDiskVolumeSource": dict(pdName=HASH, partition=KEEP, **_DISK),
    "AWSElasticBlockStoreVolumeSource": dict(volumeID=EBS_VOLUME, partition=KEEP, **_DISK),
    "AzureDiskVolumeSource": dict(diskName=HASH, diskURI=HASH, kind=KEEP, **_DISK),
    "CinderVolumeSource": dict(volumeID=HASH, **_DISK),
    "PortworxVolumeSource": dict(volumeID=HASH, **_DISK),
    "RBDVolumeSource": dict(monitors=HASH, image=HASH, pool=HASH, **_DISK),
    "ISCSIVolumeSource": dict(targetPortal=HASH, iqn=HASH, lun=KEEP, **_DISK),
    "CSIVolumeSource": dict(driver=KEEP, volumeAttributes=DROP, **_DISK),
    "PersistentVolumeClaimSpec": dict(accessModes=KEEP, selector=INTO, resources=INTO, volumeName=HASH,
                                      storageClassName=HASH, volumeMode=KEEP, volumeAttributesClassName=HASH),
    "VolumeResourceRequirements": dict(requests=KEEP, limits=KEEP),
    "PodResourceClaim": dict(name=HASH, resourceClaimName=HASH, resourceClaimTemplateName=HASH),
    "PodSchedulingGate": dict(name=HASH),
    "PodStatus": dict(phase=KEEP, nominatedNodeName=HASH, startTime=KEEP, conditions=INTO,
                      resourceClaimStatuses=INTO, containerStatuses=INTO, initContainerStatuses=INTO,
                      allocatedResources=KEEP, resources=INTO),
    # A status names its container as the spec does (hashed alike, so they still match).
    "ContainerStatus": dict(name=HASH, allocatedResources=KEEP, resources=INTO),
    "ActuatedResources": dict(requests=KEEP, limits=KEEP),
    "PodCondition": dict(type=KEEP, status=KEEP, reason=KEEP, message=DROP),
    "PodResourceClaimStatus": dict(name=HASH, resourceClaimName=HASH),
    # ---- workloads.py
    "Namespace": dict(kind=KEEP, metadata=INTO),
    "PriorityClass": dict(kind=KEEP, metadata=INTO, value=KEEP, globalDefault=KEEP, preemptionPolicy=KEEP),
    "Service": dict(kind=KEEP, metadata=INTO, spec=INTO),
    "ServiceSpec": dict(selector=LABELS),
    "Workload": dict(kind=KEEP, metadata=INTO, spec=INTO),
    "WorkloadSpec": dict(selector=INTO, replicas=KEEP),
    "PodDisruptionBudget": dict(kind=KEEP, metadata=INTO, spec=INTO, status=INTO),
    "PodDisruptionBudgetSpec": dict(selector=INTO, minAvailable=KEEP, maxUnavailable=KEEP),
    "PodDisruptionBudgetStatus": dict(disruptionsAllowed=KEEP, disruptedPods=HASH_KEYS),
    # ---- storage.py
    "PersistentVolume": dict(kind=KEEP, metadata=INTO, spec=INTO, status=INTO),
    "PersistentVolumeSpec": dict(capacity=KEEP, accessModes=KEEP, claimRef=INTO, persistentVolumeReclaimPolicy=KEEP,
                                 storageClassName=HASH, volumeMode=KEEP, nodeAffinity=INTO,
                                 volumeAttributesClassName=HASH, mountOptions=DROP, csi=INTO,
                                 gcePersistentDisk=INTO, awsElasticBlockStore=INTO, azureDisk=INTO, cinder=INTO,
                                 portworxVolume=INTO, rbd=INTO, iscsi=INTO),
    "ObjectReference": dict(kind=KEEP, namespace=HASH, name=HASH, uid=HASH, apiVersion=KEEP, resourceVersion=KEEP),
    "VolumeNodeAffinity": dict(required=INTO),
    "CSIPersistentVolumeSource": dict(driver=KEEP, volumeHandle=HASH, volumeAttributes=DROP, **_DISK),
    "PersistentVolumeStatus": dict(phase=KEEP),
    "PersistentVolumeClaim": dict(kind=KEEP, metadata=INTO, spec=INTO, status=INTO),
    "PersistentVolumeClaimStatus": dict(phase=KEEP, accessModes=KEEP, capacity=KEEP),
    "StorageClass": dict(kind=KEEP, metadata=INTO, provisioner=KEEP, parameters=DROP, reclaimPolicy=KEEP,
                         volumeBindingMode=KEEP, allowedTopologies=INTO, allowVolumeExpansion=KEEP,
                         mountOptions=DROP),
    "TopologySelectorTerm": dict(matchLabelExpressions=INTO),
    "TopologySelectorLabelRequirement": dict(key=KEEP, values=HASH),
    "CSINode": dict(kind=KEEP, metadata=INTO, spec=INTO),          # named as its node
    "CSINodeSpec": dict(drivers=INTO),
    "CSINodeDriver": dict(name=KEEP, nodeID=HASH, topologyKeys=KEEP, allocatable=INTO),
    "VolumeNodeResources": dict(count=KEEP),
    # named as its driver, which StorageClasses, PersistentVolumes and CSINodes name too
    "CSIDriver": dict(kind=KEEP, metadata=Into(name=KEEP), spec=INTO),
    "CSIDriverSpec": dict(attachRequired=KEEP, podInfoOnMount=KEEP, storageCapacity=KEEP, requiresRepublish=KEEP,
                          fsGroupPolicy=KEEP, seLinuxMount=KEEP, volumeLifecycleModes=KEEP,
                          preventPodSchedulingIfMissing=KEEP),
    "CSIStorageCapacity": dict(kind=KEEP, metadata=INTO, nodeTopology=INTO, storageClassName=HASH, capacity=KEEP,
                               maximumVolumeSize=KEEP),
    "VolumeAttachment": dict(kind=KEEP, metadata=INTO, spec=INTO, status=INTO),
    "VolumeAttachmentSpec": dict(attacher=KEEP, source=INTO, nodeName=HASH),
    "VolumeAttachmentSource": dict(persistentVolumeName=HASH, inlineVolumeSpec=INTO),
    "VolumeAttachmentStatus": dict(attached=KEEP),
    # ---- resource.py
    "CELDeviceSelector": dict(expression=KEEP),
    "DeviceSelector": dict(cel=INTO),
    "OpaqueDeviceConfiguration": dict(driver=KEEP, parameters=DROP),
    "DeviceClassConfiguration": dict(opaque=INTO),
    "DeviceToleration": dict(key=KEEP, operator=KEEP, value=HASH, effect=KEEP, tolerationSeconds=KEEP),
    "DeviceClassSpec": dict(selectors=INTO, config=INTO, extendedResourceName=KEEP),
    "DeviceClass": dict(kind=KEEP, metadata=INTO, spec=INTO),
    "CapacityRequirements": dict(requests=KEEP),
    "ExactDeviceRequest": dict(deviceClassName=HASH, selectors=INTO, allocationMode=KEEP, count=KEEP,
                               adminAccess=KEEP, tolerations=INTO, capacity=INTO),
    "DeviceSubRequest": dict(name=HASH, deviceClassName=HASH, selectors=INTO, allocationMode=KEEP, count=KEEP,
                             tolerations=INTO, capacity=INTO),
    "DeviceRequest": dict(name=HASH, exactly=INTO, firstAvailable=INTO),
    "DeviceConstraint": dict(requests=REQUEST, matchAttribute=KEEP, distinctAttribute=KEEP),
    "DeviceClaimConfiguration": dict(requests=REQUEST, opaque=INTO),
    "DeviceClaim": dict(requests=INTO, constraints=INTO, config=INTO),
    "ResourceClaimSpec": dict(devices=INTO),
    "DeviceRequestAllocationResult": dict(request=REQUEST, driver=KEEP, pool=HASH, device=HASH, adminAccess=KEEP,
                                          tolerations=INTO, bindingConditions=KEEP, bindingFailureConditions=KEEP,
                                          shareID=HASH, consumedCapacity=KEEP),
    "DeviceAllocationConfiguration": dict(source=KEEP, requests=REQUEST, opaque=INTO),
    "DeviceAllocationResult": dict(results=INTO, config=INTO),
    "AllocationResult": dict(devices=INTO, nodeSelector=INTO, allocationTimestamp=KEEP),
    "ResourceClaimConsumerReference": dict(apiGroup=KEEP, resource=KEEP, name=HASH, uid=HASH),
    "Condition": dict(type=KEEP, status=KEEP, observedGeneration=KEEP, lastTransitionTime=KEEP, reason=KEEP,
                      message=DROP),
    "AllocatedDeviceStatus": dict(driver=KEEP, pool=HASH, device=HASH, shareID=HASH, conditions=INTO, data=DROP,
                                  networkData=DROP),
    "ResourceClaimStatus": dict(allocation=INTO, reservedFor=INTO, devices=INTO),
    "ResourceClaim": dict(kind=KEEP, metadata=INTO, spec=INTO, status=INTO),
    "ResourceClaimTemplateSpec": dict(metadata=INTO, spec=INTO),
    "ResourceClaimTemplate": dict(kind=KEEP, metadata=INTO, spec=INTO),
    "ResourcePool": dict(name=HASH, generation=KEEP, resourceSliceCount=KEEP),
    # attributes: CEL selectors and matchAttribute constraints read them (keys and values)
    "DeviceAttribute": dict(int=KEEP, bool=KEEP, string=KEEP, version=KEEP),
    "CapacityRequestPolicyRange": dict(min=KEEP, max=KEEP, step=KEEP),
    "CapacityRequestPolicy": dict(default=KEEP, validValues=KEEP, validRange=INTO),
    "DeviceCapacity": dict(value=KEEP, requestPolicy=INTO),
    "Counter": dict(value=KEEP),
    "CounterSet": dict(name=HASH, counters=INTO),
    "DeviceCounterConsumption": dict(counterSet=HASH, counters=INTO),
    "DeviceTaint": dict(key=KEEP, value=HASH, effect=KEEP, timeAdded=KEEP),
    "Device": dict(name=HASH, attributes=INTO, capacity=INTO, consumesCounters=INTO, nodeName=HASH,
                   nodeSelector=INTO, allNodes=KEEP, taints=INTO, bindsToNode=KEEP, bindingConditions=KEEP,
                   bindingFailureConditions=KEEP, allowMultipleAllocations=KEEP),
    "ResourceSliceSpec": dict(driver=KEEP, pool=INTO, nodeName=HASH, nodeSelector=INTO, allNodes=KEEP,
                              perDeviceNodeSelection=KEEP, devices=INTO, sharedCounters=INTO),
    "ResourceSlice": dict(kind=KEEP, metadata=INTO, spec=INTO),
    # A rule's selector names a pool and a device as slices do (hashed alike, so it still selects them).
    "DeviceTaintSelector": dict(driver=KEEP, pool=HASH, device=HASH),
    "DeviceTaintRuleSpec": dict(deviceSelector=INTO, taint=INTO),
    "DeviceTaintRule": dict(kind=KEEP, metadata=INTO, spec=INTO),
}

_INTEGER = re.compile(r"-?[0-9]+")
_UNSPECIFIED_IPS = frozenset({"", "0.0.0.0", "::"})


# ---- the model's shape: which class a field's objects are of ---------------------------------

@functools.cache
def shapes() -> dict[str, dict[str, "tuple[str, str] | None"]]:
    """Each class of the model a dump can hold → each field (API spelling) → (class of its
    objects, "one" | "list" | "map"), or None for a field of strings, numbers and quantities."""
    import attrs

    from ..api import model
    from .load import KINDS

    model.load_all()
    out: dict[str, dict] = {}

    def nested(tp) -> "tuple[str, str] | None":
        origin = typing.get_origin(tp)
        if origin is None:
            return (tp.__name__, "one") if attrs.has(tp) else None
        args = [a for a in typing.get_args(tp) if a is not type(None) and a is not Ellipsis]
        inner = [n for n in map(nested, args) if n is not None]
        if not inner:
            return None
        (cls, _), = inner
        return cls, {tuple: "list", dict: "map"}.get(origin, "one")

    def visit(cls) -> None:
        if cls.__name__ in out:
            return
        hints = typing.get_type_hints(cls, vars(model))
        out[cls.__name__] = row = {}
        for f in attrs.fields(cls):
            row[model.api_name(f.name)] = shape = nested(hints[f.name])
            if shape is not None:
                visit(getattr(model, shape[0]))

    for name in dict.fromkeys(KINDS.values()):
        visit(getattr(model, name))
    return out


# ---- the walk ---------------------------------------------------------------------------------

class _Noting:
    """While the mapping is built: notes each hashed string (and whether it is the value of a
    zone or region label), changing nothing."""

    def __init__(self):
        self.noted: dict[str, bool] = {}

    def name(self, s: str, zone: bool = False) -> str:
        if isinstance(s, str):
            self.noted[s] = self.noted.get(s, False) or zone
        return s

    def image(self, s: str) -> str:
        return s


def fields(doc: dict) -> list[tuple[str, str, "str | Into", Any]]:
    """Every field of every object of the dump, objects within objects included, as (class,
    field, rule, value): what the table makes of each (tests/test_redact.py plants markers by it)."""
    found: list = []
    _document(doc, _Noting(), found.append)
    return found


def _document(doc: dict, r, seen: "Callable | None" = None) -> dict:
    from .load import KINDS

    out = {k: v for k, v in doc.items() if k != "items"}
    items = []
    for item in doc.get("items", ()):
        kind = item.get("kind")
        if kind not in KINDS:
            raise ValueError(f"redact: a {kind!r} is not a kind the loader reads")
        rest = {k: v for k, v in item.items() if k != "apiVersion"}
        items.append({"apiVersion": item.get("apiVersion"), **_object(rest, KINDS[kind], {}, r, seen)})
    out["items"] = items
    return out


def _object(value: dict, cls: str, overrides: dict, r, seen) -> dict:
    row = {**TABLE[cls], **overrides} if overrides else TABLE[cls]
    shape = shapes()[cls]
    out = {}
    for key, v in value.items():
        if key not in row:
            raise ValueError(f"redact: {cls}.{key} is not in redact.TABLE: classify it (keep, hash or drop)")
        rule = row[key]
        if seen is not None:
            seen((cls, key, rule, v))
        if rule != DROP:
            out[key] = _apply(rule, v, shape[key], r, seen)
            if rule == ANNOTATIONS and not out[key]:
                del out[key]      # as the dump leaves an empty map out
    return out


def _apply(rule, v: Any, shape, r, seen) -> Any:
    if v is None:
        return v
    if isinstance(rule, Into):
        cls, form = shape
        if form == "list":
            return [_object(o, cls, rule.overrides, r, seen) for o in v]
        if form == "map":
            return {k: _object(o, cls, rule.overrides, r, seen) for k, o in v.items()}
        return _object(v, cls, rule.overrides, r, seen)
    if rule == KEEP:
        return v
    if rule == LABELS:
        return {k: r.name(x, k in ZONE_LABELS) for k, x in v.items()}
    if rule == HASH_KEYS:
        return {r.name(k): x for k, x in v.items()}
    if rule == ANNOTATIONS:
        return {k: _apply(ANNOTATIONS_READ[k], x, None, r, seen) for k, x in v.items() if k in ANNOTATIONS_READ}
    if rule == HASH:
        one = r.name
    elif rule == IMAGE:
        one = r.image
    elif rule == REQUEST:
        def one(s):
            return "/".join(map(r.name, s.split("/")))
    elif rule == HOST_IP:
        def one(s):
            return s if s in _UNSPECIFIED_IPS else r.name(s)
    elif rule == EBS_VOLUME:
        def one(s):
            return _ebs_volume_id(s, r.name)
    else:
        raise ValueError(f"redact: no such rule {rule!r}")
    return [one(s) for s in v] if isinstance(v, list) else one(v)


def _ebs_volume_id(volume_id: str, name: Callable[[str], str]) -> str:
    """KubernetesVolumeIDToEBSVolumeID reads ``aws://<zone>/<vol-…>``: the parts are renamed, the
    scheme, the slashes and the vol- prefix kept, and an ID alike bare or in a URL."""
    def one(part: str) -> str:
        return f"vol-{name(part)}" if part.startswith("vol-") else name(part)

    if not volume_id.startswith("aws://"):
        return one(volume_id)
    scheme, empty, zone, *path = volume_id.split("/")
    return "/".join([scheme, empty, name(zone), *map(one, path)])


# ---- the mapping -----------------------------------------------------------------------------

class _Mapping:
    """The stand-in of each hashed string (see the module's docstring)."""

    def __init__(self, noted: dict[str, bool], ephemeral: dict[str, tuple[str, str]]):
        self.noted = noted
        self.zones = {p for s, zone in noted.items() if zone for p in s.split("__")}
        self.ephemeral = ephemeral
        plain, zone_parts = set(), set()
        for s in [*noted, *(n for pair in ephemeral.values() for n in pair)]:
            if s in ephemeral:
                continue
            for p in s.split("__"):
                if p in self.zones:
                    zone_parts.update(p.split("-"))
                else:
                    plain.add(p)
        self.atoms = {**_numbered(plain, "n"), **_numbered(zone_parts, "z")}

    def _part(self, p: str) -> str:
        if p in self.zones:
            return "-".join(self.atoms.get(q, q) for q in p.split("-"))
        return self.atoms.get(p, p)

    def name(self, s: str, zone: bool = False) -> str:
        if not isinstance(s, str):
            return s
        if s in self.ephemeral:
            return "-".join(map(self._part, self.ephemeral[s]))
        return "__".join(map(self._part, s.split("__")))

    def image(self, s: str) -> str:
        return redact_image(s) if isinstance(s, str) else s


# Names every cluster has, which say nothing of this one and which decisions rely on: the API
# server's built-in PriorityClasses (a pod naming one gets its priority even where the dump lists
# no PriorityClass).
WELL_KNOWN = frozenset({"system-node-critical", "system-cluster-critical"})


def _numbered(strings: set, prefix: str) -> dict[str, str]:
    """The k-th of the strings in sorted order → prefix + k, zero-padded (integers and "" stay)."""
    renamed = sorted(s for s in strings if s and not _INTEGER.fullmatch(s) and s not in WELL_KNOWN)
    width = len(str(len(renamed)))
    return {s: f"{prefix}{k:0{width}d}" for k, s in enumerate(renamed)}


def _mapping(doc: dict) -> _Mapping:
    noting = _Noting()
    _document(doc, noting)
    # VolumeBinding and NodeVolumeLimits look a generic ephemeral volume's claim up as <pod>-<volume>.
    ephemeral: dict[str, tuple[str, str]] = {}
    for item in doc.get("items", ()):
        if item.get("kind") == "Pod":
            pod = item.get("metadata", {}).get("name", "")
            for v in item.get("spec", {}).get("volumes", ()):
                if v.get("ephemeral") is not None:
                    ephemeral.setdefault(f"{pod}-{v.get('name', '')}", (pod, v.get("name", "")))
    return _Mapping(noting.noted, ephemeral)


def redact(doc: dict) -> dict:
    """The dump with every field kept, hashed or dropped as ``TABLE`` says."""
    return _document(doc, _mapping(doc))


def renaming(doc: dict) -> dict[str, str]:
    """Each hashed string of the dump, each part of a "__"-joined one, and each generic ephemeral
    volume's claim → its stand-in."""
    mapping = _mapping(doc)
    strings = [*mapping.noted, *(p for s in mapping.noted if "__" in s for p in s.split("__")), *mapping.ephemeral]
    return {s: mapping.name(s) for s in strings}


def redact_image(image: str) -> str:
    if not image:
        return image
    if image.rfind(":") <= image.rfind("/"):
        image += ":latest"
    at = image.find("@")
    cut = at if at >= 0 else image.rfind(":")
    repo, rest = image[:cut], image[cut:]
    return f"img-{_hash(repo)}{rest[0]}{_hash(rest[1:])}"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]

"""Typed cluster objects, shaped as the Kubernetes API prints them.

Attribute names are the API's field names in snake_case; policies use the API's own
camelCase names (``pod.spec.nodeSelector``), mapped by ``api_name``. Defaults are the
API server's defaults, so a manifest that was never submitted reads like a stored object.
"""

from __future__ import annotations

from typing import Optional

import attrs

from .quantity import Quantity

ResourceList = dict[str, Quantity]


_API_SPELLING = {"host_ip": "hostIP", "volume_id": "volumeID", "disk_uri": "diskURI", "node_id": "nodeID"}


def api_name(attr: str) -> str:
    if attr in _API_SPELLING:
        return _API_SPELLING[attr]
    head, *rest = attr.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _list():
    return attrs.field(factory=tuple)


def _map():
    return attrs.field(factory=dict)


@attrs.frozen
class OwnerReference:
    kind: str = ""
    name: str = ""
    api_version: str = ""
    uid: str = ""
    controller: bool = False


@attrs.frozen
class ObjectMeta:
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = _map()
    annotations: dict[str, str] = _map()
    owner_references: tuple[OwnerReference, ...] = _list()
    creation_timestamp: str = ""
    deletion_timestamp: Optional[str] = None


# ---- selectors ----------------------------------------------------------------

@attrs.frozen
class LabelSelectorRequirement:
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = _list()


@attrs.frozen
class LabelSelector:
    match_labels: dict[str, str] = _map()
    match_expressions: tuple[LabelSelectorRequirement, ...] = _list()


@attrs.frozen
class NodeSelectorRequirement:
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = _list()


@attrs.frozen
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = _list()
    match_fields: tuple[NodeSelectorRequirement, ...] = _list()


@attrs.frozen
class NodeSelector:
    node_selector_terms: tuple[NodeSelectorTerm, ...] = _list()


# ---- nodes ----------------------------------------------------------------------

@attrs.frozen
class Taint:
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: Optional[str] = None


@attrs.frozen
class NodeSpec:
    unschedulable: bool = False
    taints: tuple[Taint, ...] = _list()


@attrs.frozen
class ContainerImage:
    names: tuple[str, ...] = _list()
    size_bytes: int = 0


@attrs.frozen
class NodeCondition:
    type: str = ""
    status: str = ""


@attrs.frozen
class NodeStatus:
    capacity: ResourceList = _map()
    allocatable: ResourceList = _map()
    images: tuple[ContainerImage, ...] = _list()
    conditions: tuple[NodeCondition, ...] = _list()


@attrs.frozen
class Node:
    kind: str = "Node"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: NodeSpec = attrs.field(factory=NodeSpec)
    status: NodeStatus = attrs.field(factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name


# ---- pods -----------------------------------------------------------------------

@attrs.frozen
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: Optional[int] = None


@attrs.frozen
class PreferredSchedulingTerm:
    weight: int = 0
    preference: NodeSelectorTerm = attrs.field(factory=NodeSelectorTerm)


@attrs.frozen
class NodeAffinity:
    required_during_scheduling_ignored_during_execution: Optional[NodeSelector] = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = _list()


@attrs.frozen
class PodAffinityTerm:
    label_selector: Optional[LabelSelector] = None
    namespaces: tuple[str, ...] = _list()
    topology_key: str = ""
    namespace_selector: Optional[LabelSelector] = None
    match_label_keys: tuple[str, ...] = _list()
    mismatch_label_keys: tuple[str, ...] = _list()


@attrs.frozen
class WeightedPodAffinityTerm:
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = attrs.field(factory=PodAffinityTerm)


@attrs.frozen
class PodAffinity:
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = _list()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = _list()


@attrs.frozen
class Affinity:
    node_affinity: Optional[NodeAffinity] = None
    pod_affinity: Optional[PodAffinity] = None
    pod_anti_affinity: Optional[PodAffinity] = None


@attrs.frozen
class TopologySpreadConstraint:
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: Optional[LabelSelector] = None
    min_domains: Optional[int] = None
    node_affinity_policy: Optional[str] = None
    node_taints_policy: Optional[str] = None
    match_label_keys: tuple[str, ...] = _list()


@attrs.frozen
class ResourceRequirements:
    requests: ResourceList = _map()
    limits: ResourceList = _map()


@attrs.frozen
class ContainerPort:
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""
    name: str = ""


@attrs.frozen
class Container:
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = attrs.field(factory=ResourceRequirements)
    ports: tuple[ContainerPort, ...] = _list()
    restart_policy: Optional[str] = None


# ---- volumes: the sources the volume plugins read ------------------------------------

@attrs.frozen
class PersistentVolumeClaimVolumeSource:
    claim_name: str = ""
    read_only: bool = False


@attrs.frozen
class GCEPersistentDiskVolumeSource:
    pd_name: str = ""
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


@attrs.frozen
class AWSElasticBlockStoreVolumeSource:
    volume_id: str = ""
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


@attrs.frozen
class AzureDiskVolumeSource:
    disk_name: str = ""
    disk_uri: str = ""
    kind: Optional[str] = None
    fs_type: str = ""
    read_only: bool = False


@attrs.frozen
class CinderVolumeSource:
    volume_id: str = ""
    fs_type: str = ""
    read_only: bool = False


@attrs.frozen
class PortworxVolumeSource:
    volume_id: str = ""
    fs_type: str = ""
    read_only: bool = False


@attrs.frozen
class RBDVolumeSource:
    monitors: tuple[str, ...] = _list()
    image: str = ""
    pool: str = ""
    fs_type: str = ""
    read_only: bool = False


@attrs.frozen
class ISCSIVolumeSource:
    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    fs_type: str = ""
    read_only: bool = False


@attrs.frozen
class CSIVolumeSource:
    driver: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = _map()


@attrs.frozen
class VolumeResourceRequirements:
    requests: ResourceList = _map()
    limits: ResourceList = _map()


@attrs.frozen
class PersistentVolumeClaimSpec:
    access_modes: tuple[str, ...] = _list()
    selector: Optional[LabelSelector] = None
    resources: VolumeResourceRequirements = attrs.field(factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: Optional[str] = None
    volume_mode: Optional[str] = None
    volume_attributes_class_name: Optional[str] = None


@attrs.frozen
class PersistentVolumeClaimTemplate:
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = attrs.field(factory=PersistentVolumeClaimSpec)


@attrs.frozen
class EphemeralVolumeSource:
    volume_claim_template: Optional[PersistentVolumeClaimTemplate] = None


@attrs.frozen
class Volume:
    name: str = ""
    persistent_volume_claim: Optional[PersistentVolumeClaimVolumeSource] = None
    ephemeral: Optional[EphemeralVolumeSource] = None
    gce_persistent_disk: Optional[GCEPersistentDiskVolumeSource] = None
    aws_elastic_block_store: Optional[AWSElasticBlockStoreVolumeSource] = None
    azure_disk: Optional[AzureDiskVolumeSource] = None
    cinder: Optional[CinderVolumeSource] = None
    portworx_volume: Optional[PortworxVolumeSource] = None
    rbd: Optional[RBDVolumeSource] = None
    iscsi: Optional[ISCSIVolumeSource] = None
    csi: Optional[CSIVolumeSource] = None


@attrs.frozen
class PodResourceClaim:
    name: str = ""


@attrs.frozen
class PodSchedulingGate:
    name: str = ""


@attrs.frozen
class PodSpec:
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: Optional[int] = None
    priority_class_name: str = ""
    preemption_policy: Optional[str] = None
    node_selector: dict[str, str] = _map()
    affinity: Optional[Affinity] = None
    tolerations: tuple[Toleration, ...] = _list()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = _list()
    containers: tuple[Container, ...] = _list()
    init_containers: tuple[Container, ...] = _list()
    overhead: ResourceList = _map()
    resources: Optional[ResourceRequirements] = None
    volumes: tuple[Volume, ...] = _list()
    resource_claims: tuple[PodResourceClaim, ...] = _list()
    host_network: bool = False
    # Non-empty: kube-scheduler's PreEnqueue (plugin SchedulingGates) keeps the pod out of the
    # scheduling queue until a controller removes every gate.
    scheduling_gates: tuple[PodSchedulingGate, ...] = _list()


@attrs.frozen
class PodCondition:
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


@attrs.frozen
class PodStatus:
    phase: str = "Pending"
    nominated_node_name: str = ""
    start_time: Optional[str] = None
    conditions: tuple[PodCondition, ...] = _list()


@attrs.frozen
class Pod:
    kind: str = "Pod"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PodSpec = attrs.field(factory=PodSpec)
    status: PodStatus = attrs.field(factory=PodStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


# ---- the rest of the state a scheduler reads --------------------------------------

@attrs.frozen
class Namespace:
    kind: str = "Namespace"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)


@attrs.frozen
class PriorityClass:
    kind: str = "PriorityClass"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


@attrs.frozen
class ServiceSpec:
    selector: dict[str, str] = _map()


@attrs.frozen
class Service:
    kind: str = "Service"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: ServiceSpec = attrs.field(factory=ServiceSpec)


@attrs.frozen
class WorkloadSpec:
    """The selector of a ReplicaSet, StatefulSet or ReplicationController."""
    selector: Optional[LabelSelector] = None
    replicas: Optional[int] = None


@attrs.frozen
class Workload:
    kind: str = ""
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: WorkloadSpec = attrs.field(factory=WorkloadSpec)


@attrs.frozen
class PodDisruptionBudgetSpec:
    selector: Optional[LabelSelector] = None
    min_available: Optional[str] = None
    max_unavailable: Optional[str] = None


@attrs.frozen
class PodDisruptionBudgetStatus:
    disruptions_allowed: int = 0
    # pod name → when the API server processed its eviction (not yet seen by the controller).
    disrupted_pods: dict[str, str] = _map()


@attrs.frozen
class PodDisruptionBudget:
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = attrs.field(factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = attrs.field(factory=PodDisruptionBudgetStatus)


# ---- storage: claims, volumes, classes, CSI ------------------------------------------

@attrs.frozen
class PersistentVolumeClaimStatus:
    phase: str = ""
    access_modes: tuple[str, ...] = _list()
    capacity: ResourceList = _map()


@attrs.frozen
class PersistentVolumeClaim:
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = attrs.field(factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = attrs.field(factory=PersistentVolumeClaimStatus)


@attrs.frozen
class ObjectReference:
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


@attrs.frozen
class VolumeNodeAffinity:
    required: Optional[NodeSelector] = None


@attrs.frozen
class CSIPersistentVolumeSource:
    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = _map()


@attrs.frozen
class PersistentVolumeSpec:
    capacity: ResourceList = _map()
    access_modes: tuple[str, ...] = _list()
    claim_ref: Optional[ObjectReference] = None
    persistent_volume_reclaim_policy: str = ""
    storage_class_name: str = ""
    volume_mode: Optional[str] = None
    node_affinity: Optional[VolumeNodeAffinity] = None
    volume_attributes_class_name: Optional[str] = None
    mount_options: tuple[str, ...] = _list()
    csi: Optional[CSIPersistentVolumeSource] = None
    gce_persistent_disk: Optional[GCEPersistentDiskVolumeSource] = None
    aws_elastic_block_store: Optional[AWSElasticBlockStoreVolumeSource] = None
    azure_disk: Optional[AzureDiskVolumeSource] = None
    cinder: Optional[CinderVolumeSource] = None
    portworx_volume: Optional[PortworxVolumeSource] = None
    rbd: Optional[RBDVolumeSource] = None
    iscsi: Optional[ISCSIVolumeSource] = None


@attrs.frozen
class PersistentVolumeStatus:
    phase: str = ""


@attrs.frozen
class PersistentVolume:
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PersistentVolumeSpec = attrs.field(factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = attrs.field(factory=PersistentVolumeStatus)


@attrs.frozen
class TopologySelectorLabelRequirement:
    key: str = ""
    values: tuple[str, ...] = _list()


@attrs.frozen
class TopologySelectorTerm:
    match_label_expressions: tuple[TopologySelectorLabelRequirement, ...] = _list()


@attrs.frozen
class StorageClass:
    kind: str = "StorageClass"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    provisioner: str = ""
    parameters: dict[str, str] = _map()
    reclaim_policy: Optional[str] = None
    volume_binding_mode: Optional[str] = None
    allowed_topologies: tuple[TopologySelectorTerm, ...] = _list()
    allow_volume_expansion: Optional[bool] = None
    mount_options: tuple[str, ...] = _list()


@attrs.frozen
class VolumeNodeResources:
    count: Optional[int] = None


@attrs.frozen
class CSINodeDriver:
    name: str = ""
    node_id: str = ""
    topology_keys: tuple[str, ...] = _list()
    allocatable: Optional[VolumeNodeResources] = None


@attrs.frozen
class CSINodeSpec:
    drivers: tuple[CSINodeDriver, ...] = _list()


@attrs.frozen
class CSINode:
    kind: str = "CSINode"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: CSINodeSpec = attrs.field(factory=CSINodeSpec)


@attrs.frozen
class CSIDriverSpec:
    attach_required: Optional[bool] = None
    pod_info_on_mount: Optional[bool] = None
    storage_capacity: Optional[bool] = None
    requires_republish: Optional[bool] = None
    fs_group_policy: Optional[str] = None
    se_linux_mount: Optional[bool] = None
    volume_lifecycle_modes: tuple[str, ...] = _list()


@attrs.frozen
class CSIDriver:
    kind: str = "CSIDriver"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: CSIDriverSpec = attrs.field(factory=CSIDriverSpec)


@attrs.frozen
class CSIStorageCapacity:
    kind: str = "CSIStorageCapacity"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    node_topology: Optional[LabelSelector] = None
    storage_class_name: str = ""
    capacity: Optional[Quantity] = None
    maximum_volume_size: Optional[Quantity] = None


@attrs.frozen
class VolumeAttachmentSource:
    persistent_volume_name: Optional[str] = None
    inline_volume_spec: Optional[PersistentVolumeSpec] = None


@attrs.frozen
class VolumeAttachmentSpec:
    attacher: str = ""
    source: VolumeAttachmentSource = attrs.field(factory=VolumeAttachmentSource)
    node_name: str = ""


@attrs.frozen
class VolumeAttachmentStatus:
    attached: bool = False


@attrs.frozen
class VolumeAttachment:
    kind: str = "VolumeAttachment"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: VolumeAttachmentSpec = attrs.field(factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = attrs.field(factory=VolumeAttachmentStatus)

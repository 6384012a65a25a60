"""Pod: its spec (tolerations, affinity, topology spread, containers, volumes and the volume
sources the volume plugins read) and its status."""

from __future__ import annotations

from typing import Optional

import attrs

from ...frozen import frozen
from .meta import LabelSelector, NodeSelector, NodeSelectorTerm, ObjectMeta, ResourceList, _list, _map


@frozen
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: Optional[int] = None


@frozen
class PreferredSchedulingTerm:
    weight: int = 0
    preference: NodeSelectorTerm = attrs.field(factory=NodeSelectorTerm)


@frozen
class NodeAffinity:
    required_during_scheduling_ignored_during_execution: Optional[NodeSelector] = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = _list()


@frozen
class PodAffinityTerm:
    label_selector: Optional[LabelSelector] = None
    namespaces: tuple[str, ...] = _list()
    topology_key: str = ""
    namespace_selector: Optional[LabelSelector] = None
    match_label_keys: tuple[str, ...] = _list()
    mismatch_label_keys: tuple[str, ...] = _list()


@frozen
class WeightedPodAffinityTerm:
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = attrs.field(factory=PodAffinityTerm)


@frozen
class PodAffinity:
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = _list()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = _list()


@frozen
class Affinity:
    node_affinity: Optional[NodeAffinity] = None
    pod_affinity: Optional[PodAffinity] = None
    pod_anti_affinity: Optional[PodAffinity] = None


@frozen
class TopologySpreadConstraint:
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: Optional[LabelSelector] = None
    min_domains: Optional[int] = None
    node_affinity_policy: Optional[str] = None
    node_taints_policy: Optional[str] = None
    match_label_keys: tuple[str, ...] = _list()


@frozen
class ResourceRequirements:
    requests: ResourceList = _map()
    limits: ResourceList = _map()


@frozen
class ContainerPort:
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""
    name: str = ""


@frozen
class ContainerRestartRuleOnExitCodes:
    operator: str = ""
    values: tuple[int, ...] = _list()


@frozen
class ContainerRestartRule:
    """A container's restart rule (k8s.io/api core/v1 ContainerRestartRule; gate ContainerRestartRules,
    beta on since v1.35). The action RestartAllContainers (gate RestartAllContainersOnContainerExits,
    alpha off in v1.35, beta on in v1.36) needs a node that declares that feature."""
    action: str = ""
    exit_codes: Optional[ContainerRestartRuleOnExitCodes] = None


@frozen
class VolumeMount:
    name: str = ""
    mount_path: str = ""
    read_only: bool = False
    # v1.37, gate VolumeBindMountOptions (alpha, off): needs a node that declares that feature.
    bind_mount_options: tuple[str, ...] = _list()


@frozen
class Container:
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = attrs.field(factory=ResourceRequirements)
    ports: tuple[ContainerPort, ...] = _list()
    restart_policy: Optional[str] = None
    restart_policy_rules: tuple[ContainerRestartRule, ...] = _list()
    volume_mounts: tuple[VolumeMount, ...] = _list()


# ---- volumes: the sources the volume plugins read ------------------------------------

@frozen
class PersistentVolumeClaimVolumeSource:
    claim_name: str = ""
    read_only: bool = False


@frozen
class GCEPersistentDiskVolumeSource:
    pd_name: str = ""
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


@frozen
class AWSElasticBlockStoreVolumeSource:
    volume_id: str = ""
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


@frozen
class AzureDiskVolumeSource:
    disk_name: str = ""
    disk_uri: str = ""
    kind: Optional[str] = None
    fs_type: str = ""
    read_only: bool = False


@frozen
class CinderVolumeSource:
    volume_id: str = ""
    fs_type: str = ""
    read_only: bool = False


@frozen
class PortworxVolumeSource:
    volume_id: str = ""
    fs_type: str = ""
    read_only: bool = False


@frozen
class RBDVolumeSource:
    monitors: tuple[str, ...] = _list()
    image: str = ""
    pool: str = ""
    fs_type: str = ""
    read_only: bool = False


@frozen
class ISCSIVolumeSource:
    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    fs_type: str = ""
    read_only: bool = False


@frozen
class CSIVolumeSource:
    driver: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = _map()


@frozen
class VolumeResourceRequirements:
    requests: ResourceList = _map()
    limits: ResourceList = _map()


@frozen
class PersistentVolumeClaimSpec:
    access_modes: tuple[str, ...] = _list()
    selector: Optional[LabelSelector] = None
    resources: VolumeResourceRequirements = attrs.field(factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: Optional[str] = None
    volume_mode: Optional[str] = None
    volume_attributes_class_name: Optional[str] = None


@frozen
class PersistentVolumeClaimTemplate:
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = attrs.field(factory=PersistentVolumeClaimSpec)


@frozen
class EphemeralVolumeSource:
    volume_claim_template: Optional[PersistentVolumeClaimTemplate] = None


@frozen
class ImageVolumeSource:
    """An OCI image (or artifact) mounted as a volume: ImageLocality counts it from v1.36."""
    reference: str = ""
    pull_policy: str = ""


@frozen
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
    image: Optional[ImageVolumeSource] = None


@frozen
class PodResourceClaim:
    name: str = ""
    # One of the two: an existing claim, or a template the resourceclaim controller makes one from.
    resource_claim_name: Optional[str] = None
    resource_claim_template_name: Optional[str] = None


@frozen
class PodSchedulingGate:
    name: str = ""


@frozen
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
    # Ephemeral containers request nothing; NodeDeclaredFeatures reads their volume mounts.
    ephemeral_containers: tuple[Container, ...] = _list()
    overhead: ResourceList = _map()
    resources: Optional[ResourceRequirements] = None
    volumes: tuple[Volume, ...] = _list()
    resource_claims: tuple[PodResourceClaim, ...] = _list()
    host_network: bool = False
    # None: true (the API's default). false with hostNetwork needs a node that declares
    # UserNamespacesHostNetworkSupport (the API server refuses it unless that gate is on).
    host_users: Optional[bool] = None
    # Non-empty: kube-scheduler's PreEnqueue (plugin SchedulingGates) keeps the pod out of the
    # scheduling queue until a controller removes every gate.
    scheduling_gates: tuple[PodSchedulingGate, ...] = _list()


@frozen
class PodCondition:
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


@frozen
class PodResourceClaimStatus:
    """The claim made for a pod's template claim (its name; None: none is needed)."""
    name: str = ""
    resource_claim_name: Optional[str] = None


@frozen
class ActuatedResources:
    """status.resources of a container or a pod: what the kubelet has applied. Unlike a spec's
    requirements, an absent list and an empty one differ (component-helpers resource/helpers.go
    falls back to the allocated resources only when the list is absent)."""
    requests: Optional[ResourceList] = None
    limits: Optional[ResourceList] = None


@frozen
class ContainerStatus:
    """The part of a container's status kube-scheduler counts for a pod being resized in place:
    what the kubelet allocated and what it applied (absent: not reported)."""
    name: str = ""
    allocated_resources: Optional[ResourceList] = None
    resources: Optional[ActuatedResources] = None


@frozen
class PodStatus:
    phase: str = "Pending"
    nominated_node_name: str = ""
    start_time: Optional[str] = None
    conditions: tuple[PodCondition, ...] = _list()
    resource_claim_statuses: tuple[PodResourceClaimStatus, ...] = _list()
    # In-place resize (InPlacePodVerticalScaling): the containers' allocated and applied
    # resources, and the pod-level ones (InPlacePodLevelResourcesVerticalScaling).
    container_statuses: tuple[ContainerStatus, ...] = _list()
    init_container_statuses: tuple[ContainerStatus, ...] = _list()
    allocated_resources: Optional[ResourceList] = None
    resources: Optional[ActuatedResources] = None


@frozen
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

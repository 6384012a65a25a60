"""Storage: claims, volumes, storage classes, CSI nodes, drivers and capacities, attachments."""

from __future__ import annotations

from typing import Optional

import attrs

from ...frozen import frozen
from ..quantity import Quantity
from .meta import LabelSelector, NodeSelector, ObjectMeta, ResourceList, _list, _map
from .pods import (AWSElasticBlockStoreVolumeSource, AzureDiskVolumeSource, CinderVolumeSource,
                   GCEPersistentDiskVolumeSource, ISCSIVolumeSource, PersistentVolumeClaimSpec,
                   PortworxVolumeSource, RBDVolumeSource)


@frozen
class PersistentVolumeClaimStatus:
    phase: str = ""
    access_modes: tuple[str, ...] = _list()
    capacity: ResourceList = _map()


@frozen
class PersistentVolumeClaim:
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = attrs.field(factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = attrs.field(factory=PersistentVolumeClaimStatus)


@frozen
class ObjectReference:
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


@frozen
class VolumeNodeAffinity:
    required: Optional[NodeSelector] = None


@frozen
class CSIPersistentVolumeSource:
    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = _map()


@frozen
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


@frozen
class PersistentVolumeStatus:
    phase: str = ""


@frozen
class PersistentVolume:
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: PersistentVolumeSpec = attrs.field(factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = attrs.field(factory=PersistentVolumeStatus)


@frozen
class TopologySelectorLabelRequirement:
    key: str = ""
    values: tuple[str, ...] = _list()


@frozen
class TopologySelectorTerm:
    match_label_expressions: tuple[TopologySelectorLabelRequirement, ...] = _list()


@frozen
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


@frozen
class VolumeNodeResources:
    count: Optional[int] = None


@frozen
class CSINodeDriver:
    name: str = ""
    node_id: str = ""
    topology_keys: tuple[str, ...] = _list()
    allocatable: Optional[VolumeNodeResources] = None


@frozen
class CSINodeSpec:
    drivers: tuple[CSINodeDriver, ...] = _list()


@frozen
class CSINode:
    kind: str = "CSINode"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: CSINodeSpec = attrs.field(factory=CSINodeSpec)


@frozen
class CSIDriverSpec:
    attach_required: Optional[bool] = None
    pod_info_on_mount: Optional[bool] = None
    storage_capacity: Optional[bool] = None
    requires_republish: Optional[bool] = None
    fs_group_policy: Optional[str] = None
    se_linux_mount: Optional[bool] = None
    volume_lifecycle_modes: tuple[str, ...] = _list()
    # With VolumeLimitScaling (beta, on in v1.37) a node whose CSINode lacks the driver cannot
    # take the driver's volumes (nodevolumelimits/csi.go checkCSIDriverOnNode).
    prevent_pod_scheduling_if_missing: Optional[bool] = None


@frozen
class CSIDriver:
    kind: str = "CSIDriver"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: CSIDriverSpec = attrs.field(factory=CSIDriverSpec)


@frozen
class CSIStorageCapacity:
    kind: str = "CSIStorageCapacity"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    node_topology: Optional[LabelSelector] = None
    storage_class_name: str = ""
    capacity: Optional[Quantity] = None
    maximum_volume_size: Optional[Quantity] = None


@frozen
class VolumeAttachmentSource:
    persistent_volume_name: Optional[str] = None
    inline_volume_spec: Optional[PersistentVolumeSpec] = None


@frozen
class VolumeAttachmentSpec:
    attacher: str = ""
    source: VolumeAttachmentSource = attrs.field(factory=VolumeAttachmentSource)
    node_name: str = ""


@frozen
class VolumeAttachmentStatus:
    attached: bool = False


@frozen
class VolumeAttachment:
    kind: str = "VolumeAttachment"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: VolumeAttachmentSpec = attrs.field(factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = attrs.field(factory=VolumeAttachmentStatus)

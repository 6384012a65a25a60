"""Node: its spec (taints), its status (capacity, allocatable, images, conditions, declared features)."""

from __future__ import annotations

from typing import Optional

import attrs

from ...frozen import frozen
from .meta import ObjectMeta, ResourceList, _list, _map


@frozen
class Taint:
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: Optional[str] = None


@frozen
class NodeSpec:
    unschedulable: bool = False
    taints: tuple[Taint, ...] = _list()


@frozen
class ContainerImage:
    names: tuple[str, ...] = _list()
    size_bytes: int = 0


@frozen
class NodeCondition:
    type: str = ""
    status: str = ""


@frozen
class NodeStatus:
    capacity: ResourceList = _map()
    allocatable: ResourceList = _map()
    images: tuple[ContainerImage, ...] = _list()
    conditions: tuple[NodeCondition, ...] = _list()
    # The features the kubelet says the node has (KEP-5328; k8s.io/api core/v1 NodeStatus
    # DeclaredFeatures, v1.35+ behind the NodeDeclaredFeatures gate): sorted, no repeats. The
    # NodeDeclaredFeatures plugin reads it; the loader drops it where the API server does
    # (cluster/validation/core.py: admit_node).
    declared_features: tuple[str, ...] = _list()


@frozen
class Node:
    kind: str = "Node"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: NodeSpec = attrs.field(factory=NodeSpec)
    status: NodeStatus = attrs.field(factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

"""Node: its spec (taints), its status (capacity, allocatable, images, conditions)."""

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


@frozen
class Node:
    kind: str = "Node"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: NodeSpec = attrs.field(factory=NodeSpec)
    status: NodeStatus = attrs.field(factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

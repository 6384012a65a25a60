"""Object metadata and label and node selectors, which every kind below is built from; and
``api_name``, the API's camelCase spelling of an attribute."""

from __future__ import annotations

from typing import Optional, Union

import attrs

from ...frozen import frozen
from ..quantity import Quantity

ResourceList = dict[str, Quantity]
# intstr.IntOrString: a number or a string ("50%"), as the API decodes it.
IntOrString = Union[int, str]


_API_SPELLING = {"host_ip": "hostIP", "volume_id": "volumeID", "disk_uri": "diskURI", "node_id": "nodeID",
                 "share_id": "shareID"}


def api_name(attr: str) -> str:
    if attr in _API_SPELLING:
        return _API_SPELLING[attr]
    head, *rest = attr.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _list():
    return attrs.field(factory=tuple)


def _map():
    return attrs.field(factory=dict)


@frozen
class OwnerReference:
    kind: str = ""
    name: str = ""
    api_version: str = ""
    uid: str = ""
    controller: bool = False


@frozen
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

@frozen
class LabelSelectorRequirement:
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = _list()


@frozen
class LabelSelector:
    match_labels: dict[str, str] = _map()
    match_expressions: tuple[LabelSelectorRequirement, ...] = _list()


@frozen
class NodeSelectorRequirement:
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = _list()


@frozen
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = _list()
    match_fields: tuple[NodeSelectorRequirement, ...] = _list()


@frozen
class NodeSelector:
    node_selector_terms: tuple[NodeSelectorTerm, ...] = _list()

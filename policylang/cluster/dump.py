"""Cluster state → kubectl-style YAML that `load_cluster` reads back."""

from __future__ import annotations

from pathlib import Path

import attrs
import cattrs
import yaml

from ..api import model
from ..api.quantity import Quantity, format_quantity
from .state import ClusterState


# Fields where an empty list and none differ (api/requests.py: a resized pod's status falls back
# to its allocated resources, or its spec, only when one is absent): an empty one is written.
_EMPTY_KEPT = {("ContainerStatus", "allocated_resources"), ("ContainerStatus", "resources"),
               ("PodStatus", "allocated_resources"), ("PodStatus", "resources"),
               ("ActuatedResources", "requests"), ("ActuatedResources", "limits")}


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_unstructure_hook(Quantity, format_quantity)

    def attrs_hook(cls):
        # A false where the field's default is None says something (a device attribute's
        # `bool: false`, a slice's `allNodes: false`): only other falses are left out.
        fields = [(a.name, model.api_name(a.name), a.default is None, (cls.__name__, a.name) in _EMPTY_KEPT)
                  for a in attrs.fields(cls)]

        def unstructure(obj):
            out = {}
            for attr, key, optional, empty_kept in fields:
                value = conv.unstructure(getattr(obj, attr))
                # Empty values are what the loader defaults to anyway.
                if value is None or value == "" or (value is False and not optional) or (value == {} and not empty_kept) \
                        or value == [] or value == ():
                    continue
                out[key] = list(value) if isinstance(value, tuple) else value
            return out
        return unstructure

    conv.register_unstructure_hook_factory(attrs.has, attrs_hook)
    return conv


CONVERTER = _converter()
API_VERSIONS = {"Node": "v1", "Pod": "v1", "Namespace": "v1", "Service": "v1", "ReplicationController": "v1",
                "PriorityClass": "scheduling.k8s.io/v1", "PodDisruptionBudget": "policy/v1",
                "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "StorageClass": "storage.k8s.io/v1",
                "CSINode": "storage.k8s.io/v1", "CSIDriver": "storage.k8s.io/v1",
                "CSIStorageCapacity": "storage.k8s.io/v1", "VolumeAttachment": "storage.k8s.io/v1",
                **dict.fromkeys(("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice",
                                 "DeviceTaintRule"), "resource.k8s.io/v1")}


def dump_object(obj) -> dict:
    raw = CONVERTER.unstructure(obj)
    kind = raw.pop("kind", type(obj).__name__)
    if kind == "ReplicationController" and isinstance((raw.get("spec") or {}).get("selector"), dict):
        # Its API selector is a plain map of labels (the model keeps it as a LabelSelector's matchLabels).
        raw["spec"] = {**raw["spec"], "selector": raw["spec"]["selector"].get("matchLabels", {})}
    return {"apiVersion": API_VERSIONS.get(kind, "v1"), "kind": kind, **raw}


def dump_state(state: ClusterState) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": [dump_object(o) for o in state.objects()]}


def write_state(state: ClusterState, path: str | Path) -> None:
    """Write the state as its extension says: JSON for ``.json``, else kubectl-style YAML."""
    import json

    from ..write import write_atomic

    doc = dump_state(state)
    if str(path).endswith(".json"):
        write_atomic(path, json.dumps(doc, indent=2) + "\n")
    else:
        write_atomic(path, yaml.safe_dump(doc, sort_keys=False, width=120))

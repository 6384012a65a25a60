"""The language's types, and the record types of cluster objects read off the model.

Object field names are the API's (``spec.nodeSelector``); the record types are derived
from the attrs classes in ``api.model`` so the checker and the loader cannot disagree.
What is derived is cached with policylang's code (``model_schema``): checking a policy
reads it without building the model's classes.
"""

from __future__ import annotations

import types as pytypes
import typing
from functools import lru_cache

import attrs

from .api.quantity import Quantity
from .frozen import frozen


@frozen
class Type:
    kind: str                 # bool int float string quantity duration null any list map record
    args: tuple = ()          # element type(s) for list and map
    name: str = ""            # record name
    fields: tuple = ()        # for anonymous records (params, literals): ((name, Type), ...)

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list[{self.args[0]}]"
        if self.kind == "map":
            return f"map[{self.args[0]}, {self.args[1]}]"
        if self.kind == "record":
            if self.name:
                return self.name
            return "{" + ", ".join(f"{n}: {t}" for n, t in self.fields) + "}"
        return self.kind


BOOL, INT, FLOAT, STRING = Type("bool"), Type("int"), Type("float"), Type("string")
QUANTITY, DURATION, NULL, ANY = Type("quantity"), Type("duration"), Type("null"), Type("any")
SCALARS = {t.kind: t for t in (BOOL, INT, FLOAT, STRING, QUANTITY, DURATION, ANY)}
NUMERIC = {"int", "float", "quantity", "duration"}


def list_of(t: Type) -> Type:
    return Type("list", (t,))


def map_of(k: Type, v: Type) -> Type:
    return Type("map", (k, v))


def record(name: str) -> Type:
    return Type("record", name=name)


def anon_record(fields) -> Type:
    return Type("record", fields=tuple(fields))


def is_any(t: Type) -> bool:
    return t.kind == "any"


def compatible(want: Type, got: Type) -> bool:
    """Can a value of type ``got`` stand where ``want`` is expected?"""
    if want == got or is_any(want) or is_any(got) or got.kind == "null":
        return True
    if want.kind == "float" and got.kind == "int":
        return True
    if want.kind == "quantity" and got.kind == "int":
        return True
    if want.kind == "duration" and got.kind == "int":
        return True
    if want.kind == got.kind == "list":
        return compatible(want.args[0], got.args[0])
    if want.kind == got.kind == "map":
        return compatible(want.args[0], got.args[0]) and compatible(want.args[1], got.args[1])
    if want.kind == got.kind == "record" and not got.name:
        # A record literal may leave fields out: they keep their defaults.
        want_fields = fields_of(want) or {}
        return all(n in want_fields and compatible(want_fields[n], t) for n, t in got.fields)
    return False


def unify(a: Type, b: Type) -> Type | None:
    """The type of ``if c then a else b`` and of list literals."""
    if a == b:
        return a
    if a.kind == "null":
        return b
    if b.kind == "null":
        return a
    if is_any(a) or is_any(b):
        return ANY
    if {a.kind, b.kind} == {"int", "float"}:
        return FLOAT
    if {a.kind, b.kind} == {"int", "quantity"}:
        return QUANTITY
    if {a.kind, b.kind} == {"int", "duration"}:
        return DURATION
    if a.kind == b.kind == "list":
        inner = unify(a.args[0], b.args[0])
        return list_of(inner) if inner else None
    if a.kind == b.kind == "map":
        k, v = unify(a.args[0], b.args[0]), unify(a.args[1], b.args[1])
        return map_of(k, v) if k and v else None
    if a.kind == b.kind == "record" and not a.name and not b.name:
        # Record literals in one list may leave out different fields.
        fa, fb = dict(a.fields), dict(b.fields)
        merged = {}
        for name in {**fa, **fb}:
            t = unify(fa[name], fb[name]) if name in fa and name in fb else fa.get(name) or fb.get(name)
            if t is None:
                return None
            merged[name] = t
        return anon_record(sorted(merged.items()))
    return None


# ---- record types of cluster objects --------------------------------------------

@frozen
class FieldInfo:
    type: Type
    attr: str | None          # the Python attribute, or None for a derived field
    derived: str | None = None


# Fields computed from the cluster, not stored on the object.
DERIVED = {
    "Node": {
        "pods": (lambda: list_of(record("Pod")), "pods_by_node"),
        "podsWithAffinity": (lambda: list_of(record("Pod")), "pods_with_affinity"),
        "podsWithRequiredAntiAffinity": (lambda: list_of(record("Pod")), "pods_with_required_anti_affinity"),
    },
    "Cluster": {},
}

# The `cluster` scope: each field's type and how it is read from a ClusterState (the lists are
# made when a policy first reads them in a cycle: run/phases.py's ClusterView).
CLUSTER_FIELDS = {
    "nodes": (lambda: list_of(record("Node")), lambda s: s.node_list),
    # The snapshot's HavePodsWithAffinityList / HavePodsWithRequiredAntiAffinityList: the nodes
    # (in name order) running pods with pod (anti-)affinity, or with required anti-affinity.
    "nodesWithPodsWithAffinity": (lambda: list_of(record("Node")), lambda s: s.nodes_having(s.pods_with_affinity)),
    "nodesWithPodsWithRequiredAntiAffinity": (lambda: list_of(record("Node")),
                                              lambda s: s.nodes_having(s.pods_with_required_anti_affinity)),
    "pods": (lambda: list_of(record("Pod")), lambda s: s.bound_pods),
    "namespaces": (lambda: list_of(record("Namespace")), lambda s: list(s.namespaces.values())),
    "services": (lambda: list_of(record("Service")), lambda s: s.services),
    "workloads": (lambda: list_of(record("Workload")), lambda s: s.workloads),
    "priorityClasses": (lambda: list_of(record("PriorityClass")), lambda s: list(s.priority_classes.values())),
    "podDisruptionBudgets": (lambda: list_of(record("PodDisruptionBudget")), lambda s: s.pdbs),
    "persistentVolumes": (lambda: list_of(record("PersistentVolume")), lambda s: list(s.persistent_volumes.values())),
    "persistentVolumeClaims": (lambda: list_of(record("PersistentVolumeClaim")), lambda s: list(s.claims.values())),
    "storageClasses": (lambda: list_of(record("StorageClass")), lambda s: list(s.storage_classes.values())),
    "csiNodes": (lambda: list_of(record("CSINode")), lambda s: list(s.csi_nodes.values())),
    "csiDrivers": (lambda: list_of(record("CSIDriver")), lambda s: list(s.csi_drivers.values())),
    "csiStorageCapacities": (lambda: list_of(record("CSIStorageCapacity")), lambda s: s.csi_storage_capacities),
    "volumeAttachments": (lambda: list_of(record("VolumeAttachment")), lambda s: s.volume_attachments),
}


def model_class(name: str) -> type | None:
    """The attrs class of a cluster object kind (``NodeAffinity``), or None."""
    if name not in model_schema():
        return None
    from .api import model

    cls = getattr(model, name, None)
    return cls if isinstance(cls, type) and attrs.has(cls) else None


@lru_cache(maxsize=None)
def model_schema() -> dict[str, dict[str, FieldInfo]]:
    """Every cluster object kind's fields, read off ``api.model`` once per version of
    policylang's code: the cache keeps it, since building the model's ~115 classes is most of
    what `policylang check` would otherwise import."""
    from . import cache

    return cache.cached("schema", cache.key("schema"), _schema_of_model, dict)


def _schema_of_model() -> dict[str, dict[str, FieldInfo]]:
    from .api import model

    model.load_all()

    def fields(cls) -> dict[str, FieldInfo]:
        hints = typing.get_type_hints(cls, vars(model))
        return {model.api_name(a.name): FieldInfo(_py_to_type(hints[a.name]), a.name) for a in attrs.fields(cls)}
    return {cls.__name__: fields(cls) for cls in vars(model).values() if isinstance(cls, type) and attrs.has(cls)}


def _py_to_type(annotation) -> Type:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is str:
        return STRING
    if annotation is bool:
        return BOOL
    if annotation is int:
        return INT
    if annotation is float:
        return FLOAT
    if annotation is Quantity:
        return QUANTITY
    if origin in (typing.Union, pytypes.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _py_to_type(inner[0]) if len(inner) == 1 else ANY
    if origin is tuple:
        return list_of(_py_to_type(args[0]))
    if origin is dict:
        return map_of(_py_to_type(args[0]), _py_to_type(args[1]))
    if annotation is dict:
        return ANY
    if isinstance(annotation, type) and attrs.has(annotation):
        return record(annotation.__name__)
    return ANY


@lru_cache(maxsize=None)
def record_fields(name: str) -> dict[str, FieldInfo]:
    """API field name → FieldInfo for a named record type."""
    if name == "Cluster":
        return {k: FieldInfo(of_type(), None, k) for k, (of_type, _) in CLUSTER_FIELDS.items()}
    if name == "Kubernetes":    # the `kubernetes` scope: the target's version and gates (target.py)
        return {"version": FieldInfo(STRING, None), "minor": FieldInfo(INT, None),
                "gates": FieldInfo(record("FeatureGates"), None)}
    if name == "FeatureGates":
        from .target import MODELLED
        return {gate: FieldInfo(BOOL, None) for gate in MODELLED}
    if name not in model_schema():
        return {}
    out = dict(model_schema()[name])
    for field, (type_fn, derived) in DERIVED.get(name, {}).items():
        out[field] = FieldInfo(type_fn(), None, derived)
    return out


def model_record(name: str) -> Type | None:
    """The record type of a cluster object kind (``NodeAffinity``), for typed params."""
    return record(name) if name in model_schema() else None


def fields_of(t: Type) -> dict[str, Type] | None:
    if t.kind != "record":
        return None
    if t.name:
        return {k: v.type for k, v in record_fields(t.name).items()}
    return dict(t.fields)

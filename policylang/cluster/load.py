"""Load cluster state from kubectl-style YAML or JSON: one object, many documents,
``kind: List``, or a directory of such files.

Everything that goes wrong names the file, the object (kind namespace/name) and the field.
"""

from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path
import re
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from ..api.errors import go_value
from ..diagnostics import InputError
from ..inputs import STDIN, decode, json_document, read_bytes, universal_newlines, yaml_documents
from . import validation
from ..api import model
from ..api.quantity import Quantity, QuantityError, parse_quantity

if TYPE_CHECKING:
    from .state import ClusterState

# Each kind the loader reads, and its class in api.model (by name: a dump without volumes or
# devices builds none of their classes).
KINDS: dict[str, str] = {
    "Node": "Node",
    "Pod": "Pod",
    "Namespace": "Namespace",
    "PriorityClass": "PriorityClass",
    "Service": "Service",
    "ReplicaSet": "Workload",
    "StatefulSet": "Workload",
    "ReplicationController": "Workload",
    "PodDisruptionBudget": "PodDisruptionBudget",
    "PersistentVolume": "PersistentVolume",
    "PersistentVolumeClaim": "PersistentVolumeClaim",
    "StorageClass": "StorageClass",
    "CSINode": "CSINode",
    "CSIDriver": "CSIDriver",
    "CSIStorageCapacity": "CSIStorageCapacity",
    "VolumeAttachment": "VolumeAttachment",
    "DeviceClass": "DeviceClass",
    "ResourceClaim": "ResourceClaim",
    "ResourceClaimTemplate": "ResourceClaimTemplate",
    "ResourceSlice": "ResourceSlice",
    "DeviceTaintRule": "DeviceTaintRule",
}


def _make_converter(validate: bool) -> cattrs.Converter:
    """The loader's converter: strict about types, as the API's decoding is; with ``validate``,
    every object is also checked as the API server validates it (cluster/validation/), in the
    same pass."""
    conv = cattrs.Converter(forbid_extra_keys=False)

    def quantity(value: Any, _type) -> Quantity:
        try:
            return parse_quantity(value)
        except QuantityError as err:
            raise ValueError(str(err)) from None

    conv.register_structure_hook(Quantity, quantity)

    def strict_str(value: Any, _type) -> str:
        # A number or a boolean where the API has a string (`value: 1` in a toleration, an
        # unquoted label value) is refused by the API server's decoding, so here too.
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {_type_name(value)} {_short(go_value(value))}")
        return value

    def strict_int(value: Any, _type) -> int:
        # The API decodes JSON numbers only: `containerPort: "8080"` is refused, as kubectl refuses it.
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {_type_name(value)} {_short(go_value(value))}")
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"integer {_short(str(value))} is out of range (a 64-bit integer in the API)")
        return value

    def strict_bool(value: Any, _type) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {_type_name(value)} {_short(go_value(value))}")
        return value

    def int_or_string(value: Any, _type) -> int | str:
        if isinstance(value, str):
            return value
        return strict_int(value, int) if isinstance(value, int) and not isinstance(value, bool) else _not_int_or_string(value)

    def _not_int_or_string(value: Any):
        raise ValueError(f"expected an integer or a string, got {_type_name(value)} {_short(go_value(value))}")

    conv.register_structure_hook(model.IntOrString, int_or_string)
    conv.register_structure_hook(Optional[model.IntOrString], int_or_string)   # nulls are dropped before
    conv.register_structure_hook(str, strict_str)
    conv.register_structure_hook(int, strict_int)
    conv.register_structure_hook(bool, strict_bool)

    def attrs_hook(cls):
        renames = {a.name: override(rename=model.api_name(a.name)) for a in attrs.fields(cls)}
        fn = make_dict_structure_fn(cls, conv, **renames)

        check = validation.CHECKS.get(cls.__name__) if validate else None

        def structure(value, _type):
            if not isinstance(value, dict):
                raise ValueError(f"expected an object, got {_type_name(value)}")
            # A null field is an absent field (JSON dumps and hand-written YAML both have them).
            if None in value.values():
                value = {k: v for k, v in value.items() if v is not None}
            obj = fn(value, _type)
            if check is not None:
                for path, body in check(obj):
                    raise validation.FieldProblem(path, body)
            return obj

        return structure

    conv.register_structure_hook_factory(attrs.has, attrs_hook)
    return conv


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


def _type_name(value: Any) -> str:
    """A decoded value's type in the API's words."""
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "list",
            dict: "object"}.get(type(value), type(value).__name__)


CONVERTER = _make_converter(validate=False)   # types only: what upstream's plugin tests build
VALIDATING = _make_converter(validate=True)   # types and the API server's validation: user files


_JSON_START = re.compile(r"\s*[{\[]")


def _state(objects) -> "ClusterState":
    # Imported here: the state pulls in numpy and every index, which a caller that only
    # structures objects (a policy's typed params, `check`) has no use for.
    from .state import ClusterState
    return ClusterState.build(objects)


def load_cluster(paths: Iterable[str | Path]) -> "ClusterState":
    """The state of every object in ``paths``; an object (kind, namespace, name) found twice is an
    error naming both places, since it would count twice (its pods' requests, say)."""
    with _loading():
        objects, seen = [], {}
        for path in _distinct(paths):
            for file, obj in _typed(path):
                key = _identity(obj)
                if key in seen:
                    where = f"twice in {file}" if seen[key] == file else f"in both {seen[key]} and {file}"
                    raise InputError(f"the same object is {where}: give each object once", path=file,
                                     obj=f"{key[0]} {key[1] + '/' if key[1] else ''}{key[2]}")
                seen[key] = file
                objects.append(obj)
        return _state(objects)


def _identity(obj) -> tuple[str, str, str]:
    meta = obj.metadata
    return getattr(obj, "kind", None) or type(obj).__name__, meta.namespace or "", meta.name


def load_documents(source: str, docs: Iterable[Any]) -> "ClusterState":
    """The state of parsed documents (an API server's list responses), as `load_cluster`'s of files."""
    with _loading():
        return _state(objects_from_documents(source, docs))


@contextlib.contextmanager
def _loading():
    """Loading with Python's cyclic garbage collector paused, for the load only. A large dump
    makes millions of objects and no garbage cycles: collecting during the load would scan
    them again and again, and so would the first young collections after it, since objects
    made while the collector is off are all young. So at the end they are moved to the oldest
    generation unscanned (gc.freeze moves every tracked object to the permanent generation,
    gc.unfreeze at once back to the oldest one); nothing stays frozen, and the collector is
    left on or off as it was found."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():   # someone else's freeze is theirs to undo
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def _distinct(paths: Iterable[str | Path]) -> list[str | Path]:
    """The paths without repeats (the same file given twice, or by two spellings, would count
    its pods twice)."""
    seen, out = set(), []
    for path in paths:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append(path)
    return out


def load_objects(path: str | Path, kinds: Iterable[str] | None = None) -> list:
    """Every object in a file or directory, typed and validated as the API server validates it;
    unknown kinds are ignored. An error names the file with the line and column of the field."""
    return [obj for _, obj in _typed(path, kinds)]


def objects_from_documents(source: str, docs: Iterable[Any], kinds: Iterable[str] | None = None) -> list:
    """Every object in these parsed documents (objects or lists, as a file holds them, or as an
    API server's list responses are), typed as `load_objects` types a file's; errors name
    ``source`` (an API server's URL) where they would name the file."""
    def numbered() -> Iterator[tuple[str, int, dict]]:
        index = 0
        for doc in docs:
            for obj in _flatten(doc, source):
                yield source, index, obj
                index += 1
    return [obj for _, obj in _typed_documents(numbered(), kinds)]


def _typed(path: str | Path, kinds: Iterable[str] | None = None) -> Iterator[tuple[str, Any]]:
    """(file, object) for every object of a known kind in a file or directory."""
    return _typed_documents(_documents(Path(path)), kinds)


def _typed_documents(documents: Iterable[tuple[str, int, dict]], kinds: Iterable[str] | None) -> Iterator[tuple[str, Any]]:
    wanted = set(kinds) if kinds else None
    for file, index, raw in documents:
        kind = raw.get("kind")
        if kind not in KINDS or (wanted and kind not in wanted):
            continue
        try:
            obj = cluster_object(raw, file, index)
        except InputError as err:
            raise _located(err, file, index) from None
        yield file, obj


def cluster_object(raw: dict, file: str, index: int = 0):
    """One object of a cluster (of a kind in KINDS), typed and validated as `structure_object`
    does, and a Node named (every pod with an empty nominatedNodeName would match one without)."""
    meta = raw.get("metadata")
    if raw.get("kind") == "Node" and not (meta.get("name") if isinstance(meta, dict) else None):
        raise InputError("a Node needs a name", path=file, obj=f"Node #{index + 1}", field="metadata.name")
    return structure_object(raw, file, index)


def _located(err: InputError, file: str, index: int) -> InputError:
    """The error with the line and column of its field in the file (read again, with marks: only
    when something is wrong, so loading stays as fast as construction without marks)."""
    from .locate import locate
    where = locate(file, index, err.field)
    if where is None:
        return err
    return InputError(err.message, path=err.path, obj=err.obj, field=err.field, line=where[0], column=where[1])


def structure_object(raw: dict, file: str, index: int = 0, validate: bool = True):
    """One object typed; with ``validate`` (user files) also checked as the API server checks it.
    Upstream's plugin tests build objects the API server would refuse (an invalid selector, to
    test what the plugin does with it): their tables load with ``validate=False``."""
    kind = raw["kind"]
    cls = getattr(model, KINDS[kind])
    raw = {k: v for k, v in raw.items() if v is not None}
    if kind in _RESHAPED and not isinstance(raw.get("spec", {}), dict):
        # _prepare reshapes the spec, so its type is checked first (issue 29: a traceback before).
        raise InputError(f"expected an object, got {type(raw['spec']).__name__}", path=file,
                         obj=_describe(raw, index), field="spec")
    raw = _prepare(kind, raw)
    if validate:    # what the API server stores: its dropDisabledFields, before it validates
        raw = validation.drop_disabled(kind, raw)
    _check_names(kind, raw, file, index)
    try:
        obj = (VALIDATING if validate else CONVERTER).structure(raw, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError) as err:
        raise InputError(first_error(err), path=file, obj=_describe(raw, index), field=field_of(err)) from None
    return _apply_defaults(obj)


def problems(raw: dict) -> list[tuple[str | None, str]]:
    """Every (field, message) the API server would refuse in one object, not only the first
    (lint reports them all)."""
    kind = raw["kind"]
    raw = validation.drop_disabled(kind, _prepare(kind, {k: v for k, v in raw.items() if v is not None}))
    try:
        VALIDATING.structure(raw, getattr(model, KINDS[kind]))
    except (cattrs.BaseValidationError, ValueError, TypeError) as err:
        return [(None if path == "(object)" else path, str(e)) for path, e in _leaves(err)]
    return []


def _check_names(kind: str, raw: dict, file: str, index: int) -> None:
    """What the API server would never store: control characters in a name (they would reach
    the terminal raw)."""
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    for field in ("name", "namespace"):
        value = meta.get(field)
        if isinstance(value, str) and any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
            raise InputError(f"{field} {value!r} contains control characters", path=file,
                             obj=f"{kind} #{index + 1}", field=f"metadata.{field}")


def _describe(raw: dict, index: int) -> str:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    name = meta.get("name") or f"#{index + 1}"
    ns = meta.get("namespace")
    return f"{raw.get('kind')} {f'{ns}/' if ns else ''}{name}"


def first_error(err: Exception) -> str:
    leaf = _leaves(err)
    return _plain(leaf[0][1]) if leaf else _plain(err)


# What cattrs' own structuring of a dict or a list field raises on a value of another type, and
# what that means to the author of the file.
_PYTHON_TYPE_ERRORS = (re.compile(r"'(\w+)' object has no attribute 'items'"), "expected a mapping, got {}"), \
                      (re.compile(r"'(\w+)' object is not iterable"), "expected a list, got {}")


def _plain(err: Exception) -> str:
    text = str(err)
    if isinstance(err, (AttributeError, TypeError)):
        for pattern, message in _PYTHON_TYPE_ERRORS:
            m = pattern.fullmatch(text)
            if m:
                return message.format(m.group(1))
    return text


def field_of(err: Exception) -> str | None:
    leaf = _leaves(err)
    return leaf[0][0] if leaf and leaf[0][0] != "(object)" else None


def _leaves(err: Exception, prefix: str = "") -> list[tuple[str, Exception]]:
    """Walk cattrs' exception groups down to the failing value, building its field path (a
    validation problem names its own field below the value that failed)."""
    if not isinstance(err, cattrs.BaseValidationError):
        if isinstance(err, validation.FieldProblem) and err.path:
            prefix += err.path if err.path.startswith("[") else f".{err.path}"
        return [(prefix.lstrip(".") or "(object)", err)]
    found = []
    for sub in err.exceptions:
        notes = [n for n in getattr(sub, "__notes__", []) if hasattr(n, "name") or hasattr(n, "index")]
        note = notes[0] if notes else None
        name = getattr(note, "name", None)
        index = getattr(note, "index", None)
        if name is not None:
            step = f".{model.api_name(name)}"
        elif index is not None:
            step = f"[{index!r}]" if not isinstance(index, int) else f"[{index}]"
        else:
            step = ""
        found.extend(_leaves(sub, prefix + step))
    return found


def _documents(path: Path) -> Iterator[tuple[str, int, dict]]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
        for f in files:
            yield from _documents(f)
        return
    from .locate import STDIN_NAME, remember_stdin
    name = STDIN_NAME if str(path) == STDIN else str(path)
    text = universal_newlines(decode(read_bytes(path), name))
    if name == STDIN_NAME:
        remember_stdin(text)    # read once: kept to locate an error in it
    is_json = path.suffix == ".json" or (name == STDIN_NAME and _JSON_START.match(text) is not None)
    docs = [json_document(text, name)] if is_json else yaml_documents(text, name)
    index = 0
    for number, doc in enumerate(docs):
        try:
            for obj in _flatten(doc, name):
                yield name, index, obj
                index += 1
        except InputError as err:
            if err.line is not None:
                raise
            from .locate import locate_in_document
            where = locate_in_document(name, number, err.field)
            if where is None:
                raise
            raise InputError(err.message, path=err.path, obj=err.obj, field=err.field, line=where[0],
                             column=where[1]) from None


def _flatten(doc: Any, file: str, at: str = "") -> Iterator[dict]:
    """The objects of a document (a List's items, a *List's, nested); an error names the field
    path within the document (``items[3].kind``)."""
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise InputError(f"expected a Kubernetes object (a mapping), got {_type_name(doc)}", path=file,
                         field=at or None)
    kind = doc.get("kind")
    if not isinstance(kind, str):
        raise InputError("object has no 'kind'", path=file, obj=_describe({**doc, "kind": "?"}, 0),
                         field=f"{at}.kind" if at else "kind")
    if kind == "List" or kind.endswith("List"):
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError("expected a list", path=file, obj=kind, field=f"{at}.items" if at else "items")
        item_kind = kind[:-4] if kind != "List" else None
        for i, item in enumerate(items):
            if isinstance(item, dict) and item_kind and "kind" not in item:
                item = {**item, "kind": item_kind}
            yield from _flatten(item, file, f"{at}.items[{i}]" if at else f"items[{i}]")
        return
    yield doc


_RESHAPED = ("ReplicaSet", "StatefulSet", "ReplicationController")


def _prepare(kind: str, raw: dict) -> dict:
    """Shape differences between kinds that share a model class."""
    if kind == "ReplicationController":
        spec = dict(raw.get("spec") or {})
        if isinstance(spec.get("selector"), dict):
            spec["selector"] = {"matchLabels": spec["selector"]}
        raw = {**raw, "spec": spec}
    if kind in _RESHAPED:
        spec = raw.get("spec") or {}
        raw = {**raw, "spec": {k: v for k, v in spec.items() if k in ("selector", "replicas")}}
    return raw


def _apply_defaults(obj):
    """The API server's defaults for fields a hand-written manifest leaves out."""
    if isinstance(obj, model.Pod):
        # Most dumps already carry every default: change (and copy) only what needs it.
        meta, spec = obj.metadata, obj.spec
        if not meta.namespace:
            meta = attrs.evolve(meta, namespace="default")
        containers = tuple(_default_container(c, spec.host_network) for c in spec.containers)
        init_containers = tuple(_default_container(c, spec.host_network) for c in spec.init_containers)
        if (containers, init_containers) != (spec.containers, spec.init_containers) or not spec.scheduler_name:
            spec = attrs.evolve(spec, containers=containers, init_containers=init_containers,
                                scheduler_name=spec.scheduler_name or "default-scheduler")
        if meta is obj.metadata and spec is obj.spec:
            return obj
        return attrs.evolve(obj, metadata=meta, spec=spec)
    kind = type(obj).__name__       # by name: a Node or a Service builds no storage or DRA class
    if kind in _NAMESPACED and not obj.metadata.namespace:
        obj = attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, namespace="default"))
    return _storage_defaults(obj) if kind in _STORAGE_DEFAULTED else obj


# The model classes of namespaced kinds besides Pod (an object without a namespace is in
# "default"), and of the storage kinds with defaults.
_NAMESPACED = frozenset({"Service", "Workload", "PodDisruptionBudget", "PersistentVolumeClaim", "CSIStorageCapacity",
                         "ResourceClaim", "ResourceClaimTemplate"})
_STORAGE_DEFAULTED = frozenset({"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSIDriver"})


def _storage_defaults(obj):
    """pkg/apis/core/v1 and pkg/apis/storage/v1 defaults of the storage kinds."""
    if isinstance(obj, model.PersistentVolumeClaim):
        return attrs.evolve(obj, spec=attrs.evolve(obj.spec, volume_mode=obj.spec.volume_mode or "Filesystem"),
                            status=attrs.evolve(obj.status, phase=obj.status.phase or "Pending"))
    if isinstance(obj, model.PersistentVolume):
        spec = attrs.evolve(obj.spec, volume_mode=obj.spec.volume_mode or "Filesystem",
                            persistent_volume_reclaim_policy=obj.spec.persistent_volume_reclaim_policy or "Retain")
        return attrs.evolve(obj, spec=spec, status=attrs.evolve(obj.status, phase=obj.status.phase or "Pending"))
    if isinstance(obj, model.StorageClass):
        return attrs.evolve(obj, reclaim_policy=obj.reclaim_policy or "Delete",
                            volume_binding_mode=obj.volume_binding_mode or "Immediate")
    if isinstance(obj, model.CSIDriver):
        s = obj.spec
        spec = attrs.evolve(
            s, attach_required=True if s.attach_required is None else s.attach_required,
            pod_info_on_mount=bool(s.pod_info_on_mount), storage_capacity=bool(s.storage_capacity),
            requires_republish=bool(s.requires_republish), se_linux_mount=bool(s.se_linux_mount),
            fs_group_policy=s.fs_group_policy or "ReadWriteOnceWithFSType",
            volume_lifecycle_modes=s.volume_lifecycle_modes or ("Persistent",))
        return attrs.evolve(obj, spec=spec)
    return obj


def _default_container(c: model.Container, host_network: bool) -> model.Container:
    # A container with limits but no request for a resource requests its limit.
    res = c.resources
    if res.limits and any(name not in res.requests for name in res.limits):
        requests = {**res.limits, **res.requests}
        c = attrs.evolve(c, resources=attrs.evolve(res, requests=requests))
    # With hostNetwork every container port is a host port.
    if any(not p.protocol or (host_network and not p.host_port) for p in c.ports):
        ports = tuple(attrs.evolve(p, protocol=p.protocol or "TCP",
                                   host_port=p.host_port or (p.container_port if host_network else 0))
                      for p in c.ports)
        c = attrs.evolve(c, ports=ports)
    return c

"""The admission webhook: an AdmissionReview (admission.k8s.io/v1) of a Pod CREATE → the JSONPatch
(RFC 6902) that adds what the profile's matching `rule`s add, exactly as `simulate` applies them
(Executable.apply_rules): tolerations, and topology spread constraints selecting the pod's own
labels. The pod is otherwise left alone; a pod no rule matches gets no patch.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING

from ..cluster.dump import CONVERTER
from ..cluster.state import ClusterState
from .extender import BadRequest, decode_pod, json_type, pod_meta
from ..run.executable import Executable

if TYPE_CHECKING:
    from ..engine import Engine

REVIEW_API = "admission.k8s.io/v1"


class Shape(dict):
    """An object's fields and the shape of each (k8s.io/api/admission/v1's types): a Shape, a
    one-element list (an array of that), or "string", "bool", "object" (any object: a
    runtime.RawExtension); the field "*" stands for every key (a map)."""

    def __init__(self, name: str, fields: dict):
        super().__init__(fields)
        self.name = name


_GVK = Shape("GroupVersionKind", {"group": "string", "version": "string", "kind": "string"})
_GVR = Shape("GroupVersionResource", {"group": "string", "version": "string", "resource": "string"})
_USER = Shape("UserInfo", {"username": "string", "uid": "string", "groups": ["string"],
                           "extra": Shape("map of string arrays", {"*": ["string"]})})
_REQUEST = Shape("AdmissionRequest", {
    "uid": "string", "kind": _GVK, "resource": _GVR, "subResource": "string", "requestKind": _GVK,
    "requestResource": _GVR, "requestSubResource": "string", "name": "string", "namespace": "string",
    "operation": "string", "userInfo": _USER, "object": "object", "oldObject": "object", "dryRun": "bool",
    "options": "object"})
_ARTICLES = {"string": "a string", "bool": "a boolean", "object": "an object"}


def check_shape(value, shape, path: str) -> None:
    """``value`` has ``shape`` (null anywhere is an unset field, as Go reads it), else BadRequest
    naming the first field that does not."""
    if value is None:
        return
    if isinstance(shape, Shape):
        if not isinstance(value, dict):
            raise BadRequest(f"{path}: expected a {shape.name} object, got {json_type(value)}")
        for key, sub in shape.items():
            if key == "*":
                for k, v in value.items():
                    check_shape(v, sub, f"{path}[{k}]")
            elif key in value:
                check_shape(value[key], sub, f"{path}.{key}")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise BadRequest(f"{path}: expected an array, got {json_type(value)}")
        for i, v in enumerate(value):
            check_shape(v, shape[0], f"{path}[{i}]")
    elif json_type(value) != {"object": "object", "string": "string", "bool": "bool"}[shape]:
        raise BadRequest(f"{path}: expected {_ARTICLES[shape]}, got {json_type(value)}")


def _api(obj) -> dict:
    out = CONVERTER.unstructure(obj)
    selector = getattr(obj, "label_selector", None)
    if selector is not None:
        # The dump leaves empty values out, but an empty selector selects every pod while a
        # missing one selects none: a pod without labels must get `labelSelector: {}` kept.
        out["labelSelector"] = {**CONVERTER.unstructure(selector), "matchLabels": dict(selector.match_labels)}
    return out


def rule_patch(raw_pod: dict, before, after) -> list:
    """JSONPatch ops turning ``raw_pod`` into the pod with ``after``'s added tolerations and spread
    constraints (apply_rules only ever appends to those two lists)."""
    ops = []
    spec = raw_pod.get("spec") or {}
    for field, attr in (("tolerations", "tolerations"), ("topologySpreadConstraints", "topology_spread_constraints")):
        added = list(getattr(after.spec, attr))[len(getattr(before.spec, attr)):]
        if not added:
            continue
        values = [_api(v) for v in added]
        if not spec.get(field):
            ops.append({"op": "add", "path": f"/spec/{field}", "value": values})
        else:
            ops += [{"op": "add", "path": f"/spec/{field}/-", "value": v} for v in values]
    return ops


class Admission:
    def __init__(self, engine: "Engine"):
        """``engine``: its profiles' whole plans (rules may live in any of their policies), and
        which profile a pod is for (none: another scheduler's pod, left alone)."""
        self.engine = engine

    def _exe(self, pod) -> "Executable | None":
        return self.engine.executable(pod)

    def review(self, state: ClusterState, body) -> tuple[dict, int]:
        """The AdmissionReview response, and how many patch operations it carries."""
        if not isinstance(body, dict):
            raise BadRequest(f"AdmissionReview: expected an AdmissionReview object, got {json_type(body)}")
        if body.get("apiVersion") != REVIEW_API or body.get("kind") != "AdmissionReview":
            raise BadRequest(f"AdmissionReview: expected apiVersion {REVIEW_API}, kind AdmissionReview")
        request = body.get("request")
        if request is None:
            raise BadRequest("AdmissionReview.request is required")
        check_shape(request, _REQUEST, "AdmissionReview.request")
        uid = request.get("uid")
        if uid is None:
            raise BadRequest("AdmissionReview.request.uid is required")
        response = {"uid": uid, "allowed": True}
        obj = request.get("object")
        kind = request.get("kind") or {}
        if request.get("operation") == "CREATE" and kind.get("kind") == "Pod":
            if obj is None:
                raise BadRequest("AdmissionReview.request.object is required (a Pod CREATE)")
            pod = decode_pod(_named(obj, request), "AdmissionReview.request.object")
            exe = self._exe(pod)
            if exe is not None and exe.rules:
                ops = rule_patch(obj, pod, exe.apply_rules(state, pod))
                if ops:
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
                    return {"apiVersion": REVIEW_API, "kind": "AdmissionReview", "response": response}, len(ops)
        return {"apiVersion": REVIEW_API, "kind": "AdmissionReview", "response": response}, 0


def _named(obj: dict, request: dict) -> dict:
    """The pod as the loader reads it: on CREATE its namespace is the request's, and a pod with
    only generateName has no name yet."""
    if not isinstance(obj, dict):
        raise BadRequest(f"AdmissionReview.request.object: expected a Pod object, got {json_type(obj)}")
    meta = dict(pod_meta(obj, "AdmissionReview.request.object"))
    if not meta.get("namespace"):
        meta["namespace"] = request.get("namespace") or "default"
    if not meta.get("name"):
        meta["name"] = (meta.get("generateName") or "pod") + "pending"
    return {**obj, "metadata": meta}

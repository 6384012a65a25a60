"""Expand workload manifests (Deployment, StatefulSet, ReplicaSet, Job) into the pods their
controllers would create, for `simulate --replicas`."""

from __future__ import annotations

from pathlib import Path

from ..diagnostics import InputError
from .load import _documents, structure_object

WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet", "Job")


# The controller that owns the pods (a Deployment's pods belong to its ReplicaSet), which
# kube-scheduler's default topology spreading looks up.
OWNER_KIND = {"Deployment": "ReplicaSet", "ReplicaSet": "ReplicaSet", "StatefulSet": "StatefulSet"}


def expand_workloads(path: str | Path, replicas: int | None = None, max_pods: int | None = None) -> tuple[list, list]:
    """One Pod per replica of every workload in ``path`` (``replicas`` overrides the
    manifests'), and the controllers that own them; more than ``max_pods`` in all is an input
    error, before any is made."""
    pods, owners = [], []
    for file, index, raw in _documents(Path(path)):
        kind = raw.get("kind")
        if kind not in WORKLOADS:
            continue
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        template = spec.get("template")
        name = meta.get("name") or f"{kind.lower()}-{index}"
        if not isinstance(template, dict):
            raise InputError("a workload needs a pod template", path=file, obj=f"{kind} {name}", field="spec.template")
        count = replicas if replicas is not None else (
            spec.get("parallelism", 1) if kind == "Job" else spec.get("replicas", 1))
        if max_pods is not None and (not isinstance(count, int) or len(pods) + count > max_pods):
            raise InputError(f"more than {max_pods} pods in all (replicas: {count!r})", path=file,
                             obj=f"{kind} {name}", field="spec.replicas")
        tmeta = dict(template.get("metadata") or {})
        namespace = meta.get("namespace", "default")
        if kind in OWNER_KIND:
            owner = {"apiVersion": "apps/v1", "kind": OWNER_KIND[kind], "name": name, "uid": f"{namespace}/{name}",
                     "controller": True}
            tmeta["ownerReferences"] = [owner]
            owners.append(structure_object({"apiVersion": "apps/v1", "kind": OWNER_KIND[kind],
                                            "metadata": {"name": name, "namespace": namespace},
                                            "spec": {"selector": spec.get("selector")}}, file, index))
        for i in range(count):
            # StatefulSets name pods by ordinal; the others get a suffix as their controllers do.
            pod_name = f"{name}-{i}" if kind == "StatefulSet" else f"{name}-{i:05d}"
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {**tmeta, "name": pod_name, "namespace": namespace},
                   "spec": template.get("spec") or {}}
            pods.append(structure_object(pod, file, index))
    return pods, owners

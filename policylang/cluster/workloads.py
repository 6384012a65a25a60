"""Workload manifests (Deployment, ReplicaSet, ReplicationController, StatefulSet, Job, CronJob,
DaemonSet) as the pods their controllers would create, beside the plain Pods of the same files:
what every verb that places pods reads (`--pod`, `--pods`, `--replicas`)."""

from __future__ import annotations

from pathlib import Path

from ..admission.storage import with_default_class
from ..api import model
from ..api.selectors import node_selector_matches, tolerates
from ..diagnostics import InputError
from .load import _documents, _located, structure_object

# The controller that owns the pods (a Deployment's pods belong to its ReplicaSet), which
# kube-scheduler's default topology spreading and its listers look up.
OWNER_KIND = {"Deployment": "ReplicaSet", "ReplicaSet": "ReplicaSet", "ReplicationController": "ReplicationController",
              "StatefulSet": "StatefulSet"}
WORKLOADS = (*OWNER_KIND, "Job", "CronJob", "DaemonSet")

# The tolerations the DaemonSet controller adds to its pods
# (pkg/controller/daemon/util/daemonset_util.go, AddOrUpdateDaemonPodTolerations): key, effect.
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
DAEMON_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")

# The most pods one run expands workloads into: far beyond any batch worth simulating, and a bound
# on what `replicas: 1000000000` would otherwise make.
MAX_WORKLOAD_PODS = 100_000


def read_pods_and_workloads(path: str | Path, replicas: int | None, state,
                            max_pods: int = MAX_WORKLOAD_PODS, plain_pods: bool = True) -> tuple[list, list]:
    """The Pods in ``path`` and one Pod per replica of each workload there (``replicas``
    overrides the manifests' counts), in the files' order; the controllers that own them. A
    StatefulSet's volumeClaimTemplates become the claims its controller would make, added to
    ``state`` unless they exist; a DaemonSet makes a pod for each node of ``state`` its
    controller would run one on. More than ``max_pods`` pods in all is an input error, before any
    is made. Without ``plain_pods``, only workloads are read. An error names the file with the
    line and column of the field: a workload's pods and claims are located at their templates."""
    pods, owners = [], []
    for file, index, raw in _documents(Path(path)):
        kind = raw.get("kind")
        try:
            if kind == "Pod" and plain_pods:
                pods.append(structure_object(raw, file, index))
            elif kind in WORKLOADS:
                made, owner = _expand(raw, file, index, replicas, state, max_pods, len(pods))
                pods += made
                owners += owner
        except InputError as err:
            raise _located(err, file, index) from None
    return pods, owners


def _made(raw: dict, file: str, index: int, where: dict, template: str, names=("metadata.name",
          "metadata.namespace")):
    """An object made from a template of the workload (a pod, a claim), typed: an error in it
    names the workload and the field of the template it comes from (its name and namespace are
    the workload's, at ``names``)."""
    try:
        return structure_object(raw, file, index)
    except InputError as err:
        field = err.field if err.field in names or not template else \
            f"{template}.{err.field}" if err.field else template
        raise InputError(err.message, field=field, **where) from None


def _expand(raw: dict, file: str, index: int, replicas: int | None, state, max_pods: int,
            made: int) -> tuple[list, list]:
    kind, meta = raw["kind"], _mapping(raw.get("metadata"))
    spec = _mapping(raw.get("spec"))
    name = meta.get("name") or f"{kind.lower()}-{index}"
    namespace = meta.get("namespace") or "default"
    where = {"path": file, "obj": f"{kind} {namespace}/{name}"}
    if kind == "CronJob":
        spec = _mapping(_mapping(spec.get("jobTemplate")).get("spec"))
    template = spec.get("template")
    template_field = "spec.jobTemplate.spec.template" if kind == "CronJob" else "spec.template"
    if not isinstance(template, dict):
        raise InputError("a workload needs a pod template", field=template_field, **where)
    tmeta = dict(_mapping(template.get("metadata")))
    pod_spec = dict(_mapping(template.get("spec")))
    owners = []
    if kind in OWNER_KIND:
        owner = OWNER_KIND[kind]
        tmeta["ownerReferences"] = [{"apiVersion": "v1" if owner == "ReplicationController" else "apps/v1",
                                     "kind": owner, "name": name, "uid": f"{namespace}/{name}", "controller": True}]
        owners.append(_made({"apiVersion": "apps/v1", "kind": owner,
                             "metadata": {"name": name, "namespace": namespace},
                             "spec": {"selector": spec.get("selector")}}, file, index, where, ""))

    def pod(pod_name: str, pod_spec: dict) -> model.Pod:
        return _made({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {**tmeta, "name": pod_name, "namespace": namespace},
                      "spec": pod_spec}, file, index, where, template_field)

    if kind == "DaemonSet":
        return _daemon_pods(name, pod_spec, pod, state), owners
    count = replicas if replicas is not None else _count(kind, spec, where)
    if made + count > max_pods:
        raise InputError(f"{count} replicas would make more than the {max_pods} pods one run expands workloads "
                         f"into (give fewer with --replicas)", **where)
    if kind == "StatefulSet":
        # Pods by ordinal, each mounting its own claims (pkg/controller/statefulset/stateful_set_utils.go).
        templates = spec.get("volumeClaimTemplates") or []
        return [pod(f"{name}-{i}", _with_claims(pod_spec, templates, name, namespace, i, file, index, state, where))
                for i in range(count)], owners
    return [pod(f"{name}-{i:05d}", pod_spec) for i in range(count)], owners


def _count(kind: str, spec: dict, where: dict) -> int:
    field = "parallelism" if kind in ("Job", "CronJob") else "replicas"
    count = spec.get(field, 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InputError(f"expected a non-negative integer, got {count!r}", field=f"spec.{field}", **where)
    return count


def _with_claims(pod_spec: dict, templates: list, name: str, namespace: str, ordinal: int, file: str, index: int,
                 state, where: dict) -> dict:
    """The pod spec with a volume per claim template, named as the template, mounting the claim
    ``<template>-<statefulset>-<ordinal>``; each claim is made (unbound, as the controller creates
    it) unless the state has it already."""
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or [] if isinstance(v, dict)}
    for j, template in enumerate(templates):
        tmeta = _mapping(_mapping(template).get("metadata"))
        claim = f"{tmeta.get('name', '')}-{name}-{ordinal}"
        volumes[tmeta.get("name", "")] = {"name": tmeta.get("name", ""), "persistentVolumeClaim": {"claimName": claim}}
        if (namespace, claim) not in state.claims:
            at = f"spec.volumeClaimTemplates[{j}]"
            # The controller creates the claim through the API server: DefaultStorageClass names
            # the default class for a template that names none.
            state.add_claim(_made(with_default_class(
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {**tmeta, "name": claim, "namespace": namespace},
                 "spec": _mapping(template).get("spec") or {}}, state.storage_classes.values()),
                file, index, where, at, names=("metadata.namespace",)))
    return {**pod_spec, "volumes": list(volumes.values())} if templates else pod_spec


def _daemon_pods(name: str, pod_spec: dict, pod, state) -> list:
    """A pod for each node the DaemonSet controller would run one on
    (pkg/controller/daemon/daemon_controller.go, NodeShouldRunDaemonPod): the template's node name,
    node selector and required node affinity match the node, and no NoSchedule or NoExecute taint is
    left untolerated once the daemon tolerations are added. Each pod is pinned to its node by a
    required node affinity on metadata.name (ReplaceDaemonSetPodNodeNameNodeAffinity)."""
    wanted = [*DAEMON_TOLERATIONS, *([DAEMON_HOST_NETWORK_TOLERATION] if pod_spec.get("hostNetwork") else [])]
    tolerations = pod_spec.get("tolerations") or []
    tolerations = list(tolerations) if isinstance(tolerations, list) else tolerations   # else refused, as given
    for key, effect in wanted if isinstance(tolerations, list) else ():
        # AddOrUpdateTolerationInPodSpec: one of the same key and effect is replaced (one that is not
        # an object stays, for the pod's typing to refuse).
        tolerations = [t for t in tolerations
                       if not isinstance(t, dict) or (t.get("key"), t.get("effect")) != (key, effect)]
        tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    daemon_spec = {**pod_spec, "tolerations": tolerations}
    template = pod(name, daemon_spec)
    out = []
    for node in state.nodes.values():
        if not _should_run(template, node):
            continue
        affinity = dict(_mapping(daemon_spec.get("affinity")))
        node_affinity = dict(_mapping(affinity.get("nodeAffinity")))
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.name]}]}]}
        pinned = {**daemon_spec, "affinity": {**affinity, "nodeAffinity": node_affinity}}
        out.append(pod(f"{name}-{node.name}", pinned))
    return out


def _should_run(pod: model.Pod, node: model.Node) -> bool:
    spec = pod.spec
    if spec.node_name and spec.node_name != node.name:
        return False
    labels = node.metadata.labels
    if any(labels.get(k) != v for k, v in spec.node_selector.items()):
        return False
    required = spec.affinity and spec.affinity.node_affinity and \
        spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required and not node_selector_matches(required, node):
        return False
    return all(any(tolerates(t, taint) for t in spec.tolerations)
               for taint in node.spec.taints if taint.effect in ("NoSchedule", "NoExecute"))


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}

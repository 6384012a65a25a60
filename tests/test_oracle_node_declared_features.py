"""Differential tests for NodeDeclaredFeatures against kube-scheduler v1.37.2's and v1.36.3's
frameworks (the oracles built with oracle/k8s-1.37.mod and k8s-1.36.mod): Hypothesis clusters whose
nodes declare some of the registry's features (and names it does not know), and a pending pod that
needs some of them (a RestartAllContainers restart rule on a container or an init container,
hostNetwork with hostUsers false, bindMountOptions on a mount), decided by the default profile
compiled for the version and by its oracle: the feasible set, every node's failing plugin, code and
reasons, and the FitError. Scores and the message's PostFilter part are left out:
NodeDeclaredFeatures neither scores nor has a PostFilter, and the other plugins' 1.36/1.37 scores
and PostFilter texts are other work's (issue 39) and their own differential tests'.

The objects reach both sides without the API server (validate=False here, plain JSON for the
oracle), as upstream's plugin tests build them: hostUsers false with hostNetwork, or
bindMountOptions, which the API server refuses or drops with its default gates, still reach the
scheduler here, so every feature of each registry is exercised.
"""

from __future__ import annotations

import copy
from functools import lru_cache

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from kube_oracle import comparable
from policylang import Executable, load_plans
from policylang.target import make_target
import strategies as S
from test_oracle import policylang_result

FEATURES = ("Acme/Fast", "RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport",
            "VolumeBindMountOptions", "ZetaUnknown")


@lru_cache(maxsize=None)
def profile(version: str) -> Executable:
    return Executable(load_plans(target=make_target(version))["default-scheduler"])


def _node(name: str, cpu: int, declared) -> dict:
    status = {"capacity": {"cpu": str(cpu), "memory": "4Gi", "pods": "32"},
              "allocatable": {"cpu": str(cpu), "memory": "4Gi", "pods": "32"}}
    if declared is not None:
        status["declaredFeatures"] = sorted(declared)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": status}


@st.composite
def feature_cases(draw):
    """Nodes that differ in cpu and in what they declare (nothing, an empty list, some of the
    registry's features, names it does not know), and a pod that may need some features and may
    not fit some nodes' cpu; NodeResourcesFit and NodeDeclaredFeatures are the filters that can
    reject, so what the other plugins do in 1.37 (other work) does not enter."""
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        declared = draw(st.none() | st.lists(st.sampled_from(FEATURES), unique=True))
        nodes.append(_node(f"node-{i}", draw(st.integers(1, 4)), declared))
    container = {"name": "c0", "image": "nginx:1.27", "resources": {"requests": {"cpu": str(draw(st.integers(0, 3)))}}}
    spec = {"containers": [container]}
    if draw(st.booleans()):
        where = draw(st.sampled_from(["containers", "initContainers"]))
        if where == "initContainers":
            spec["initContainers"] = [{"name": "init-0", "image": "busybox"}]
        spec[where][0].update(restartPolicy="Never", restartPolicyRules=[
            {"action": draw(st.sampled_from(["RestartAllContainers", "Restart"])),
             "exitCodes": {"operator": "In", "values": [1]}}])
    if draw(st.booleans()):
        spec["hostUsers"] = draw(st.booleans())
        spec["hostNetwork"] = draw(st.booleans())
    if draw(st.booleans()):
        container["volumeMounts"] = [{"name": "data", "mountPath": "/data",
                                      "bindMountOptions": draw(st.lists(st.just("noexec"), max_size=1))}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending-0", "namespace": "default", "uid": "u-0"},
           "spec": spec, "status": {"phase": "Pending"}}
    return S.Cluster(tuple(nodes), (), ()), pod


@given(feature_cases())
@settings(max_examples=max(1, settings.default.max_examples))
def test_declared_features_decide_as_kube_scheduler_1_37(oracles, case):
    assert_same(oracles("1.37"), "1.37", *case)


@given(feature_cases())
@settings(max_examples=max(1, settings.default.max_examples // 2))
def test_declared_features_decide_as_kube_scheduler_1_36(oracles, case):
    """v1.36's registry has no VolumeBindMountOptions: a pod with bindMountOptions needs nothing."""
    assert_same(oracles("1.36"), "1.36", *case)


def assert_same(oracle, version: str, cluster, pod) -> None:
    note(str({"objects": cluster.raw, "pod": pod}))
    ours = filtered(comparable(policylang_result(cluster, pod, False, profile(version))))
    (theirs,) = oracle.run([copy.deepcopy(o) for o in cluster.raw], [copy.deepcopy(pod)], preemption=False)["results"]
    assert ours == filtered(comparable(theirs))


def filtered(result: dict) -> dict:
    """What the filters decided: the feasible set, each node's failure, the FitError."""
    return {"feasible": result["feasible"], "fit_error": result["fit_error"],
            "failures": {name: n["failure"] for name, n in result["nodes"].items()}}

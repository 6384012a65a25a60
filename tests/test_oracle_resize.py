"""Differential tests of pods being resized in place (api/requests.py Counting) against
kube-scheduler's framework of v1.34 to v1.37 (the oracle, which loads pods as given, status
included, so its NodeInfo counts them as the real scheduler does).

For each pod of tests/fixtures/requests/resize.yaml and each target: a node with that pod bound
to it where the pending pod fits exactly as the target counts the resized pod, and nodes with one
millicore or one byte less, where it does not: a count that is too small or too large shows as a
node whose feasibility differs from the oracle's. Their scores (LeastAllocated's non-zero
requests, BalancedAllocation's requests) are compared too. Then the resized pod itself as the pod
being scheduled: Fit's filter reads its spec, BalancedAllocation its status.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

import strategies as S
from kube_oracle import comparable
from policylang import Executable, load_plans
from policylang.api.quantity import ZERO
from policylang.api.requests import counting_of, pod_requests
from policylang.target import make_target
from test_oracle import policylang_result
from test_requests import CASES

# (oracle version, gates set for both): the defaults, InPlacePodVerticalScaling off where it may
# be (1.34), and the pod-level gate the other way (in 1.35 with NodeDeclaredFeatures, which
# kube_features.go makes it depend on).
TARGETS = [("1.34", {}), ("1.34", {"InPlacePodVerticalScaling": False}),
           ("1.35", {}), ("1.35", {"NodeDeclaredFeatures": True, "InPlacePodLevelResourcesVerticalScaling": True}),
           ("1.36", {}), ("1.36", {"InPlacePodLevelResourcesVerticalScaling": False}),
           ("1.37", {}), ("1.37", {"InPlacePodLevelResourcesVerticalScaling": False})]


@lru_cache(maxsize=None)
def profile(version: str, gates: str) -> Executable:
    return Executable(load_plans(target=make_target(version, gates or None))["default-scheduler"])


def _gates(gates: dict) -> str:
    return ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())


def _node(name: str, cpu_milli: int, memory: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": f"{cpu_milli}m", "memory": str(memory), "pods": "110"},
                       "capacity": {"cpu": f"{cpu_milli}m", "memory": str(memory), "pods": "110"}}}


def _pod(case: dict, name: str, node: str = "") -> dict:
    spec = {"containers": [], **copy.deepcopy(case["pod"]["spec"])}
    if node:
        spec["nodeName"] = node
    status = {"phase": "Running" if node else "Pending", **copy.deepcopy(case["pod"].get("status", {}))}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": spec, "status": status}


PENDING = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": "default", "uid": "pending"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
           "status": {"phase": "Pending"}}


# What counting a resized pod decides: each node's feasibility and failure, and the scores of the
# plugins that count requests. The stdlib's BalancedAllocation is not yet 1.36's and 1.37's (it scores
# plain pods otherwise too): there its counting is checked against the oracle alone (below).
def _plugins(version: str) -> tuple:
    return ("NodeResourcesFit",) + (("NodeResourcesBalancedAllocation",) if version in ("1.34", "1.35") else ())


def _counted(result: dict, plugins: tuple) -> dict:
    c = comparable(result)
    return {"feasible": c["feasible"], "nodes": {
        name: {"failure": n["failure"],
               "scores": None if n["scores"] is None else {p: n["scores"].get(p) for p in plugins}}
        for name, n in c["nodes"].items()}}


def _oracle_run(oracle, cluster: S.Cluster, pod: dict, gates: dict) -> dict:
    (theirs,) = oracle.run([copy.deepcopy(o) for o in cluster.raw], [copy.deepcopy(pod)], preemption=False,
                           feature_gates=gates)["results"]
    return theirs


def _decide(oracle, cluster: S.Cluster, pod: dict, version: str, gates: dict):
    ours = policylang_result(cluster, pod, False, profile(version, _gates(gates)))
    theirs = _oracle_run(oracle, cluster, pod, gates)
    return _counted(ours, _plugins(version)), _counted(theirs, _plugins(version))


def _bound_cluster(case: dict, version: str, gates: dict) -> S.Cluster:
    counted = pod_requests(S.structure(_pod(case, "x", "n")), counting=counting_of(make_target(version, _gates(gates) or None)))
    cpu, memory = counted.get("cpu", ZERO).milli(), counted.get("memory", ZERO).value()
    gib = 1024 ** 3
    nodes = [_node("fits", cpu + 1000, memory + gib), _node("short-cpu", cpu + 999, memory + gib),
             _node("short-memory", cpu + 1000, memory + gib - 1), _node("roomy", cpu + 3000, memory + 5 * gib)]
    pods = [_pod(case, f"resized-{n['metadata']['name']}", n["metadata"]["name"]) for n in nodes]
    return S.Cluster(tuple(nodes), tuple(pods))


def _rows():
    for case in CASES:
        for version, gates in TARGETS:
            yield pytest.param(case, version, gates, id=f"{case['name']} [{version} {_gates(gates)}]")


@pytest.mark.parametrize("case,version,gates", list(_rows()))
def test_a_node_counts_a_pod_being_resized_as_kube_scheduler_does(oracles, case, version, gates):
    ours, theirs = _decide(oracles(version), _bound_cluster(case, version, gates),
                           PENDING, version, gates)
    assert theirs["feasible"] == ["fits", "roomy"], "the oracle counts the resized pod otherwise"
    assert ours == theirs


NODES = (_node("small", 900, 2 * 1024 ** 3), _node("medium", 4000, 8 * 1024 ** 3), _node("large", 16000, 8 * 1024 ** 3),
         _node("wide", 6000, 64 * 1024 ** 3))


@pytest.mark.parametrize("case,version,gates", list(_rows()))
def test_a_pod_being_resized_is_scheduled_by_its_spec_and_scored_with_its_status(oracles, case, version, gates):
    o = oracles(version)
    ours, theirs = _decide(o, S.Cluster(NODES, ()), _pod(case, "resized"), version, gates)
    assert ours == theirs
    # BalancedAllocation scores the resized pod as it scores a plain pod asking for what
    # policylang counts for it (counted_requests): the count, checked against upstream's own.
    counted = pod_requests(S.structure(_pod(case, "x")), counting=counting_of(make_target(version, _gates(gates) or None)))
    plain = {**PENDING, "spec": {"containers": [{"name": "c", "resources": {"requests": {
        k: str(v) for k, v in counted.items()}}}]}}
    big = S.Cluster(tuple({**n, "status": {k: {**v, "ephemeral-storage": "100G"} for k, v in n["status"].items()}}
                          for n in (_node("a", 16000, 8 * 1024 ** 3), _node("b", 32000, 64 * 1024 ** 3),
                                    _node("c", 64000, 16 * 1024 ** 3))), ())
    balanced = lambda pod: {n["name"]: (n["scores"] or {}).get("NodeResourcesBalancedAllocation")  # noqa: E731
                            for n in _oracle_run(o, big, pod, gates)["nodes"]}
    scored = balanced(_pod(case, "resized"))
    assert scored == balanced(plain)
    assert all(scored.values()) or not any(q.amount for q in counted.values())    # skipped only when best-effort


# ---- drawn pods: any mix of spec, applied, allocated and pod-level, against the oracle ----------

from hypothesis import given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_oracle import examples  # noqa: E402

CPU = st.sampled_from(["100m", "250m", "500m", "1", "1500m", "2"])
MEMORY = st.sampled_from(["64Mi", "128Mi", "256Mi", "1Gi"])


@st.composite
def resource_lists(draw, absent: bool = True):
    """A resource list, or None (absent) where ``absent``; sometimes empty."""
    if absent and draw(st.integers(0, 3)) == 0:
        return None
    out = {}
    if draw(st.booleans()):
        out["cpu"] = draw(CPU)
    if draw(st.booleans()):
        out["memory"] = draw(MEMORY)
    return out


@st.composite
def resized_pods(draw):
    """The spec and status of a pod being resized: containers, init containers and sidecars whose
    statuses report applied and allocated requests or not, pod-level resources, a condition."""
    containers, inits, statuses, init_statuses = [], [], [], []
    for i in range(draw(st.integers(1, 3))):
        containers.append({"name": f"c{i}", "resources": {"requests": draw(resource_lists(absent=False))}})
    for i in range(draw(st.integers(0, 2))):
        init = {"name": f"i{i}", "resources": {"requests": draw(resource_lists(absent=False))}}
        if draw(st.booleans()):
            init["restartPolicy"] = "Always"
        inits.append(init)
    for c, into in [*((c, statuses) for c in containers), *((c, init_statuses) for c in inits)]:
        if draw(st.integers(0, 4)) == 0:
            continue      # no status for this container
        cs = {"name": c["name"]}
        allocated, applied = draw(resource_lists()), draw(resource_lists())
        if allocated is not None:
            cs["allocatedResources"] = allocated
        if applied is not None:
            cs["resources"] = {"requests": applied}
        into.append(cs)
    spec = {"containers": containers, **({"initContainers": inits} if inits else {})}
    status = {"containerStatuses": statuses, "initContainerStatuses": init_statuses}
    if draw(st.integers(0, 2)) == 0:
        spec["resources"] = {"requests": draw(resource_lists(absent=False)) or {"cpu": draw(CPU)}}
        allocated, applied = draw(resource_lists()), draw(resource_lists())
        if allocated is not None:
            status["allocatedResources"] = allocated
        if applied is not None:
            status["resources"] = {"requests": applied}
    condition = draw(st.sampled_from([None, ("PodResizePending", "Infeasible"), ("PodResizePending", "Deferred"),
                                      ("PodResizeInProgress", "")]))
    if condition is not None:
        status["conditions"] = [{"type": condition[0], "status": "True", **({"reason": condition[1]} if condition[1] else {})}]
    return {"name": "drawn", "pod": {"spec": spec, "status": status}}


@given(case=resized_pods(), target=st.sampled_from(TARGETS))
@examples(2)
def test_any_pod_being_resized_is_counted_as_kube_scheduler_counts_it(oracles, case, target):
    version, gates = target
    note(str(case))
    ours, theirs = _decide(oracles(version), _bound_cluster(case, version, gates), PENDING, version, gates)
    assert theirs["feasible"] == ["fits", "roomy"], "the oracle counts the resized pod otherwise"
    assert ours == theirs


EXAMPLES = Path(__file__).parent.parent / "examples" / "resize"


@pytest.mark.parametrize("version,gates,feasible", [("1.37", {}, []), ("1.36", {}, []), ("1.35", {}, []), ("1.34", {}, []),
                                                    ("1.34", {"InPlacePodVerticalScaling": False}, ["node-a"])])
def test_the_resize_example_decides_as_kube_scheduler(oracles, version, gates, feasible):
    """examples/resize/ (docs/concepts.md): the 2-cpu pod does not fit beside a pod still running with
    the 3 cpu it was resized down from, unless the gate is off."""
    cluster = S.Cluster(tuple(yaml.safe_load((EXAMPLES / "cluster.yaml").read_text())["items"]), ())
    pod = yaml.safe_load((EXAMPLES / "pod.yaml").read_text())
    ours, theirs = _decide(oracles(version), cluster, pod, version, gates)
    assert ours == theirs and theirs["feasible"] == feasible

"""How a pod's requests are counted (policylang/api/requests.py), per Kubernetes version: a pod
being resized in place counts its applied and allocated resources as each version's
component-helpers resource/helpers.go and framework/types.go (CalculateResource) count them.
The table, tests/fixtures/requests/resize.yaml, transcribes upstream's own cases (each names its
file and case) and adds the cases that tell the versions apart."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from policylang.api.quantity import ZERO, parse_quantity
from policylang.api.requests import SPEC, counting_of, nonzero_pod_requests, pod_requests, resizing
from policylang.cluster.load import structure_object
from policylang.cluster.state import ClusterState
from policylang.target import make_target

TABLE = Path(__file__).parent / "fixtures" / "requests" / "resize.yaml"
CASES = yaml.safe_load(TABLE.read_text())


def _pod(case: dict, node: str = ""):
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, **case["pod"]}
    raw["spec"] = {**raw["spec"], **({"nodeName": node} if node else {})}
    raw["spec"].setdefault("containers", [])
    return structure_object(raw, str(TABLE))


def _target(text: str):
    version, _, gates = text.partition(" ")
    return make_target(version, gates or None)


def _rows():
    for case in CASES:
        for target, want in case["expect"].items():
            yield pytest.param(case, target, want, id=f"{case['name']} [{target}]")


def _same(got: dict, want: dict) -> bool:
    return {k: v for k, v in got.items()} == {k: parse_quantity(str(v)) for k, v in want.items()}


@pytest.mark.parametrize("case,target,want", list(_rows()))
def test_a_pod_being_resized_counts_as_the_version_counts_it(case, target, want):
    pod = _pod(case)
    counting = counting_of(_target(target))
    got = pod_requests(pod, counting=counting)
    assert _same(got, want["requests"]), got
    if "nonzero" in want:
        nonzero = nonzero_pod_requests(pod, counting)
        assert {k: nonzero.get(k, ZERO) for k in ("cpu", "memory")} == \
            {k: parse_quantity(str(v)) for k, v in want["nonzero"].items()}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_spec_alone_is_what_a_pod_being_scheduled_asks_for(case):
    """Fit's PreFilter reads the spec only (noderesources/fit.go computePodResourceRequest), so
    `requests(pod)` is the status-blind count whatever the target."""
    pod = _pod(case)
    bare = structure_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                             "spec": {"containers": [], **case["pod"]["spec"]}}, str(TABLE))
    assert pod_requests(pod) == pod_requests(bare) == pod_requests(pod, counting=SPEC)


def test_only_a_pod_that_reports_resources_or_an_infeasible_resize_can_count_otherwise():
    assert all(resizing(_pod(c)) for c in CASES if c["pod"].get("status", {}).keys() - {"conditions"}
               or any(x.get("reason") == "Infeasible" for x in c["pod"].get("status", {}).get("conditions", ())))
    plain = _pod({"pod": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                          "status": {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]}}})
    assert not resizing(plain)


def test_a_node_counts_its_pods_as_the_target_counts_them():
    """NodeInfo.Requested under each target: the state's tables per Counting, kept up to date as
    pods arrive and leave, the spec's table unchanged."""
    node = structure_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                             "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}}, "node")
    case = next(c for c in CASES if c["name"] == "the three are summed over the containers first from 1.37")
    pod = _pod(case, node="n")
    state = ClusterState.build([node, pod])
    as_137, as_136 = counting_of(make_target("1.37")), counting_of(make_target("1.36"))
    assert state.requested_as(as_137)["n"]["cpu"] == parse_quantity("3")
    assert state.requested_as(as_136)["n"]["cpu"] == parse_quantity("4")
    assert state.requested["n"]["cpu"] == parse_quantity("3")      # the spec: 1 + 2
    other = structure_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "default"},
                              "spec": {"nodeName": "n", "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}},
                             "q")
    state.put_pod(other)
    assert state.requested_as(as_137)["n"]["cpu"] == parse_quantity("3500m")
    assert state.requested_as(as_136)["n"]["cpu"] == parse_quantity("4500m")
    state.drop_pod(pod.key)
    assert state.requested_as(as_137)["n"]["cpu"] == state.requested_as(as_136)["n"]["cpu"] == parse_quantity("500m")


def test_a_dump_keeps_what_the_count_reads(tmp_path):
    """A state written out (cluster/dump.py) and read back counts its resized pods the same: an
    empty applied list is written, since it differs from none (up to 1.36 a container whose
    status reports `resources` counts them, here nothing, when the resize is infeasible)."""
    from policylang.cluster.dump import write_state
    from policylang.cluster.load import load_cluster
    node = structure_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                             "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}}, "node")
    pod = _pod({"pod": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                        "status": {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
                                   "containerStatuses": [{"name": "c", "allocatedResources": {}, "resources": {"requests": {}}}]}}},
               node="n")
    path = tmp_path / "dump.yaml"
    write_state(ClusterState.build([node, pod]), path)
    again = load_cluster([path])
    assert again.pods_by_node["n"][0].status.container_statuses == pod.status.container_statuses
    assert again.requested_as(counting_of(make_target("1.36")))["n"].get("cpu", ZERO) == ZERO

"""capacity: headroom for a pod or a set of workloads, and the nodes a pending batch needs — golden
text on the examples, JSON against its schema, and the property that ties it to simulate: N
copies fit ⇒ simulating N places all of them and N + 1 leaves one pending."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from policylang import load_plans
from policylang.forecast.capacity import copies, headroom, nodes_needed
from policylang.cli import main
from policylang.cluster.load import structure_object
from policylang.cluster.state import ClusterState
from policylang.run.schedule import Executable
from policylang.forecast.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "fixtures" / "capacity"
SCHEMA = json.loads((ROOT / "policylang" / "report" / "schemas" / "capacity.v1.json").read_text())


@pytest.mark.parametrize("name, argv, exit_code", [
    ("web-pod", ["--pod", "examples/pods/web.yaml"], 0),
    ("api-workload", ["--workload", "examples/whatif/api.yaml:2"], 0),
    ("nodes-for-api", ["--node-template", "examples/whatif/node-template.yaml", "--pods", "examples/whatif/api.yaml"], 0),
    ("nodes-never-enough", ["--node-template", "examples/whatif/node-template.yaml", "--pods", "examples/pods/too-big.yaml"], 1),
])
def test_capacity_on_the_examples(capsys, golden, monkeypatch, name, argv, exit_code):
    monkeypatch.chdir(ROOT)
    code = main(["capacity", "--cluster", "examples/zones.yaml", *argv])
    out = capsys.readouterr().out
    golden(GOLDEN / f"{name}.txt", out)
    assert code == exit_code
    if name == "nodes-never-enough":        # the headroom document is checked below
        assert main(["capacity", "--cluster", "examples/zones.yaml", *argv, "-o", "json"]) == exit_code
        doc = json.loads(capsys.readouterr().out)
        jsonschema.Draft7Validator(SCHEMA).validate(doc)
        assert doc["nodes_needed"] is None and [p["pod"]["name"] for p in doc["never_fit"]] == ["etl-huge"]


def test_headroom_json_says_why_each_node_is_full(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    main(["capacity", "--cluster", "examples/zones.yaml", "--pod", "examples/pods/web.yaml", "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft7Validator(SCHEMA).validate(doc)
    assert doc["fits"] == sum(n["placed"] for n in doc["nodes"]) > 0
    assert {n["why_full"] for n in doc["nodes"]} == {"NodeResourcesFit: Insufficient cpu"}


@pytest.mark.parametrize("argv, message", [
    (["--pod", "examples/pods/"], "expected one Pod as the template, found 4"),
    (["--pods", "examples/pods/web.yaml", "--pod", "examples/pods/web.yaml"], "--pods goes with --node-template"),
    (["--pod", "examples/pods/web.yaml", "--max", "0"], "--max must be 1 to 100000"),
    (["--workload", "examples/pods/web.yaml"], "no workload with replicas found"),
])
def test_bad_capacity_input(capsys, monkeypatch, argv, message):
    monkeypatch.chdir(ROOT)
    code = main(["capacity", "--cluster", "examples/zones.yaml", *argv])
    assert code == 2 and message in capsys.readouterr().err


# ---- the property ---------------------------------------------------------------------------

@functools.cache
def _profile():
    exe = Executable(next(iter(load_plans(None, None).values())), "reference")
    return lambda pod: exe


@st.composite
def small_clusters(draw):
    objects = []
    for i in range(draw(st.integers(1, 3))):
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {
            "topology.kubernetes.io/zone": f"z{draw(st.integers(0, 1))}"}},
            "status": {"allocatable": {"cpu": draw(st.sampled_from(["500m", "1", "2"])),
                                       "memory": draw(st.sampled_from(["1Gi", "4Gi"])), "pods": "8"}}})
    for j in range(draw(st.integers(0, 3))):
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"bound-{j}"},
                        "spec": {"nodeName": "n0",
                                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "200m"}}}]},
                        "status": {"phase": "Running"}})
    template = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "labels": {"app": "t"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {
                    "cpu": draw(st.sampled_from(["100m", "250m", "400m"])),
                    "memory": draw(st.sampled_from(["128Mi", "512Mi"]))}}}]}}
    if draw(st.booleans()):     # one per host: anti-affinity limits the count, not resources
        template["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "t"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return objects, template


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_clusters())
def test_capacity_n_means_n_fit_and_one_more_does_not(case):
    raw, template = case
    state = ClusterState.build([structure_object(o, "generated") for o in raw])
    pod = structure_object(template, "generated")
    profile = _profile()
    n = headroom(profile, state, [pod], limit=64).fits
    fresh = ClusterState.build(state.objects())
    assert all(p.node for p in simulate(profile, fresh, copies([pod], n), preemption=False))
    fresh = ClusterState.build(state.objects())
    assert sum(1 for p in simulate(profile, fresh, copies([pod], n + 1), preemption=False) if not p.node) == 1


def test_nodes_needed_is_the_fewest():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "8"}}}
    state = ClusterState.build([structure_object(node, "t")])
    pod = structure_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}, "t")
    template = structure_object({**node, "metadata": {"name": "tmpl"}}, "t")
    batch = copies([pod], 7)            # 2 fit on n0; each template node holds 2 more
    result = nodes_needed(_profile(), state, batch, template)
    assert result.count == 3 and not result.never
    assert all(p.node for p in result.placements)

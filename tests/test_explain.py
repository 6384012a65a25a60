"""explain: every filter's verdict per node, near misses, and suggestions that were checked."""

import json
from pathlib import Path

from policylang import Executable, load_cluster, load_objects, load_plans, schedule
from policylang.cli import main
from policylang.explain import explain

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"


def test_explain_text_on_the_examples(capsys, golden):
    main(["explain", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pods")])
    golden(Path(__file__).parent / "fixtures" / "explain" / "examples.txt", capsys.readouterr().out)


def test_every_filter_is_reported_for_every_node(capsys):
    main(["explain", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pods" / "too-big.yaml"),
          "-o", "json"])
    [result] = json.loads(capsys.readouterr().out)["results"]
    cp = next(n for n in result["nodes"] if n["name"] == "cp-1")
    # kube-scheduler stops at TaintToleration; explain also shows NodeResourcesFit's verdict.
    assert cp["failure"]["plugin"] == "TaintToleration"
    assert cp["filters"]["TaintToleration"]["code"] == "UnschedulableAndUnresolvable"
    assert cp["filters"]["NodeResourcesFit"]["reasons"] == ["Insufficient cpu", "Insufficient memory"]
    assert cp["filters"]["NodePorts"]["code"] == "Skip"
    assert result["near_misses"][0]["node"] == "worker-c1"  # the least cpu short


def test_each_suggestion_really_makes_the_pod_fit():
    exe = Executable(load_plans()["default-scheduler"])
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    for pod in load_objects(EXAMPLES / "pods"):
        e = explain(exe, state, pod)
        if e.decision.selected:
            assert e.suggestions == ()
            continue
        assert e.suggestions, f"no suggestion for {pod.key}"
        for s in e.suggestions:
            assert s.result in state.nodes


def test_scheduling_a_pod_does_not_depend_on_explaining_it():
    exe = Executable(load_plans()["default-scheduler"])
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    pod = load_objects(EXAMPLES / "pods" / "ingress.yaml")[0]
    before = schedule(exe, state, pod)
    explain(exe, state, pod)
    assert schedule(exe, state, pod) == before

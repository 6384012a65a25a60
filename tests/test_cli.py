"""The command line as a user meets it: golden eval output on the examples, and clear
errors (exit 2, never a traceback) for broken policies and broken cluster files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from policylang.cli import main

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).parent / "fixtures" / "eval"


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_eval_text_on_the_examples(capsys, golden):
    code, out, _ = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods")
    assert code == 1  # two example pods are unschedulable on purpose
    golden(GOLDEN / "examples.txt", out)


def test_eval_json_on_the_examples(capsys, golden):
    code, out, _ = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods",
                       "-o", "json")
    doc = json.loads(out)
    assert doc["schema"] == "policylang/eval/v1"
    by_pod = {r["pod"]["name"]: r for r in doc["results"]}
    assert by_pod["finetune-0"]["selected"] == "gpu-a1"
    assert by_pod["etl-huge"]["selected"] is None
    assert by_pod["etl-huge"]["message"].startswith("0/7 nodes are available: ")
    golden(GOLDEN / "examples.json", out)


def test_eval_with_a_team_profile(capsys, golden):
    code, out, _ = run(capsys, "eval", "--profile", EXAMPLES / "policies" / "team.sched",
                       "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 0
    golden(GOLDEN / "team.txt", out)


def test_json_nodes_are_sorted_and_totals_add_up(capsys):
    _, out, _ = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods" / "web.yaml",
                    "-o", "json")
    result = json.loads(out)["results"][0]
    names = [n["name"] for n in result["nodes"]]
    assert names == sorted(names)
    for n in result["nodes"]:
        if n["feasible"]:
            assert n["total"] == sum(s["weighted"] for s in n["scores"].values())
            assert all(s["weighted"] == s["normalized"] * s["weight"] for s in n["scores"].values())
        else:
            assert n["scores"] is None and n["total"] is None and n["failure"]["reasons"]


def test_plan_prints_stages(capsys):
    code, out, _ = run(capsys, "plan")
    assert code == 0
    assert "plugin TaintToleration  weight 3  [filter, score]" in out
    assert "once per pod (PreFilter):" in out and "per node (Filter):" in out


def test_plan_vector_prints_what_the_passes_decided(capsys):
    """Under each step, what the vector executor's passes decided: a filter over the node's
    taints is kept per node for good, keyed by the taints and the pod's tolerations; a pod-stage
    let runs once."""
    code, out, _ = run(capsys, "plan", "--vector")
    assert code == 0
    lines = out.splitlines()
    reject = next(i for i, line in enumerate(lines) if "reject when any(t in node.spec.taints" in line)
    assert lines[reject + 1].strip() == ("vector: kept per node for good, by node.spec.taints, tolerations; "
                                        "when nothing varies, lifted, its members one batch when many")
    let = lines.index("        let tolerations = pod.spec.tolerations")
    assert lines[let + 1].strip() == "vector: once, by the reference interpreter"


BROKEN_POLICY = "policy P\nfilter f {\n    reject when pod.spec.nodeNme != \"\" reason \"x\"\n}\n"


def test_broken_policy_is_a_clear_error(capsys, tmp_path):
    policy = tmp_path / "bad.sched"
    policy.write_text(BROKEN_POLICY + "profile p {\n    use \"./bad.sched\"\n}\n")
    code, _, err = run(capsys, "eval", "--profile", policy, "--cluster", EXAMPLES / "cluster.yaml",
                       "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 2
    assert f"{policy}:3:17: error[P012]: PodSpec has no field 'nodeNme'" in err
    assert "did you mean 'nodeName'?" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content, expected", [
    ("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n",
     "Node n1: field status.allocatable['cpu']: quantities must match"),
    ("kind: Pod\nmetadata: {name: p1, namespace: team}\nspec:\n  containers: [{name: c, ports: [{hostPort: x}]}]\n",
     "Pod team/p1: field spec.containers[0].ports[0].hostPort: expected an integer, got 'x'"),
    ("kind: Node\nmetadata: {name: n1}\nspec: {taints: oops}\n", "Node n1: field spec.taints"),
    ("kind: Node\nmetadata: [1, 2\n", "invalid YAML at line 3 column 1"),
    ("- just\n- a list\n", "expected a Kubernetes object"),
    ("metadata: {name: n1}\n", "object has no 'kind'"),
])
def test_broken_cluster_file_names_file_object_and_field(capsys, tmp_path, content, expected):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(content)
    code, _, err = run(capsys, "eval", "--cluster", cluster, "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 2
    assert err.startswith(f"error: {cluster}")
    assert expected in err
    assert "Traceback" not in err


def test_missing_files_are_input_errors(capsys, tmp_path):
    code, _, err = run(capsys, "eval", "--cluster", tmp_path / "nope.yaml", "--pod", EXAMPLES / "pods")
    assert code == 2 and "no such file or directory" in err


def test_console_script_runs_as_a_process():
    proc = subprocess.run([sys.executable, "-m", "policylang.cli", "eval", "--cluster", str(EXAMPLES / "cluster.yaml"),
                           "--pod", str(EXAMPLES / "pods" / "web.yaml"), "-o", "json"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["selected"]


# ---- exit codes CI can trust (issue 29) ---------------------------------------------------------

def _crash(*_args, **_kwargs):
    raise RuntimeError("boom\nsecond line")


def test_an_internal_error_exits_3_in_one_line_without_a_traceback(capsys, monkeypatch):
    monkeypatch.delenv("POLICYLANG_TRACEBACK", raising=False)
    monkeypatch.setattr("policylang.cli.load_cluster", _crash)
    code, out, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods")
    assert code == 3
    assert err.strip().splitlines() == [
        "error: internal error (a bug in policylang): RuntimeError: boom second line; please report it with "
        "the command and inputs (POLICYLANG_TRACEBACK=1 shows the traceback)"]
    assert "Traceback" not in err and out == ""


def test_policylang_traceback_shows_the_traceback_of_an_internal_error(capsys, monkeypatch):
    monkeypatch.setenv("POLICYLANG_TRACEBACK", "1")
    monkeypatch.setattr("policylang.cli.load_cluster", _crash)
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods")
    assert code == 3
    assert "Traceback (most recent call last)" in err and "_crash" in err
    assert err.rstrip().splitlines()[-1].startswith("error: internal error (a bug in policylang): RuntimeError")


def test_ctrl_c_exits_130_without_a_traceback(capsys, monkeypatch):
    def interrupt(*_args, **_kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("policylang.cli.load_cluster", interrupt)
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods")
    assert code == 130
    assert err.strip() == "interrupted" and "Traceback" not in err


def test_ctrl_c_during_simulate_exits_130_and_leaves_the_state_file_alone(capsys, monkeypatch, tmp_path):
    out = tmp_path / "after.yaml"
    out.write_text("old: state\n")

    def interrupted(profile_for, state, pods, *, into, **_kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("policylang.simulate.simulate", interrupted)
    code, _, err = run(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pods", EXAMPLES / "pods",
                       "--write-state", out)
    assert code == 130
    assert "the state was not written" in err
    assert out.read_text() == "old: state\n"
    assert [p.name for p in tmp_path.iterdir()] == ["after.yaml"]


@pytest.mark.parametrize("verb", ["eval", "explain"])
def test_a_pod_with_a_nominated_node_prints_in_text(capsys, tmp_path, verb):
    pod = tmp_path / "nominated.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: nom, namespace: default}\nspec:\n"
                   "  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]\n"
                   "status: {phase: Pending, nominatedNodeName: worker-a1}\n")
    code, out, err = run(capsys, verb, "--cluster", EXAMPLES / "cluster.yaml", "--pod", pod)
    assert code == 0, err
    assert out.startswith("Pod default/nom: scheduled to worker-a1")
    if verb == "eval":
        assert "cp-1       - not evaluated" in out


def _cluster_with(tmp_path, *extra) -> Path:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text((EXAMPLES / "cluster.yaml").read_text() + "".join(f"\n---\n{e}" for e in extra))
    return cluster


def test_the_same_dump_given_twice_counts_its_pods_once(capsys, tmp_path):
    once = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods", "-o", "json")
    twice = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--cluster", EXAMPLES / "cluster.yaml",
                "--cluster", str(EXAMPLES / "cluster.yaml").replace("/examples/", "/examples/./"),
                "--pod", EXAMPLES / "pods", "-o", "json")
    assert twice == once


def test_a_pod_that_is_also_in_the_dump_does_not_count_against_itself(capsys, tmp_path):
    # 8 cpu of worker-c1's allocatable taken by the pod itself, bound there: evaluated again, it must fit.
    spec = ("apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: default}\nspec:\n"
            "  containers: [{name: c, image: x, resources: {requests: {cpu: 7500m}}}]\n")
    pod = tmp_path / "big.yaml"
    pod.write_text(spec)
    alone = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", pod, "-o", "json")
    cluster = _cluster_with(tmp_path, spec.replace("spec:\n", "spec:\n  nodeName: worker-c1\n")
                            + "status: {phase: Running}\n")
    again = run(capsys, "eval", "--cluster", cluster, "--pod", pod, "-o", "json")
    assert alone[0] == 0 and again[0] == 0, again
    assert json.loads(again[1])["results"][0]["selected"] == json.loads(alone[1])["results"][0]["selected"]


@pytest.mark.parametrize("node, message", [
    ("kind: Node\nmetadata: {labels: {a: b}}\n", "Node #16: field metadata.name: a Node needs a name"),
    ('kind: Node\nmetadata: {name: "bad\\e[31mred"}\n', "field metadata.name: name 'bad\\x1b[31mred' contains "
                                                        "control characters"),
])
def test_nodes_the_api_server_would_never_store_are_refused(capsys, tmp_path, node, message):
    code, out, err = run(capsys, "eval", "--cluster", _cluster_with(tmp_path, node), "--pod", EXAMPLES / "pods")
    assert code == 2 and message in err, err
    assert "\x1b" not in err


def test_control_characters_in_table_cells_are_escaped():
    from policylang.decision import Decision, NodeResult, Status
    from policylang.report import Style, decision_text
    d = Decision(pod_namespace="default", pod_name="p", profile="x", nodes=(
        NodeResult("n\x1b[2J", failure=Status("Unschedulable", ("a policy's reason\x07",), "P")),))
    text = decision_text(d, Style(False))
    assert "n\\x1b[2J" in text and "reason\\x07" in text
    assert "\x1b" not in text and "\x07" not in text

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

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


@pytest.mark.parametrize("executor", ["vector", "reference"])
def test_each_executor_gives_the_examples_the_default_executors_answer(capsys, executor):
    # The default, auto, runs these 4 pods on 7 nodes with the reference interpreter.
    args = ["eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods", "-o", "json"]
    assert run(capsys, *args, "--executor", executor)[1] == (GOLDEN / "examples.json").read_text()


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
     'Pod team/p1: field spec.containers[0].ports[0].hostPort: expected an integer, got string "x"'),
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
    monkeypatch.setattr("policylang.cluster.load.load_cluster", _crash)
    code, out, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods")
    assert code == 3
    assert err.strip().splitlines() == [
        "error: internal error (a bug in policylang): RuntimeError: boom second line; please report it with "
        "the command and inputs (POLICYLANG_TRACEBACK=1 shows the traceback)"]
    assert "Traceback" not in err and out == ""


def test_policylang_traceback_shows_the_traceback_of_an_internal_error(capsys, monkeypatch):
    monkeypatch.setenv("POLICYLANG_TRACEBACK", "1")
    monkeypatch.setattr("policylang.cluster.load.load_cluster", _crash)
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods")
    assert code == 3
    assert "Traceback (most recent call last)" in err and "_crash" in err
    assert err.rstrip().splitlines()[-1].startswith("error: internal error (a bug in policylang): RuntimeError")


def test_ctrl_c_exits_130_without_a_traceback(capsys, monkeypatch):
    def interrupt(*_args, **_kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("policylang.cluster.load.load_cluster", interrupt)
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods")
    assert code == 130
    assert err.strip() == "interrupted" and "Traceback" not in err


def test_ctrl_c_during_simulate_exits_130_and_leaves_the_state_file_alone(capsys, monkeypatch, tmp_path):
    out = tmp_path / "after.yaml"
    out.write_text("old: state\n")

    def interrupted(profile_for, state, pods, *, into, **_kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("policylang.forecast.simulate.simulate", interrupted)
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
    from policylang.run.decision import Decision, NodeResult, Status
    from policylang.report.decisions import Style, decision_text
    d = Decision(pod_namespace="default", pod_name="p", profile="x", nodes=(
        NodeResult("n\x1b[2J", failure=Status("Unschedulable", ("a policy's reason\x07",), "P")),))
    text = decision_text(d, Style(False))
    assert "n\\x1b[2J" in text and "reason\\x07" in text
    assert "\x1b" not in text and "\x07" not in text


# ---- the dump is the question (issue 21): pending pods, --pod NAMESPACE/NAME, gates ----------

DUMP = EXAMPLES / "pending-dump.yaml"


def test_eval_without_pod_answers_for_each_pending_pod_of_the_dump(capsys, golden):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP)
    assert code == 1  # shop/report-big is unschedulable, batch/train-1 gated
    heads = [line for line in out.splitlines() if line.startswith("Pod ")]
    # Bound (shop/web-7d4b9-abcde), Succeeded (batch/migrate-xyz) and deleting (shop/old-web) are left out.
    assert [h.split(":")[0] for h in heads] == ["Pod shop/web-7d4b9-mnopq", "Pod shop/report-big", "Pod batch/train-1",
                                                  "Pod batch/sim-7"]
    golden(GOLDEN / "pending-dump.txt", out)


def test_explain_without_pod_answers_for_each_pending_pod_of_the_dump(capsys, golden):
    code, out, _ = run(capsys, "explain", "--cluster", DUMP)
    assert code == 1
    assert "Pod batch/train-1: gated by scheduling gates example.com/quota" in out
    assert "Without its gates it would schedule to worker-b1" in out
    golden(Path(__file__).parent / "fixtures" / "explain" / "pending-dump.txt", out)


def test_eval_json_of_the_dump_keeps_the_eval_schema(capsys):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP, "-o", "json")
    doc = json.loads(out)
    assert doc["schema"] == "policylang/eval/v1"
    by_pod = {f'{r["pod"]["namespace"]}/{r["pod"]["name"]}': r for r in doc["results"]}
    assert list(by_pod) == ["shop/web-7d4b9-mnopq", "shop/report-big", "batch/train-1", "batch/sim-7"]
    assert by_pod["shop/web-7d4b9-mnopq"]["selected"] == "worker-b1"
    gated = by_pod["batch/train-1"]
    assert gated["selected"] is None and gated["nodes"] == []
    assert gated["gated"] == {"gates": ["example.com/quota"], "condition": {
        "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates"}}


@pytest.mark.parametrize("args", [["--pod", "shop/web-7d4b9-mnopq"], ["--pod", "web-7d4b9-mnopq", "-n", "shop"],
                                  ["--pod", "web-7d4b9-mnopq", "--namespace", "shop"]])
def test_pod_by_name_picks_one_pod_of_the_dump(capsys, args):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP, *args)
    assert code == 0
    assert out.startswith("Pod shop/web-7d4b9-mnopq: scheduled to worker-b1")
    assert "report-big" not in out


def test_pod_file_still_works_with_a_dump(capsys):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP, "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 0 and out.startswith("Pod shop/web-7d4b9-mnopq: scheduled to worker-b1")


def test_a_bound_pod_of_the_dump_is_reported_bound(capsys):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP, "--pod", "shop/web-7d4b9-abcde")
    assert (code, out) == (0, "Pod shop/web-7d4b9-abcde: already bound to worker-a1\n")
    code, out, _ = run(capsys, "explain", "--cluster", DUMP, "--pod", "shop/web-7d4b9-abcde", "-o", "json")
    assert code == 0 and json.loads(out)["results"][0]["bound_to"] == "worker-a1"


def test_as_pending_places_a_bound_pod_without_itself_on_its_node(capsys):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP, "--pod", "shop/web-7d4b9-abcde", "--as-pending",
                       "-o", "json")
    assert code == 0
    result = json.loads(out)["results"][0]
    # worker-a1 scores as the emptier node once the pod's own 500m no longer counts there (as
    # worker-b1 does for the unbound twin shop/web-7d4b9-mnopq).
    assert result["selected"] == "worker-a1"
    totals = {n["name"]: n["total"] for n in result["nodes"]}
    _, twin, _ = run(capsys, "eval", "--cluster", DUMP, "--pod", "shop/web-7d4b9-mnopq", "-o", "json")
    assert totals["worker-a1"] == {n["name"]: n["total"] for n in json.loads(twin)["results"][0]["nodes"]}["worker-b1"]


def test_a_finished_pod_of_the_dump_is_not_scheduled_again(capsys):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP, "--pod", "batch/migrate-xyz")
    assert (code, out) == (0, "Pod batch/migrate-xyz: Succeeded, not scheduled again\n")


def test_a_pod_name_not_in_the_dump_is_an_input_error_with_did_you_mean(capsys):
    code, out, err = run(capsys, "eval", "--cluster", DUMP, "--pod", "shop/web-7d4b9-abcd")
    assert code == 2 and out == ""
    assert "no pod shop/web-7d4b9-abcd in the dump" in err
    assert "did you mean shop/web-7d4b9-abcde" in err
    code, _, err = run(capsys, "explain", "--cluster", DUMP, "--pod", "nope")
    assert code == 2 and "no pod default/nope in the dump" in err


def test_a_dump_without_pending_pods_needs_pod(capsys):
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml")
    assert code == 2 and "no pending pod in the dump" in err


def test_a_gated_pod_is_reported_gated_and_exits_1(capsys):
    code, out, _ = run(capsys, "eval", "--cluster", DUMP, "--pod", "batch/train-1")
    assert code == 1
    assert out.splitlines() == [
        "Pod batch/train-1: gated by scheduling gates example.com/quota",
        "  PodScheduled=False, reason SchedulingGated: Scheduling is blocked due to non-empty scheduling gates",
        "  kube-scheduler does not attempt it (PreEnqueue, SchedulingGates: waiting for scheduling gates: "
        "[example.com/quota])"]


def test_explain_says_where_a_gated_pod_would_go_without_its_gates(capsys):
    code, out, _ = run(capsys, "explain", "--cluster", DUMP, "--pod", "batch/train-1", "-o", "json")
    assert code == 1
    result = json.loads(out)["results"][0]
    assert result["gated"]["without_gates"]["selected"] == "worker-b1"
    assert result["suggestions"] == [] and result["near_misses"] == []


def test_simulate_leaves_a_gated_pod_pending_and_counts_it(capsys):
    code, out, _ = run(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pods", DUMP, "-o", "json")
    doc = json.loads(out)
    assert code == 1
    gated = [p for p in doc["placements"] if p["pod"]["name"] == "train-1"]
    assert gated[0]["node"] is None
    assert gated[0]["message"].startswith("Scheduling is blocked due to non-empty scheduling gates")
    assert doc["summary"]["gated"] == 1 and doc["summary"]["skipped"] == 1     # batch/sim-7, for volcano
    code, out, _ = run(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pods", DUMP)
    assert ", 1 gated" in out.splitlines()[0]


def test_each_verbs_parser_built_alone_is_the_one_built_with_every_verb():
    # main() builds only the arguments of the verb being run.
    from policylang.cli import _parser

    full = _parser()
    verbs = full._subparsers._group_actions[0].choices
    for name, whole in verbs.items():
        alone = _parser(name)._subparsers._group_actions[0].choices[name]
        assert alone.format_help() == whole.format_help(), name


def test_cli_start_up_does_not_import_the_language_server():
    code = "import sys; from policylang.cli import main, _parser; _parser(); " \
           "assert not any(m.split('.')[0] in ('pygls', 'lsprotocol') for m in sys.modules), 'LSP imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_check_and_lint_of_a_policy_build_no_cluster_model(tmp_path):
    # What keeps them quick in an editor's save and a pre-commit hook (bench/startup.py times
    # them): the record types and the stdlib's syntax come from the cache, so neither the model's
    # classes nor numpy, YAML or cattrs are imported; lint of an unchanged file not even Lark, nor
    # the compiler (no plan here can grow too large), tomllib (no settings file) or tempfile (no fix).
    import os
    import shutil

    for name in ("team.sched", "gpu_isolation.sched"):
        shutil.copy(EXAMPLES / "policies" / name, tmp_path / name)
    policy = tmp_path / "team.sched"
    code = ("import sys; from policylang.cli import main; code = main(sys.argv[2:]); "
            "heavy = set(sys.argv[1].split()) & set(sys.modules); assert not heavy, heavy; sys.exit(code)")
    env = {k: v for k, v in os.environ.items() if k != "POLICYLANG_NO_CACHE"}
    env["POLICYLANG_CACHE_DIR"] = str(tmp_path / "cache")
    heavy = "policylang.api.model numpy yaml cattrs"
    runs = [("check", ""),                  # the first fills the cache
            ("check", heavy), ("lint", heavy),
            ("lint", f"{heavy} lark policylang.compile policylang.plan tomllib tempfile")]
    for i, (verb, unwanted) in enumerate(runs):
        if verb == "check":
            policy.write_text(policy.read_text() + f"# edit {i}\n")     # checked anew, its imports from the cache
        done = subprocess.run([sys.executable, "-c", code, unwanted, verb, str(policy)],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (verb, done.stderr)


def test_eval_of_a_cluster_without_volumes_or_devices_builds_none_of_their_classes(tmp_path):
    # Half the model's classes are storage's and DRA's (api/model/__init__.py): built on first
    # use, which a dump of nodes, pods and services never makes; a name of theirs still resolves.
    import os

    code = ("import sys; from policylang.cli import main; code = main(sys.argv[2:]); "
            "built = {'policylang.api.model.storage', 'policylang.api.model.resource'} & set(sys.modules); "
            "from policylang.api import model; "
            "named = model.ResourceClaim.__name__ == 'ResourceClaim' and not hasattr(model, 'NoSuchKind'); "
            "sys.exit(code if sys.argv[1] == 'fill' else 0 if named and not built and code == 1 else 5)")
    env = {k: v for k, v in os.environ.items() if k != "POLICYLANG_NO_CACHE"}
    env["POLICYLANG_CACHE_DIR"] = str(tmp_path / "cache")
    for run in ("fill", "eval"):    # the first fills the cache (the record types are read off every class)
        done = subprocess.run([sys.executable, "-c", code, run, "eval", "--cluster", str(EXAMPLES / "cluster.yaml"),
                               "--pod", str(EXAMPLES / "pods")], cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == (1 if run == "fill" else 0) and "scheduled to" in done.stdout, \
            (run, done.returncode, done.stderr)


def test_lsp_without_pygls_is_an_input_error_naming_the_extra(capsys, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pygls" else real(name, *a))
    assert main(["lsp"]) == 2
    assert "pip install 'policylang[lsp]'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["whatif", "--cluster", "examples/zones.yaml", "--event", "drain node-b1"],
    ["capacity", "--cluster", "examples/zones.yaml", "--pod", "examples/pods/web.yaml", "--max", "2"],
    ["simulate", "--cluster", "examples/cluster.yaml", "--pods", "examples/pods/web.yaml"],
])
def test_a_report_that_cannot_be_written_fails_before_any_work(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    code, out, err = run(capsys, *argv, "--report", str(tmp_path / "missing" / "r.html"))
    assert code == 2 and out == "" and "r.html" in err


def test_whatif_and_capacity_exit_codes(capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    assert run(capsys, "whatif", "--cluster", "examples/zones.yaml", "--event", "drain node-b1")[0] == 0
    assert run(capsys, "whatif", "--cluster", "examples/zones.yaml", "--event", "remove zone=eu-west-1a")[0] == 1
    assert run(capsys, "capacity", "--cluster", "examples/zones.yaml", "--pod", "examples/pods/too-big.yaml")[0] == 1



def test_a_cluster_is_a_dump_or_a_live_one_never_neither_nor_both(capsys):
    code, _, err = run(capsys, "explain")
    assert code == 2 and err.startswith("error: give --cluster PATH, or read a live cluster with --kubeconfig")
    code, _, err = run(capsys, "explain", "--cluster", str(EXAMPLES / "pending-dump.yaml"), "--context", "prod")
    assert code == 2 and "not both" in err


def test_snapshot_of_a_dump_redacted_decides_alike(capsys, tmp_path):
    """snapshot --cluster writes the dump as loaded (or redacted), and eval reads it back."""
    dump = str(EXAMPLES / "pending-dump.yaml")
    plain, hidden = tmp_path / "plain.yaml", tmp_path / "hidden.json"
    assert run(capsys, "snapshot", "--cluster", dump, str(plain))[0] == 0
    assert run(capsys, "snapshot", "--cluster", dump, "--redact", str(hidden))[0] == 0
    original = run(capsys, "eval", "--cluster", dump, "-o", "json")
    assert run(capsys, "eval", "--cluster", str(plain), "-o", "json") == original
    redacted = run(capsys, "eval", "--cluster", str(hidden), "-o", "json")
    assert redacted[0] == original[0]
    assert [r["message"] for r in json.loads(redacted[1])["results"]] == \
        [r["message"] for r in json.loads(original[1])["results"]]
    code, out, _ = run(capsys, "snapshot", "--cluster", dump, "-o", "json")
    assert code == 0 and json.loads(out)["kind"] == "List"
    code, _, err = run(capsys, "snapshot", "--cluster", dump, dump)
    assert code == 2 and "refusing to write the state over a --cluster input" in err

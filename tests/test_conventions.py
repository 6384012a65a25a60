"""The command line's conventions, as a kubectl or compiler user expects them: --version, `-` for
standard input, --pod/--pods on every verb that places pods, the same answer for a pod of another
scheduler everywhere, a closed pipe that keeps the exit code, and inputs refused as kube-scheduler
refuses them."""

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from policylang.cli import main

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.startswith("policylang ")


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_a_dash_reads_the_cluster_from_standard_input(capsys, monkeypatch):
    _, from_file, _ = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods", "-o", "json")
    _stdin(monkeypatch, (EXAMPLES / "cluster.yaml").read_bytes())
    code, from_stdin, _ = run(capsys, "eval", "--cluster", "-", "--pod", EXAMPLES / "pods", "-o", "json")
    assert code == 1 and from_stdin == from_file


def test_a_dash_reads_json_pods_from_standard_input(capsys, monkeypatch):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}
    _stdin(monkeypatch, json.dumps(pod).encode())
    code, out, _ = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", "-", "-o", "json")
    assert code == 0 and json.loads(out)["results"][0]["pod"]["name"] == "p"


def test_standard_input_is_read_once(capsys, monkeypatch):
    _stdin(monkeypatch, (EXAMPLES / "cluster.yaml").read_bytes())
    code, _, err = run(capsys, "eval", "--cluster", "-", "--pod", "-")
    assert code == 2 and "standard input was already read: give - once" in err


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-8-sig"])
def test_utf16_and_utf8_with_a_byte_order_mark_decode(capsys, tmp_path, encoding):
    """PowerShell's `kubectl get ... > dump.yaml` writes UTF-16 (with a BOM, or LE without one)."""
    dump = tmp_path / "cluster.yaml"
    dump.write_bytes((EXAMPLES / "cluster.yaml").read_text().encode(encoding))
    _, expected, _ = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods", "-o", "json")
    code, out, err = run(capsys, "eval", "--cluster", dump, "--pod", EXAMPLES / "pods", "-o", "json")
    assert (code, err) == (1, "") and out == expected


@pytest.mark.parametrize("verb", ["eval", "explain"])
def test_pods_is_accepted_for_pod(capsys, verb):
    a = run(capsys, verb, "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods", "-o", "json")
    b = run(capsys, verb, "--cluster", EXAMPLES / "cluster.yaml", "--pods", EXAMPLES / "pods", "-o", "json")
    assert a == b and a[0] == 1


def test_pod_is_accepted_for_pods(capsys):
    a = run(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pods", EXAMPLES / "pods", "-o", "json")
    b = run(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods", "-o", "json")
    assert a == b


def test_explain_takes_no_preemption_and_executor(capsys):
    cluster, pods = EXAMPLES / "cluster.yaml", EXAMPLES / "pods"
    vector = run(capsys, "explain", "--cluster", cluster, "--pod", pods, "-o", "json")
    reference = run(capsys, "explain", "--cluster", cluster, "--pod", pods, "-o", "json", "--executor", "reference")
    assert vector == reference
    code, out, _ = run(capsys, "explain", "--cluster", cluster, "--pod", pods, "-o", "json", "--no-preemption")
    messages = [r["message"] for r in json.loads(out)["results"] if r["message"]]
    assert messages and not any("preemption:" in m for m in messages)


@pytest.mark.parametrize("value", ["101", "-1"])
def test_percentage_of_nodes_to_score_outside_0_to_100_is_refused(capsys, value):
    for verb in ("eval", "simulate"):
        with pytest.raises(SystemExit) as exit:
            main([verb, "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods" if verb == "simulate" else "--pod",
                  str(EXAMPLES / "pods"), "--percentage-of-nodes-to-score", value])
        assert exit.value.code == 2
        assert f"Invalid value: {value}: not in valid range [0-100]" in capsys.readouterr().err


def test_the_same_object_in_two_files_names_both(capsys, tmp_path):
    copy = tmp_path / "again.yaml"
    shutil.copy(EXAMPLES / "cluster.yaml", copy)
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--cluster", copy, "--pod", EXAMPLES / "pods")
    assert code == 2
    assert f"the same object is in both {EXAMPLES / 'cluster.yaml'} and {copy}" in err and "Node cp-1" in err


def test_plan_of_a_policy_without_a_profile_plans_it_alone(capsys):
    code, out, _ = run(capsys, "plan", EXAMPLES / "policies" / "gpu_isolation.sched")
    assert code == 0 and out.startswith("profile GpuIsolation") and "GpuIsolation" in out


def test_eval_with_a_policy_without_a_profile_says_what_it_needs(capsys):
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods",
                       "--profile", EXAMPLES / "policies" / "gpu_isolation.sched")
    assert code == 2
    assert 'no profile here, only policy GpuIsolation' in err and 'use "./gpu_isolation.sched"' in err


def test_a_pod_for_another_scheduler_is_left_to_it_by_every_verb(capsys):
    dump = EXAMPLES / "pending-dump.yaml"
    code, out, _ = run(capsys, "eval", "--cluster", dump, "--pod", "batch/sim-7", "-o", "json")
    [result] = json.loads(out)["results"]
    assert code == 0 and result["left_to_scheduler"] == "volcano" and result["selected"] is None
    code, out, _ = run(capsys, "explain", "--cluster", dump, "--pod", "batch/sim-7")
    assert code == 0 and "left to scheduler volcano" in out
    code, out, _ = run(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pods", dump, "-o", "json")
    summary = json.loads(out)["summary"]
    assert summary["skipped"] == 1
    # Naming a profile schedules every pod with it, as simulate --profile always did.
    code, out, _ = run(capsys, "eval", "--cluster", dump, "--pod", "batch/sim-7", "--profile", "default-scheduler",
                       "-o", "json")
    assert json.loads(out)["results"][0]["selected"] == "worker-b1"


class _ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError


def test_a_closed_pipe_keeps_the_exit_code(monkeypatch):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    monkeypatch.setattr("os.dup2", lambda *a: None)     # the test's stdout is not a file descriptor
    assert main(["eval", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pods")]) == 1

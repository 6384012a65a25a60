"""`policylang serve` over real HTTP: one server on a free loopback port (tests/serve_process.py)
with the team profile (GPU isolation) plus a rule, on examples/cluster.yaml."""

from __future__ import annotations

import base64
import json
from pathlib import Path
import shutil
import time

import pytest
import yaml

from serve_process import Serve

ROOT = Path(__file__).parent.parent
pytest.importorskip("starlette")

RULED = """policy SpotWeb

rule spot_web when pod.metadata.labels["app"] == "web" {
    tolerate "example.com/spot" exists : NoSchedule
    spread by "topology.kubernetes.io/zone" max_skew 1 when_unsatisfiable ScheduleAnyway
}
"""
GPU_REASON = "node(s) are reserved for GPU workloads"
FILTER_FIELDS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def _profile(tmp: Path) -> Path:
    shutil.copy(ROOT / "examples/policies/gpu_isolation.sched", tmp / "gpu_isolation.sched")
    team = (ROOT / "examples/policies/team.sched").read_text().replace(
        "    use ImageLocality weight 1\n", "    use ImageLocality weight 1\n    use \"./spot_web.sched\"\n")
    (tmp / "team.sched").write_text(team)
    (tmp / "spot_web.sched").write_text(RULED)
    return tmp / "team.sched"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    profile = _profile(tmp)
    server = Serve(["--profile", str(profile), "--cluster", str(ROOT / "examples/cluster.yaml"),
                    "--decision-log", str(tmp / "decisions.jsonl"), "--reload-interval", "0.2",
                    "--max-request-size", "256K"], tmp)
    server.dir = tmp
    yield server
    assert server.stop() == 0, server.log()


def _pod(name: str, gpu: bool = False, labels: "dict | None" = None) -> dict:
    requests = {"cpu": "100m", **({"nvidia.com/gpu": "1"} if gpu else {})}
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels or {}},
            "spec": {"schedulerName": "team-scheduler",
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests,
                                                                                     "limits": requests}}]}}


def _nodes() -> list:
    docs = [d for d in yaml.safe_load_all((ROOT / "examples/cluster.yaml").read_text()) if d]
    items = [i for d in docs for i in (d["items"] if d["kind"] == "List" else [d])]
    return [i for i in items if i["kind"] == "Node"]


NAMES = sorted(n["metadata"]["name"] for n in _nodes())


def test_filter_rejects_gpu_nodes_for_a_pod_without_gpus_with_go_field_names(served):
    status, result = served.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})
    assert status == 200 and set(result) == FILTER_FIELDS
    assert result["FailedNodes"] == {"gpu-a1": GPU_REASON, "gpu-b1": GPU_REASON}
    assert result["NodeNames"] == [n for n in NAMES if not n.startswith("gpu-")]
    assert result["Nodes"] is None and result["FailedAndUnresolvableNodes"] == {} and result["Error"] == ""


def test_input_keys_are_read_case_insensitively_as_go_does(served):
    exact = served.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})
    folded = served.post("/filter", {"pod": _pod("web"), "NODENAMES": NAMES, "Unknown": 1})
    assert folded == exact


def test_filter_with_whole_nodes_answers_with_nodes(served):
    nodes = _nodes()
    status, result = served.post("/filter", {"Pod": _pod("train", gpu=True), "Nodes": {"items": nodes}})
    assert status == 200 and result["NodeNames"] is None
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == [n["metadata"]["name"] for n in nodes]


def test_a_node_the_state_does_not_know_fails(served):
    _, result = served.post("/filter", {"Pod": _pod("web"), "NodeNames": ["worker-a1", "ghost"]})
    assert result["NodeNames"] == ["worker-a1"] and list(result["FailedNodes"]) == ["ghost"]


def test_prioritize_maps_0_to_100_onto_0_to_10(served):
    status, result = served.post("/prioritize", {"Pod": _pod("train", gpu=True), "NodeNames": NAMES})
    assert status == 200
    scores = {h["Host"]: h["Score"] for h in result}
    assert set(result[0]) == {"Host", "Score"}
    # gpu-a1 has an a100 (preferred: 100 → 10), gpu-b1 a t4 (0), the others no GPU label (0).
    assert scores == {n: (10 if n == "gpu-a1" else 0) for n in NAMES}
    _, plain = served.post("/prioritize", {"Pod": _pod("web"), "NodeNames": NAMES})
    assert {h["Score"] for h in plain} == {0}     # the score skips pods without GPUs


def test_preempt_keeps_only_candidates_the_team_filters_pass(served):
    victims = {n: {"Pods": [{"UID": "uid-none"}], "NumPDBViolations": 1} for n in ("gpu-a1", "worker-a1")}
    status, result = served.post("/preempt", {"Pod": _pod("web"), "NodeNameToMetaVictims": victims})
    assert status == 200
    assert result == {"NodeNameToMetaVictims": {"worker-a1": {"Pods": [{"UID": "uid-none"}], "NumPDBViolations": 1}}}


def test_mutate_returns_the_rules_json_patch(served):
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "r-1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
                          "namespace": "default", "object": _pod("web-1", labels={"app": "web"})}}
    status, result = served.post("/mutate", review)
    assert status == 200 and result["response"]["uid"] == "r-1" and result["response"]["allowed"] is True
    patch = json.loads(base64.b64decode(result["response"]["patch"]))
    assert patch == [
        {"op": "add", "path": "/spec/tolerations",
         "value": [{"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}]},
        {"op": "add", "path": "/spec/topologySpreadConstraints",
         "value": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "web"}}}]}]
    review["request"]["object"] = _pod("other")
    _, plain = served.post("/mutate", review)
    assert plain["response"] == {"uid": "r-1", "allowed": True}


def test_health_readiness_and_metrics(served):
    assert served.get("/healthz") == (200, b"ok")
    assert served.get("/readyz") == (200, b"ok")
    served.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})
    status, raw = served.get("/metrics")
    text = raw.decode()
    assert status == 200
    assert 'policylang_serve_requests_total{code="200",verb="filter"}' in text
    assert 'policylang_serve_request_seconds_bucket{le="0.05",verb="filter"}' in text
    assert 'policylang_serve_rejections_total{plugin="GpuIsolation"}' in text
    assert "policylang_serve_state_age_seconds" in text


def test_a_body_over_the_limit_is_413(served):
    status, body = served.request("POST", "/filter", b" " * (300 * 1024), {"Content-Type": "application/json"})
    assert status == 413 and json.loads(body)["error"] == "request body exceeds 262144 bytes (--max-request-size)"


@pytest.mark.parametrize("body, reason", [
    (b"{bad", "malformed JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    (b"[" * 100_000 + b"]" * 100_000, "malformed JSON: exceeded max depth"),
    (b'{"Pod": 3}', "json: cannot unmarshal number into Go struct field ExtenderArgs.Pod of type v1.Pod"),
    (b'{"NodeNames": []}', "ExtenderArgs.Pod is required"),
    (b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": "x"}}, "NodeNames": []}', "Pod"),
])
def test_bad_requests_are_400_with_the_reason(served, body, reason):
    status, text = served.request("POST", "/filter", body, {"Content-Type": "application/json"})
    assert status == 400 and reason in json.loads(text)["error"] and "Traceback" not in text.decode()


def test_the_decision_log_has_one_json_line_per_decision(served):
    served.post("/filter", {"Pod": _pod("logged"), "NodeNames": NAMES})
    lines = [json.loads(line) for line in (served.dir / "decisions.jsonl").read_text().splitlines()]
    mine = [e for e in lines if e.get("pod") == "default/logged"]
    assert mine and mine[-1]["verb"] == "filter" and mine[-1]["rejections"] == {"GpuIsolation": 2}


def _wait_for(condition, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_hot_reload_refuses_a_bad_policy_and_takes_a_good_one(served):
    policy = served.dir / "gpu_isolation.sched"
    good = policy.read_text()
    policy.write_text(good.replace("reject when", "reject whenn"))
    assert _wait_for(lambda: "policy_reload_refused" in served.log()), served.log()
    _, result = served.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})
    assert result["FailedNodes"]["gpu-a1"] == GPU_REASON          # the old policy still serves
    policy.write_text(good.replace(GPU_REASON, "GPU nodes are for GPU pods"))
    assert _wait_for(lambda: served.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})[1]
                     ["FailedNodes"].get("gpu-a1") == "GPU nodes are for GPU pods"), served.log()
    _, raw = served.get("/metrics")
    assert 'policylang_serve_policy_reloads_total{result="refused"} 1.0' in raw.decode()
    assert 'policylang_serve_policy_reloads_total{result="ok"} 1.0' in raw.decode()


@pytest.mark.parametrize("argv, message", [
    (["serve", "--profile", "default-scheduler"], "give --cluster PATH, or a live cluster"),
    (["serve", "--cluster", "examples/cluster.yaml", "--kubeconfig", "k"], "not both"),
    (["serve", "--cluster", "examples/cluster.yaml", "--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
    (["serve", "--cluster", "examples/cluster.yaml", "--client-ca", "ca.pem"], "--client-ca needs --tls-cert"),
    (["serve", "--profile", "x", "--config", "y", "--cluster", "examples/cluster.yaml"], "not both"),
])
def test_serve_refuses_bad_arguments_before_it_starts(argv, message, capsys):
    from policylang.cli import main
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_with_a_client_ca_only_clients_with_a_certificate_it_signed_get_an_answer(tmp_path):
    import ssl
    import urllib.request

    from serve_process import certificates

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not on PATH: no certificates can be made")
    cert, key, ca = certificates(tmp_path)
    server = Serve(["--cluster", str(ROOT / "examples/cluster.yaml"), "--tls-cert", str(cert), "--tls-key", str(key),
                    "--client-ca", str(ca), "--reload-interval", "0"], tmp_path, ca=ca,
                   client_cert=(tmp_path / "client.crt", tmp_path / "client.key"))
    try:
        status, result = server.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})
        assert status == 200 and result["NodeNames"] == NAMES     # the default profile: no team policies
        anonymous = ssl.create_default_context(cafile=str(ca))
        with pytest.raises((ssl.SSLError, OSError)):
            urllib.request.urlopen(server.url + "/healthz", context=anonymous, timeout=10).read()
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("raw, expected", [
    ({"Pod": {"a": 1}}, {"Pod": {"a": 1}}),
    ({"pod": {"a": 1}}, {"Pod": {"a": 1}}),                          # case-insensitive, as encoding/json
    ({"POD": {"a": 1}, "Pod": {"b": 2}}, {"Pod": {"b": 2}}),         # a later key overrides an earlier one
    ({"Pod": None, "NodeNames": ["n"]}, {"NodeNames": ["n"]}),        # null leaves the field unset
    ({"Pod": {}, "Extra": 1}, {"Pod": {}}),                           # unknown keys are ignored
])
def test_go_struct_reads_keys_as_gos_decoder(raw, expected):
    from policylang.serve.extender import go_struct
    assert go_struct(raw, "ExtenderArgs") == expected


def test_a_changed_dump_is_reloaded_and_a_broken_one_refused(tmp_path):
    profile = _profile(tmp_path)
    dump = tmp_path / "cluster.yaml"
    text = (ROOT / "examples/cluster.yaml").read_text()
    dump.write_text(text)
    server = Serve(["--profile", str(profile), "--cluster", str(dump), "--reload-interval", "0.2"], tmp_path)
    try:
        def failed() -> set:
            return set(server.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})[1]["FailedNodes"])
        assert failed() == {"gpu-a1", "gpu-b1"}
        dump.write_text("kind: List\nitems: [{kind: Node, metadata: {}}]\n")
        assert _wait_for(lambda: "state_reload_refused" in server.log()), server.log()
        assert failed() == {"gpu-a1", "gpu-b1"}        # the old state keeps serving
        nodes = _nodes()
        for n in nodes:
            if n["metadata"]["name"] == "worker-a1":
                n["metadata"]["labels"]["gpu-model"] = "a100"
        dump.write_text(yaml.safe_dump({"kind": "List", "items": nodes}))
        assert _wait_for(lambda: failed() == {"gpu-a1", "gpu-b1", "worker-a1"}), server.log()
    finally:
        assert server.stop() == 0


def test_a_port_in_use_is_an_input_error(capsys):
    import socket

    from policylang.cli import main
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--cluster", "examples/cluster.yaml", "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


SLOW = """policy Slow

def slow() = count(a in range(5000) where count(b in range(5000) where a == b) > 1)

filter slow_filter {
    reject when pod.metadata.labels["slow"] == "filter" and slow() > 0 and node.metadata.name != ""
        reason "never"
}

score slow_score {
    value if pod.metadata.labels["slow"] == "score" then slow() % 100 else 0
}

profile team-scheduler {
    use NodeUnschedulable
    use Slow weight 1
}
"""


COSTLY = """policy Costly

filter f {
    reject when count(a in range(1000) where node.metadata.name == pod.metadata.name) > 0
        reason "never"
}

profile team-scheduler {
    use Costly
}
"""


def test_work_past_the_request_timeout_is_answered_with_the_extenders_error(tmp_path):
    # 25 million steps (minutes): the deadline, not the step budget, stops it.
    (tmp_path / "slow.sched").write_text(SLOW)
    server = Serve(["--profile", str(tmp_path / "slow.sched"), "--cluster", str(ROOT / "examples/cluster.yaml"),
                    "--reload-interval", "0", "--request-timeout", "0.5", "--max-cost", "1000000000000"], tmp_path)
    try:
        started = time.monotonic()
        status, result = server.post("/filter", {"Pod": _pod("f", labels={"slow": "filter"}), "NodeNames": NAMES})
        assert time.monotonic() - started < 20      # (the whole work would take minutes)
        assert status == 200 and set(result) == FILTER_FIELDS
        assert "evaluation ran past its deadline of 0.5s for pod default/f in plugin Slow" in result["Error"]
        assert result["NodeNames"] == [] and result["FailedNodes"] == {}
        status, text = server.post("/prioritize", {"Pod": _pod("s", labels={"slow": "score"}), "NodeNames": NAMES})
        assert status == 503 and "ran past its deadline of 0.5s for pod default/s" in json.loads(text)["error"]
        # The next request has a deadline (and a step budget) of its own.
        status, result = server.post("/filter", {"Pod": _pod("web"), "NodeNames": NAMES})
        assert status == 200 and result["Error"] == "" and result["NodeNames"] == NAMES
        metrics = server.get("/metrics")[1].decode()
        assert 'policylang_serve_deadline_exceeded_total{verb="filter"} 1.0' in metrics
        assert 'policylang_serve_deadline_exceeded_total{verb="prioritize"} 1.0' in metrics
        assert 'policylang_serve_requests_total{code="503",verb="prioritize"} 1.0' in metrics
    finally:
        assert server.stop() == 0


def test_what_the_extender_keeps_between_requests_is_used_only_for_equal_input(tmp_path):
    from policylang.serve.server import Options, Server

    server = Server(Options(profile=str(_profile(tmp_path)), cluster=(str(ROOT / "examples/cluster.yaml"),),
                            reload_interval=0), log=None)
    try:
        def passed(pod, names):
            return server.answer("filter", {"Pod": pod, "NodeNames": names})[0]["NodeNames"]

        names = NAMES[::-1]     # not the state's order
        web, gpu = _pod("same"), _pod("same", gpu=True)     # one uid, two contents
        assert passed(web, names) == [n for n in names if not n.startswith("gpu-")]
        assert passed(gpu, names) == names
        assert passed(web, list(names)) == [n for n in names if not n.startswith("gpu-")]
        # The same length and ends as a list met before, another node in the middle.
        other = [names[0], *("ghost" if n == "gpu-a1" else n for n in names[1:-1]), names[-1]]
        result = server.answer("filter", {"Pod": gpu, "NodeNames": other})[0]
        assert result["NodeNames"] == [n for n in other if n != "ghost"] and list(result["FailedNodes"]) == ["ghost"]
        scores = json.loads(server.answer("prioritize", {"Pod": gpu, "NodeNames": other})[0])
        assert [h["Host"] for h in scores] == [n for n in other if n != "ghost"]
        assert {h["Host"]: h["Score"] for h in scores}["gpu-b1"] == 0
        scores = json.loads(server.answer("prioritize", {"Pod": gpu, "NodeNames": names})[0])
        assert {h["Host"]: h["Score"] for h in scores}["gpu-a1"] == 10
    finally:
        server.close()
def test_each_request_is_one_evaluation_with_whole_cost_budgets(tmp_path):
    """A request is one evaluation: the budgets start whole for each (what earlier ones spent is
    not taken from it), and one that runs out is answered in the extender's Error field naming
    the statement, never a crash."""
    import io

    from policylang.cost import max_cost
    from policylang.serve.server import Options, Server

    (tmp_path / "costly.sched").write_text(COSTLY)
    options = Options(profile=str(tmp_path / "costly.sched"), cluster=(str(ROOT / "examples/cluster.yaml"),))
    body = lambda name: {"Pod": _pod(name), "NodeNames": NAMES}      # noqa: E731 (a new pod: nothing kept)
    with max_cost(20_000, 20_000):      # each request takes 7,000 to 14,000 steps
        server = Server(options, log=io.StringIO())
        for i in range(5):
            answer, outcome, _ = server.answer("filter", body(f"web-{i}"))
            assert answer["NodeNames"] == NAMES
    with max_cost(1_000):
        answer, outcome, _ = server.answer("filter", body("web-5"))
        assert "costly.sched:4:5: evaluation ran past its cost budget of 1,000 steps for pod default/web-5 " \
               "in plugin Costly" in answer["Error"] and answer["NodeNames"] == []
    server.close()

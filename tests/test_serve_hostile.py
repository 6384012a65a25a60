"""`policylang serve` against hostile clients (issue 46): requests of the wrong shape, and clients
that open connections and stall.

- Every request is checked against the shape of what it claims to be: the requests below, and
  mutations of valid ExtenderArgs, ExtenderPreemptionArgs and AdmissionReviews (a value of another
  type, null, a string, a number, a key removed, at every path) are answered below 500, always with
  JSON, and a refusal names the field; a Hypothesis fuzz and a seeded run of 10,000, through the app
  in process (starlette's TestClient).
- Over real HTTP (a `policylang serve` subprocess, loopback only): the listed malformed requests
  get a 4xx JSON answer and one log line each, no traceback; 200 connections that send half their
  headers do not keep /healthz from answering within a second, and are closed after
  --header-timeout; at --max-connections the longest-stalled connections make room for new ones;
  under an open-files limit lower than the connections (300 against `ulimit -n 256`) serve keeps
  answering and logs no flood.
"""

from __future__ import annotations

import copy
import io
import json
import os
from pathlib import Path
import random
import resource
import select
import socket
import subprocess
import sys
import time
import urllib.request

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from serve_process import Serve, free_port
from test_serve import NAMES, _nodes, _pod, _profile

pytest.importorskip("starlette")
ROOT = Path(__file__).parent.parent


# ---------------------------------------------------------------------------------------------
# Requests of every shape, in process


def _rich_pod(name: str, labels: "dict | None" = None, gpu: bool = False) -> dict:
    """A pod using many of the fields a mutation can break."""
    pod = _pod(name, gpu=gpu, labels=labels or {"app": "web"})
    pod["metadata"].update(annotations={"a": "b"}, generateName=f"{name}-")
    pod["spec"].update(
        priority=10, nodeSelector={"kubernetes.io/os": "linux"},
        tolerations=[{"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}]}},
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                    "whenUnsatisfiable": "ScheduleAnyway",
                                    "labelSelector": {"matchLabels": {"app": "web"}}}])
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]
    return pod


def _review(obj) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "r-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "operation": "CREATE", "namespace": "default", "name": "",
                        "userInfo": {"username": "u", "groups": ["g"], "extra": {"k": ["v"]}},
                        "dryRun": False, "object": obj}}


def _seeds() -> list:
    nodes = _nodes()[:3]
    victim = _rich_pod("victim")
    victim["spec"]["nodeName"] = "worker-a1"
    return [
        ("/filter", {"Pod": _rich_pod("web"), "NodeNames": NAMES}),
        ("/filter", {"Pod": _rich_pod("train", gpu=True), "Nodes": {"items": nodes}}),
        ("/prioritize", {"Pod": _rich_pod("train", gpu=True), "NodeNames": NAMES}),
        ("/prioritize", {"Pod": _rich_pod("web"), "Nodes": {"items": nodes}}),
        ("/preempt", {"Pod": _rich_pod("web"), "NodeNameToMetaVictims": {
            "worker-a1": {"Pods": [{"UID": "uid-none"}], "NumPDBViolations": 1},
            "gpu-a1": {"Pods": [{"UID": "uid-x"}, {"UID": "uid-y"}], "NumPDBViolations": 0}}}),
        ("/preempt", {"Pod": _rich_pod("web"), "NodeNameToVictims": {
            "worker-a1": {"Pods": [victim], "NumPDBViolations": 0}}}),
        ("/mutate", _review(_rich_pod("web-1", labels={"app": "web"}))),
    ]


SEEDS = _seeds()
HOSTILE = (None, "x", "", 0, -1, 1.5, 2**70, True, [], {}, [None], ["x"], [1], {"x": None}, [{}], {"": []},
           "1Gi", -(2**63) - 1, 2**63, float("nan"), float("inf"), 1e308, -0.0, "\x00\n\u00e9", "-1", "1e3",
           "NaN", "a" * 300, {"name": 1}, {"matchLabels": None}, "\ud800", {"\udfff": "\ud800"})


def _paths(doc, at=()):
    """Every path in a JSON document (the root too): keys of objects, indexes of arrays."""
    yield at
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, (*at, i))


def _mutate(doc, choose):
    """One mutation of ``doc`` (in place; returns the document, which a change at the root
    replaces): at a path ``choose`` picks, a hostile value, or the key removed, or a key added."""
    path = choose(list(_paths(doc)))
    action = choose(("replace", "replace", "replace", "remove", "add"))
    value = copy.deepcopy(choose(HOSTILE))
    if not path:
        return value if action == "replace" else doc
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "replace":
        parent[last] = value
    elif action == "remove":
        del parent[last]
    elif isinstance(parent[last], dict):
        parent[last][choose(("x", "Pod", "pods", "metadata", "NodeNames", "kind", "items", "\ud800"))] = value
    elif isinstance(parent[last], list):
        parent[last].append(value)
    return doc


def _fuzzed(choose) -> tuple:
    path, seed = choose(SEEDS)
    doc = copy.deepcopy(seed)
    for _ in range(choose((1, 1, 1, 2, 3))):
        doc = _mutate(doc, choose)
    return path, doc


@pytest.fixture(scope="module")
def app_client(tmp_path_factory):
    from starlette.testclient import TestClient

    from policylang.serve.server import Options, Server, build_app

    tmp = tmp_path_factory.mktemp("hostile")
    log = io.StringIO()
    server = Server(Options(profile=str(_profile(tmp)), cluster=(str(ROOT / "examples/cluster.yaml"),),
                            reload_interval=0), log=log)
    client = TestClient(build_app(server), raise_server_exceptions=True)
    client.log = log
    yield client
    server.close()


def _check(client, path: str, doc) -> None:
    raw = json.dumps(doc).encode()      # (NaN and integers past 64 bits as the stdlib writes them)
    response = client.post(path, content=raw, headers={"content-type": "application/json"})
    assert response.status_code < 500, (path, doc, response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json"), (path, doc, response.text)
    answer = json.loads(response.content)
    if response.status_code != 200:
        assert isinstance(answer, dict) and isinstance(answer.get("error"), str) and answer["error"], answer


def test_the_seeds_are_answered(app_client):
    for path, doc in SEEDS:
        response = app_client.post(path, json=doc)
        assert response.status_code == 200, (path, response.text)
    patch = app_client.post("/mutate", json=SEEDS[-1][1]).json()["response"]
    assert patch["patchType"] == "JSONPatch"       # the rule matched: the pod went all the way through


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_requests_are_never_a_5xx_and_always_json(app_client, data):
    path, doc = _fuzzed(lambda options: data.draw(st.sampled_from(list(options))))
    _check(app_client, path, doc)


FUZZ_RUN = int(os.environ.get("POLICYLANG_SERVE_FUZZ", "10000"))


async def _asgi_post(app, path: str, body: bytes) -> tuple:
    """One POST through the ASGI app itself (routing, middleware and all, as uvicorn calls it;
    TestClient's thread hand-off costs ~3 ms a request, 15 times the request)."""
    sent, incoming = [], [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        return incoming.pop() if incoming else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8443)}
    await app(scope, receive, send)
    start, *chunks = sent
    assert start["type"] == "http.response.start" and chunks and not chunks[-1].get("more_body"), sent
    return start["status"], dict(start["headers"]), b"".join(c.get("body", b"") for c in chunks)


def test_ten_thousand_fuzzed_requests(app_client):
    """A seeded run (reproducible: the index is in the failure) of 10,000 mutated requests
    through the app (POLICYLANG_SERVE_FUZZ sets another count): ~5 s."""
    import asyncio

    rng = random.Random(46)
    app = app_client.app
    codes: dict = {}

    async def run():
        for i in range(FUZZ_RUN):
            path, doc = _fuzzed(rng.choice)
            raw = json.dumps(doc).encode()
            status, headers, body = await _asgi_post(app, path, raw)
            codes[status] = codes.get(status, 0) + 1
            assert status < 500, (i, path, raw[:2000], body)
            assert headers[b"content-type"].startswith(b"application/json"), (i, path, body)
            answer = json.loads(body)
            if status != 200:
                assert isinstance(answer["error"], str) and answer["error"], (i, body)

    started = time.monotonic()
    asyncio.run(run())
    assert set(codes) <= {200, 400}, codes
    assert codes.get(200) and codes.get(400), codes        # both: the mutations reach past the first check
    assert "Traceback" not in app_client.log.getvalue()
    print(f"{FUZZ_RUN} fuzzed requests in {time.monotonic() - started:.1f}s: {codes}")


def test_an_unexpected_exception_is_a_json_500_and_one_log_line(app_client, monkeypatch):
    from policylang.serve import server as server_module

    def boom(self, verb, body):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(server_module.Server, "answer", boom)
    before = app_client.log.getvalue().count("\n")
    response = app_client.post("/filter", json=SEEDS[0][1])
    assert response.status_code == 500 and response.json() == {
        "error": "internal error (ZeroDivisionError); the server logged it"}
    lines = app_client.log.getvalue().splitlines()[before:]
    assert len(lines) == 1 and json.loads(lines[0])["event"] == "internal_error", lines
    assert json.loads(lines[0])["error"] == "ZeroDivisionError: boom" and "traceback" not in lines[0]
    monkeypatch.setenv("POLICYLANG_TRACEBACK", "1")
    app_client.post("/filter", json=SEEDS[0][1])
    assert "Traceback" in json.loads(app_client.log.getvalue().splitlines()[-1])["traceback"]


def test_an_exception_outside_the_verbs_is_a_json_500_and_one_log_line(app_client, monkeypatch):
    from policylang.serve.server import Metrics

    def boom(self):
        raise KeyError("render")

    monkeypatch.setattr(Metrics, "render", boom)
    before = app_client.log.getvalue().count("\n")
    response = app_client.get("/metrics")
    assert response.status_code == 500 and response.json()["error"] == "internal error (KeyError); the server logged it"
    lines = app_client.log.getvalue().splitlines()[before:]
    assert len(lines) == 1 and json.loads(lines[0])["path"] == "/metrics", lines


def test_unknown_paths_and_methods_are_json_too(app_client):
    for response, code in ((app_client.get("/nowhere"), 404), (app_client.get("/filter"), 405)):
        assert response.status_code == code and response.json()["error"]


# ---------------------------------------------------------------------------------------------
# Over real HTTP: a `policylang serve` subprocess


MALFORMED = [
    # (path, body, the field the answer names)
    ("/preempt", {"Pod": _pod("p"), "NodeNameToVictims": {"worker-a1": {"Pods": [None]}}},
     "ExtenderPreemptionArgs.NodeNameToVictims[worker-a1].Pods[0]: expected a Pod object, got null"),
    ("/preempt", {"Pod": _pod("p"), "NodeNameToVictims": {"worker-a1": {"Pods": ["x"]}}},
     "ExtenderPreemptionArgs.NodeNameToVictims[worker-a1].Pods[0]: expected a Pod object, got string"),
    ("/preempt", {"Pod": _pod("p"), "NodeNameToMetaVictims": {"worker-a1": {"Pods": [None]}}},
     "ExtenderPreemptionArgs.NodeNameToMetaVictims[worker-a1].Pods[0]: expected a MetaPod object, got null"),
    ("/preempt", {"Pod": _pod("p"), "NodeNameToMetaVictims": {"worker-a1": {"Pods": ["x"]}}},
     "ExtenderPreemptionArgs.NodeNameToMetaVictims[worker-a1].Pods[0]: expected a MetaPod object, got string"),
    ("/mutate", {**_review(_pod("p")), "request": {**_review(_pod("p"))["request"], "kind": "Pod"}},
     "AdmissionReview.request.kind: expected a GroupVersionKind object, got string"),
    ("/mutate", {**_review(_pod("p")), "request": {**_review(_pod("p"))["request"], "kind": ["Pod"]}},
     "AdmissionReview.request.kind: expected a GroupVersionKind object, got array"),
    ("/mutate", {**_review(_pod("p")), "request": {**_review(_pod("p"))["request"], "kind": 3}},
     "AdmissionReview.request.kind: expected a GroupVersionKind object, got number"),
    ("/mutate", _review({**_pod("p"), "metadata": {"generateName": 5}}),
     "AdmissionReview.request.object.metadata.generateName: expected a string, got number"),
    ("/mutate", _review({**_pod("p"), "metadata": "p"}),
     "AdmissionReview.request.object.metadata: expected an ObjectMeta object, got string"),
    ("/filter", {"Pod": {**_pod("p"), "metadata": {"generateName": 5}}, "NodeNames": NAMES},
     "ExtenderArgs.Pod.metadata.generateName: expected a string, got number"),
    ("/filter", {"Pod": {**_pod("p"), "metadata": "p"}, "NodeNames": NAMES},
     "ExtenderArgs.Pod.metadata: expected an ObjectMeta object, got string"),
    ("/filter", b"{bad", "malformed JSON: Expecting property name enclosed in double quotes"),
    ("/filter", {"NodeNames": []}, "ExtenderArgs.Pod is required"),
    ("/prioritize", {"Pod": 3}, "json: cannot unmarshal number into Go struct field ExtenderArgs.Pod of type v1.Pod"),
]


@pytest.fixture(scope="module")
def hostile_served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile-serve")
    server = Serve(["--profile", str(_profile(tmp)), "--cluster", str(ROOT / "examples/cluster.yaml"),
                    "--reload-interval", "0", "--header-timeout", "2", "--body-timeout", "1",
                    "--max-connections", "400"], tmp)
    yield server
    assert server.stop() == 0, server.log()


def _events(server, event: str) -> list:
    out = []
    for line in server.log().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == event:
            out.append(entry)
    return out


def test_each_malformed_request_is_a_4xx_with_json_naming_the_field_and_one_log_line(hostile_served):
    before = len(_events(hostile_served, "bad_request"))
    errors = []
    for path, body, reason in MALFORMED:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        status, answer = hostile_served.request("POST", path, raw, {"Content-Type": "application/json"})
        assert 400 <= status < 500, (path, body, status, answer)
        errors.append(json.loads(answer)["error"])
        assert reason in errors[-1], (reason, answer)
    logged = _events(hostile_served, "bad_request")[before:]
    assert [e["error"] for e in logged] == errors        # one line each
    assert "Traceback" not in hostile_served.log()


def _half_headers(port: int, count: int) -> list:
    conns = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
        conns.append(s)
    return conns


def _closed(conn: socket.socket) -> bool:
    """The server has closed it (what it sent before, a 408, read and dropped)."""
    conn.setblocking(False)
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def _wait_closed(conns: list, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    open_ = list(conns)
    while open_ and time.monotonic() < deadline:
        select.select(open_, [], [], 0.2)
        open_ = [c for c in open_ if not _closed(c)]
    return open_


def _healthz(url: str) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(url + "/healthz", timeout=5) as response:
        assert response.status == 200 and response.read() == b"ok"
    with urllib.request.urlopen(url + "/readyz", timeout=5) as response:
        assert response.status == 200
    return time.monotonic() - started


def test_stalled_clients_do_not_keep_healthz_from_answering_and_are_closed_after_the_header_timeout(hostile_served):
    started = time.monotonic()
    conns = _half_headers(hostile_served.port, 200)
    try:
        assert _healthz(hostile_served.url) < 1.0
        assert len(_wait_closed(conns[:10], 0.5)) == 10     # (not at once: they have --header-timeout 2)
        still = _wait_closed(conns, 2 + 3.0 - (time.monotonic() - started))
        assert not still, f"{len(still)} of 200 stalled connections still open after the header timeout"
        assert time.monotonic() - started < 2 + 3.0
        status, body = hostile_served.post("/filter", {"Pod": _pod("after"), "NodeNames": NAMES})
        assert status == 200 and body["NodeNames"]
    finally:
        for c in conns:
            c.close()
    time.sleep(1.2)     # (the lines after the first are written a second after it)
    timeouts = _events(hostile_served, "header_timeout")
    assert 1 < len(timeouts) <= 5 and sum(e["count"] for e in timeouts) >= 200        # at most once a second
    assert "Traceback" not in hostile_served.log()


def test_a_kept_alive_connection_gets_the_header_timeout_for_its_next_request(hostile_served):
    with socket.create_connection(("127.0.0.1", hostile_served.port), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"200 OK" in s.recv(4096)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        started = time.monotonic()
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
        assert b"408 Request Timeout" in answer and b"--header-timeout" in answer
        assert 1.5 < time.monotonic() - started < 4


def test_a_body_that_stalls_is_408_after_the_body_timeout(hostile_served):
    with socket.create_connection(("127.0.0.1", hostile_served.port), timeout=10) as s:
        s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n{\"Pod\": ")
        started = time.monotonic()
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
        assert 0.8 < time.monotonic() - started < 3
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower()
    assert json.loads(body)["error"] == "the request body did not arrive within 1.0s (--body-timeout)"


def test_invalid_http_is_400_and_uvicorns_complaints_are_throttled(hostile_served):
    for _ in range(30):
        with socket.create_connection(("127.0.0.1", hostile_served.port), timeout=10) as s:
            s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 400")
    time.sleep(1.2)
    complaints = [e for e in _events(hostile_served, "uvicorn") if e["message"] == "Invalid HTTP request received."]
    assert 1 <= len(complaints) <= 3 and sum(e["count"] for e in complaints) == 30, complaints


def test_a_tls_handshake_that_stalls_is_closed_after_the_header_timeout(tmp_path):
    import shutil

    from serve_process import certificates

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not on PATH: no certificates can be made")
    cert, key, ca = certificates(tmp_path)
    server = Serve(["--cluster", str(ROOT / "examples/cluster.yaml"), "--tls-cert", str(cert), "--tls-key", str(key),
                    "--reload-interval", "0", "--header-timeout", "1"], tmp_path, ca=ca)
    try:
        started = time.monotonic()
        conns = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(20)]
        assert server.get("/healthz") == (200, b"ok")
        assert not _wait_closed(conns, 4.0)
        assert time.monotonic() - started < 4.0
        for c in conns:
            c.close()
    finally:
        assert server.stop() == 0, server.log()


def test_headers_past_the_limit_are_431(hostile_served):
    from policylang.serve.guard import HEADER_LIMIT

    with socket.create_connection(("127.0.0.1", hostile_served.port), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        try:
            for _ in range(HEADER_LIMIT // 1000 + 2):
                s.sendall(b"X-Filler: " + b"a" * 988 + b"\r\n")
        except OSError:
            pass
        answer = s.recv(4096)
        assert answer.startswith(b"HTTP/1.1 431"), answer


def test_at_the_connection_cap_the_oldest_stalled_connections_are_shed(tmp_path):
    server = Serve(["--cluster", str(ROOT / "examples/cluster.yaml"), "--reload-interval", "0",
                    "--max-connections", "50", "--header-timeout", "20"], tmp_path)
    try:
        old = _half_headers(server.port, 40)
        time.sleep(0.3)
        new = _half_headers(server.port, 40)
        assert _healthz(server.url) < 1.0
        time.sleep(0.3)
        # 80, and the health checks' two, against 50: the oldest made room, the newest are kept.
        shed_old = [i for i, c in enumerate(old) if _closed(c)]
        shed_new = [i for i, c in enumerate(new) if _closed(c)]
        assert shed_old in (list(range(30)), list(range(31)), list(range(32))) and shed_new == [], (shed_old, shed_new)
        assert _healthz(server.url) < 1.0
        assert _events(server, "connection_shed")
        for c in old + new:
            c.close()
    finally:
        assert server.stop() == 0, server.log()


def _serve_with_file_limit(tmp: Path, limit: int, *args) -> "tuple[subprocess.Popen, int, Path]":
    port = free_port()
    log = tmp / "serve.log"

    def lower_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "policylang.cli", "serve", "--port", str(port), *args],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=lower_limit)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            _healthz(f"http://127.0.0.1:{port}")
            return proc, port, log
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(log.read_text())


def test_more_stalled_connections_than_open_files_leave_serve_answering_without_a_log_flood(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1024:
        if hard != resource.RLIM_INFINITY and hard < 1024:
            pytest.skip(f"this test opens 300 connections; the open-files limit is {soft}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    proc, port, log = _serve_with_file_limit(tmp_path, 256, "--cluster", str(ROOT / "examples/cluster.yaml"),
                                             "--reload-interval", "0", "--header-timeout", "3")
    try:
        conns = []
        for _ in range(3):      # 300, 100 at a time, health-checked in between
            conns += _half_headers(port, 100)
            assert _healthz(f"http://127.0.0.1:{port}") < 1.0
        time.sleep(1.0)
        assert _healthz(f"http://127.0.0.1:{port}") < 1.0
        assert not _wait_closed(conns, 3 + 3.0), "stalled connections outlived the header timeout"
        assert _healthz(f"http://127.0.0.1:{port}") < 1.0
        for c in conns:
            c.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0, log.read_text()
    text = log.read_text()
    lines = text.splitlines()
    serving = json.loads(lines[0])
    assert serving["limits"]["max_connections"] < 256 and "open-files limit is 256" in \
        serving["limits"]["max_connections_lowered"]
    assert "Too many open files" not in text and "Traceback" not in text
    assert len(lines) < 20, text

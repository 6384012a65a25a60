"""Reading a real API server (etcd and kube-apiserver v1.37.2 on loopback, tests/kube_apiserver.py):
explain and eval from a kubeconfig answer as on the equivalent dump, a snapshot reproduces the
live answer, kubectl policylang follows kubectl's conventions, a service account that may list
only nodes and pods gets the documented warnings, the watch-backed state follows adds, updates
and deletes, and nothing but GET requests is ever sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from policylang import cli, kubectl
from policylang.cluster.dump import dump_state
from policylang.cluster.live import KINDS, ClusterSource, load_live
from policylang.cluster.watch import WatchedState
from kube_apiserver import READER

pytestmark = pytest.mark.xdist_group("apiserver")   # one API server, in one worker
FIXTURES = Path(__file__).parent / "fixtures" / "live"
POD_KIND = next(k for k in KINDS if k.kind == "Pod")


def node(name: str, cpu: str = "4", labels: dict | None = None, taints: list | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or []},
            "status": {"capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, namespace: str = "shop", cpu: str = "1", node_name: str | None = None,
        labels: dict | None = None, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
                     **({"nodeName": node_name} if node_name else {}), **spec}}


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


CLUSTER = [
    namespace("shop"), namespace("batch"),
    node("node-a", "4", {"topology.kubernetes.io/zone": "z1"}),
    node("node-b", "8", {"topology.kubernetes.io/zone": "z2", "disk": "ssd"}),
    node("node-c", "8", {"topology.kubernetes.io/zone": "z2"}, [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
    pod("web-1", node_name="node-a", cpu="3"),
    pod("web-2", node_name="node-b", cpu="2"),
    pod("db", cpu="6", nodeSelector={"disk": "ssd"}),
    pod("huge", cpu="20"),
    pod("report", namespace="batch", cpu="1"),
]


def create(server, obj: dict) -> None:
    server.create(obj)
    if obj["kind"] == "Node":
        # The admission chain taints a new node not-ready
        # (TaintNodesByCondition) until its kubelet reports; with no kubelet, the taints are set
        # back as the node controller would once the node is Ready.
        server.patch(obj, {"spec": {"taints": obj["spec"]["taints"]}})


def kubectl_get(server, *collections: str) -> dict:
    """What `kubectl get nodes,pods,namespaces -A -o yaml` prints: the stored objects as a List."""
    items = []
    for path, kind in [(c, c.rsplit("/", 1)[1]) for c in collections]:
        kind = {"nodes": "Node", "pods": "Pod", "namespaces": "Namespace"}[kind]
        items += [{"apiVersion": "v1", "kind": kind, **o} for o in server.request("GET", path)["items"]]
    return {"apiVersion": "v1", "kind": "List", "items": items}


@pytest.fixture
def cluster(apiserver, tmp_path):
    """The API server holding CLUSTER, and the same objects as kubectl prints them, as a dump."""
    apiserver.clear()
    existing = {n["metadata"]["name"] for n in apiserver.request("GET", "/api/v1/namespaces")["items"]}
    for obj in CLUSTER:
        if obj["kind"] != "Namespace" or obj["metadata"]["name"] not in existing:
            create(apiserver, obj)
    dump = tmp_path / "cluster.yaml"
    dump.write_text(yaml.safe_dump(kubectl_get(apiserver, "/api/v1/nodes", "/api/v1/pods", "/api/v1/namespaces")))
    return apiserver, dump


def run(capsys, argv: list[str], main=cli.main) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_explain_from_a_kubeconfig_is_explain_on_the_equivalent_dump(cluster, capsys):
    server, dump = cluster
    live = run(capsys, ["explain", "--kubeconfig", str(server.kubeconfig), "-o", "json"])
    from_dump = run(capsys, ["explain", "--cluster", str(dump), "-o", "json"])
    assert live[0] == from_dump[0] == 1       # huge fits nowhere
    assert json.loads(live[1]) == json.loads(from_dump[1])
    assert {(r["pod"]["namespace"], r["pod"]["name"]) for r in json.loads(live[1])["results"]} \
        == {("shop", "db"), ("shop", "huge"), ("batch", "report")}


def test_eval_from_a_kubeconfig_is_eval_on_the_equivalent_dump(cluster, capsys):
    server, dump = cluster
    live = run(capsys, ["eval", "--kubeconfig", str(server.kubeconfig), "--pod", "shop/db", "-o", "json"])
    from_dump = run(capsys, ["eval", "--cluster", str(dump), "--pod", "shop/db", "-o", "json"])
    assert live == from_dump
    assert json.loads(live[1])["results"][0]["selected"] == "node-b"


def test_simulate_from_a_kubeconfig_is_simulate_on_the_equivalent_dump(cluster, capsys, tmp_path):
    server, dump = cluster
    batch = tmp_path / "batch.yaml"
    batch.write_text(yaml.safe_dump_all([pod(f"new-{i}", cpu="2") for i in range(3)]))
    live = run(capsys, ["simulate", "--kubeconfig", str(server.kubeconfig), "--pods", str(batch), "-o", "json"])
    assert live == run(capsys, ["simulate", "--cluster", str(dump), "--pods", str(batch), "-o", "json"])


def test_namespace_narrows_the_pending_pods_read(cluster, capsys):
    server, _ = cluster
    code, out, _ = run(capsys, ["explain", "--kubeconfig", str(server.kubeconfig), "-n", "batch", "-o", "json"])
    assert [r["pod"] for r in json.loads(out)["results"]] == [{"namespace": "batch", "name": "report"}]
    assert code == 0


def test_snapshot_then_eval_reproduces_the_live_answer(cluster, capsys, tmp_path):
    server, _ = cluster
    snapshot = tmp_path / "snapshot.yaml"
    assert run(capsys, ["snapshot", "--kubeconfig", str(server.kubeconfig), str(snapshot)])[0] == 0
    live = run(capsys, ["eval", "--kubeconfig", str(server.kubeconfig), "-o", "json"])
    again = run(capsys, ["eval", "--cluster", str(snapshot), "-o", "json"])
    assert live == again
    # Redacted, it decides the same up to the renaming: the same number of pods placed, the
    # same nodes chosen (node order, hence names' order, is kept).
    redacted = tmp_path / "redacted.json"
    assert run(capsys, ["snapshot", "--cluster", str(snapshot), "--redact", str(redacted)])[0] == 0
    assert "node-a" not in redacted.read_text() and "shop" not in redacted.read_text()
    hidden = run(capsys, ["eval", "--cluster", str(redacted), "-o", "json"])
    assert hidden[0] == live[0]
    order = sorted(n["metadata"]["name"] for n in CLUSTER if n["kind"] == "Node")
    stand_ins = sorted(n["metadata"]["name"] for n in json.loads(redacted.read_text())["items"] if n["kind"] == "Node")
    chosen = {r["selected"] for r in json.loads(live[1])["results"]}
    assert {stand_ins[order.index(n)] if n else None for n in chosen} \
        == {r["selected"] for r in json.loads(hidden[1])["results"]}


def test_kubectl_policylang_why_follows_kubectl_conventions(cluster, capsys, monkeypatch):
    server, dump = cluster
    monkeypatch.setenv("KUBECONFIG", str(server.write_kubeconfig(READER, "policylang-reader-token", "shop")))
    code, text, err = run(capsys, ["why", "pod/huge"], kubectl.main)
    assert not err, err
    assert (code, text) == run(capsys, ["explain", "--cluster", str(dump), "--pod", "shop/huge"])[:2]
    _, as_yaml, _ = run(capsys, ["why", "huge", "-n", "shop", "-o", "yaml"], kubectl.main)
    _, as_json, _ = run(capsys, ["why", "pod/huge", "--kubeconfig", str(server.kubeconfig), "-n", "shop",
                                 "-o", "json"], kubectl.main)
    assert yaml.safe_load(as_yaml) == json.loads(as_json)
    # Without a pod: every pending pod of the context's namespace.
    _, every, _ = run(capsys, ["why", "-o", "json"], kubectl.main)
    assert [r["pod"]["name"] for r in json.loads(every)["results"]] == ["db", "huge"]
    assert run(capsys, ["why", "deployment/web"], kubectl.main)[0] == 2


def test_a_service_account_that_may_list_only_nodes_and_pods_gets_the_documented_warnings(cluster, capsys, golden):
    server, dump = cluster
    token = server.service_account_token("default", "nodes-and-pods",
                                         [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["list"]}])
    limited = server.write_kubeconfig("nodes-and-pods", token)
    code, out, err = run(capsys, ["explain", "--kubeconfig", str(limited), "--pod", "shop/db", "-o", "json"])
    golden(FIXTURES / "nodes_and_pods_only.stderr", err)
    assert code == 0 and json.loads(out) == json.loads(
        run(capsys, ["explain", "--cluster", str(dump), "--pod", "shop/db", "-o", "json"])[1])
    # Nodes are needed for any answer: not allowed to list them is an error, not a crash.
    no_nodes = server.write_kubeconfig("pods-only", server.service_account_token(
        "default", "pods-only", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]))
    code, _, err = run(capsys, ["explain", "--kubeconfig", str(no_nodes)])
    assert code == 2 and err.startswith(f"error: {server.url}: not allowed to list nodes (403 Forbidden)")


def test_a_bad_kubeconfig_is_an_input_error(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    code, _, err = run(capsys, ["snapshot", "--kubeconfig", str(missing)])
    assert code == 2 and "no such file" in err
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")
    code, _, err = run(capsys, ["snapshot", "--kubeconfig", str(broken), "--context", "prod"])
    assert code == 2 and err.startswith(f"error: {broken}: cannot use the cluster configuration") and "prod" in err
    for text in ("clusters: 5\ncurrent-context: x\n", "[1, 2\n", "current-context: a\ncontexts: [{name: a}]\n"):
        broken.write_text(text)
        code, _, err = run(capsys, ["snapshot", "--kubeconfig", str(broken)])     # snapshot: no policy to load
        assert code == 2 and err.startswith(f"error: {broken}: "), err


def _comparable(state) -> list:
    """The state's objects as a dump has them, in one order (a watch sees pods in the order they
    changed, a list in the order the server keeps them)."""
    return sorted((json.dumps(o, sort_keys=True) for o in dump_state(state)["items"]))


def _decision(state, key: str) -> str:
    from policylang.report.decisions import explain_json
    from policylang.explain import explain
    from policylang import load_plans
    from policylang.run.schedule import Executable

    target = next(p for p in state.pods if p.key == key)
    exe = Executable(load_plans()["default-scheduler"])
    return explain_json([explain(exe, state.without([target]), target)])


def test_the_watched_state_follows_adds_updates_and_deletes(cluster):
    server, _ = cluster
    source = ClusterSource(kubeconfig=str(server.kubeconfig))

    def fresh():
        return load_live(source)[0]

    with WatchedState(source, watch_timeout=60) as watched:
        assert _comparable(watched.state) == _comparable(fresh())
        create(server, node("node-d", "16", {"disk": "ssd"}))
        server.create(pod("web-3", node_name="node-d", cpu="10"))
        server.patch(pod("web-1"), {"metadata": {"labels": {"app": "web", "tier": "front"}}})
        server.delete(pod("web-2"))
        server.delete(node("node-c"))
        server.create(pod("later", cpu="2"))
        assert watched.wait_until(lambda s: _comparable(s) == _comparable(fresh()), timeout=30), watched.errors
        # The indexes kept by put_pod/drop_pod decide as a state built afresh.
        assert _decision(watched.state, "shop/db") == _decision(fresh(), "shop/db")

        # A watch from a version older than the server keeps is answered 410 Gone: the kind is
        # listed again and the state made anew.
        old = server.request("GET", "/api/v1/pods")["metadata"]["resourceVersion"]
        server.create(pod("gone", cpu="1"))
        server.patch(pod("gone"), {"metadata": {"labels": {"app": "gone", "changed": "yes"}}})
        server.compact_etcd()     # the watch from `old` would start at the create, now compacted
        watched.follow(POD_KIND, old)
        assert watched.wait_until(lambda s: watched.relists >= 1, timeout=30), watched.errors
        server.delete(pod("later"))
        server.delete(pod("gone"))
        assert watched.wait_until(lambda s: _comparable(s) == _comparable(fresh()), timeout=30), watched.errors
        assert _decision(watched.state, "shop/db") == _decision(fresh(), "shop/db")


def test_only_get_requests_are_sent(apiserver):
    """Every request policylang sent in this session, as the API server's audit log has them
    (the reader user is policylang's only; the tests create objects as another)."""
    events = apiserver.audit_events(READER)
    if not events:
        pytest.skip("no policylang request in this run (the other live tests were deselected)")
    assert {e["verb"] for e in events} <= {"get", "list", "watch"}, {e["verb"] for e in events}
    assert {e["verb"] for e in events} >= {"list"}

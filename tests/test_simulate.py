"""simulate: queue order, binding, preemption, and a written state that loads back."""

import json
from pathlib import Path

import pytest
import yaml

from policylang import load_cluster, load_plans
from policylang.cli import main
from policylang.run.schedule import Executable, schedule
from policylang.forecast.simulate import queue_order, simulate

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"


def node(name, cpu="2", pods="110"):
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}}}


def pod(name, cpu, node=None, priority=None, created=None, policy=None):
    p = {"kind": "Pod", "metadata": {"name": name, "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}]}}
    if node:
        p["spec"]["nodeName"] = node
        p["status"] = {"phase": "Running"}
    if priority is not None:
        p["spec"]["priority"] = priority
    if created:
        p["metadata"]["creationTimestamp"] = created
    if policy:
        p["spec"]["preemptionPolicy"] = policy
    return p


def write(tmp_path, name, items):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"kind": "List", "items": items}))
    return path


def run_json(capsys, *args):
    code = main([str(a) for a in args])
    return code, json.loads(capsys.readouterr().out)


def test_pods_are_placed_one_after_another(tmp_path, capsys):
    cluster = write(tmp_path, "c.yaml", [node("n1", cpu="2")])
    pods = write(tmp_path, "p.yaml", [pod("a", "1500m"), pod("b", "1500m")])
    code, doc = run_json(capsys, "simulate", "--cluster", cluster, "--pods", pods, "-o", "json")
    assert doc["schema"] == "policylang/simulate/v1"
    assert [(p["pod"]["name"], p["node"]) for p in doc["placements"]] == [("a", "n1"), ("b", None)]
    assert doc["placements"][1]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert doc["summary"]["scheduled"] == 1 and doc["summary"]["unschedulable"] == 1
    assert code == 1


def test_queue_is_priority_then_creation_time(tmp_path):
    pods_file = write(tmp_path, "p.yaml", [pod("late", "1", created="2026-01-02T00:00:00Z"),
                                           pod("early", "1", created="2026-01-01T00:00:00Z"),
                                           pod("urgent", "1", priority=100, created="2026-01-03T00:00:00Z")])
    from policylang.cluster.load import load_objects
    order = [p.metadata.name for p in queue_order(load_objects(pods_file))]
    assert order == ["urgent", "early", "late"]


def test_preemption_evicts_lower_priority_pods(tmp_path, capsys):
    cluster = write(tmp_path, "c.yaml", [node("n1", cpu="2"),
                                         pod("low-1", "1", node="n1", priority=1),
                                         pod("low-2", "1", node="n1", priority=1)])
    pods = write(tmp_path, "p.yaml", [pod("vip", "1500m", priority=1000)])
    code, doc = run_json(capsys, "simulate", "--cluster", cluster, "--pods", pods, "-o", "json")
    [placement] = doc["placements"]
    assert placement["node"] == "n1" and placement["nominated_node"] == "n1"
    assert sorted(v["name"] for v in placement["victims"]) == ["low-1", "low-2"]
    assert doc["summary"]["preempted"] == 2 and code == 0


def test_preemption_evicts_no_more_than_needed(tmp_path):
    state = load_cluster([write(tmp_path, "c.yaml", [node("n1", cpu="2"),
                                                      pod("low-1", "1", node="n1", priority=1),
                                                      pod("low-2", "1", node="n1", priority=2)])])
    exe = Executable(load_plans()["default-scheduler"])
    from policylang.cluster.load import structure_object
    vip = structure_object(pod("vip", "1", priority=1000), "<test>")
    decision = schedule(exe, state, vip)
    assert decision.selected is None and decision.nominated_node == "n1"
    assert [v.name for v in decision.victims] == ["low-1"]  # the lower of the two priorities goes
    # v1.37 appends what preemption found (schedule_one.go: the PostFilter status's message).
    assert decision.message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential "
                                "placement for pod on node n1, preempting 1 victims")


def test_messages_when_preemption_cannot_help(tmp_path):
    """v1.37's words: DynamicResources' PostFilter adds nothing for a pod without claims (v1.35,
    v1.36: "no new claims to deallocate")."""
    state = load_cluster([write(tmp_path, "c.yaml", [node("n1", cpu="2"), node("n2", cpu="2"),
                                                      pod("same", "2", node="n1", priority=5)])])
    exe = Executable(load_plans()["default-scheduler"])
    from policylang.cluster.load import structure_object
    never = structure_object(pod("p", "3", priority=5), "<test>")
    assert schedule(exe, state, never).message == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
        "available: 2 Preemption is not helpful for scheduling.")
    equal = structure_object(pod("q", "1", priority=5), "<test>")
    assert schedule(exe, state, equal).selected == "n2"
    full = structure_object(pod("r", "2500m", priority=5), "<test>")
    refused = structure_object(pod("s", "2", priority=5, policy="Never"), "<test>")
    state2 = load_cluster([write(tmp_path, "d.yaml", [node("n1", cpu="2"), pod("same", "1", node="n1", priority=5)])])
    assert schedule(exe, state2, refused).message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due "
        "to preemptionPolicy=Never.")
    assert schedule(exe, state2, structure_object(pod("t", "2", priority=5), "<test>")).message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.")
    assert full


def test_written_state_loads_back_and_decides_the_same(tmp_path, capsys):
    out = tmp_path / "after.yaml"
    main(["simulate", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods", str(EXAMPLES / "pods"),
          "--write-state", str(out), "-o", "json"])
    capsys.readouterr()
    after = load_cluster([out])
    assert ("shop", "web-7d4b9-mnopq") in {(p.metadata.namespace, p.metadata.name) for p in after.pods_by_node["worker-c1"]}
    # The same simulation, done in memory, leaves the same requested totals.
    plans = {n: Executable(p) for n, p in load_plans().items()}
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    from policylang.cluster.load import load_objects
    simulate(plans, state, load_objects(EXAMPLES / "pods"))
    assert state.requested == after.requested
    assert {n: len(p) for n, p in state.pods_by_node.items()} == {n: len(p) for n, p in after.pods_by_node.items()}


def test_simulate_text_on_the_examples(capsys, golden):
    main(["simulate", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods", str(EXAMPLES / "pods")])
    golden(Path(__file__).parent / "fixtures" / "simulate" / "examples.txt", capsys.readouterr().out)


def test_adaptive_node_sampling_as_upstream():
    from policylang.run.schedule import num_feasible_nodes_to_find
    # numFeasibleNodesToFind: all below 100 nodes; else max(n * max(50 - n/125, 5) / 100, 100).
    assert num_feasible_nodes_to_find(None, 99) == 99
    assert num_feasible_nodes_to_find(None, 100) == 100
    assert num_feasible_nodes_to_find(None, 500) == 230     # 500 * 46 / 100
    assert num_feasible_nodes_to_find(None, 5000) == 500    # 50 - 40 = 10%
    assert num_feasible_nodes_to_find(None, 15000) == 750   # floor of 5%
    assert num_feasible_nodes_to_find(10, 500) == 100       # never fewer than 100
    assert num_feasible_nodes_to_find(100, 500) == 500


def test_node_tree_interleaves_zones_and_sampling_rotates(tmp_path):
    from policylang.cluster.load import structure_object
    from policylang.run.schedule import Sampling
    items = []
    for zone in ("a", "b"):
        for i in range(60):
            n = node(f"{zone}-{i:02d}")
            n["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone
            items.append(n)
    state = load_cluster([write(tmp_path, "c.yaml", items)])
    order = [n.metadata.name for n in state.node_tree_order()]
    assert order[:4] == ["a-00", "b-00", "a-01", "b-01"]
    exe = Executable(load_plans()["default-scheduler"])
    sampling = Sampling(percentage=None)
    p = structure_object(pod("p", "100m"), "<test>")
    first = schedule(exe, state, p, sampling=sampling)
    assert sum(n.evaluated for n in first.nodes) == 100          # 120 nodes: stop at 100 feasible
    assert sampling.next_start == 100
    second = schedule(exe, state, p, sampling=sampling)
    evaluated = {n.name for n in second.nodes if n.evaluated}
    assert "a-50" in evaluated and "a-00" in evaluated and "a-49" not in evaluated  # wrapped around


def test_sampling_stops_at_the_wanted_feasible_node_on_both_executors(tmp_path):
    """Filtering in chunks, the vector executor still stops where the node-by-node search
    does: at the first feasible node past the 100th (findNodesThatPassFilters cancels only when
    the count exceeds numNodesToFind, schedule_one.go), the cordoned nodes before it rejected,
    that node and those after it not visited; the next search starts at it."""
    from policylang.cluster.load import structure_object
    from policylang.run.schedule import Sampling
    items = [node(f"n-{i:03d}") for i in range(180)]
    for i, n in enumerate(items):
        if i % 3 == 0:
            n["spec"] = {"unschedulable": True}
    state = load_cluster([write(tmp_path, "c.yaml", items)])
    p = structure_object(pod("p", "100m"), "<test>")
    outcomes = []
    for executor in ("reference", "vector"):
        sampling = Sampling(percentage=None)
        decision = schedule(Executable(load_plans()["default-scheduler"], executor), state, p, sampling=sampling)
        rejected = [n.name for n in decision.nodes if n.failure is not None]
        fits = [n.name for n in decision.nodes if n.feasible]
        outcomes.append((decision.selected, rejected, fits, sampling.next_start))
    assert outcomes[0] == outcomes[1]
    selected, rejected, fits, next_start = outcomes[1]
    assert len(fits) == 100 and fits[-1] == "n-149"       # 100 of every 3 nodes' 2 fit by n-149
    assert rejected == [f"n-{i:03d}" for i in range(0, 151, 3)]     # n-150 too, before n-151 fits
    assert next_start == 151


@pytest.mark.parametrize("cordoned, learned", [
    (lambda i: i % 3 == 0, 1.0),     # a share too high: a second chunk finds the rest
    (lambda i: i % 3 == 0, 0.05),    # too low: one chunk past the last wanted node
    (lambda i: i < 250, 1.0),        # nothing fits in the first chunk: the rest at once
])
def test_chunks_sized_by_the_share_that_fit_last_time_stop_where_the_reference_does(
        tmp_path, monkeypatch, cordoned, learned):
    """The vector executor sizes its chunks by the share of nodes that fit in the last search
    of a pod of the same kind; however wrong that guess, it visits, rejects and picks as the
    node-by-node search does, and learns this search's share."""
    from policylang.cluster.load import structure_object
    from policylang.run import batch
    from policylang.run.schedule import Sampling, _kind_of
    items = [node(f"n-{i:03d}") for i in range(300)]
    for i, n in enumerate(items):
        if cordoned(i):
            n["spec"] = {"unschedulable": True}
    state = load_cluster([write(tmp_path, "c.yaml", items)])
    p = structure_object(pod("p", "100m"), "<test>")
    chunks = []
    filter_batch = batch.filter_batch
    monkeypatch.setattr(batch, "filter_batch", lambda exe, pre, nodes: chunks.append(len(nodes)) or
                        filter_batch(exe, pre, nodes))
    outcomes = []
    for executor in ("reference", "vector"):
        sampling = Sampling(percentage=None, fit_share={_kind_of(p): learned})
        decision = schedule(Executable(load_plans()["default-scheduler"], executor), state, p, sampling=sampling)
        outcomes.append((decision, sampling.next_start, sampling.fit_share[_kind_of(p)]))
    assert outcomes[0] == outcomes[1]
    decision, _, share = outcomes[1]
    fits, visited = sum(n.feasible for n in decision.nodes), sum(n.evaluated for n in decision.nodes)
    assert fits == min(144, sum(not cordoned(i) for i in range(300)))     # 300 * (50 - 2) / 100 wanted
    assert share == fits / visited
    assert (len(chunks) > 1) == (learned != 0.05) and sum(chunks) >= visited


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: api:1, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
"""


def test_replicas_expand_a_deployment_and_spread_by_default(tmp_path, capsys):
    (tmp_path / "deploy.yaml").write_text(DEPLOYMENT)
    code, doc = run_json(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pods",
                         tmp_path / "deploy.yaml", "--replicas", "4", "-o", "json")
    nodes = [p["node"] for p in doc["placements"]]
    assert [p["pod"]["name"] for p in doc["placements"]] == [f"api-{i:05d}" for i in range(4)]
    # The pods' ReplicaSet makes kube-scheduler's default spreading apply: not all on one node.
    assert len(set(nodes)) > 1 and code == 0


def test_diff_shows_what_a_policy_change_moves(capsys):
    code = main(["diff", "--policy", "default-scheduler", "--policy", str(EXAMPLES / "policies" / "team.sched"),
                 "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods", str(EXAMPLES / "pods"), "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["schema"] == "policylang/diff/v1"
    [change] = doc["changes"]
    assert change["pod"]["name"] == "web-7d4b9-mnopq"
    assert (change["a"]["node"], change["b"]["node"]) == ("worker-c1", "worker-b1")
    # The team profile's MostAllocated strategy is what moved it.
    a, b = change["scores"]["a"], change["scores"]["b"]
    assert a["worker-c1"]["NodeResourcesFit"] > a["worker-b1"]["NodeResourcesFit"]
    assert b["worker-b1"]["NodeResourcesFit"] > b["worker-c1"]["NodeResourcesFit"]


def test_diff_text(capsys, golden):
    main(["diff", "--policy", "default-scheduler", "--policy", str(EXAMPLES / "policies" / "team.sched"),
          "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods", str(EXAMPLES / "pods")])
    out = capsys.readouterr().out.replace(str(EXAMPLES), "examples")
    golden(Path(__file__).parent / "fixtures" / "simulate" / "diff.txt", out)


# ---- --write-state refuses what it would damage (issue 29) --------------------------------------

def test_write_state_into_a_missing_directory_fails_before_simulating(tmp_path, capsys, monkeypatch):
    def never(*_args, **_kwargs):
        raise AssertionError("simulated before checking --write-state")
    monkeypatch.setattr("policylang.forecast.simulate.simulate", never)
    code = main(["simulate", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods", str(EXAMPLES / "pods"),
                 "--write-state", str(tmp_path / "missing" / "after.yaml")])
    assert code == 2
    assert "cannot write: directory" in capsys.readouterr().err


@pytest.mark.parametrize("onto", ["file", "directory", "symlink"])
def test_write_state_onto_its_own_cluster_input_is_refused(tmp_path, capsys, onto):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_bytes((EXAMPLES / "cluster.yaml").read_bytes())
    before = cluster.read_bytes()
    target, given = cluster, cluster
    if onto == "directory":
        given = tmp_path
    elif onto == "symlink":
        target = tmp_path / "link.yaml"
        target.symlink_to(cluster)
    code = main(["simulate", "--cluster", str(given), "--pods", str(EXAMPLES / "pods"), "--write-state", str(target)])
    assert code == 2
    assert "refusing to write the state over a --cluster input" in capsys.readouterr().err
    assert cluster.read_bytes() == before


def test_write_state_writes_json_to_a_json_file(tmp_path, capsys):
    out = tmp_path / "after.json"
    main(["simulate", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods", str(EXAMPLES / "pods"),
          "--write-state", str(out), "-o", "json"])
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert doc["kind"] == "List" and doc["items"]
    assert load_cluster([out]).requested == load_cluster([tmp_path / "after.json"]).requested


def test_diff_recognises_a_configuration_by_its_content(capsys, tmp_path):
    # JSON, in a file whose name says nothing: read as a KubeSchedulerConfiguration, not as a
    # profile name or a .sched file.
    config = tmp_path / "scheduler.conf"
    config.write_text(json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}))
    docs = []
    for path in (config, tmp_path / "scheduler.yaml"):
        path.write_text(config.read_text())
        code = main(["diff", "--policy", "default-scheduler", "--policy", str(path), "--cluster",
                     str(EXAMPLES / "cluster.yaml"), "--pods", str(EXAMPLES / "pods"), "-o", "json"])
        assert code == 0
        docs.append({k: v for k, v in json.loads(capsys.readouterr().out).items() if k != "b"})
    assert docs[0] == docs[1]

"""whatif: events on the example cluster (golden text and JSON checked against its schema), the
rules transcribed from upstream (kubectl drain's filters, the eviction API, the disruption
controller, the taint-eviction controller), and properties of drains on generated clusters."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from policylang import load_plans
from policylang.forecast import budgets
from policylang.cli import main
from policylang.cluster.load import structure_object
from policylang.cluster.state import ClusterState
from policylang.run.schedule import Executable
from policylang.forecast.whatif import eviction_delay, parse_event, whatif

ROOT = Path(__file__).resolve().parent.parent
ZONES = str(ROOT / "examples" / "zones.yaml")
TEMPLATE = str(ROOT / "examples" / "whatif" / "node-template.yaml")
GOLDEN = Path(__file__).parent / "fixtures" / "whatif"
SCHEMA = json.loads((ROOT / "policylang" / "report" / "schemas" / "whatif.v1.json").read_text())


def run(capsys, *argv):
    code = main(["whatif", "--cluster", ZONES, *argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---- golden outputs on the examples ---------------------------------------------------------

@pytest.mark.parametrize("name, events, exit_code", [
    ("lose-zone-a", ["remove zone=eu-west-1a"], 1),
    ("drain-node-a1", ["drain node-a1"], 1),
    ("drain-node-b1", ["drain node-b1"], 0),
    ("taint-node-a1", ["taint node-a1 maintenance=true:NoExecute"], 1),
    ("cordon-b-drain-c1", ["cordon node-b1", "drain node-c1"], 1),
    ("add-then-lose-zone-a", ["add 2 nodes like examples/whatif/node-template.yaml", "remove zone=eu-west-1a"], 1),
])
def test_text_on_the_examples(capsys, golden, name, events, exit_code, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, *[a for e in events for a in ("--event", e)])
    golden(GOLDEN / f"{name}.txt", out)
    assert code == exit_code


def test_losing_zone_a_answers_no_with_the_pod_that_cannot_be_placed(capsys):
    code, out, _ = run(capsys, "--event", "remove zone=eu-west-1a", "-o", "json")
    doc = json.loads(out)
    jsonschema.Draft7Validator(SCHEMA).validate(doc)
    assert code == 1 and doc["ok"] is False
    assert [p["pod"]["name"] for p in doc["unschedulable"]] == ["db-0"]
    assert "didn't match pod anti-affinity rules" in doc["unschedulable"][0]["message"]
    assert doc["lost"] == [{"namespace": "shop", "name": "debug-shell"}]
    moves = {m["pod"]["name"]: m for m in doc["events"][0]["moves"]}
    assert moves["web-5d8f7-x7k2p"]["fate"] == "moved" and moves["web-5d8f7-x7k2p"]["to"] not in ("node-a1", "node-a2")
    assert moves["kube-proxy-a1"]["fate"] == "not recreated"            # a DaemonSet pod stays with its node
    assert set(doc["utilisation"]["before"]["zones"]) - set(doc["utilisation"]["after"]["zones"]) == {"eu-west-1a"}


def test_every_event_kind_validates_against_the_schema(capsys):
    code, out, _ = run(capsys, "-o", "json", "--event", "cordon node-b2", "--event", "drain node-a1",
                       "--event", "taint node-c1 maintenance=true:NoExecute", "--event", f"add 1 node like {TEMPLATE}",
                       "--event", "remove node-b1")
    doc = json.loads(out)
    jsonschema.Draft7Validator(SCHEMA).validate(doc)
    assert [e["kind"] for e in doc["events"]] == ["cordon", "drain", "taint", "add", "remove"]
    assert doc["events"][3]["nodes"] == ["template-new-1"]


def test_drain_blocked_by_a_budget_names_it(capsys):
    _, out, _ = run(capsys, "-o", "json", "--event", "drain node-a1")
    event = json.loads(out)["events"][0]
    assert event["blocked"] == [{
        "pod": {"namespace": "shop", "name": "cache-0"}, "node": "node-a1", "pdb": "shop/cache",
        "message": "Cannot evict pod as it would violate the pod's disruption budget. "
                   "The disruption budget cache needs 1 healthy pods and has 1 currently"}]
    assert {s["pod"]["name"]: s["reason"] for s in event["stays"]} == {
        "kube-proxy-a1": "DaemonSet-managed", "log-agent-node-a1": "mirror pod (a static pod of the kubelet)"}
    assert event["warnings"] == ["ignoring DaemonSet-managed Pods: kube-system/kube-proxy-a1",
                                 "deleting Pods that declare no controller: shop/debug-shell"]


def test_taint_timeline(capsys):
    _, out, _ = run(capsys, "-o", "json", "--event", "taint node-a1 maintenance=true:NoExecute")
    event = json.loads(out)["events"][0]
    at = {m["pod"]["name"]: m["at_seconds"] for m in event["moves"]}
    assert at == {"web-5d8f7-x7k2p": 0, "debug-shell": 0, "cache-0": 120}
    assert {s["pod"]["name"] for s in event["stays"]} == {"kube-proxy-a1", "log-agent-node-a1"}


@pytest.mark.parametrize("event, message", [
    ("explode node-a1", "cannot read event 'explode node-a1'; expected one of: cordon NODE"),
    ("drain node-z9", "event 'drain node-z9': no node 'node-z9' in the cluster"),
    ("drain node-a", "no node 'node-a' in the cluster; did you mean node-a2 or node-a1"),
    ("remove zone=mars-1", "no node is in zone 'mars-1' (label topology.kubernetes.io/zone); zones: eu-west-1a"),
    ("taint node-a1 maintenance", "cannot read the taint 'maintenance'"),
    ("add 0 nodes like node-a1", "the number of nodes to add must be 1 to 1000"),
])
def test_bad_events_are_input_errors(capsys, event, message):
    code, _, err = run(capsys, "--event", event)
    assert code == 2 and message in err and "Traceback" not in err


# ---- upstream's rules, as tables ------------------------------------------------------------

def _pod(tolerations=(), **meta):
    # Upstream's tables build tolerations the API server would refuse (tolerationSeconds without
    # the NoExecute effect): loaded unvalidated, as the other transcribed tables are.
    return structure_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta},
                             "spec": {"nodeName": "n", "containers": [{"name": "c"}], "tolerations": list(tolerations)},
                             "status": {"phase": "Running"}}, "test", validate=False)


def _taint(key="k", value="v", effect="NoExecute"):
    from policylang.api.model import Taint
    return Taint(key=key, value=value, effect=effect)


# pkg/controller/tainteviction/taint_eviction_test.go (TestGetMinTolerationTime and the
# processPodOnNode cases): the smallest tolerationSeconds of the tolerations used, 0 for a
# non-positive one, forever when none sets it, at once when a taint is not tolerated.
@pytest.mark.parametrize("case, taints, tolerations, expected", [
    ("no NoExecute taint: the taint manager leaves the pod", [_taint(effect="NoSchedule")], [], None),
    ("not tolerated: deleted at once", [_taint()], [], 0),
    ("tolerated without seconds: stays for good", [_taint()], [{"key": "k", "operator": "Exists"}], None),
    ("tolerated for 300s", [_taint()], [{"key": "k", "operator": "Exists", "tolerationSeconds": 300}], 300),
    ("two taints: the minimum of the tolerations used", [_taint("a"), _taint("b")],
     [{"key": "a", "operator": "Exists", "tolerationSeconds": 500},
      {"key": "b", "operator": "Exists", "tolerationSeconds": 100}], 100),
    ("one forever, one timed: the timed one decides", [_taint("a"), _taint("b")],
     [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists", "tolerationSeconds": 60}], 60),
    ("non-positive seconds: at once", [_taint()], [{"key": "k", "operator": "Exists", "tolerationSeconds": -5}], 0),
    ("only the first matching toleration of a taint is used", [_taint()],
     [{"key": "k", "operator": "Exists"}, {"operator": "Exists", "tolerationSeconds": 10}], None),
    ("one taint untolerated among two: at once", [_taint("a"), _taint("b")],
     [{"key": "a", "operator": "Exists"}], 0),
])
def test_taint_eviction_delay(case, taints, tolerations, expected):
    assert eviction_delay(taints, _pod(tolerations)) == expected, case


def _pdb(spec, name="b"):
    return structure_object({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                             "metadata": {"name": name, "namespace": "default"},
                             "spec": {"selector": {"matchLabels": {"app": "a"}}, **spec}}, "test")


def _state(n_healthy, n_unready=0, replicas=None):
    objects = [structure_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                                 "status": {"allocatable": {"cpu": "100", "memory": "100Gi", "pods": "110"}}}, "t")]
    for i in range(n_healthy + n_unready):
        objects.append(structure_object({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"a-{i}", "labels": {"app": "a"},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}]},
            "spec": {"nodeName": "n", "containers": [{"name": "c"}]},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True" if i < n_healthy else "False"}]}}, "t"))
    if replicas is not None:
        objects.append(structure_object({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                         "metadata": {"name": "rs", "namespace": "default"},
                                         "spec": {"replicas": replicas}}, "t"))
    return ClusterState.build(objects)


# pkg/controller/disruption/disruption_test.go (TestNoSelector, TestUnavailable, TestIntegerMaxUnavailable,
# TestNakedPod, TestReplicaSet …): desired healthy from minAvailable (an integer, or a percentage of the
# controllers' scale) or from maxUnavailable (of the scale), and disruptions allowed = healthy − desired.
@pytest.mark.parametrize("case, spec, healthy, unready, replicas, desired, allowed", [
    ("minAvailable 2 of 3 healthy", {"minAvailable": 2}, 3, 0, None, 2, 1),
    ("minAvailable 3 of 3: no disruption allowed", {"minAvailable": 3}, 3, 0, None, 3, 0),
    ("an unready pod is not healthy", {"minAvailable": 2}, 2, 1, None, 2, 0),
    ("minAvailable 50% of a scale of 4, rounded up", {"minAvailable": "50%"}, 4, 0, 4, 2, 2),
    ("minAvailable 34% of 3 rounds up to 2", {"minAvailable": "34%"}, 3, 0, 3, 2, 1),
    ("maxUnavailable 1 of a scale of 3", {"maxUnavailable": 1}, 3, 0, 3, 2, 1),
    ("maxUnavailable 1, the scale (5) above the pods (3)", {"maxUnavailable": 1}, 3, 0, 5, 4, 0),
    ("maxUnavailable 30% of 10 rounds up to 3", {"maxUnavailable": "30%"}, 10, 0, 10, 7, 3),
    ("maxUnavailable past the scale: desired 0", {"maxUnavailable": 5}, 2, 0, 2, 0, 2),
])
def test_budget_status_from_spec_and_pods(case, spec, healthy, unready, replicas, desired, allowed):
    b = budgets.budget(_pdb(spec), _state(healthy, unready, replicas))
    assert (b.desired_healthy, b.disruptions_allowed) == (desired, allowed), case


def test_eviction_api_refusals():
    state = _state(2)
    pod = state.pods_by_node["n"][0]
    one = [budgets.budget(_pdb({"minAvailable": 2}), state)]
    assert budgets.eviction_refusal(pod, one, {"default/b": 0}) == (
        "default/b", "Cannot evict pod as it would violate the pod's disruption budget. "
                     "The disruption budget b needs 2 healthy pods and has 2 currently")
    two = one + [budgets.budget(_pdb({"minAvailable": 0}, "c"), state)]
    assert budgets.eviction_refusal(pod, two, {"default/b": 5, "default/c": 5})[1] == budgets.MORE_THAN_ONE
    allowed = {"default/b": 1}
    assert budgets.eviction_refusal(pod, one, allowed) is None and allowed == {"default/b": 0}


def test_a_budget_with_an_empty_selector_covers_nothing():
    pdb = structure_object({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": {"name": "all", "namespace": "default"},
                            "spec": {"minAvailable": 1, "selector": {}}}, "t")
    assert not budgets.selects(pdb, _state(1).pods[0])


# ---- properties on generated clusters -------------------------------------------------------

@st.composite
def drain_cases(draw):
    """2-4 nodes, replicated pods of two apps (some bare), a budget per app."""
    n_nodes = draw(st.integers(2, 4))
    objects = []
    for i in range(n_nodes):
        cpu = draw(st.sampled_from(["1", "2", "4"]))
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}}})
    for j in range(draw(st.integers(1, 7))):
        app = draw(st.sampled_from(["a", "b"]))
        owned = draw(st.booleans())
        meta = {"name": f"{app}-{j}", "labels": {"app": app}}
        if owned:
            meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": app, "controller": True}]
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                        "spec": {"nodeName": f"n{draw(st.integers(0, n_nodes - 1))}",
                                 "containers": [{"name": "c", "resources": {"requests": {
                                     "cpu": draw(st.sampled_from(["100m", "500m", "1"]))}}}]},
                        "status": {"phase": "Running"}})
    for app in ("a", "b"):
        spec = draw(st.sampled_from([{"minAvailable": 1}, {"minAvailable": 2}, {"maxUnavailable": 1},
                                     {"minAvailable": "50%"}, {"maxUnavailable": 0}]))
        objects.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": app, "namespace": "default"},
                        "spec": {"selector": {"matchLabels": {"app": app}}, **spec}})
    return objects, f"n{draw(st.integers(0, n_nodes - 1))}"


@pytest.fixture(scope="module")
def default_profile():
    exe = Executable(next(iter(load_plans(None, None).values())), "reference")
    return lambda pod: exe


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drain_cases())
def test_a_drained_node_receives_no_pod_and_no_budget_is_broken(default_profile, case):
    raw, node = case
    state = ClusterState.build([structure_object(o, "generated") for o in raw])
    before = {budgets.key(p): budgets.budget(p, state) for p in state.pdbs}
    outcome = whatif(default_profile, state, [parse_event(f"drain {node}")])
    after = outcome.state
    event = outcome.events[0]
    # Nothing was placed on the drained node, and only what drain leaves there stays.
    assert all(p.node != node for p in event.placed)
    assert {p.key for p in after.pods_by_node[node]} == {b.pod.key for b in event.blocked}
    # A drain evicts only what a budget allows: none ends below what it asks for, unless it was.
    for report in outcome.budgets:
        assert not report.violated, report
        assert report.after.current_healthy >= min(before[report.after.key].current_healthy,
                                                    report.after.desired_healthy)


def test_a_replacement_that_preempts_has_its_victim_recreated(default_profile):
    """Draining n0 moves a high-priority pod to n1, which only preemption makes room on; the
    victim, owned by a ReplicaSet, is recreated and waits (nothing else fits it)."""
    def pod(name, node, priority, cpu):
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "ownerReferences": [{"kind": "ReplicaSet", "name": name, "controller": True}]},
                "spec": {"nodeName": node, "priority": priority,
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
                "status": {"phase": "Running"}}
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
              "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}} for n in ("n0", "n1")]
    state = ClusterState.build([structure_object(o, "t") for o in
                                nodes + [pod("important", "n0", 1000, "2"), pod("filler", "n1", 0, "2")]])
    outcome = whatif(default_profile, state, [parse_event("drain n0")])
    moves = {m.key: m for m in outcome.events[0].moves}
    assert moves["default/important"].fate == "moved" and moves["default/important"].to_node == "n1"
    assert moves["default/filler"].cause == "preempted" and moves["default/filler"].fate == "pending"
    assert [p.pod.key for p in outcome.pending] == ["default/filler"]
    assert "Insufficient cpu" in outcome.pending[0].message

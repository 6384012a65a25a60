"""Preemption beyond upstream's tables (tests/conformance/preemption/): the PDB criterion of the
node choice, the victims' order, PDB matching, nominated pods in the filter pass, the nominated
node tried first, eligibility end to end, and eval/simulate agreeing on nominated node and victims."""

import json

import yaml

from policylang import load_cluster, load_plans
from policylang.cli import main
from policylang.cluster.load import structure_object
from policylang.api.model import LabelSelector, ObjectMeta, PodDisruptionBudget
from policylang.api.model import PodDisruptionBudgetSpec as PDBSpec
from policylang.api.model import PodDisruptionBudgetStatus as PDBStatus
from policylang.run.decision import Status
from policylang.run.postfilter import filter_pods_with_pdb_violation, num_candidates, preempt
from policylang.run.schedule import Executable, schedule

DEFAULT = Executable(load_plans()["default-scheduler"])


def node(name, cpu="2"):
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name, cpu, node=None, priority=None, labels=None, started=None, nominated=None):
    p = {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
         "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}]},
         "status": {}}
    if node:
        p["spec"]["nodeName"] = node
        p["status"]["phase"] = "Running"
    if priority is not None:
        p["spec"]["priority"] = priority
    if started:
        p["status"]["startTime"] = started
    if nominated:
        p["status"]["nominatedNodeName"] = nominated
    return p


def pdb(name, labels, allowed, namespace="default"):
    return {"kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}}, "status": {"disruptionsAllowed": allowed}}


def write(tmp_path, name, items):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"kind": "List", "items": items}))
    return path


def decide(tmp_path, items, incoming):
    state = load_cluster([write(tmp_path, "c.yaml", items)])
    return schedule(DEFAULT, state, structure_object(incoming, "<test>"))


def test_fewer_pdb_violations_beat_lower_victim_priority(tmp_path):
    """pickOneNodeForPreemption looks at PDB violations before victim priorities."""
    d = decide(tmp_path, [node("n1"), node("n2"),
                          pod("guarded", "2", node="n1", priority=1, labels={"app": "db"}),
                          pod("busy", "2", node="n2", priority=50),
                          pdb("db", {"app": "db"}, 0)],
               pod("vip", "2", priority=1000))
    assert d.nominated_node == "n2" and [v.name for v in d.victims] == ["busy"]


def test_victims_come_most_important_first(tmp_path):
    """Victims are listed as upstream returns them: higher priority first, then the earlier start,
    also after PDB-violating victims were tried (and evicted) first."""
    items = [node("n1", cpu="4"),
             pod("a", "1", node="n1", priority=10, started="2026-01-02T00:00:00Z"),
             pod("b", "1", node="n1", priority=10, started="2026-01-01T00:00:00Z"),
             pod("c", "1", node="n1", priority=20),
             pod("d", "1", node="n1", priority=5, labels={"app": "db"}),
             pdb("db", {"app": "db"}, 0)]
    d = decide(tmp_path, items, pod("vip", "4", priority=1000))
    assert d.nominated_node == "n1" and [v.name for v in d.victims] == ["c", "b", "a", "d"]


def test_tied_victims_are_reprieved_by_namespace_and_name_in_any_dump_order(tmp_path):
    """Two pods of one priority that have not started are a tie in util.MoreImportantPod
    (GetPodStartTime is time.Now() for both); upstream then follows the order its cache received
    them, which a dump does not record. policylang reprieves default/a before shop/b whatever
    the dump's order, so shop/b is the victim (pinned against the oracle in
    conformance/oracle/default_profile.yaml)."""
    a = pod("a", "1", node="n1")
    b = pod("b", "1", node="n1")
    b["metadata"]["namespace"] = "shop"
    for bound in ([a, b], [b, a]):
        d = decide(tmp_path, [node("n1", cpu="2"), *bound], pod("p", "1", priority=100))
        assert d.nominated_node == "n1" and [(v.namespace, v.name) for v in d.victims] == [("shop", "b")]


def test_pdb_matching():
    """A PDB spends its budget on pods of its namespace that its non-empty selector selects,
    and not on pods whose eviction it has already seen (status.disruptedPods)."""
    def p(name, labels, namespace="default"):
        return structure_object(pod(name, "1", node="n1", labels=labels) | {"metadata": {
            "name": name, "namespace": namespace, "labels": labels}}, "<test>")

    def budget(selector, allowed, namespace="default", disrupted=None):
        return PodDisruptionBudget(metadata=ObjectMeta(name="b", namespace=namespace), spec=PDBSpec(selector=selector),
                                   status=PDBStatus(disruptions_allowed=allowed, disrupted_pods=disrupted or {}))

    web = LabelSelector(match_labels={"app": "web"})
    pods = [p("w1", {"app": "web"}), p("w2", {"app": "web"}), p("bare", {}), p("other", {"app": "web"}, "prod")]
    violating, clean = filter_pods_with_pdb_violation(pods, [budget(web, 1)])
    assert [x.name for x in violating] == ["w2"] and [x.name for x in clean] == ["w1", "bare", "other"]
    violating, _ = filter_pods_with_pdb_violation(pods, [budget(LabelSelector(), 0), budget(None, 0)])
    assert violating == []
    violating, _ = filter_pods_with_pdb_violation(pods, [budget(web, 1, disrupted={"w1": "2026-01-01T00:00:00Z"})])
    assert violating == []


def test_pdb_walk_stops_at_the_first_violated_budget_from_v137():
    """v1.37's FilterVictimsWithPDBViolation (preemption/util.go) stops at the first PDB a pod takes
    below zero, so a later PDB selecting it keeps that budget; up to v1.36 (defaultpreemption's
    filterPodsWithPDBViolation) every selecting PDB spends one. Here w1 is selected by both PDBs
    and violates the first; the second's one disruption is then w2's in v1.37, spent by w1 before."""
    def p(name, labels):
        return structure_object(pod(name, "1", node="n1", labels=labels) | {"metadata": {
            "name": name, "namespace": "default", "labels": labels}}, "<test>")

    def budget(name, labels, allowed):
        return PodDisruptionBudget(metadata=ObjectMeta(name=name, namespace="default"),
                                   spec=PDBSpec(selector=LabelSelector(match_labels=labels)),
                                   status=PDBStatus(disruptions_allowed=allowed))

    pods = [p("w1", {"app": "web", "tier": "a"}), p("w2", {"app": "web"})]
    pdbs = [budget("tier-a", {"tier": "a"}, 0), budget("web", {"app": "web"}, 1)]
    violating, clean = filter_pods_with_pdb_violation(pods, pdbs)
    assert ([x.name for x in violating], [x.name for x in clean]) == (["w1", "w2"], [])
    violating, clean = filter_pods_with_pdb_violation(pods, pdbs, stop_at_violation=True)
    assert ([x.name for x in violating], [x.name for x in clean]) == (["w1"], ["w2"])


def test_number_of_candidates():
    """calculateNumCandidates with the default args (10%, at least 100)."""
    assert [num_candidates(n) for n in (5, 100, 999, 1000, 5000)] == [5, 100, 100, 100, 500]


def test_nominated_pods_keep_their_room(tmp_path):
    """A pending pod nominated to a node counts there for pods of no higher priority."""
    items = [node("n1"), node("n2", cpu="1"), pod("waiting", "2", priority=100, nominated="n1")]
    d = decide(tmp_path, items, pod("p", "1", priority=10))
    assert d.selected == "n2"
    assert [n.failure.reasons for n in d.nodes if n.name == "n1"] == [("Insufficient cpu",)]
    assert decide(tmp_path, items, pod("p", "1", priority=100)).selected == "n2"
    # A higher-priority pod may take the room (it would preempt the nominated pod anyway).
    assert decide(tmp_path, items, pod("p", "2", priority=200)).selected == "n1"


def test_the_nominated_node_is_tried_first(tmp_path):
    """A pod nominated by an earlier preemption takes its nominated node when it fits, without
    the other nodes being looked at or anything being scored."""
    d = decide(tmp_path, [node("n1"), node("n2", cpu="16")], pod("p", "1", nominated="n1"))
    assert d.selected == "n1"
    assert {n.name: n.evaluated for n in d.nodes} == {"n1": True, "n2": False}
    assert decide(tmp_path, [node("n1"), node("n2", cpu="16")], pod("p", "1")).selected == "n2"


def test_no_second_preemption_while_victims_terminate(tmp_path):
    """PodEligibleToPreemptOthers: a victim of this pod still terminating on its nominated node."""
    victim = pod("old", "2", node="n1", priority=1)
    victim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    victim["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    d = decide(tmp_path, [node("n1"), victim, pod("other", "2", node="n2", priority=1), node("n2")],
               pod("vip", "2", priority=1000, nominated="n1"))
    assert d.nominated_node is None
    assert d.message == ("0/2 nodes are available: 2 Insufficient cpu. "
                         "preemption: not eligible due to a terminating pod on the nominated node.")


def test_no_victims_needed_is_an_error(tmp_path):
    """A node said to be Unschedulable where the pod fits with every pod in place: upstream's
    DryRunPreemption reports it as an Error."""
    state = load_cluster([write(tmp_path, "c.yaml", [node("n1"), pod("low", "1", node="n1", priority=1)])])
    outcome = preempt(DEFAULT, state, structure_object(pod("vip", "1", priority=1000), "<test>"),
                      {"n1": Status("Unschedulable")})
    assert outcome.error and outcome.nominated is None
    assert outcome.message == 'preemption: expected at least one victim pod on node "n1"'


def test_eval_and_simulate_agree_on_preemption(tmp_path, capsys):
    """eval's nominated node and victims are what simulate evicts; simulate then places the
    preemptor on the nominated node."""
    cluster = write(tmp_path, "c.yaml", [node("n1", cpu="3"), node("n2", cpu="3"),
                                         pod("low-1", "1", node="n1", priority=1),
                                         pod("low-2", "2", node="n1", priority=2),
                                         pod("mid", "3", node="n2", priority=50)])
    pods = write(tmp_path, "p.yaml", [pod("vip", "2", priority=1000)])
    main(["eval", "--cluster", str(cluster), "--pod", str(pods), "-o", "json"])
    evaluated = json.loads(capsys.readouterr().out)
    [decision] = evaluated["results"]
    after = tmp_path / "after.yaml"
    main(["simulate", "--cluster", str(cluster), "--pods", str(pods), "-o", "json", "--write-state", str(after)])
    [placement] = json.loads(capsys.readouterr().out)["placements"]
    assert decision["nominated_node"] == placement["nominated_node"] == placement["node"] == "n1"
    assert decision["victims"] == placement["victims"] == [{"namespace": "default", "name": "low-2"}]
    remaining = {p.metadata.name: p.spec.node_name for p in load_cluster([after]).pods}
    assert remaining == {"low-1": "n1", "mid": "n2", "vip": "n1"}

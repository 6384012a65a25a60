"""The default profile end to end: messages, PreFilter paths and host selection, as
kube-scheduler v1.35's scheduling cycle produces them.

Facts from pkg/scheduler/schedule_one.go (schedulePod, findNodesThatFitPod),
pkg/scheduler/framework/types.go (FitError.Error), pkg/scheduler/framework/runtime/framework.go
(RunPreFilterPlugins, RunPostFilterPlugins), plugins/defaultpreemption and
plugins/dynamicresources (PostFilter).
"""

import json

from policylang.cli import main


def node(name, cpu="4", labels=None, taints=None):
    n = {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
         "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
    if taints:
        n["spec"] = {"taints": taints}
    return n


def pod(name="p", cpu="1", **spec):
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}], **spec}}


def evaluate(tmp_path, capsys, nodes, incoming, existing=()):
    (tmp_path / "cluster.json").write_text(json.dumps({"kind": "List", "items": [*nodes, *existing]}))
    (tmp_path / "pod.json").write_text(json.dumps(incoming))
    main(["eval", "--cluster", str(tmp_path / "cluster.json"), "--pod", str(tmp_path / "pod.json"), "-o", "json",
          "--kubernetes-version", "1.35"])
    return json.loads(capsys.readouterr().out)["results"][0]


def test_histogram_sorts_whole_strings(tmp_path, capsys):
    """FitError.Error: entries "<count> <reason>" sorted as strings, so "10 …" sorts before "2 …"."""
    tainted = [node(f"t{i:02d}", taints=[{"key": "k", "effect": "NoSchedule"}]) for i in range(10)]
    small = [node("s1", cpu="500m"), node("s2", cpu="500m")]
    r = evaluate(tmp_path, capsys, tainted + small, pod(cpu="1"))
    assert r["fit_error"] == ("0/12 nodes are available: 10 node(s) had untolerated taint(s), "
                              "2 Insufficient cpu.")
    # Insufficient cpu beyond the node's allocatable is UnschedulableAndUnresolvable: preemption can't help.
    assert r["message"] == r["fit_error"] + (" no new claims to deallocate, preemption: 0/12 nodes are "
                                             "available: 12 Preemption is not helpful for scheduling.")


def test_prefilter_rejection_stops_before_dynamic_resources(tmp_path, capsys):
    """RunPreFilterPlugins returns at the first UnschedulableAndUnresolvable; DynamicResources'
    PreFilter never wrote its state, so its PostFilter fails with "not found" and preemption never runs."""
    conflict = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]},
            {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}}
    r = evaluate(tmp_path, capsys, [node("n1"), node("n2"), node("n3")], pod(**conflict))
    assert r["fit_error"] == "0/3 nodes are available: pod affinity terms conflict."
    assert r["message"] == "0/3 nodes are available: pod affinity terms conflict. not found"
    assert all(n["failure"]["reasons"] == ["pod affinity terms conflict"] for n in r["nodes"])


def test_prefilter_result_narrows_the_nodes(tmp_path, capsys):
    """Nodes outside a PreFilterResult get "node(s) didn't satisfy plugin(s) [NodeAffinity]"."""
    pinned = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}
    r = evaluate(tmp_path, capsys, [node("n1", cpu="500m"), node("n2"), node("n3")], pod(cpu="400m", **pinned),
                 existing=[{**pod("busy", cpu="200m"), "spec": {**pod(cpu="200m")["spec"], "nodeName": "n1"}}])
    assert r["fit_error"] == ("0/3 nodes are available: 1 Insufficient cpu, "
                              "2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    assert r["message"].endswith("no new claims to deallocate, preemption: 0/3 nodes are available: "
                                 "1 No preemption victims found for incoming pod, "
                                 "2 Preemption is not helpful for scheduling.")


def test_one_feasible_node_is_chosen_without_scoring(tmp_path, capsys):
    """schedulePod: with exactly one feasible node, PreScore and Score do not run."""
    r = evaluate(tmp_path, capsys, [node("n1"), node("n2", cpu="500m")], pod())
    assert r["selected"] == "n1"
    n1 = next(n for n in r["nodes"] if n["name"] == "n1")
    assert n1["scores"] == {} and n1["total"] == 0


def test_ties_go_to_the_smallest_node_name(tmp_path, capsys):
    r = evaluate(tmp_path, capsys, [node("b"), node("c"), node("a")], pod())
    totals = {n["name"]: n["total"] for n in r["nodes"]}
    assert len(set(totals.values())) == 1
    assert r["selected"] == "a"


def test_plain_pod_score_breakdown(tmp_path, capsys):
    """A pod with requests and no affinity, spread or claims is scored by TaintToleration,
    NodeResourcesFit, DynamicResources (0), BalancedAllocation and ImageLocality."""
    r = evaluate(tmp_path, capsys, [node("a"), node("b", cpu="8")], pod())
    scores = next(n for n in r["nodes"] if n["name"] == "a")["scores"]
    assert list(scores) == ["TaintToleration", "NodeResourcesFit", "DynamicResources",
                            "NodeResourcesBalancedAllocation", "ImageLocality"]
    assert scores["TaintToleration"] == {"raw": 0, "normalized": 100, "weight": 3, "weighted": 300}
    assert scores["DynamicResources"]["weighted"] == 0


def test_hard_spread_constraint_through_the_profile(tmp_path, capsys):
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    existing = [{**pod(f"e{i}"), "spec": {**pod()["spec"], "nodeName": "a1"}} for i in range(2)]
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                            "labelSelector": {"matchLabels": {"app": "x"}}}]}
    r = evaluate(tmp_path, capsys, nodes, pod(**spread), existing)
    assert r["feasible"] == ["b1"]
    a1 = next(n for n in r["nodes"] if n["name"] == "a1")
    assert a1["failure"] == {"plugin": "PodTopologySpread", "code": "Unschedulable",
                             "reasons": ["node(s) didn't match pod topology spread constraints"]}


def evaluate_as(version, tmp_path, capsys, nodes, incoming):
    (tmp_path / "cluster.json").write_text(json.dumps({"kind": "List", "items": nodes}))
    (tmp_path / "pod.json").write_text(json.dumps(incoming))
    main(["eval", "--cluster", str(tmp_path / "cluster.json"), "--pod", str(tmp_path / "pod.json"), "-o", "json",
          "--kubernetes-version", version])
    return json.loads(capsys.readouterr().out)["results"][0]


def test_v137_runs_node_name_first_and_narrows_the_search_to_the_named_node(tmp_path, capsys):
    """default_plugins.go (v1.37) puts NodeName before NodeUnschedulable, and NodeName's new
    PreFilter returns the pod's spec.nodeName as the only node (node_name.go PreFilter): the other
    nodes are absent from the search, with schedule_one.go's "didn't satisfy plugin(s)" status,
    where v1.35/v1.36 filter them (a cordoned one failing NodeUnschedulable first)."""
    cordoned = node("b")
    cordoned["spec"] = {"unschedulable": True}
    other = node("c")
    other["spec"] = {"unschedulable": True}
    nodes, incoming = [node("a"), cordoned, other], pod(nodeName="b")
    old = evaluate_as("1.36", tmp_path, capsys, nodes, incoming)
    assert old["fit_error"] == ("0/3 nodes are available: 1 node(s) didn't match the requested node name, "
                                "2 node(s) were unschedulable.")
    new = evaluate_as("1.37", tmp_path, capsys, nodes, incoming)
    assert new["fit_error"] == ("0/3 nodes are available: 1 node(s) were unschedulable, "
                                "2 node(s) didn't satisfy plugin(s) [NodeName].")
    from policylang import load_plans
    from policylang.target import make_target
    names = {v: [p.name for p in load_plans(target=make_target(v))["default-scheduler"].plugins][:2]
             for v in ("1.35", "1.36", "1.37")}
    assert names == {"1.35": ["NodeUnschedulable", "NodeName"], "1.36": ["NodeUnschedulable", "NodeName"],
                     "1.37": ["NodeName", "NodeUnschedulable"]}


def test_v137_says_what_preemption_found_after_the_fit_error(tmp_path, capsys):
    """v1.37's Preempt returns Success with "found a potential placement for pod on node N,
    preempting K victims" (preemption/preemption.go), DefaultPreemption's PostFilter prefixes any
    message with "preemption: ", and FitError.Error appends every PostFilter message
    (framework/types.go); up to v1.36 a successful preemption had no message."""
    low = pod("low", cpu="4")
    low["spec"] |= {"nodeName": "n1", "priority": 0}
    high = pod("high", cpu="4")
    high["spec"]["priority"] = 100
    (tmp_path / "cluster.json").write_text(json.dumps({"kind": "List", "items": [node("n1"), low]}))
    (tmp_path / "pod.json").write_text(json.dumps(high))
    messages = {}
    for version in ("1.36", "1.37"):
        main(["eval", "--cluster", str(tmp_path / "cluster.json"), "--pod", str(tmp_path / "pod.json"), "-o", "json",
              "--kubernetes-version", version])
        result = json.loads(capsys.readouterr().out)["results"][0]
        assert result["nominated_node"] == "n1"
        messages[version] = result["message"]
    assert messages == {"1.36": "0/1 nodes are available: 1 Insufficient cpu.",
                        "1.37": "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential "
                                "placement for pod on node n1, preempting 1 victims"}

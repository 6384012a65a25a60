"""The Engine: one way in to deciding, and transactions over its state.

- A fork reverted leaves every decision as it was, whatever was done in it; a fork committed
  decides as a state freshly built from the same objects.
- A savepoint rolled back puts the state's pods, nominations, per-node lists and indexes back.
- The command line, serve and the Python API pick the same profile for a pod and give the same
  decision.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import strategies as S
from policylang import Engine
from policylang.cli import main
from policylang.cluster.state import ClusterState
from policylang.diagnostics import InputError
from policylang.pending import Held

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _engine(cluster: S.Cluster) -> Engine:
    return Engine(state=cluster.state(), executor="reference")


def _decisions(engine: Engine, probes: list[dict]) -> list[dict]:
    return [engine.evaluate(copy.deepcopy(p)).to_json() for p in probes]


def _index_view(state: ClusterState) -> dict:
    """What the indexes answer, in a form two states can be compared by."""
    return {
        "pods": [p.key for p in state.pods],
        "by_node": {n: [p.key for p in pods] for n, pods in state.pods_by_node.items()},
        "nominated": list(state.nominated),
        # A resource whose last pod left stays at zero (as NodeInfo's Requested does): zero is none.
        "requested": {n: {k: str(v) for k, v in r.items() if str(v) != "0"} for n, r in state.requested.items()},
        "claims": dict(state.claim_users),
    }


@st.composite
def _changes(draw, cluster: S.Cluster):
    """A list of changes an engine's fork can make, drawn against the cluster's nodes and pods."""
    names = cluster.node_names
    pod_keys = [f"default/{p['metadata']['name']}" for p in cluster.pods]
    kinds = ["bind", "add_pod", "taint", "cordon", "add_node"] + (["delete_pod"] if pod_keys else []) + \
            (["remove_node"] if len(names) > 1 else [])
    out = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(kinds))
        if kind == "bind":
            out.append((kind, draw(S.pods(f"bound-{i}", tuple(names))), draw(st.sampled_from(names))))
        elif kind == "add_pod":
            out.append((kind, draw(S.pods(f"added-{i}", tuple(names), bound=True))))
        elif kind == "delete_pod":
            out.append((kind, draw(st.sampled_from(pod_keys))))
        elif kind == "taint":
            out.append((kind, draw(st.sampled_from(names)), f"k{i}", draw(st.sampled_from(["NoSchedule",
                                                                                         "PreferNoSchedule"]))))
        elif kind in ("cordon", "remove_node"):
            out.append((kind, draw(st.sampled_from(names))))
        else:
            out.append((kind, draw(S.nodes(f"new-{i}"))))
    return out


def _apply(target, change) -> None:
    """Make the change; one refused (a pod deleted twice, a node removed before its taint) is an
    InputError and changes nothing."""
    try:
        _change(target, change)
    except InputError:
        pass


def _change(target, change) -> None:
    kind, *args = change
    if kind == "bind":
        target.bind(copy.deepcopy(args[0]), args[1])
    elif kind == "add_pod":
        target.add_pod(copy.deepcopy(args[0]))
    elif kind == "taint":
        target.taint(args[0], args[1], "v", args[2])
    elif kind == "add_node":
        target.add_node(copy.deepcopy(args[0]))
    else:
        getattr(target, kind)(args[0])


@st.composite
def _fork_cases(draw):
    cluster = draw(S.clusters(min_nodes=1, max_nodes=4, max_pods=4))
    probes = [draw(S.pods(f"probe-{i}", tuple(cluster.node_names))) for i in range(2)]
    return cluster, probes, draw(_changes(cluster))


@settings(max_examples=40, deadline=None)
@given(_fork_cases())
def test_a_reverted_fork_leaves_every_decision_as_it_was(case):
    """Whatever a fork binds, adds, deletes, taints, cordons or removes, reverting it leaves the
    engine deciding every pod exactly as before, and its state's pods and indexes as they were."""
    cluster, probes, changes = case
    engine = _engine(cluster)
    before, view = _decisions(engine, probes), _index_view(engine.state)
    with engine.fork() as fork:
        for change in changes:
            note(repr(change[0]))
            _apply(fork, change)
        fork.evaluate(copy.deepcopy(probes[0]))
    assert _index_view(engine.state) == view
    assert _decisions(engine, probes) == before


@settings(max_examples=40, deadline=None)
@given(_fork_cases())
def test_a_committed_fork_decides_as_a_fresh_load_of_its_objects(case):
    """A fork committed leaves the engine in a state that decides as one built afresh from the
    same objects: the journal's incremental state is the state."""
    cluster, probes, changes = case
    engine = _engine(cluster)
    fork = engine.fork()
    for change in changes:
        _apply(fork, change)
    fork.commit()
    fresh = Engine(state=ClusterState.build(engine.state.objects()), executor="reference")
    assert _decisions(engine, probes) == _decisions(fresh, probes)


@settings(max_examples=40, deadline=None)
@given(S.clusters(min_nodes=1, max_nodes=4, max_pods=5), st.data())
def test_nested_savepoints_roll_back_innermost_first(cluster, data):
    """An inner savepoint released into an outer one is undone with it; one rolled back leaves
    the outer's changes in place."""
    state = cluster.state()
    view = _index_view(state)
    outer = state.savepoint()
    if state.pods:
        state.drop_pod(data.draw(st.sampled_from([p.key for p in state.pods])))
    middle = _index_view(state)
    inner = state.savepoint()
    pod = S.structure(data.draw(S.pods("inner", tuple(cluster.node_names), bound=True)))
    state.put_pod(pod)
    if data.draw(st.booleans()):
        state.rollback(inner)
        assert _index_view(state) == middle
    else:
        state.release(inner)
    state.rollback(outer)
    assert _index_view(state) == view


def test_savepoints_close_innermost_first():
    state = ClusterState()
    outer = state.savepoint()
    state.savepoint()
    with pytest.raises(ValueError, match="innermost first"):
        state.rollback(outer)


def test_evaluating_changes_nothing_in_the_state():
    """evaluate and explain run in savepoints: the claims a pod's templates make and the pod taken
    off its node for --as-pending are gone afterwards."""
    engine = Engine(cluster=EXAMPLES / "dra" / "cluster.yaml")
    before = (len(engine.state.resource_claims), _index_view(engine.state))
    for target in engine.pods([str(EXAMPLES / "dra" / "pods")]):
        engine.evaluate(target)
        engine.explain(target)
    assert (len(engine.state.resource_claims), _index_view(engine.state)) == before


def test_a_fork_is_closed_once():
    engine = Engine(cluster=EXAMPLES / "cluster.yaml")
    fork = engine.fork()
    fork.commit()
    with pytest.raises(InputError, match="already committed or reverted"):
        fork.revert()


def test_a_binding_in_a_fork_is_seen_by_the_next_pod():
    engine = Engine(cluster=EXAMPLES / "cluster.yaml")
    web = EXAMPLES / "pods" / "web.yaml"
    first = engine.evaluate(web)
    with engine.fork() as fork:
        fork.bind(web, first.selected)
        assert fork.state.pods_by_node[first.selected][-1].key == first.pod_key
    assert all(p.key != first.pod_key for p in engine.state.pods)


def test_the_api_answers_exactly_eval_json(capsys):
    """Decision.to_json is one result of `eval -o json`, for every example pod."""
    code = main(["eval", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pods"), "-o", "json"])
    cli = json.loads(capsys.readouterr().out)
    engine = Engine(cluster=EXAMPLES / "cluster.yaml")
    api = [engine.evaluate(t).to_json() for t in engine.pods([str(EXAMPLES / "pods")])]
    assert code == 1 and cli["results"] == api


CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
"""


def _pod(scheduler: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"for-{scheduler}", "namespace": "default"},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "nginx",
                                                                  "resources": {"requests": {"cpu": "100m"}}}]}}


@pytest.mark.parametrize("scheduler", ["default-scheduler", "other-scheduler"])
def test_the_cli_serve_and_the_api_choose_the_same_profile(tmp_path, capsys, scheduler):
    """A configuration's profile schedules only its own pods; another scheduler's pod is left to
    it by eval, by the Python API, and by serve's extender and webhook alike."""
    import yaml

    from policylang.serve.server import Options, Policy

    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(_pod(scheduler)))
    cluster = str(EXAMPLES / "cluster.yaml")

    main(["eval", "--cluster", cluster, "--config", str(config), "--pod", str(pod_file), "-o", "json"])
    (cli,) = json.loads(capsys.readouterr().out)["results"]
    engine = Engine(cluster=cluster, config=str(config))
    api = engine.evaluate(_pod(scheduler))
    assert api.to_json() == cli

    policy = Policy.load(Options(config=str(config), cluster=(cluster,)))
    args = {"Pod": _pod(scheduler), "NodeNames": list(engine.state.nodes)}
    served = policy.extender.filter(engine.state, args)
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "u", "kind": {"kind": "Pod"}, "operation": "CREATE", "namespace": "default",
                          "object": _pod(scheduler)}}
    admitted, _ = policy.admission.review(engine.state, review)
    if scheduler == "other-scheduler":
        assert isinstance(api, Held) and cli["left_to_scheduler"] == scheduler
        assert served.profile == "" and served.body["NodeNames"] == list(engine.state.nodes)
        assert "patch" not in admitted["response"]
    else:
        assert cli["profile"] == api.profile == served.profile == "default-scheduler"


def test_a_named_profile_schedules_every_pod():
    engine = Engine(cluster=EXAMPLES / "cluster.yaml", profile="default-scheduler")
    assert engine.profile_for(engine._one_pod(_pod("someone-else")).pod) == "default-scheduler"


def test_the_api_servers_priority_classes_always_exist():
    """system-cluster-critical and system-node-critical are created by the API server at start-up
    (a dump need not list them): a coredns-like pod naming one gets its priority and can preempt;
    a class that does not exist is refused as the Priority admission plugin refuses the pod."""
    engine = Engine(cluster=EXAMPLES / "cluster.yaml")
    pod = {"metadata": {"name": "coredns", "namespace": "kube-system"},
           "spec": {"priorityClassName": "system-cluster-critical",
                    "containers": [{"name": "c", "image": "coredns", "resources": {"requests": {"cpu": "100m"}}}]}}
    assert engine.state.with_priority(engine._one_pod(pod).pod).spec.priority == 2_000_000_000
    pod["spec"]["priorityClassName"] = "system-node-critical"
    assert engine.state.with_priority(engine._one_pod(pod).pod).spec.priority == 2_000_001_000
    pod["spec"]["priorityClassName"] = "no-such-class"
    with pytest.raises(InputError, match='pods "coredns" is forbidden: no PriorityClass with name no-such-class'):
        engine.evaluate(pod)

"""Differential tests: policylang's default profile against kube-scheduler v1.35's own
framework (the oracle, oracle/), on clusters and pods drawn by tests/strategies.py.

Each property decides the same scenario both ways and asserts that everything
:func:`oracle.comparable` keeps is identical. The examples per property follow the Hypothesis
profile (conftest.py): ``ci`` runs at least 200 of them, ``thorough`` 5,000.
"""

from __future__ import annotations

import copy
import json
import random
from functools import lru_cache
from itertools import islice

from hypothesis import given, note, settings
from hypothesis import strategies as st

import strategies as S
from kube_oracle import Oracle, assert_agree, comparable
from policylang import Executable, load_plans, schedule


@lru_cache(maxsize=None)
def default_profile() -> Executable:
    return Executable(load_plans()["default-scheduler"])


def policylang_result(cluster: S.Cluster, pod: dict, preemption: bool = True, exe: Executable | None = None) -> dict:
    decision = schedule(exe or default_profile(), cluster.state(), S.structure(pod), preemption=preemption)
    return json.loads(json.dumps(decision.to_json()))


def oracle_result(oracle: Oracle, cluster: S.Cluster, pod: dict, preemption: bool = True) -> dict:
    doc = oracle.run([copy.deepcopy(o) for o in cluster.raw], [copy.deepcopy(pod)],
                     preemption=preemption)
    (result,) = doc["results"]
    return result


# Upstream's preemption leaves two ties to chance, so when it has nominated a node the oracle is
# asked again, up to this many times, for the answer policylang gave:
# - pickOneNodeForPreemption (framework/preemption/preemption.go) breaks its last tie between
#   candidate nodes by the order of a Go map: a plain re-run may nominate another tied node.
# - SelectVictimsOnNode (framework/plugins/defaultpreemption/default_preemption.go) sorts the
#   potential victims with sort.Slice and util.MoreImportantPod (pkg/scheduler/util/utils.go),
#   which after priority compares start times; GetPodStartTime gives a pod without
#   status.startTime a fresh time.Now() on every call, so two such pods of one priority compare
#   by which of them the clock read first, not by anything in them (and pods that started at
#   the same instant are equal). Which of them is reprieved first, and so which one is the
#   victim when only one can stay, then follows the order sort.Slice was given: nodeInfo.Pods,
#   the order in which the scheduler's cache received the pods (framework/types.go; RemovePod
#   moves the last pod into the gap). A dump does not record that order, so each retry gives
#   the oracle the same pods in another order (see arrival_orders; nodes keep theirs, whose
#   order upstream's node tree does use, and policylang with it).
# Every answer accepted so is one that upstream gave for the very same cluster.
PREEMPTION_TIE_TRIES = 12


def arrival_orders(pods: tuple):
    """The bound pods in the orders the oracle is asked again with: by namespace and name from
    the last and from the first (for up to 12 victims on a node, sort.Slice is an insertion sort,
    which puts tied pods that have not started in the reverse of their arrival, and those that
    started together in it: one of the two orders is policylang's), then shuffled (seeded)."""
    def key(p: dict) -> tuple:
        return p["metadata"].get("namespace", "default"), p["metadata"]["name"]
    yield tuple(sorted(pods, key=key, reverse=True))
    yield tuple(sorted(pods, key=key))
    rng = random.Random(0)
    while True:
        shuffled = list(pods)
        rng.shuffle(shuffled)
        yield tuple(shuffled)


def assert_same(oracle: Oracle, cluster: S.Cluster, pod: dict, preemption: bool = True,
                exe: Executable | None = None) -> None:
    """``exe``: the profile that decides as the oracle's version (default: v1.35's default profile)."""
    note(json.dumps({"objects": cluster.raw, "pod": pod}))
    ours = comparable(policylang_result(cluster, pod, preemption, exe))
    theirs = comparable(oracle_result(oracle, cluster, pod, preemption))
    tries = PREEMPTION_TIE_TRIES if theirs["nominated_node"] is not None else 0
    for pods in islice(arrival_orders(cluster.pods), tries):
        if ours == theirs:
            break
        theirs = comparable(oracle_result(oracle, cluster.evolve(pods=pods), pod, preemption))
    assert_agree(ours, theirs)
    assert ours == theirs


@st.composite
def cases(draw, affinity: bool = True, preemptor: bool = False):
    """A cluster and a pending pod for it; a ``preemptor`` has a high priority, so that
    preemption finds victims among the bound pods."""
    cluster = draw(S.clusters(min_nodes=1, affinity=affinity))
    pod = draw(S.pods("pending-0", tuple(cluster.node_names), affinity=affinity))
    if preemptor:
        pod["spec"]["priority"] = draw(st.integers(500, 2000))
    return cluster, pod


def examples(factor: float):
    """``factor`` times the profile's examples: 40 each in ``ci`` (200 over this module),
    1,000 in ``thorough`` (5,000). test_oracle_dra.py adds 80 in ``ci`` (2,000)."""
    return settings(max_examples=max(1, int(settings.default.max_examples * factor)))


@given(cases())
@examples(2)
def test_single_cycle(oracle, case):
    """PreFilter, Filter and Score, and DynamicResources' PostFilter: feasible set, failures,
    scores, totals, best node, FitError text and message."""
    cluster, pod = case
    assert_same(oracle, cluster, pod, preemption=False)


@given(cases(preemptor=True))
@examples(2)
def test_single_cycle_with_preemption(oracle, case):
    """The same, with DefaultPreemption: its message, the nominated node and the victims."""
    cluster, pod = case
    assert_same(oracle, cluster, pod, preemption=True)


# ---- batches: each pod bound before the next -------------------------------------------------

@st.composite
def batches(draw):
    """A cluster and a few pending pods, some with a high priority (so that later pods find
    the earlier ones placed, and preemption finds victims)."""
    cluster = draw(S.clusters(min_nodes=1, max_nodes=4, max_pods=4))
    pods = []
    for i in range(draw(st.integers(2, 5))):
        pod = draw(S.pods(f"pending-{i}", (), affinity=True))
        if draw(st.booleans()):
            pod["spec"]["priority"] = draw(st.integers(500, 2000))
        pods.append(pod)
    return cluster, pods


def simulate_comparable(doc: dict) -> dict:
    return {
        "placements": [{**p, "victims": sorted((v["namespace"], v["name"]) for v in p["victims"])}
                       for p in doc["placements"]],
        "summary": doc["summary"],
    }


def policylang_simulation(cluster: S.Cluster, pods: list, preemption: bool = True,
                          exe: Executable | None = None) -> dict:
    from policylang.report.decisions import simulate_json
    from policylang.forecast.simulate import simulate

    state = cluster.state()
    placements = simulate({"default-scheduler": exe or default_profile()}, state, [S.structure(p) for p in pods],
                          preemption=preemption)
    return json.loads(simulate_json(placements, state))


@given(batches())
@examples(1)
def test_batch(oracle, case):
    """simulate: the queue's order, each placement (node, message, nominated node, victims)
    with every earlier pod bound, and the utilisation at the end."""
    assert_same_batch(oracle, *case)


def assert_same_batch(oracle: Oracle, cluster: S.Cluster, pods: list, exe: Executable | None = None) -> None:
    note(json.dumps({"objects": [*cluster.nodes, *cluster.pods], "pods": pods}))
    ours = simulate_comparable(policylang_simulation(cluster, pods, exe=exe))
    theirs = simulate_comparable(oracle.run([*cluster.nodes, *cluster.pods], pods, mode="simulate"))
    preempted = any(p["nominated_node"] for p in theirs["placements"])
    tries = PREEMPTION_TIE_TRIES if preempted else 0
    for bound in islice(arrival_orders(cluster.pods), tries):     # see PREEMPTION_TIE_TRIES
        if ours == theirs:
            break
        theirs = simulate_comparable(oracle.run([*cluster.nodes, *bound], pods, mode="simulate"))
    assert ours["placements"] == theirs["placements"]
    assert ours["summary"] == theirs["summary"]

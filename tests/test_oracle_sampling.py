"""Differential tests of node sampling: policylang's default profile against kube-scheduler
v1.35's framework (the oracle, oracle/) on clusters of about 100 to 300 nodes, where
percentageOfNodesToScore decides which nodes a cycle visits (tests/strategies_sampling.py).

What sampling must reproduce (pkg/scheduler/schedule_one.go, findNodesThatPassFilters and
numFeasibleNodesToFind; pkg/scheduler/backend/cache/node_tree.go): the search walks the node
tree's order (zones interleaved, nodes within a zone as they arrived), from the rotating start
index nextStartNodeIndex, with one worker (the oracle runs at parallelism 1), and stops at the
numFeasibleNodesToFind-th feasible node: every node scored below 100 nodes, else the percentage
of them (adaptive when 0: 50 - nodes/125, at least 5) but never fewer than 100. So the nodes
that were visited (``evaluated``), their failures and the scores of the feasible ones must be
the same, node by node; and across a batch the start index moves on by the nodes each cycle
visited, so every later pod's placement depends on it.

Preemption is left out here: DefaultPreemption's dry run starts at a random offset
(GetOffsetAndNumCandidates, default_preemption.go), which with more than 100 candidate nodes
changes its answer; test_oracle.py covers preemption on small clusters.
"""

from __future__ import annotations

import json

from hypothesis import given, note
from hypothesis import strategies as st

import strategies as S
import strategies_sampling as SS
from kube_oracle import assert_agree, comparable
from policylang import schedule
from policylang.run.schedule import Sampling
from test_oracle import default_profile, examples, simulate_comparable


@st.composite
def cases(draw):
    cluster = draw(SS.sampled_clusters())
    pod = draw(SS.sampled_pods("pending-0"))
    return cluster, pod, draw(SS.percentages())


@given(cases())
@examples(1)
def test_single_cycle_under_sampling(oracle, case):
    """One cycle from start index 0: which nodes are visited, their failures, the scores of
    the feasible ones, the best node and the message."""
    cluster, pod, percentage = case
    note(json.dumps({"percentage": percentage, "objects": [*cluster.nodes, *cluster.pods], "pod": pod}))
    decision = schedule(default_profile(), cluster.state(), S.structure(pod), preemption=False,
                        sampling=Sampling(percentage))
    ours = comparable(json.loads(json.dumps(decision.to_json())))
    (result,) = oracle.run([*cluster.nodes, *cluster.pods], [pod], preemption=False,
                           percentage=percentage)["results"]
    theirs = comparable(result)
    visited = sorted(name for name, n in theirs["nodes"].items() if n["evaluated"])
    assert sorted(name for name, n in ours["nodes"].items() if n["evaluated"]) == visited
    assert_agree(ours, theirs)


@st.composite
def batches(draw):
    cluster = draw(SS.sampled_clusters(max_pods=2))
    pods = [draw(SS.sampled_pods(f"pending-{i}")) for i in range(draw(st.integers(2, 4)))]
    return cluster, pods, draw(SS.percentages(profile=True))


@given(batches())
@examples(1)
def test_batch_under_sampling(oracle, case):
    """simulate: each pod's cycle starts where the last one's search stopped (the start index
    rotates by the nodes it visited), so each placement, and the utilisation at the end, follow
    only if every earlier search visited the same nodes."""
    cluster, pods, percentage = case
    note(json.dumps({"percentage": percentage, "objects": [*cluster.nodes, *cluster.pods], "pods": pods}))
    from policylang.forecast.simulate import simulate
    from policylang.report.decisions import simulate_json

    state = cluster.state()
    placements = simulate({"default-scheduler": default_profile()}, state, [S.structure(p) for p in pods],
                          preemption=False, percentage=percentage)
    ours = simulate_comparable(json.loads(simulate_json(placements, state)))
    theirs = simulate_comparable(oracle.run([*cluster.nodes, *cluster.pods], pods, preemption=False,
                                            percentage=percentage, mode="simulate"))
    assert ours["placements"] == theirs["placements"]
    assert ours["summary"] == theirs["summary"]

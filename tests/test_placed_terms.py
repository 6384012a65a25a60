"""InterPodAffinity reads the existing pods' terms from the cluster state's groups
(placed_terms) instead of from every node's pods. The oracle is the plugin written node by
node (tests/fixtures/oracles): on any generated cluster and pod, both must give every node the
same status and the same scores, with any hardPodAffinityWeight. (test_state_indexes.py checks
that the groups follow binds and removals.)
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import strategies as S
from policylang import Executable, check, compile_all, load_program, schedule
from test_properties import more_examples, scheduling_cases

ORACLE = Path(__file__).parent / "fixtures" / "oracles" / "inter_pod_affinity_by_node.sched"


@lru_cache(maxsize=None)
def profiles(weight: int) -> tuple[Executable, Executable]:
    text = ORACLE.read_text() + "".join(
        f"\nprofile {name} {{\n    use {policy} {{hardPodAffinityWeight: {weight}}}\n}}\n"
        for name, policy in (("by-node", "InterPodAffinityByNode"), ("grouped", "InterPodAffinity")))
    plans = compile_all(check(load_program(str(ORACLE), text=text)))
    return Executable(plans["by-node"]), Executable(plans["grouped"])


def verdicts(decision) -> list:
    return [(r.name, r.failure and (r.failure.code, r.failure.reasons),
             r.scores and [(s.raw, s.normalized) for s in r.scores.values()]) for r in decision.nodes]


@more_examples(2)
@given(scheduling_cases(), st.sampled_from([0, 1, 5]))
def test_grouped_terms_decide_as_every_nodes_pods_do(case, weight):
    cluster, pod = case
    by_node, grouped = profiles(weight)
    pod = S.structure(pod)
    expected = schedule(by_node, cluster.state(), pod)
    got = schedule(grouped, cluster.state(), pod)
    assert verdicts(got) == verdicts(expected)
    assert (got.selected, got.fit_error) == (expected.selected, expected.fit_error)

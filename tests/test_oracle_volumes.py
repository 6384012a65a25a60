"""Differential tests of the volume plugins: policylang's default profile against kube-scheduler
v1.35's framework (the oracle, oracle/) on clusters with storage (tests/strategies_volumes.py):
VolumeBinding (claims bound, bindable or to provision; Immediate and WaitForFirstConsumer
classes; volumes' node affinity), VolumeRestrictions (one disk or ReadWriteOncePod claim, two
pods), VolumeZone (volumes' zone labels) and NodeVolumeLimits (CSINode attach limits, with
in-tree volumes counted against their CSI driver's), and the CSI migration of bound in-tree
volumes on nodes whose CSINode lists the plugin as migrated.

A single cycle compares everything :func:`kube_oracle.comparable` keeps; a batch places pods one
after another, VolumeBinding's Reserve assuming each pod's bindings before the next pod.
Preemption is off: victims on volume clusters are test_oracle.py's business.
"""

from __future__ import annotations

import json

from hypothesis import given, note

import strategies as S
import strategies_volumes as SV
from kube_oracle import assert_agree, comparable
from policylang import schedule
from policylang.cluster.load import problems
from policylang.cluster.state import ClusterState
from policylang.report.decisions import simulate_json
from policylang.forecast.simulate import simulate
from test_oracle import default_profile, examples, simulate_comparable


def state_of(objects: list) -> ClusterState:
    return ClusterState.build([S.structure(o) for o in objects])


def assert_valid(objects: list) -> None:
    """The strategies make only objects the API server accepts (see strategies_volumes)."""
    for obj in objects:
        assert problems(json.loads(json.dumps(obj))) == [], obj


@given(SV.volume_clusters())
@examples(1)
def test_single_cycle_with_volumes(oracle, case):
    """Feasible set, each node's failing plugin and reasons, scores, best node and message."""
    objects, (pod,) = case
    note(json.dumps({"objects": objects, "pod": pod}))
    assert_valid([*objects, pod])
    decision = schedule(default_profile(), state_of(objects), S.structure(pod), preemption=False)
    ours = comparable(json.loads(json.dumps(decision.to_json())))
    (result,) = oracle.run(objects, [pod], preemption=False)["results"]
    theirs = comparable(result)
    assert_agree(ours, theirs)


@given(SV.volume_clusters(pending=3))
@examples(1)
def test_batch_with_volumes(oracle, case):
    """simulate: each placement with the earlier pods' volumes assumed bound (Reserve), and
    the utilisation at the end."""
    objects, pods = case
    note(json.dumps({"objects": objects, "pods": pods}))
    state = state_of(objects)
    placements = simulate({"default-scheduler": default_profile()}, state, [S.structure(p) for p in pods],
                          preemption=False)
    ours = simulate_comparable(json.loads(simulate_json(placements, state)))
    theirs = simulate_comparable(oracle.run(objects, pods, preemption=False, mode="simulate"))
    assert ours["placements"] == theirs["placements"]
    assert ours["summary"] == theirs["summary"]

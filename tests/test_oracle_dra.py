"""Differential tests for Dynamic Resource Allocation (resource.k8s.io/v1): the default
profile against kube-scheduler v1.35's framework (the oracle, oracle/), on clusters with
DeviceClasses, ResourceSlices and ResourceClaims drawn by ``strategies.dra_scenarios``.

The same comparisons as tests/test_oracle.py (:func:`kube_oracle.comparable`: feasible set,
failing plugin, code and reasons per node, normalised scores, totals, best set, FitError and
message; in a batch each placement and the utilisation), on pods with claims, so that
DynamicResources' PreFilter, Filter, Score, Reserve and PreBind (simulate writes each placed
pod's allocation and reservedFor, as upstream's PreBind does) are all compared.

While stdlib_policies/dynamic_resources.sched still stops pods with claims as "not supported
yet", the module skips, saying so; once the policy models claims, every property here must pass.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, note

import strategies as S
from policylang.roots import stdlib_dir
from test_oracle import assert_same, examples, policylang_simulation, simulate_comparable

UNSUPPORTED = "not supported yet"


def _policy_models_claims() -> bool:
    return UNSUPPORTED not in (stdlib_dir() / "dynamic_resources.sched").read_text()


pytestmark = pytest.mark.skipif(not _policy_models_claims(),
                                reason=f"stdlib DynamicResources still says pods with claims are {UNSUPPORTED!r}")


# 40 + 20 + 20 examples in ``ci``: drawing a DRA scenario costs about as much as deciding it.
@given(S.dra_scenarios())
@examples(1)
def test_dra_single_cycle(oracle, scenario):
    """One pod with claims, without preemption: DynamicResources' PreFilter (claims missing,
    classes missing, claims allocated elsewhere), Filter (the allocator on each node), Score
    (firstAvailable's subrequest ranks) and PostFilter's message, beside the other plugins."""
    (pod,) = scenario.pods
    assert_same(oracle, scenario.cluster, pod, preemption=False)


@given(S.dra_scenarios(min_pending=2, max_pending=4))
@examples(0.5)
def test_dra_batch(oracle, scenario):
    """simulate without preemption: pods with claims placed one after another, each seeing the
    devices the earlier ones were allocated and the claims they reserved (shared claims follow
    their allocation). Preemption is left out: a victim's claims are freed by the resourceclaim
    controller after its deletion, asynchronously, which neither side models within a batch."""
    cluster, pods = scenario.cluster, list(scenario.pods)
    note(json.dumps({"objects": cluster.raw, "pods": pods}))
    ours = simulate_comparable(policylang_simulation(cluster, pods, preemption=False))
    theirs = simulate_comparable(oracle.run(cluster.raw, pods, preemption=False, mode="simulate"))
    assert ours["placements"] == theirs["placements"]
    assert ours["summary"] == theirs["summary"]


@given(S.dra_scenarios())
@examples(0.5)
def test_dra_single_cycle_with_preemption(oracle, scenario):
    """The same with DefaultPreemption, for a high-priority pod: DynamicResources has no
    PreFilter extensions (upstream's PreFilterExtensions is nil), so removing victims never
    frees devices for it; the other plugins' failures can still be preempted away."""
    (pod,) = scenario.pods
    pod["spec"]["priority"] = 1000
    assert_same(oracle, scenario.cluster, pod, preemption=True)

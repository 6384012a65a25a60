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
from kube_oracle import assert_agree, comparable
from policylang import schedule
from policylang.cluster.resourceclaims import instantiate
from test_oracle import arrival_orders, default_profile, examples, oracle_result, policylang_simulation, \
    simulate_comparable

UNSUPPORTED = "not supported yet"


def _policy_models_claims() -> bool:
    return UNSUPPORTED not in (stdlib_dir() / "dynamic_resources.sched").read_text()


pytestmark = pytest.mark.skipif(not _policy_models_claims(),
                                reason=f"stdlib DynamicResources still says pods with claims are {UNSUPPORTED!r}")


# Upstream's allocator visits the pools a node reaches in the order of a Go map (GatherPools in
# k8s.io/dynamic-resource-allocation structured/internal/incubating/pools_incubating.go ranges
# over a map[PoolID], and a pool's slices come in the order of the informer's store, another
# map), so where a node reaches two slices or more, which devices a claim is given, and whether
# a selector's CEL runtime error ("no such key") is met before a device matches, are left to
# chance: the oracle gives two answers for one cluster. policylang visits the pools in the order
# of their first slices in the dump, and a pool's slices in the dump's order
# (policylang/dra/structured.py). In that case the oracle is asked again, up to this many times,
# for the answer policylang gave (on a preemption tie, with the bound pods in another order too,
# see test_oracle.PREEMPTION_TIE_TRIES): every answer accepted is one that upstream gave for the
# same cluster. Batches draw nodes that reach one pool each (one_pool_per_node), where the order
# cannot matter.
POOL_ORDER_TRIES = 24


def shares_pools(cluster: S.Cluster) -> bool:
    """Whether some node may reach two slices (of its own pools, a zone's, everyone's): the
    order of pools, and of a pool's slices, comes from Go maps."""
    slices = [o["spec"] for o in cluster.others if o["kind"] == "ResourceSlice"]
    wide = sum(1 for s in slices if "nodeName" not in s)
    return any(wide + sum(1 for s in slices if s.get("nodeName") == n) >= 2 for n in cluster.node_names)


def policylang_result(cluster: S.Cluster, pod: dict, preemption: bool, exe=None) -> dict:
    """As `policylang eval` decides: the claims of the pod's templates made first (as the
    resourceclaim controller makes them; the oracle does the same)."""
    state = cluster.state()
    decision = schedule(exe or default_profile(), state, instantiate(state, S.structure(pod)), preemption=preemption)
    return json.loads(json.dumps(decision.to_json()))


def assert_same(oracle, cluster: S.Cluster, pod: dict, preemption: bool, exe=None) -> None:
    note(json.dumps({"objects": cluster.raw, "pod": pod}))
    ours = comparable(policylang_result(cluster, pod, preemption, exe))
    theirs = comparable(oracle_result(oracle, cluster, pod, preemption))
    orders = arrival_orders(cluster.pods)
    tries = POOL_ORDER_TRIES if shares_pools(cluster) or theirs["nominated_node"] is not None else 0
    for _ in range(tries):
        if ours == theirs:
            break
        bound = cluster if theirs["nominated_node"] is None else cluster.evolve(pods=next(orders))
        theirs = comparable(oracle_result(oracle, bound, pod, preemption))
    assert_agree(ours, theirs)
    assert ours == theirs


# 40 + 20 + 20 examples in ``ci``: drawing a DRA scenario costs about as much as deciding it.
@given(S.dra_scenarios())
@examples(1)
def test_dra_single_cycle(oracle, scenario):
    """One pod with claims, without preemption: DynamicResources' PreFilter (claims missing,
    classes missing, claims allocated elsewhere), Filter (the allocator on each node), Score
    (firstAvailable's subrequest ranks) and PostFilter's message, beside the other plugins."""
    (pod,) = scenario.pods
    assert_same(oracle, scenario.cluster, pod, preemption=False)


@given(S.dra_scenarios(min_pending=2, max_pending=4, one_pool_per_node=True))
@examples(0.5)
def test_dra_batch(oracle, scenario):
    """simulate without preemption: pods with claims placed one after another, each seeing the
    devices the earlier ones were allocated and the claims they reserved (shared claims follow
    their allocation; template claims made first, as the resourceclaim controller makes them,
    with the deterministic names of policylang/cluster/resourceclaims.py). Each node reaches one
    pool (see POOL_ORDER_TRIES). A pod whose PostFilter deallocated a claim left by its pod is
    tried again at once, as the claim's update requeues it. Preemption is left out: a victim's claims are freed by the resourceclaim
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

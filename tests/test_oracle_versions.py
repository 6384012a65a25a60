"""Differential tests for every Kubernetes version but the default: policylang's default profile
compiled for ``--kubernetes-version V`` against kube-scheduler vV's own framework (the oracle built
from the same sources against oracle/k8s-V.mod: the ``oracles`` fixture).

A smaller run beside tests/test_oracle.py, test_oracle_dra.py, test_oracle_volumes.py and
test_oracle_sampling.py, which hold the default version to thousands of examples: the same
properties (one cycle, one cycle with preemption, a batch, one cycle with claims, volumes), at
about 30 examples each per version in ``ci``, so that every difference between the versions that
docs/versions.md lists, and any it missed, shows here. Every divergence found is fixed in the
stdlib and kept as a conformance case (tests/conformance/oracle/).
"""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import given, settings

import strategies as S
import strategies_volumes as SV
from kube_oracle import assert_agree, comparable
from policylang import Executable, load_plans, schedule
from policylang.run.schedule import Sampling
from policylang.target import DEFAULT_VERSION, VERSIONS, make_target
from test_oracle import assert_same, assert_same_batch, batches, cases
from test_oracle_dra import assert_same as assert_same_dra
from test_oracle_sampling import cases as sampling_cases
from test_oracle_volumes import state_of

OTHER_VERSIONS = [v for v in VERSIONS if v != DEFAULT_VERSION]


@lru_cache(maxsize=None)
def profile(version: str) -> Executable:
    return Executable(load_plans(target=make_target(version))["default-scheduler"])


def examples(n: int):
    """``n`` examples in ``ci`` (40 by default there), scaled with the profile."""
    return settings(max_examples=max(1, settings.default.max_examples * n // 40))


@pytest.fixture(scope="module", params=OTHER_VERSIONS)
def version(request):
    return request.param


@given(case=cases())
@examples(30)
def test_single_cycle(oracles, version, case):
    cluster, pod = case
    assert_same(oracles(version), cluster, pod, preemption=False, exe=profile(version))


@given(case=cases(preemptor=True))
@examples(15)
def test_single_cycle_with_preemption(oracles, version, case):
    cluster, pod = case
    assert_same(oracles(version), cluster, pod, preemption=True, exe=profile(version))


@given(case=batches())
@examples(30)
def test_batch(oracles, version, case):
    assert_same_batch(oracles(version), *case, exe=profile(version))


@given(scenario=S.dra_scenarios())
@examples(30)
def test_dra_single_cycle(oracles, version, scenario):
    """Claims, decided by that version's DynamicResources and allocator."""
    (pod,) = scenario.pods
    assert_same_dra(oracles(version), scenario.cluster, pod, preemption=False, exe=profile(version))


@given(case=SV.volume_clusters())
@examples(10)
def test_single_cycle_with_volumes(oracles, version, case):
    """Storage: VolumeBinding, VolumeRestrictions, VolumeZone and NodeVolumeLimits of that version."""
    objects, (pod,) = case
    decision = schedule(profile(version), state_of(objects), S.structure(pod), preemption=False)
    (result,) = oracles(version).run(objects, [pod], preemption=False)["results"]
    assert_agree(comparable(json.loads(json.dumps(decision.to_json()))), comparable(result))


@given(case=sampling_cases())
@examples(10)
def test_single_cycle_under_sampling(oracles, version, case):
    """percentageOfNodesToScore: which nodes that version visits, and what it decides there."""
    cluster, pod, percentage = case
    decision = schedule(profile(version), cluster.state(), S.structure(pod), preemption=False,
                        sampling=Sampling(percentage))
    (result,) = oracles(version).run([*cluster.nodes, *cluster.pods], [pod], preemption=False,
                                     percentage=percentage)["results"]
    assert_agree(comparable(json.loads(json.dumps(decision.to_json()))), comparable(result))

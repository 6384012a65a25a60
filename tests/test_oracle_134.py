"""Differential tests for Kubernetes 1.34: policylang's default profile compiled for
``--kubernetes-version 1.34`` against kube-scheduler v1.34.4's own framework (the oracle built
from the same sources against oracle/k8s-1.34.mod: the ``oracle_134`` fixture).

A small run beside tests/test_oracle.py and tests/test_oracle_dra.py, which hold v1.35 to
thousands of examples: the same properties (one cycle, one cycle with preemption, a batch; one
cycle with claims), at about 30 examples each in ``ci``, so that every difference between the
versions that docs/versions.md lists, and any it missed, shows here. Every divergence found is
fixed in the stdlib and kept as a conformance case (tests/conformance/oracle/v1_34.yaml).
"""

from __future__ import annotations

from functools import lru_cache

from hypothesis import given, settings

import strategies as S
from policylang import Executable, load_plans
from policylang.target import make_target
from test_oracle import assert_same, assert_same_batch, batches, cases
from test_oracle_dra import assert_same as assert_same_dra


@lru_cache(maxsize=None)
def profile_134() -> Executable:
    return Executable(load_plans(target=make_target("1.34"))["default-scheduler"])


def examples(n: int):
    """``n`` examples in ``ci`` (40 by default there), scaled with the profile."""
    return settings(max_examples=max(1, settings.default.max_examples * n // 40))


@given(cases())
@examples(30)
def test_single_cycle_134(oracle_134, case):
    cluster, pod = case
    assert_same(oracle_134, cluster, pod, preemption=False, exe=profile_134())


@given(cases(preemptor=True))
@examples(15)
def test_single_cycle_with_preemption_134(oracle_134, case):
    cluster, pod = case
    assert_same(oracle_134, cluster, pod, preemption=True, exe=profile_134())


@given(batches())
@examples(30)
def test_batch_134(oracle_134, case):
    assert_same_batch(oracle_134, *case, exe=profile_134())


@given(S.dra_scenarios())
@examples(30)
def test_dra_single_cycle_134(oracle_134, scenario):
    """Claims: v1.34's DynamicResources has no Score, and its allocator is v1.34.4's."""
    (pod,) = scenario.pods
    assert_same_dra(oracle_134, scenario.cluster, pod, preemption=False, exe=profile_134())

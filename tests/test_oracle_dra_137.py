"""Differential tests for Dynamic Resource Allocation on Kubernetes 1.36 and 1.37: the default
profile compiled for ``--kubernetes-version 1.36`` / ``1.37`` against kube-scheduler v1.36.3's and
v1.37.2's own framework (the oracles built against oracle/k8s-1.36.mod and k8s-1.37.mod), on the
clusters ``strategies.dra_scenarios`` draws, which from these versions also hold device taints
and request tolerations, shared counters and devices consuming them, and devices that allow
multiple allocations with capacity requests (``new_fields``).

Their allocator (internal/incubating of dynamic-resource-allocation v0.36.3 / v0.37.2) sorts
pools by driver and name and a pool's slices by name, so, unlike v1.35's, the devices a claim is
given do not depend on Go's map order: no retries. A small run, as tests/test_oracle_134.py."""

from __future__ import annotations

import json
from functools import lru_cache

from hypothesis import given, note, settings

import strategies as S
from kube_oracle import assert_agree, comparable
from policylang import Executable, load_plans
from policylang.target import make_target
from test_oracle_dra import policylang_result
from test_oracle import oracle_result


@lru_cache(maxsize=None)
def profile(version: str) -> Executable:
    return Executable(load_plans(target=make_target(version))["default-scheduler"])


def examples(n: int):
    """``n`` examples in ``ci`` (40 by default there), scaled with the profile."""
    return settings(max_examples=max(1, settings.default.max_examples * n // 40), deadline=None)


def dra_view(result: dict) -> dict:
    """What DynamicResources decides in a result (``comparable``'s): which nodes are feasible,
    each node's failure (plugin, code, reasons), DynamicResources' normalised score, the
    FitError and the message (PostFilter's included). The other plugins' scores, and so the
    totals and the node selected, are test_oracle's to compare for these versions."""
    return {"feasible": result["feasible"], "fit_error": result.get("fit_error"), "message": result.get("message"),
            "nodes": {name: {"feasible": node.get("feasible"), "failure": node.get("failure"),
                             "score": (node.get("scores") or {}).get("DynamicResources")}
                      for name, node in result["nodes"].items()}}


FILTER_ERROR = 'running "DynamicResources" filter plugin: '


def _same(oracle, version: str, scenario) -> None:
    (pod,) = scenario.pods
    cluster = scenario.cluster
    note(json.dumps({"objects": cluster.raw, "pod": pod}))
    ours = dra_view(comparable(policylang_result(cluster, pod, False, profile(version))))
    theirs = dra_view(comparable(oracle_result(oracle, cluster, pod, False)))
    if all((r["message"] or "").startswith(FILTER_ERROR) for r in (ours, theirs)):
        # A filter Error on more than one node: upstream reports the one its parallel filter loop
        # meets first (findNodesThatPassFilters cancels the rest), which need not be the first
        # node in order; both erring is what is compared.
        ours["message"] = theirs["message"] = FILTER_ERROR
    assert_agree(ours, theirs)
    assert ours == theirs


@given(S.dra_scenarios(new_fields=True))
@examples(20)
def test_dra_single_cycle_136(oracles, scenario):
    _same(oracles("1.36"), "1.36", scenario)


@given(S.dra_scenarios(new_fields=True))
@examples(20)
def test_dra_single_cycle_137(oracles, scenario):
    _same(oracles("1.37"), "1.37", scenario)

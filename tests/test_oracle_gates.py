"""Differential tests for the feature gates `--feature-gates` takes (policylang/target.py): the
default profile compiled with a gate set against kube-scheduler's framework run with the same
gate set (the oracle's scenario ``featureGates``, set as kube-scheduler's --feature-gates sets
them), so that what the stdlib does under a gate is upstream's, not only its default.

- TaintTolerationComparisonOperators=true (alpha since v1.35; the default version): pods tolerating ``sla`` taints with Lt and Gt,
  on nodes tainted with numbers and words, for NoSchedule (TaintToleration's filter,
  NodeUnschedulable) and PreferNoSchedule (its score), beside PodTopologySpread's
  nodeTaintsPolicy: Honor.
- DynamicResourceAllocation=false (v1.34, where it is not locked): pods with claims pass.

And the gate table itself (policylang/feature_gates.json, which `--feature-gates` checks against)
is each version's own: every gate kube-scheduler of that version registers, with its default, lock
and stage, as the oracle of that version lists them.
"""

from __future__ import annotations

import copy
import json
import subprocess
from functools import lru_cache

import pytest

from hypothesis import given, note, settings
from hypothesis import strategies as st

import strategies as S
from kube_oracle import comparable
from policylang import Executable, load_plans
from policylang.target import DEFAULT_VERSION, VERSIONS, gate_specs, make_target
from test_oracle import cases, policylang_result
from test_oracle_dra import policylang_result as policylang_dra_result

COMPARISON = "TaintTolerationComparisonOperators"


@lru_cache(maxsize=None)
def profile(version: str, gates: str) -> Executable:
    return Executable(load_plans(target=make_target(version, gates))["default-scheduler"])


def examples(n: int):
    return settings(max_examples=max(1, settings.default.max_examples * n // 40))


SLA_VALUES = ["0", "5", "100", "900", "950", "-3", "high", "0100", ""]


@st.composite
def comparison_cases(draw):
    """A case of test_oracle.cases with ``sla`` taints on some nodes and Lt/Gt tolerations of
    them on the pod (and, sometimes, a spread constraint that honours taints)."""
    cluster, pod = draw(cases())
    nodes = []
    for node in cluster.nodes:
        node = copy.deepcopy(node)
        if draw(st.booleans()):
            taint = {"key": "sla", "effect": draw(st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]))}
            value = draw(st.sampled_from(SLA_VALUES))
            if value:
                taint["value"] = value
            node.setdefault("spec", {}).setdefault("taints", []).append(taint)
        if draw(st.integers(0, 5)) == 0:    # cordoned: NodeUnschedulable's taint, which Lt/Gt never match
            node.setdefault("spec", {})["unschedulable"] = True
        nodes.append(node)
    pod = copy.deepcopy(pod)
    tolerations = pod["spec"].setdefault("tolerations", [])
    for _ in range(draw(st.integers(1, 2))):
        tol = {"key": draw(st.sampled_from(["sla", "node.kubernetes.io/unschedulable"])),
               "operator": draw(st.sampled_from(["Lt", "Gt"])),
               "value": draw(st.sampled_from(["1", "100", "900", "-1", "950"]))}
        effect = draw(st.sampled_from(["", "NoSchedule", "PreferNoSchedule"]))
        if effect:
            tol["effect"] = effect
        tolerations.append(tol)
    if draw(st.booleans()):
        pod["metadata"].setdefault("labels", {})["spread"] = "x"
        pod["spec"].setdefault("topologySpreadConstraints", []).append({
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
            "nodeTaintsPolicy": "Honor", "labelSelector": {"matchLabels": {"spread": "x"}}})
    return cluster.evolve(nodes=nodes), pod


def assert_same(oracle, cluster, pod, version: str, gates: dict, dra: bool = False) -> None:
    note(str({"objects": cluster.raw, "pod": pod, "gates": gates}))
    exe = profile(version, ",".join(f"{k}={str(v).lower()}" for k, v in gates.items()))
    decide = policylang_dra_result if dra else policylang_result
    ours = comparable(decide(cluster, pod, False, exe))
    (theirs,) = oracle.run([copy.deepcopy(o) for o in cluster.raw], [copy.deepcopy(pod)], preemption=False,
                           feature_gates=gates)["results"]
    assert ours == comparable(theirs)


@given(comparison_cases())
@examples(40)
def test_lt_and_gt_tolerations_with_the_comparison_gate(oracle, case):
    assert_same(oracle, *case, DEFAULT_VERSION, {COMPARISON: True})


@given(comparison_cases())
@examples(10)
def test_lt_and_gt_tolerations_tolerate_nothing_without_it(oracle, case):
    assert_same(oracle, *case, DEFAULT_VERSION, {})


@given(S.dra_scenarios())
@examples(15)
def test_claims_pass_with_dynamic_resource_allocation_off(oracles, scenario):
    (pod,) = scenario.pods
    assert_same(oracles("1.34"), scenario.cluster, pod, "1.34", {"DynamicResourceAllocation": False}, dra=True)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_gate_table_is_kube_schedulers_own(oracles, version):
    listed = json.loads(subprocess.run([oracles(version).binary, "--list-gates"], check=True, capture_output=True,
                                       text=True).stdout)
    upstream = {g["name"]: (g["default"], g["locked"], g["stage"] or "GA", tuple(sorted(g.get("dependsOn", []))))
                for g in listed}
    ours = {name: (spec.default, spec.locked, spec.stage, spec.depends_on) for name, spec in gate_specs(version).items()}
    assert ours == upstream


@pytest.mark.parametrize("version, gates", [
    ("1.36", "NodeDeclaredFeatures=false"),                                   # RestartAllContainers… needs it
    ("1.35", "RestartAllContainersOnContainerExits=true"),                    # needs NodeDeclaredFeatures
    ("1.37", "ClusterTrustBundle=false"),                                     # ClusterTrustBundleProjection needs it
    ("1.35", "ClusterTrustBundle=true"),                                      # fine: nothing left without one
    ("1.35", "NodeDeclaredFeatures=true,RestartAllContainersOnContainerExits=true"),
])
def test_a_gate_left_without_its_dependency_is_refused_as_kube_scheduler_refuses_it(oracles, version, gates):
    """The oracle sets the gates as kube-scheduler's --feature-gates does; policylang refuses
    exactly the sets it refuses, in its words."""
    from policylang.diagnostics import InputError
    done = subprocess.run([oracles(version).binary, "--feature-gates", gates, "--list-gates"], capture_output=True,
                          text=True)
    try:
        make_target(version, gates)
    except InputError as err:
        assert done.returncode != 0
        for line in str(err).removeprefix("--feature-gates: ").split("; "):
            assert line in done.stderr
    else:
        assert done.returncode == 0, done.stderr

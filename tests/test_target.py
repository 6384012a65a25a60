"""The Kubernetes a decision targets (policylang/target.py): --kubernetes-version and
--feature-gates as kube-scheduler reads them, the gate table against upstream's own, and what
`kubernetes.…` is in a policy (checked, folded into the plan, decided alike by both executors).
"""

from __future__ import annotations

import json
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings

import strategies as S
from policylang import Executable, check, load_plans, load_program, schedule
from policylang.cli import main
from policylang.api.selectors import tolerates
from policylang.api.model import Taint, Toleration
from policylang.compile import compile_all
from policylang.diagnostics import InputError, PolicyError
from policylang.target import MODELLED, VERSIONS, gate_specs, make_target, read_by_scheduler
from test_properties import scheduling_cases

EXAMPLES = Path(__file__).parent.parent / "examples"


# ---- --kubernetes-version and --feature-gates ----------------------------------------------

@pytest.mark.parametrize("version, gates, error", [
    # component-base featuregate/feature_gate.go: Set and SetFromMap's texts.
    ("1.35", "TaintTolerationComparisonOperators", "missing bool value for TaintTolerationComparisonOperators"),
    ("1.35", "TaintTolerationComparisonOperators=yes",
     'invalid value of TaintTolerationComparisonOperators=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
    ("1.35", "NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    # New in v1.35: v1.34's kube-scheduler does not know it.
    ("1.34", "TaintTolerationComparisonOperators=true", "unrecognized feature gate: TaintTolerationComparisonOperators"),
    # Removed in v1.37 (GA since 1.34): v1.37 does not know it any more.
    ("1.37", "SchedulerQueueingHints=true", "unrecognized feature gate: SchedulerQueueingHints"),
    # GA and locked in v1.35, settable in v1.34.
    ("1.35", "DynamicResourceAllocation=false",
     "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"),
    # The scheduler reads it, policylang decides only as its default does.
    ("1.37", "OpportunisticBatching=false",
     "OpportunisticBatching=false is not modelled: policylang decides as Kubernetes 1.37 with "
     "OpportunisticBatching=true (its default)"),
    ("1.33", "", "--kubernetes-version 1.33: policylang decides as Kubernetes 1.34, 1.35, 1.36 or 1.37"),
])
def test_a_gate_or_version_kube_scheduler_would_refuse_is_refused(version, gates, error):
    with pytest.raises(InputError, match=re.escape(error)):
        make_target(version, gates)


@pytest.mark.parametrize("version, gates", [
    ("1.37", "HPAScaleToZero=false"),        # the scheduler never reads it: no decision changes
    ("1.37", "OpportunisticBatching=true"),  # read, but set to its default
])
def test_a_gate_that_changes_no_decision_is_taken(version, gates):
    assert make_target(version, gates).json()["feature_gates"] == dict([(gates.split("=")[0], gates.endswith("true"))])


@pytest.mark.parametrize("version, gates, expect", [
    ("1.34", None, {"DynamicResourceAllocation": True, "NodeDeclaredFeatures": False,
                    "TaintTolerationComparisonOperators": False}),
    ("1.34", "DynamicResourceAllocation=false",
     {"DynamicResourceAllocation": False, "NodeDeclaredFeatures": False, "TaintTolerationComparisonOperators": False}),
    ("v1.35.4", "TaintTolerationComparisonOperators=T,DynamicResourceAllocation=1",
     {"DynamicResourceAllocation": True, "NodeDeclaredFeatures": False, "TaintTolerationComparisonOperators": True}),
    ("1.36", None, {"DynamicResourceAllocation": True, "NodeDeclaredFeatures": True,
                    "TaintTolerationComparisonOperators": False}),
    ("1.35", "NodeDeclaredFeatures=true", {"DynamicResourceAllocation": True, "NodeDeclaredFeatures": True,
                                           "TaintTolerationComparisonOperators": False}),
])
def test_a_target_holds_every_modelled_gate_set_or_defaulted(version, gates, expect):
    target = make_target(version, gates)
    assert {k: v for k, v in target.gates if k in expect} == expect
    assert target.version == version.removeprefix("v")[:4]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_modelled_gate_is_one_the_scheduler_reads(version):
    """A modelled gate changes a decision, so the scheduler's code of some version reads it."""
    read = set().union(*(read_by_scheduler(v) for v in VERSIONS))
    assert set(MODELLED) <= read
    assert set(gate_specs(version)) >= read_by_scheduler(version)


# ---- `kubernetes` in a policy ----------------------------------------------------------------

def _program(text: str, tmp_path):
    path = tmp_path / "p.sched"
    path.write_text(text)
    return load_program(path)


def test_a_gate_the_table_does_not_name_is_a_field_error_with_a_suggestion(tmp_path):
    text = "policy P\nfilter f {\n    reject when kubernetes.gates.TaintTolerationComparisonOperator reason \"x\"\n}\n"
    with pytest.raises(PolicyError) as err:
        check(_program(text, tmp_path))
    (d,) = err.value.diagnostics
    assert d.code == "P012"
    assert "FeatureGates has no field 'TaintTolerationComparisonOperator'" in d.message
    assert d.notes == ("help: did you mean 'TaintTolerationComparisonOperators'?",)


def test_kubernetes_names_a_scope_and_cannot_be_redefined(tmp_path):
    text = "policy P\nfilter f {\n    let kubernetes = 1\n    reject when false reason \"x\"\n}\n"
    with pytest.raises(PolicyError) as err:
        check(_program(text, tmp_path))
    assert [d.code for d in err.value.diagnostics] == ["P014"]


POLICY = """policy P
filter f {
    reject when kubernetes.minor < 35 and node.metadata.name == "node-0"
        reason "v${kubernetes.version} leaves node-0 out"
}
score s {
    value if kubernetes.gates.TaintTolerationComparisonOperators then 7 else len(node.metadata.name)
}
profile p { use P }
"""


@pytest.mark.parametrize("version, gates", [("1.34", None), ("1.35", None),
                                            ("1.35", "TaintTolerationComparisonOperators=true")])
def test_the_target_is_folded_into_the_plan(tmp_path, version, gates):
    plan = compile_all(check(_program(POLICY, tmp_path)), make_target(version, gates))["p"]
    assert plan.target == make_target(version, gates)
    assert "kubernetes" not in repr(plan.plugins)     # no name is left to look up at run time


@lru_cache(maxsize=None)
def _executables(version, gates):
    plan = load_plans(target=make_target(version, gates))["default-scheduler"]
    return Executable(plan, "reference"), Executable(plan, "vector")


@settings(max_examples=max(1, settings.default.max_examples // 2))
@given(scheduling_cases(), S.st.sampled_from([("1.34", None), ("1.34", "DynamicResourceAllocation=false"),
                                              ("1.35", "TaintTolerationComparisonOperators=true")]))
def test_the_default_profile_of_each_target_decides_alike_on_both_executors(case, target):
    cluster, pod = case
    reference, vector = _executables(*target)
    pod = S.structure(pod)
    assert schedule(vector, cluster.state(), pod) == schedule(reference, cluster.state(), pod)


# ---- TaintTolerationComparisonOperators -------------------------------------------------------

# component-helpers scheduling/corev1/helpers_test.go TestFindMatchingUntoleratedTaint (v1.35.4),
# its numeric cases, and k8s.io/api core/v1 toleration_test.go's.
@pytest.mark.parametrize("operator, wanted, have, gate, tolerated", [
    ("Gt", "950", "800", True, False),      # numeric Gt operator with taint value below threshold
    ("Gt", "750", "950", True, True),       # numeric Gt operator with taint value above threshold
    ("Lt", "800", "950", True, False),      # numeric Lt operator with taint value above threshold
    ("Lt", "800", "750", True, True),
    ("Gt", "950", "high", True, False),     # numeric Gt operator with non-numeric taint value
    ("Gt", "750", "950", False, False),     # the gate off (and v1.34): Lt and Gt tolerate nothing
    ("Gt", "0750", "950", True, False),     # not a decimal integer in canonical form
    ("Lt", "1", "-5", True, True),
])
def test_lt_and_gt_compare_as_integers_only_with_the_gate(operator, wanted, have, gate, tolerated):
    tol = Toleration(key="node.kubernetes.io/sla", operator=operator, value=wanted, effect="NoSchedule")
    taint = Taint(key="node.kubernetes.io/sla", value=have, effect="NoSchedule")
    assert tolerates(tol, taint, gate) is tolerated


GT_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gt", "namespace": "default"},
          "spec": {"containers": [{"name": "c", "image": "nginx"}],
                   "tolerations": [{"key": "sla", "operator": "Gt", "value": "900", "effect": "NoSchedule"}]}}


def _node(name, sla):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"taints": [{"key": "sla", "value": sla, "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


@pytest.mark.parametrize("args, code, out", [
    ((), 2, 'Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"'),
    (("--kubernetes-version", "1.34"), 2, 'Unsupported value: "Gt": supported values: "Equal", "Exists"'),
    (("--feature-gates", "TaintTolerationComparisonOperators=true"), 0, '"selected": "a"'),
])
def test_a_gt_toleration_is_admitted_and_compared_only_with_the_gate(capsys, tmp_path, args, code, out):
    cluster, pod = tmp_path / "cluster.json", tmp_path / "pod.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [_node("a", "950"), _node("b", "800")]}))
    pod.write_text(json.dumps(GT_POD))
    assert main(["eval", "--cluster", str(cluster), "--pod", str(pod), "-o", "json", *args]) == code
    captured = capsys.readouterr()
    assert out in captured.out + captured.err


# ---- the verbs say which version decided -----------------------------------------------------

def test_eval_json_says_which_kubernetes_decided(capsys):
    code = main(["eval", "--cluster", str(EXAMPLES / "dra" / "cluster.yaml"), "--pod",
                 str(EXAMPLES / "dra" / "pods" / "train-b.yaml"), "-o", "json", "--kubernetes-version", "1.34",
                 "--feature-gates", "DynamicResourceAllocation=true"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["kubernetes"] == {"version": "1.34", "feature_gates": {"DynamicResourceAllocation": True}}
    # v1.34's DynamicResources has no score.
    assert all("DynamicResources" not in (n["scores"] or {}) for n in doc["results"][0]["nodes"])


@pytest.mark.parametrize("verb", ["eval", "explain", "simulate"])
def test_a_refused_gate_is_exit_2_on_every_verb_that_decides(capsys, verb):
    pods = "--pods" if verb == "simulate" else "--pod"
    code = main([verb, "--cluster", str(EXAMPLES / "cluster.yaml"), pods, str(EXAMPLES / "pods" / "web.yaml"),
                 "--feature-gates", "DynamicResourceAllocation=false"])
    assert code == 2
    assert capsys.readouterr().err == ("error: --feature-gates: cannot set feature gate DynamicResourceAllocation "
                                      "to false, feature is locked to true\n")


def test_a_test_file_names_the_kubernetes_its_expectations_are_for(capsys, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                       "items": [_node("a", "950"), _node("b", "800")]}))
    (tmp_path / "gt_test.yaml").write_text(json.dumps({
        "kubernetes": {"version": "1.35", "featureGates": {"TaintTolerationComparisonOperators": True}},
        "cluster": "cluster.json",
        "tests": [{"name": "Gt 900 tolerates sla=950 only", "pod": GT_POD, "expect": {"feasible": ["a"]}}]}))
    assert main(["test", str(tmp_path)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out

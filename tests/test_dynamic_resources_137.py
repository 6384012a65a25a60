"""DynamicResources of Kubernetes 1.36 and 1.37 end to end (eval, explain, simulate), beside
tests/test_dynamic_resources.py (v1.35): their allocator (policylang/dra, internal/incubating of
dynamic-resource-allocation v0.36.3 / v0.37.2; its table is tests/test_dra_allocator_136.py) with
device taints, shared counters and devices shared by allocations; Score pairing allocated claims
with their own allocation; a device's binding failure making its claim unavailable; v1.37's
PostFilter without a message; explain naming a tainted device, an exhausted counter and
exhausted capacity."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from policylang import load_cluster, load_plans
from policylang.cli import main
from policylang.cluster.load import structure_object
from policylang.forecast.simulate import simulate
from policylang.run.schedule import EXECUTORS, Executable, schedule
from policylang.target import make_target

ROOT = Path(__file__).parent.parent
HERE = ROOT / "examples" / "dra-137"
FIXTURES = Path(__file__).parent / "fixtures"


def _exe(version: str, executor=None) -> Executable:
    plans = load_plans(target=make_target(version))["default-scheduler"]
    return Executable(plans, executor) if executor else Executable(plans)


def _object(raw: dict):
    return structure_object(raw, "<test>")


def test_explain_names_a_tainted_device_an_exhausted_counter_and_exhausted_capacity(capsys, golden):
    """n1's two GPUs are tainted NoSchedule; n2's pool shares 40Gi of memory its GPUs consume 40Gi
    each of, and one is allocated; n3's one GPU is shared, with 40Gi, and the claim asks 48Gi."""
    code = main(["explain", "--kubernetes-version", "1.37", "--cluster", str(HERE / "cluster.yaml"),
                 "--pod", str(HERE / "pod.yaml")])
    golden(FIXTURES / "explain" / "dra_137.txt", capsys.readouterr().out)
    assert code == 1


def _cluster_with(*raw):
    state = load_cluster([HERE / "cluster.yaml"])
    for obj in raw:
        state.add_resource_claim(_object(obj))
    return state


def _pod(claim: str, name: str = "p"):
    return _object({"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                    "spec": {"containers": [{"name": "c", "image": "x"}],
                             "resourceClaims": [{"name": "g", "resourceClaimName": claim}]}})


def _claim(name: str, **exactly):
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", **exactly}}]}}}


def _feasible(decision) -> list[str]:
    return [n.name for n in decision.nodes if n.feasible]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
@pytest.mark.parametrize("executor", EXECUTORS)
def test_taints_counters_and_shares_decide_which_nodes_fit(version, executor):
    """A plain claim of one GPU: n1's GPUs are tainted, n2's pool has no counter left for its
    free GPU; n3's shared GPU can be taken (as a share, all of its 40Gi by default). A claim
    tolerating the taint fits n1 too."""
    tolerating = _claim("tolerating", tolerations=[{"key": "example.com/health", "operator": "Exists",
                                                     "effect": "NoSchedule"}])
    state = _cluster_with(tolerating, _claim("plain"))
    exe = _exe(version, executor)
    assert _feasible(schedule(exe, state, _pod("plain"))) == ["n3"]
    assert _feasible(schedule(exe, state, _pod("tolerating"))) == ["n1", "n3"]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_v1_35_ignores_taints_and_shares_and_never_takes_a_device_consuming_counters(executor):
    """v1.35's allocator has DRADeviceTaints, DRAPartitionableDevices and DRAConsumableCapacity
    off: taints do not count, a device consuming counters is never taken, a shared device is
    taken whole."""
    state = _cluster_with(_claim("plain"))
    assert _feasible(schedule(_exe("1.35", executor), state, _pod("plain"))) == ["n1", "n3"]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_simulate_shares_a_device_until_its_capacity_is_used(version):
    """n3's GPU allows multiple allocations with 40Gi: claims of 16Gi each are shares of it,
    each with a shareID and its consumed capacity, until the third finds 8Gi left."""
    exe = _exe(version)
    claims = [_claim(f"c{i}", capacity={"requests": {"memory": "16Gi"}},
                     selectors=[{"cel": {"expression": "device.allowMultipleAllocations"}}]) for i in range(3)]
    state = _cluster_with(*claims)
    placements = simulate({"default-scheduler": exe}, state, [_pod(f"c{i}", f"p{i}") for i in range(3)])
    assert [p.node for p in placements] == ["n3", "n3", None]
    results = [state.resource_claims[("default", f"c{i}")].status.allocation.devices.results[0] for i in range(2)]
    assert [(r.device, str(r.consumed_capacity["memory"])) for r in results] == [("gpu-0", "16Gi"), ("gpu-0", "16Gi")]
    assert results[0].share_id and results[1].share_id and results[0].share_id != results[1].share_id


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_a_counter_freed_by_a_claim_gone_makes_room(version):
    """n2's pool shares 40Gi, all of it consumed by the allocated gpu-0 (claim held): once that
    claim is deallocated, gpu-1 fits."""
    exe = _exe(version)
    state = _cluster_with(_claim("plain"))
    assert "n2" not in _feasible(schedule(exe, state, _pod("plain")))
    state.deallocate_claim(("default", "held"))
    assert "n2" in _feasible(schedule(exe, state, _pod("plain")))


@pytest.mark.parametrize("version, message", [
    ("1.36", "0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, preemption: 0/3 nodes "
             "are available: 3 Preemption is not helpful for scheduling."),
    ("1.37", "0/3 nodes are available: 3 cannot allocate all claims. preemption: 0/3 nodes are available: 3 "
             "Preemption is not helpful for scheduling."),
])
def test_v1_37_postfilter_says_nothing_when_it_deallocates_nothing(version, message):
    state = _cluster_with(_claim("big", count=3))
    assert schedule(_exe(version), state, _pod("big")).message == message


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_a_binding_failure_makes_the_claim_unavailable_everywhere(version):
    """isClaimReadyForBinding: the allocated device reports its binding failure condition True."""
    bound = _claim("bound")
    bound["status"] = {
        "allocation": {"devices": {"results": [{"request": "r", "driver": "gpu.example.com", "pool": "n3",
                                                "device": "gpu-0", "bindingConditions": ["Attached"],
                                                "bindingFailureConditions": ["AttachFailed"]}]}},
        "devices": [{"driver": "gpu.example.com", "pool": "n3", "device": "gpu-0",
                     "conditions": [{"type": "AttachFailed", "status": "True", "reason": "Broken",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "x"}]}]}
    state = _cluster_with(bound)
    decision = schedule(_exe(version), state, _pod("bound"))
    assert decision.selected is None
    assert decision.message.startswith("0/3 nodes are available: 3 resourceclaim not available on the node. "
                                       "deallocation of ResourceClaim completed")
    # v1.35 (binding conditions off) takes the allocation as it is.
    assert schedule(_exe("1.35"), state, _pod("bound")).selected is not None


@pytest.mark.parametrize("selector, feasible_137", [
    ({"driver": "gpu.example.com", "pool": "n3"}, []),
    ({"driver": "gpu.example.com", "device": "gpu-0"}, []),
    ({"pool": "n1"}, ["n3"]),
    (None, ["n3"]),                        # no selector selects no device (v1.37)
])
def test_a_device_taint_rule_taints_the_devices_it_selects_from_v1_37(tmp_path, selector, feasible_137):
    """The ResourceSlice tracker adds a DeviceTaintRule's taint to the devices it selects where
    DRADeviceTaintRules is on: v1.37 (GA), not v1.36 (beta, off)."""
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "drain"},
            "spec": {"taint": {"key": "example.com/drain", "value": "true", "effect": "NoExecute"}}}
    if selector is not None:
        rule["spec"]["deviceSelector"] = selector
    claim = {"apiVersion": "resource.k8s.io/v1", **_claim("plain")}
    extra = tmp_path / "extra.yaml"
    extra.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [rule, claim]}))
    state = load_cluster([HERE / "cluster.yaml", extra])
    assert _feasible(schedule(_exe("1.36"), state, _pod("plain"))) == ["n3"]
    assert _feasible(schedule(_exe("1.37"), state, _pod("plain"))) == feasible_137


@pytest.mark.parametrize("raw, problem", [
    ({"kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "p", "resourceSliceCount": 1},
               "devices": [{"name": "d", "taints": [{"key": "example.com/x", "effect": "Sometimes"}]}]}},
     'field spec.devices[0].taints[0].effect: Unsupported value: "Sometimes": supported values: "NoExecute", '
     '"NoSchedule", "None"'),
    ({"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
      "spec": {"devices": {"requests": [{"name": "r", "exactly": {
          "deviceClassName": "gpu", "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}}]}}},
     'field spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for '
     'operator `Exists`'),
    ({"kind": "DeviceTaintRule", "metadata": {"name": "r"},
      "spec": {"deviceSelector": {"driver": "gpu.example.com"}, "taint": {"key": "example.com/x"}}},
     "field spec.taint.effect: Required value"),
    ({"kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "p", "resourceSliceCount": 1},
               "devices": [{"name": "d", "bindingConditions": ["Attached"]}]}},
     "field spec.devices[0].bindingFailureConditions: Invalid value: []: bindingFailureConditions are required "
     "to use bindingConditions"),
    ({"kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "p", "resourceSliceCount": 1},
               "sharedCounters": [{"name": "mem"}]}},
     "field spec.sharedCounters[0].counters: Required value"),
])
def test_new_dra_fields_are_validated_as_the_api_server_does(raw, problem):
    """validateDeviceTaint, validateDeviceToleration, validateDeviceBindingParameters and
    validateCounterSet (pkg/apis/resource/validation, the same in v1.35 to v1.37)."""
    from policylang.diagnostics import InputError
    with pytest.raises(InputError, match=re.escape(problem)):
        structure_object({"apiVersion": "resource.k8s.io/v1", **raw}, "<test>")

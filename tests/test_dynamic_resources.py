"""DynamicResources end to end on examples/dra: eval and explain of pods with claims (from a
template, shared), simulate's allocations written into the claims and read back, devices taken by
earlier pods, and both executors deciding alike. The plugin's upstream cases are
tests/conformance/dynamic_resources.yaml."""

import functools
from pathlib import Path

import attrs
import pytest

from policylang.target import make_target
from policylang import load_cluster, load_objects, load_plans
from policylang.cli import main
from policylang.cluster import resourceclaims
from policylang.cluster.load import load_cluster as load_paths
from policylang.run.schedule import EXECUTORS, Executable, schedule
from policylang.forecast.simulate import simulate

ROOT = Path(__file__).parent.parent
DRA = ROOT / "examples" / "dra"
FIXTURES = Path(__file__).parent / "fixtures"


def _pods(name: str):
    return list(load_objects(DRA / "pods" / f"{name}.yaml"))


def _copies(pod, n: int):
    return [attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, name=f"{pod.metadata.name}-{i}",
                                                    uid=f"{pod.metadata.uid}-{i}")) for i in range(n)]


def test_explain_names_the_blocking_request_and_a_smaller_ask(capsys, golden):
    code = main(["explain", "--cluster", str(DRA / "cluster.yaml"), "--pod", str(DRA / "pods")])
    golden(FIXTURES / "explain" / "dra.txt", capsys.readouterr().out)
    assert code == 1


@pytest.mark.parametrize("executor", EXECUTORS)
def test_each_pod_goes_where_its_devices_are(executor):
    exe = Executable(load_plans()["default-scheduler"], executor)
    state = load_cluster([DRA / "cluster.yaml"])
    placed = {}
    for name in ("train-b", "notebook-1", "train-big"):
        [pod] = _pods(name)
        decision = schedule(exe, state, resourceclaims.instantiate(state, pod))
        placed[name] = decision.selected, decision.message
    # Two H100s: only the H100 nodes; the shared claim is allocated on gpu-node-1; ten GPUs: nowhere.
    assert placed["train-b"][0] == "gpu-node-2"
    assert placed["notebook-1"][0] == "gpu-node-1"
    # v1.37's PostFilter says nothing when it deallocates nothing (v1.35/v1.36: "still not schedulable").
    assert placed["train-big"] == (None, "0/4 nodes are available: 4 cannot allocate all claims. preemption: 0/4 "
                                         "nodes are available: 4 Preemption is not helpful for scheduling.")


@pytest.mark.parametrize("executor", EXECUTORS)
def test_simulate_allocates_devices_that_later_pods_cannot_have(executor):
    exe = Executable(load_plans()["default-scheduler"], executor)
    state = load_cluster([DRA / "cluster.yaml"])
    [train] = _pods("train-b")
    # gpu-node-2 and gpu-node-3 have eight H100s each: eight pods of two fit, the ninth does not.
    placements = simulate({"default-scheduler": exe}, state, _copies(train, 9))
    nodes = [p.node for p in placements]
    assert sorted(n for n in nodes if n) == ["gpu-node-2"] * 4 + ["gpu-node-3"] * 4
    assert nodes[-1] is None and "cannot allocate all claims" in placements[-1].message
    used = {(r.pool, r.device) for c in state.resource_claims.values() if c.status.allocation is not None
            for r in c.status.allocation.devices.results}
    assert {(f"gpu-node-{n}", f"gpu-{d}") for n in (2, 3) for d in range(8)} <= used
    for p in placements[:-1]:
        [status] = p.pod.status.resource_claim_statuses
        claim = state.resource_claims[("ml", status.resource_claim_name)]
        assert claim.status.allocation.node_selector is not None
        assert [r.uid for r in claim.status.reserved_for] == [p.pod.metadata.uid]


def test_write_state_round_trips_allocations_and_reservations(tmp_path, capsys):
    out = tmp_path / "after.yaml"
    code = main(["simulate", "--cluster", str(DRA / "cluster.yaml"), "--pods", str(DRA / "pods"),
                 "--write-state", str(out)])
    assert code == 1    # train-big fits nowhere
    capsys.readouterr()
    after = load_paths([out])
    shared = after.resource_claims[("ml", "shared-gpu")]
    assert [r.name for r in shared.status.reserved_for] == ["notebook-0", "notebook-1"]
    bound = after.pods_by_node["gpu-node-2"]
    [train] = [p for p in bound if p.metadata.name == "train-b"]
    [status] = train.status.resource_claim_statuses
    claim = after.resource_claims[("ml", status.resource_claim_name)]
    assert status.resource_claim_name == resourceclaims.generated_name(train, "gpus")
    assert [r.device for r in claim.status.allocation.devices.results] == ["gpu-0", "gpu-1"]
    # The written state, simulated again, finds those devices taken.
    assert {"gpu.example.com/gpu-node-2/gpu-0", "gpu.example.com/gpu-node-2/gpu-1"} <= \
        {str(d) for d in after.allocated_devices()}


def test_generated_claim_names_are_stable_and_fit_a_name():
    [pod] = _pods("train-b")
    name = resourceclaims.generated_name(pod, "gpus")
    assert name == resourceclaims.generated_name(pod, "gpus") and name.startswith("train-b-gpus-")
    long = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, name="p" * 60))
    # Both names cut in proportion (60*57/92 and 30*57/92 characters), as the controller cuts them.
    cut = resourceclaims.generated_name(long, "c" * 30)
    assert cut.startswith("p" * 37 + "-" + "c" * 18) and len(cut) == 37 + 1 + 18 + 5


def test_a_template_that_does_not_exist_leaves_the_pod_waiting():
    exe = Executable(load_plans()["default-scheduler"])
    state = load_cluster([DRA / "cluster.yaml"])
    [pod] = _pods("train-b")
    pc = attrs.evolve(pod.spec.resource_claims[0], resource_claim_template_name="no-such-template")
    pod = attrs.evolve(pod, spec=attrs.evolve(pod.spec, resource_claims=(pc,)))
    decision = schedule(exe, state, resourceclaims.instantiate(state, pod))
    assert decision.message.startswith('0/4 nodes are available: pod "ml/train-b": ResourceClaim not created yet.')


# ---- the DRA index's kept answers ---------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from policylang.cluster.load import structure_object  # noqa: E402
from policylang.cluster.state import ClusterState  # noqa: E402


def _small_cluster(shared_devices: int) -> list:
    raw = [{"kind": "DeviceClass", "metadata": {"name": "gpu"}}]
    for n in range(3):
        name = f"n{n}"
        raw.append({"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
        raw.append({"kind": "ResourceSlice", "metadata": {"name": f"{name}-gpu"},
                    "spec": {"driver": "gpu.example.com", "nodeName": name,
                             "pool": {"name": name, "resourceSliceCount": 1},
                             "devices": [{"name": f"gpu-{d}"} for d in range(4)]}})
    if shared_devices:
        raw.append({"kind": "ResourceSlice", "metadata": {"name": "fabric"},
                    "spec": {"driver": "fabric.example.com", "allNodes": True,
                             "pool": {"name": "fabric", "resourceSliceCount": 1},
                             "devices": [{"name": f"link-{d}"} for d in range(shared_devices)]}})
    for count in range(1, 5):
        raw.append({"kind": "ResourceClaimTemplate", "metadata": {"name": f"take-{count}", "namespace": "default"},
                    "spec": {"spec": {"devices": {"requests": [
                        {"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": count}}]}}}})
    return [structure_object(o, "<test>", i) for i, o in enumerate(raw)]


def _probe(count: int):
    return structure_object({"kind": "ResourceClaim", "metadata": {"name": f"probe-{count}", "namespace": "default"},
                             "spec": {"devices": {"requests": [
                                 {"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": count}}]}}},
                            "<test>")


def _answers(state) -> dict:
    return {(name, count): state.allocate_claims(node, [_probe(count)])
            for name, node in state.nodes.items() for count in range(1, 5)}


@functools.cache
def _reference_profile() -> Executable:
    """The default profile on the reference executor, compiled once for every example (it keeps
    nothing between pods: what a simulation changes is in the state)."""
    return Executable(load_plans()["default-scheduler"], "reference")


@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.integers(1, 4), max_size=6), shared=st.integers(0, 2))
def test_kept_answers_are_those_of_a_state_built_afresh(counts, shared):
    exe = _reference_profile()
    state = ClusterState.build(_small_cluster(shared))
    _answers(state)         # every node has kept answers before the pods take devices
    pods = [structure_object({"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"},
                              "spec": {"containers": [{"name": "c", "image": "app"}],
                                       "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": f"take-{c}"}]}},
                             "<test>") for i, c in enumerate(counts)]
    for pod in pods:
        simulate({"default-scheduler": exe}, state, [pod])
        assert _answers(state) == _answers(ClusterState.build(state.objects()))


@pytest.mark.parametrize("executor", EXECUTORS)
def test_simulate_deallocates_a_claim_left_on_a_node_that_is_gone_and_allocates_it_again(executor):
    # A claim allocated for a node no longer in the cluster and reserved for no pod: every node
    # says "resourceclaim not available on the node", PostFilter deallocates it, and the pod's
    # next cycle allocates it anew.
    exe = Executable(load_plans()["default-scheduler"], executor)
    state = load_cluster([DRA / "cluster.yaml"])
    stale = structure_object({
        "kind": "ResourceClaim", "metadata": {"name": "stale", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
        "status": {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-node-9",
                                     "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["gpu-node-9"]}]}]}}}}, "<test>")
    state.add_resource_claim(stale)
    [notebook] = _pods("notebook-1")
    pc = attrs.evolve(notebook.spec.resource_claims[0], resource_claim_name="stale")
    pod = attrs.evolve(notebook, spec=attrs.evolve(notebook.spec, resource_claims=(pc,)))
    first = schedule(exe, state, pod)
    assert first.message.startswith("0/4 nodes are available: 4 resourceclaim not available on the node. "
                                    "deallocation of ResourceClaim completed")
    assert first.deallocated == (("ml", "stale"),)
    [placement] = simulate({"default-scheduler": exe}, state, [pod])
    assert placement.node == "gpu-node-2"   # gpu-node-0 and -1 have GPUs in use; the best score
    claim = state.resource_claims[("ml", "stale")]
    assert claim.status.allocation.node_selector.node_selector_terms[0].match_fields[0].values == ("gpu-node-2",)
    assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_pod_with_an_allocated_claim_beside_one_to_allocate_fails_to_score_as_v1_35_does(executor):
    # dynamicresources.go computeScore pairs the pod's i-th claim with the i-th allocation made
    # for the claims still to allocate; with an allocated claim among them there are fewer
    # allocations than claims, and Score fails once two nodes are feasible (v1.35.4's behaviour).
    exe = Executable(load_plans(target=make_target("1.35"))["default-scheduler"], executor)
    state = load_cluster([DRA / "cluster.yaml"])
    state.add_resource_claim(structure_object({
        "kind": "ResourceClaim", "metadata": {"name": "fabric", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "link", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "link", "driver": "gpu.example.com", "pool": "gpu-node-3", "device": "gpu-7"}]}}}}, "<test>"))
    [pod] = _pods("train-b")
    fabric = attrs.evolve(pod.spec.resource_claims[0], name="link", resource_claim_name="fabric",
                          resource_claim_template_name=None)
    pod = attrs.evolve(pod, spec=attrs.evolve(pod.spec, resource_claims=(*pod.spec.resource_claims, fabric)))
    decision = schedule(exe, state, resourceclaims.instantiate(state, pod))
    assert decision.selected is None
    assert decision.message == ('running Score plugins: plugin "DynamicResources" failed with: number of '
                                'allocations 1 is smaller than number of claims')


def test_a_claim_reserved_for_256_pods_takes_no_more_at_binding():
    # PreFilter lets the pod share the claim (CanBeReserved is always true in v1.35); the API
    # server refuses the 257th reservation (ResourceClaimReservedForMaxSize), so PreBind fails.
    exe = Executable(load_plans()["default-scheduler"])
    state = load_cluster([DRA / "cluster.yaml"])
    shared = state.resource_claims[("ml", "shared-gpu")]
    users = tuple(attrs.evolve(shared.status.reserved_for[0], name=f"user-{i}", uid=f"uid-user-{i}")
                  for i in range(256))
    state.resource_claims[("ml", "shared-gpu")] = attrs.evolve(shared, status=attrs.evolve(shared.status,
                                                                                          reserved_for=users))
    [notebook] = _pods("notebook-1")
    assert schedule(exe, state, notebook).selected == "gpu-node-1"
    [placement] = simulate({"default-scheduler": exe}, state, [notebook])
    assert placement.node is None
    assert placement.message == ('running PreBind plugin "DynamicResources": add reservation to claim ml/shared-gpu: '
                                 'ResourceClaim.resource.k8s.io "shared-gpu" is invalid: status.reservedFor: '
                                 'Too many: 257: must have at most 256 items')
    assert len(state.resource_claims[("ml", "shared-gpu")].status.reserved_for) == 256
    assert not any(p.metadata.name == "notebook-1" for p in state.pods_by_node["gpu-node-1"])


def test_a_pod_gone_frees_its_devices_as_the_resourceclaim_controller_does():
    state = load_cluster([DRA / "cluster.yaml"])
    eight = structure_object({"kind": "ResourceClaim", "metadata": {"name": "probe", "namespace": "ml"},
                              "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                                  "deviceClassName": "gpu.example.com", "count": 8}}]}}}, "<test>")
    assert state.allocate_claims(state.nodes["gpu-node-0"], [eight]) is None      # train-a holds six
    train_a = next(p for p in state.pods_by_node["gpu-node-0"] if p.metadata.name == "train-a")
    state.evict([train_a])
    # Its claim was made for it (the pod is its controller): deleted with it, its devices free.
    assert ("ml", "train-a-gpus-x7k2p") not in state.resource_claims
    assert state.allocate_claims(state.nodes["gpu-node-0"], [eight]) is not None
    # A shared claim loses the pod's reservation; with none left it is deallocated.
    notebook = next(p for p in state.pods_by_node["gpu-node-1"] if p.metadata.name == "notebook-0")
    state.evict([notebook])
    shared = state.resource_claims[("ml", "shared-gpu")]
    assert shared.status.reserved_for == () and shared.status.allocation is None
    assert not any(str(d).startswith("gpu.example.com/gpu-node-1/") for d in state.allocated_devices())


def test_explain_shows_a_selector_that_fails_at_run_time_as_the_plugin_s_error():
    from policylang.explain import explain
    from policylang.plugins.edits import with_objects

    state = load_cluster([DRA / "cluster.yaml"])
    cls = state.device_classes["gpu.example.com"]
    selector = attrs.evolve(cls.spec.selectors[0], cel=attrs.evolve(
        cls.spec.selectors[0].cel, expression='device.attributes["gpu.example.com"].nosuch'))
    broken = attrs.evolve(cls, spec=attrs.evolve(cls.spec, selectors=(selector,)))
    state = with_objects(state, [broken])
    [pod] = _pods("train-b")
    # v1.35's words (from v1.37 the error also names the device and suggests optional chaining).
    e = explain(Executable(load_plans(target=make_target("1.35"))["default-scheduler"]), state,
                resourceclaims.instantiate(state, pod))
    text = "class gpu.example.com: selector #0: CEL runtime error: no such key: nosuch"
    assert e.decision.message == f'running "DynamicResources" filter plugin: {text}'
    assert {(s.code, s.reasons) for s in (v["DynamicResources"] for v in e.filters.values())} == {("Error", (text,))}

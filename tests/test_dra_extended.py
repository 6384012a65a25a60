"""Extended resources backed by DRA (policylang/dra/extended.py and what the stdlib does with it):
the special claim's requests and mappings (upstream's extendeddynamicresources_test.go), which
class serves a resource (extendedresourcecache_test.go), the API server's check of a class's
extendedResourceName per version, the gate per version, simulate creating, allocating and deleting
the claim, explain on examples/dra-extended, and the README's example as the commands print it.
DynamicResources' upstream cases are tests/conformance/dynamic_resources_extended.yaml; the
differential properties against the v1.36 and v1.37 oracles are tests/test_oracle_dra_extended.py."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from policylang import load_cluster, load_objects, load_plans
from policylang.api import model
from policylang.api.quantity import Quantity
from policylang.cli import main
from policylang.cluster.load import structure_object
from policylang.cluster.state import ClusterState
from policylang.cluster.validation.core import admitted_as
from policylang.diagnostics import InputError
from policylang.dra.extended import (RequestMapping, claim_of_pod, generated_name, requests_and_mappings,
                                     resource_classes)
from policylang.forecast.simulate import simulate
from policylang.run.schedule import EXECUTORS, Executable, schedule
from policylang.target import make_target

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "dra-extended"
GPU = "example.com/gpu"          # extendedResourceName of upstream's tests
IMPLICIT = "deviceclass.resource.kubernetes.io/classInit"


def _pod(containers=(), init=(), sidecars=()):
    """st.MakePod(): Res/Req add container con<N>, InitReq init-con<N>, SidecarReq sidecar-con<N>
    (an init container with restartPolicy Always), in the order given by ``init`` (kind, requests)."""
    spec = {"containers": [{"name": f"con{i}", "resources": {"requests": r}} for i, r in enumerate(containers)],
            "initContainers": [{"name": f"{kind}-con{i}", "resources": {"requests": r},
                                **({"restartPolicy": "Always"} if kind == "sidecar" else {})}
                               for i, (kind, r) in enumerate(init)]}
    return structure_object({"kind": "Pod", "metadata": {"name": "my-pod", "namespace": "default", "uid": "1234"},
                             "spec": spec}, "<test>", 0, validate=False)


def _classes(mapping: dict) -> dict:
    """mockDeviceClassResolver's mapping: resource name -> a class of that name."""
    return {r: model.DeviceClass(metadata=model.ObjectMeta(name=c)) for r, c in mapping.items()}


POD1 = _pod([{GPU: "1", GPU + "1": "2"}])
POD2 = _pod([{GPU: "1"}, {GPU + "1": "2"}])
POD_INIT = _pod([{GPU: "1"}], [("init", {GPU + "init": "2"})])
POD_INIT2 = _pod([{GPU: "1"}], [("init", {GPU + "init": "1"}), ("init", {GPU + "init": "2"})])
POD_INIT3 = _pod([{GPU: "1"}], [("init", {GPU + "init": "1"}), ("sidecar", {GPU + "init": "1"}),
                                ("init", {GPU + "init": "2"})])
POD_INIT_IMPLICIT = _pod([{GPU: "1"}], [("init", {GPU + "init": "1"}), ("init", {IMPLICIT: "2"})])
POD1_INIT_IMPLICIT = _pod([], [("init", {GPU + "init": "1", IMPLICIT: "2"})])
DEV_MAP = _classes({GPU: "class"})
DEV_MAP2 = _classes({GPU: "class", GPU + "1": "class1"})
DEV_MAP_INIT = _classes({GPU: "class", GPU + "init": "classInit", IMPLICIT: "classInit"})
RES = [GPU]
RES2 = [GPU, GPU + "1"]
RES_INIT = [GPU, GPU + "init"]
RES_INIT_IMPLICIT = [GPU, GPU + "init", IMPLICIT]


# Test_createRequestsAndMappings_requests: (name, class, count) of each request, in order.
@pytest.mark.parametrize("pod, resources, classes, want", [
    pytest.param(POD1, [], {}, [], id="nil"),
    pytest.param(POD1, RES, DEV_MAP, [("container-0-request-0", "class", 1)], id="one resource match"),
    pytest.param(POD1, RES2, DEV_MAP, [("container-0-request-0", "class", 1)],
                 id="one resource match, one resource not match"),
    pytest.param(POD1, RES2, DEV_MAP2, [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
                 id="two resources match"),
    pytest.param(POD2, RES2, DEV_MAP2, [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
                 id="two containers match"),
    pytest.param(_pod([{GPU: "1"}], [("init", {GPU + "init": "2"})]), RES_INIT, DEV_MAP_INIT,
                 [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
                 id="one init container, one regular container"),
    pytest.param(POD_INIT2, RES_INIT, DEV_MAP_INIT,
                 [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
                 id="two init containers, one regular container"),
    pytest.param(POD_INIT3, RES_INIT, DEV_MAP_INIT,
                 [("container-1-request-0", "classInit", 1), ("container-2-request-0", "classInit", 2),
                  ("container-3-request-0", "class", 1)],
                 id="three init containers, one sidecar, one regular container"),
])
def test_requests_as_upstream_makes_them(pod, resources, classes, want):
    requests, _ = requests_and_mappings(pod, resources, classes)
    assert [(r.name, r.exactly.device_class_name, r.exactly.count) for r in requests] == want
    assert all(r.exactly.allocation_mode == "ExactCount" for r in requests)


# Test_createRequestsAndMappings_mappings: (request, container, resource), sorted as upstream's test sorts.
@pytest.mark.parametrize("pod, resources, classes, want", [
    pytest.param(POD1, RES2, DEV_MAP2, [("container-0-request-0", "con0", GPU), ("container-0-request-1", "con0", GPU + "1")],
                 id="one container, two requests"),
    pytest.param(POD1_INIT_IMPLICIT, RES_INIT_IMPLICIT, DEV_MAP_INIT,
                 [("container-0-request-0", "init-con0", IMPLICIT), ("container-0-request-1", "init-con0", GPU + "init")],
                 id="one container, one explicit and one implicit request"),
    pytest.param(POD2, RES2, DEV_MAP2, [("container-0-request-0", "con0", GPU), ("container-1-request-0", "con1", GPU + "1")],
                 id="two containers, two requests"),
    pytest.param(POD_INIT, RES_INIT, DEV_MAP_INIT,
                 [("container-0-request-0", "init-con0", GPU + "init"), ("container-1-request-0", "con0", GPU)],
                 id="one init container, one regular container, one request"),
    pytest.param(POD_INIT2, RES_INIT, DEV_MAP_INIT,
                 [("container-1-request-0", "init-con0", GPU + "init"), ("container-1-request-0", "init-con1", GPU + "init"),
                  ("container-2-request-0", "con0", GPU)],
                 id="three containers (two are init container), two requests"),
    pytest.param(POD_INIT_IMPLICIT, RES_INIT_IMPLICIT, DEV_MAP_INIT,
                 [("container-0-request-0", "init-con0", GPU + "init"), ("container-1-request-0", "init-con1", IMPLICIT),
                  ("container-2-request-0", "con0", GPU)],
                 id="three containers (two are init container), both explicit and implicit resources"),
    pytest.param(POD_INIT3, RES_INIT, DEV_MAP_INIT,
                 [("container-1-request-0", "init-con0", GPU + "init"), ("container-1-request-0", "sidecar-con1", GPU + "init"),
                  ("container-2-request-0", "init-con2", GPU + "init"), ("container-3-request-0", "con0", GPU)],
                 id="four containers (two are init container, one sidecar), three requests"),
])
def test_mappings_as_upstream_makes_them(pod, resources, classes, want):
    _, mappings = requests_and_mappings(pod, resources, classes)
    got = sorted((m.request_name, m.container_name, m.resource_name) for m in mappings)
    assert got == want
    assert all(isinstance(m, RequestMapping) for m in mappings)


def _class(name: str, created: str = "", extended: "str | None" = None) -> model.DeviceClass:
    return model.DeviceClass(metadata=model.ObjectMeta(name=name, creation_timestamp=created),
                             spec=model.DeviceClassSpec(extended_resource_name=extended))


NOW, DAY_BEFORE, HOUR_AFTER = "2026-01-02T12:00:00Z", "2026-01-01T12:00:00Z", "2026-01-02T13:00:00Z"


def test_the_class_of_a_resource_as_the_cache_holds_it():
    """TestExtendedResourceCache's classes: gpu-class (now), fpga-class (no name), gpu-class-3 (a
    day older), gpu-class-4 and gpu-class-0 (an hour newer), all but fpga-class naming
    example.com/gpu: the newest serves it, gpu-class-0 of the two as new (the smaller name)."""
    classes = {c.metadata.name: c for c in (
        _class("gpu-class", NOW, GPU), _class("fpga-class"), _class("gpu-class-3", DAY_BEFORE, GPU),
        _class("gpu-class-4", HOUR_AFTER, GPU), _class("gpu-class-0", HOUR_AFTER, GPU))}
    mapping = resource_classes(classes)
    assert mapping[GPU].metadata.name == "gpu-class-0"
    assert mapping["deviceclass.resource.kubernetes.io/fpga-class"].metadata.name == "fpga-class"
    assert mapping["deviceclass.resource.kubernetes.io/gpu-class"].metadata.name == "gpu-class"
    # Listed by name, gpu-class-3 and gpu-class-4 come after gpu-class-0, which is newer or as new
    # with a smaller name: the cache leaves them out, their implicit names too
    # (updateResourceName2class returns before it maps either).
    assert "deviceclass.resource.kubernetes.io/gpu-class-3" not in mapping
    assert "deviceclass.resource.kubernetes.io/gpu-class-4" not in mapping
    # Without a class, nothing.
    assert resource_classes({}).get(GPU) is None


def test_an_older_class_listed_first_keeps_its_implicit_name():
    classes = {"a-old": _class("a-old", DAY_BEFORE, GPU), "b-new": _class("b-new", NOW, GPU)}
    mapping = resource_classes(classes)
    assert mapping[GPU].metadata.name == "b-new"
    assert mapping["deviceclass.resource.kubernetes.io/a-old"].metadata.name == "a-old"


def _device_class(extended: str):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"extendedResourceName": extended}}


@pytest.mark.parametrize("version, gates, checked", [
    ("1.36", None, True), ("1.37", None, True),
    ("1.35", None, False),                              # the gate off: the API server drops the field
    ("1.35", "DRAExtendedResource=true", True),
])
@pytest.mark.parametrize("name, valid", [
    ("example.com/gpu", True),
    ("kubernetes.io/gpu", False),                               # native
    ("deviceclass.resource.kubernetes.io/gpu", False),          # an implicit name is native too
    ("requests.example.com/gpu", False),
    ("gpu", False),                                             # not qualified by a domain
])
def test_the_api_server_checks_the_extended_resource_name_where_it_keeps_it(version, gates, checked, name, valid):
    with admitted_as(make_target(version, gates)):
        if valid or not checked:
            structure_object(_device_class(name), "<test>", 0)
        else:
            with pytest.raises(InputError, match=rf'spec\.extendedResourceName.*Invalid value: "{re.escape(name)}": '
                                                 r"must be a valid extended resource name"):
                structure_object(_device_class(name), "<test>", 0)


def test_the_gate_per_version():
    assert make_target("1.36").gate("DRAExtendedResource") and make_target("1.37").gate("DRAExtendedResource")
    assert not make_target("1.35").gate("DRAExtendedResource")
    assert make_target("1.35", "DRAExtendedResource=true").gate("DRAExtendedResource")
    with pytest.raises(InputError, match="DRAExtendedResource=true is not modelled: policylang decides as "
                                         "Kubernetes 1.34 with DRAExtendedResource=false"):
        make_target("1.34", "DRAExtendedResource=true")
    with pytest.raises(InputError, match="cannot set feature gate DRAExtendedResource to false, feature is locked"):
        make_target("1.37", "DRAExtendedResource=false")


def _exe(version: str, executor: str = "reference") -> Executable:
    return Executable(load_plans(target=make_target(version))["default-scheduler"], executor)


def _example_pods():
    return {p.metadata.name: p for f in sorted((EXAMPLE / "pods").glob("*.yaml")) for p in load_objects(f)}


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_the_pod_goes_where_two_devices_are_free(version, executor):
    state = load_cluster([EXAMPLE / "cluster.yaml"])
    pods = _example_pods()
    decision = schedule(_exe(version, executor), state, pods["train"])
    assert decision.selected == "gpu-node-b"
    big = schedule(_exe(version, executor), state, pods["train-big"], preemption=False)
    assert big.selected is None
    assert big.message == "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 cannot allocate all claims." + (
        " still not schedulable" if version == "1.36" else "")


def test_without_the_gate_the_resource_is_a_device_plugins():
    state = load_cluster([EXAMPLE / "cluster.yaml"])
    decision = schedule(_exe("1.35"), state, _example_pods()["train"], preemption=False)
    assert decision.message.startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    on = Executable(load_plans(target=make_target("1.35", "DRAExtendedResource=true"))["default-scheduler"])
    assert schedule(on, state, _example_pods()["train"]).selected == "gpu-node-b"


@pytest.mark.parametrize("executor", EXECUTORS)
def test_simulate_creates_the_claim_and_later_pods_find_its_devices_taken(executor):
    state = load_cluster([EXAMPLE / "cluster.yaml"])
    pods = _example_pods()
    placements = simulate({"default-scheduler": _exe("1.36", executor)}, state,
                          [pods["train"], pods["train-2"], pods["train-big"]])
    assert [p.node for p in placements] == ["gpu-node-b", None, None]
    assert "cannot allocate all claims" in placements[1].message
    name = generated_name(pods["train"])
    assert re.fullmatch(r"train-extended-resources-[bcdfghjklmnpqrstvwxz2456789]{5}", name)
    claim = state.resource_claims[("ml", name)]
    assert claim.metadata.annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert [(r.kind, r.name, r.uid, r.controller) for r in claim.metadata.owner_references] == \
        [("Pod", "train", "uid-train", True)]
    assert [(r.name, r.exactly.device_class_name, r.exactly.count) for r in claim.spec.devices.requests] == \
        [("container-0-request-2", "gpu.nvidia.com", 2)]
    assert sorted((r.pool, r.device) for r in claim.status.allocation.devices.results) == \
        [("gpu-node-b", "gpu-0"), ("gpu-node-b", "gpu-1")]
    assert [r.uid for r in claim.status.reserved_for] == ["uid-train"]
    assert claim_of_pod(pods["train"], list(state.resource_claims.values())) == claim
    # The pod gone, its claim goes with it (its owner), and its devices are free again.
    [bound] = [p for p in state.pods_by_node["gpu-node-b"] if p.metadata.name == "train"]
    state.evict([bound])
    assert ("ml", name) not in state.resource_claims
    assert schedule(_exe("1.36", executor), state, pods["train-2"]).selected == "gpu-node-b"


def test_a_claim_left_by_an_earlier_cycle_is_deleted_and_the_pod_scheduled_later():
    """The claim an earlier cycle created (its binding failed): every node says "cannot schedule
    extended resource claim" and PostFilter deletes it. No event of that requeues the pod (the
    claim is not one of the pod's own), so simulate leaves it pending; a later batch allocates
    anew."""
    state = load_cluster([EXAMPLE / "cluster.yaml"])
    pods = _example_pods()
    stale = model.ResourceClaim(
        metadata=model.ObjectMeta(name="train-extended-resources-old00", namespace="ml",
                                  annotations={"resource.kubernetes.io/extended-resource-claim": "true"},
                                  owner_references=(model.OwnerReference(kind="Pod", name="train", api_version="v1",
                                                                         uid="uid-train", controller=True),)),
        spec=model.ResourceClaimSpec(devices=model.DeviceClaim(requests=(model.DeviceRequest(
            name="container-0-request-2", exactly=model.ExactDeviceRequest(device_class_name="gpu.nvidia.com",
                                                                           count=2)),))))
    state.add_resource_claim(stale)
    first = schedule(_exe("1.36"), state, pods["train"], preemption=False)
    assert first.message == ("0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 cannot schedule extended "
                             "resource claim. deletion of ResourceClaim completed")
    [placement] = simulate({"default-scheduler": _exe("1.36")}, state, [pods["train"]], preemption=False)
    assert (placement.node, placement.message) == (None, first.message)
    assert ("ml", "train-extended-resources-old00") not in state.resource_claims
    [later] = simulate({"default-scheduler": _exe("1.36")}, state, [pods["train"]], preemption=False)
    assert later.node == "gpu-node-b"


def test_explain_says_where_how_many_devices_are_free_and_what_would_fit(capsys):
    code = main(["explain", "--kubernetes-version", "1.36", "--cluster", str(EXAMPLE / "cluster.yaml"),
                 "--pod", str(EXAMPLE / "pods" / "train-big.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    assert ("3 nodes: DynamicResources: cannot allocate all claims — container main's nvidia.com/gpu (DRA devices "
            "of class gpu.nvidia.com) needs 3 device(s); free devices it accepts: 2 on gpu-node-b, 1 on gpu-node-a, "
            "1 on gpu-node-c") in out
    suggestions = out.split("What would make it fit")[1].splitlines()[1:]
    assert suggestions[0] == ("  - container main: ask for nvidia.com/gpu: 2 instead of 3 (DRA devices of class "
                              "gpu.nvidia.com) → schedules on gpu-node-b")


@pytest.mark.parametrize("page", ["README.md", "docs/dra.md"])
def test_the_pages_show_what_the_commands_print(page, capsys):
    """Every line the page shows after a `policylang … dra-extended …` command is a line the command
    prints (an ellipsis stands for lines left out)."""
    lines = (ROOT / page).read_text().splitlines()
    checked = 0
    for i, line in enumerate(lines):
        if not line.startswith("$ policylang ") or "dra-extended" not in line:
            continue
        shown = []
        for after in lines[i + 1:]:
            if after.startswith("$ ") or after.startswith("```"):
                break
            if after.strip() != "…":
                shown.append(after)
        main(line.removeprefix("$ policylang ").split())
        printed = capsys.readouterr().out.splitlines()
        assert [s for s in shown if s not in printed] == []
        checked += 1
    assert checked


def test_a_pod_with_claims_of_its_own_on_a_device_plugin_node_fails_prebind():
    """filterExtendedResources gives the special claim no request where the node's device plugin
    serves the resource, but the pod's own claims keep the claim in the allocation: PreBind creates
    it and then has no request to map into the pod's status (patchPodExtendedResourceClaimStatus);
    the binding fails (the oracle's simulate, tests/test_oracle_dra_extended.py, agrees)."""
    state = load_cluster([EXAMPLE / "cluster.yaml"])
    legacy = state.nodes["legacy-node"]
    own = model.ResourceClaim(metadata=model.ObjectMeta(name="own", namespace="ml"),
                              spec=model.ResourceClaimSpec(devices=model.DeviceClaim(requests=())))
    state = ClusterState.build([*[o for o in state.objects() if not isinstance(o, model.Node)], legacy, own])
    pod = _example_pods()["train"]
    small = attrs.evolve(pod.spec.containers[0], resources=attrs.evolve(
        pod.spec.containers[0].resources, requests={**pod.spec.containers[0].resources.requests,
                                                    "nvidia.com/gpu": Quantity(1)}))
    pod = attrs.evolve(pod, spec=attrs.evolve(pod.spec, containers=(small,), resource_claims=(
        model.PodResourceClaim(name="own", resource_claim_name="own"),)))
    [placement] = simulate({"default-scheduler": _exe("1.36")}, state, [pod], preemption=False)
    assert placement.node is None
    assert placement.message == ('running PreBind plugin "DynamicResources": nil or empty request mappings, no update '
                                 "of pod ml/train ExtendedResourceClaimStatus")
    # PreBind had bound the pod's own claim; Unreserve takes the pod out of it, the allocation
    # stays; the special claim is deleted.
    after = state.resource_claims[("ml", "own")]
    assert after.status.allocation is not None and after.status.reserved_for == ()
    assert ("ml", generated_name(pod)) not in state.resource_claims


def test_write_state_keeps_the_claim_and_its_devices_taken(tmp_path, capsys):
    out = tmp_path / "after.yaml"
    main(["simulate", "--kubernetes-version", "1.36", "--cluster", str(EXAMPLE / "cluster.yaml"),
          "--pods", str(EXAMPLE / "pods" / "train.yaml"), "--write-state", str(out)])
    capsys.readouterr()
    state = load_cluster([out])
    assert ("ml", generated_name(_example_pods()["train"])) in state.resource_claims
    code = main(["eval", "--kubernetes-version", "1.36", "--cluster", str(out),
                 "--pod", str(EXAMPLE / "pods" / "train-2.yaml")])
    assert code == 1
    assert "3 cannot allocate all claims" in capsys.readouterr().out

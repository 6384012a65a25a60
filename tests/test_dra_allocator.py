"""The structured-parameters allocator (policylang/dra/structured.py) against upstream's
allocator test table (tests/conformance/dra/allocator.yaml, each case named after the
upstream case it transcribes), and its properties."""

from __future__ import annotations

import itertools
from pathlib import Path

import attrs
import pytest
import yaml
from hypothesis import given, strategies as st

from dra_cel_double import install

install()   # before policylang.dra.structured imports policylang.dra.cel

from policylang import cost  # noqa: E402
from policylang.api import model  # noqa: E402
from policylang.cluster.load import structure_object  # noqa: E402
from policylang.dra.structured import (AllocationError, DeviceID, FailedAllocationOnNode, Features,  # noqa: E402
                                       Shortfall, allocate, node_matches, shortfalls, slice_index)

FACTS = Path(__file__).parent / "conformance/dra/allocator.yaml"
CASES = yaml.safe_load(FACTS.read_text())


def _whole_messages() -> dict[str, str]:
    """Upstream checks errors by substring; the facts give v0.35.4's whole message in a comment
    above each. Those of one line, other than the test table's fake class lister's NotFound
    (the scheduler's lister words it as the API does), are checked whole."""
    found, name, lines = {}, None, FACTS.read_text().splitlines()
    marker = "# the whole message, as v0.35.4 words it: "
    for i, line in enumerate(lines):
        if line.startswith("- name: "):
            name = line[len("- name: "):].strip()
        elif marker in line and not lines[i + 1].lstrip().startswith("#"):
            message = line.split(marker, 1)[1]
            if '"not found" not found' not in message:
                found[name] = message
    return found


WHOLE = _whole_messages()

# The upstream case's Features (internal/types.go), by the names of its fields.
FEATURES = {"AdminAccess": "admin_access", "PrioritizedList": "prioritized_list",
            "DeviceTaints": "device_taints", "PartitionableDevices": "partitionable_devices",
            "ConsumableCapacity": "consumable_capacity", "DeviceBindingAndStatus": "device_binding_and_status"}


def _typed(raw: dict):
    obj = structure_object(raw, "allocator.yaml", validate=False)
    if isinstance(obj, model.ResourceClaim) and not raw.get("metadata", {}).get("namespace"):
        # Upstream's test claims have no namespace, and its errors name them by name alone.
        obj = attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, namespace=""))
    return obj


def _allocation(raw: dict) -> model.AllocationResult:
    return structure_object({"kind": "ResourceClaim", "status": {"allocation": raw}},
                            "allocator.yaml", validate=False).status.allocation


def _comparable(result: model.AllocationResult):
    """An allocation as upstream's matchers compare it: the results and the node selector's
    terms, requirements and values in any order."""
    def requirements(reqs):
        return sorted((r.key, r.operator, tuple(sorted(r.values))) for r in reqs)
    selector = result.node_selector
    terms = None if selector is None else sorted(
        (requirements(t.match_expressions), requirements(t.match_fields)) for t in selector.node_selector_terms)
    results = sorted(result.devices.results, key=lambda r: (r.request, r.driver, r.pool, r.device))
    return results, result.devices.config, terms


def _device_id(text: str) -> DeviceID:
    """driver/pool/device, where a pool's name may itself hold slashes."""
    driver, _, rest = text.partition("/")
    pool, _, device = rest.rpartition("/")
    return DeviceID(driver, pool, device)


def _run(case: dict, version: str = "1.35"):
    objects = [_typed(raw) for raw in case.get("objects") or []]
    classes = {o.metadata.name: o for o in objects if isinstance(o, model.DeviceClass)}
    slices = [o for o in objects if isinstance(o, model.ResourceSlice)]
    node = None if case["node"] is None else \
        structure_object({"kind": "Node", "metadata": case["node"]}, "allocator.yaml", validate=False)
    claims = [_typed(raw) for raw in case.get("claims") or []]
    allocated = frozenset(_device_id(d) for d in case.get("allocated") or [])
    features = Features(**{FEATURES[f]: True for f in case.get("features") or []}, kubernetes=version)
    return allocate(node, claims, classes=classes, slices=slices, allocated=allocated, features=features)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_case(case):
    expect = case["expect"]
    if "error" in expect or "error_contains" in expect:
        with pytest.raises(AllocationError) as err:
            _run(case)
        if "error" in expect:
            assert str(err.value) == expect["error"]
        else:       # upstream's gomega.ContainSubstring
            assert expect["error_contains"] in str(err.value)
        if case["name"] in WHOLE:
            assert str(err.value) == WHOLE[case["name"]]
        return
    got = _run(case)
    if expect.get("unsatisfiable"):
        assert got is None
        return
    want = [_allocation(a) for a in expect["allocations"]]
    if not want:
        # Upstream's ConsistOf() of nothing: no claims (an empty result) or no solution (nil).
        assert not got
        return
    assert got is not None, "unsatisfiable, but upstream allocates"
    assert [_comparable(r) for r in got] == [_comparable(r) for r in want]
    # Beyond upstream's matchers: the order too, which simulate writes into the claims; the
    # facts give v1.35's own order (tests/conformance/dra/README.md).
    assert list(got) == want


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_case_with_the_v1_36_allocator(case):
    """v1.35's table under v1.36's allocator (v0.36.3 incubating) with each case's features:
    upstream runs its shared table against every implementation whose features cover the
    case's, and its matchers compare as sets; the outcomes are the same, only pools now come in
    order of driver and name."""
    expect = case["expect"]
    if "error" in expect or "error_contains" in expect:
        with pytest.raises(AllocationError) as err:
            _run(case, "1.36")
        assert (expect.get("error") or expect["error_contains"]) in str(err.value)
        return
    got = _run(case, "1.36")
    if expect.get("unsatisfiable") or not expect["allocations"]:
        assert not got
        return
    assert got is not None
    assert [_comparable(r) for r in got] == [_comparable(_allocation(a)) for a in expect["allocations"]]


# ---- properties and the rest of the API ----------------------------------------------------

VERSIONS = ("1.35", "1.36", "1.37")


def _features(version: str) -> Features:
    from policylang.dra.structured import FEATURES as BY_VERSION
    return BY_VERSION[version]


DRIVERS = ("driver-a", "driver-b")


def _node(name="node-1", **labels):
    return structure_object({"kind": "Node", "metadata": {"name": name, "labels": labels}}, "t", validate=False)


def _class(name, driver):
    return _typed({"kind": "DeviceClass", "metadata": {"name": name},
                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})


CLASSES = {"class-a": _class("class-a", "driver-a"), "class-b": _class("class-b", "driver-b")}


def _slice(name, driver, devices, node="node-1", pool=None, generation=1, count=1, **where):
    spec = {"driver": driver, "pool": {"name": pool or name, "generation": generation, "resourceSliceCount": count},
            "devices": [d if isinstance(d, dict) else {"name": d} for d in devices]}
    spec.update(where or {"nodeName": node})
    return _typed({"kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec})


def _claim(name, *requests, constraints=()):
    return _typed({"kind": "ResourceClaim", "metadata": {"name": name},
                   "spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}}})


def _request(name, cls="class-a", count=1, **exactly):
    return {"name": name, "exactly": {"deviceClassName": cls, "count": count, **exactly}}


@st.composite
def problems(draw):
    """Up to two slices of up to four devices for node-1 (some of them in use) and up to two
    claims of up to two ExactCount requests of either class."""
    slices = [_slice(f"slice-{i}", draw(st.sampled_from(DRIVERS)),
                     [f"device-{j}" for j in range(draw(st.integers(0, 4)))])
              for i in range(draw(st.integers(0, 2)))]
    devices = [DeviceID(s.spec.driver, s.spec.pool.name, d.name) for s in slices for d in s.spec.devices]
    allocated = frozenset(d for d in devices if draw(st.integers(0, 3)) == 0)
    claims = [_claim(f"claim-{c}", *[_request(f"req-{r}", draw(st.sampled_from(sorted(CLASSES))),
                                              draw(st.integers(1, 3)))
                                     for r in range(draw(st.integers(1, 2)))])
              for c in range(draw(st.integers(1, 2)))]
    return slices, devices, allocated, claims


def _brute_force(devices, allocated, claims) -> bool:
    """Whether some assignment of distinct free devices of the right drivers meets every request."""
    wanted = [(CLASSES[r.exactly.device_class_name].spec.selectors[0].cel.expression.split('"')[1], r.exactly.count)
              for c in claims for r in c.spec.devices.requests]
    free = [d for d in devices if d not in allocated]
    for driver in DRIVERS:
        if sum(n for d, n in wanted if d == driver) > sum(d.driver == driver for d in free):
            return False
    return True


@pytest.mark.parametrize("version", VERSIONS)
@given(problems())
def test_allocations_are_sound_and_complete(version, problem):
    """An allocation uses free devices of each request's class, each device once, as many as
    asked; and there is none exactly when no assignment exists (requests independent of each
    other here, so counting by driver decides it)."""
    slices, devices, allocated, claims = problem
    got = allocate(_node(), claims, classes=CLASSES, slices=slices, allocated=allocated, features=_features(version))
    assert (got is not None) == _brute_force(devices, allocated, claims)
    if got is None:
        return
    used = [DeviceID(r.driver, r.pool, r.device) for a in got for r in a.devices.results]
    assert len(used) == len(set(used)) and not set(used) & allocated
    for claim, result in zip(claims, got):
        for request in claim.spec.devices.requests:
            taken = [r for r in result.devices.results if r.request == request.name]
            assert len(taken) == request.exactly.count
            assert {r.driver for r in taken} <= {CLASSES[request.exactly.device_class_name]
                                                 .spec.selectors[0].cel.expression.split('"')[1]}


@pytest.mark.parametrize("version", VERSIONS)
@given(problems())
def test_the_same_question_gets_the_same_answer(version, problem):
    """Deterministic, and the same with a fresh index as with the one kept for the slices."""
    slices, _, allocated, claims = problem
    features = _features(version)
    kept = allocate(_node(), claims, classes=CLASSES, slices=slices, allocated=allocated, features=features)
    again = allocate(_node(), claims, classes=CLASSES, slices=slice_index(list(slices)), allocated=allocated,
                     features=features)
    assert kept == again


def test_a_hostile_claim_runs_out_of_budget_instead_of_hanging():
    """17 devices with one numa value, of 32 devices in two numa nodes of 16: no solution, and
    the search (upstream's too) would try the 16! orders of each node's devices before saying
    so; the cost budget stops it."""
    devices = [{"name": f"device-{i}", "attributes": {"numa": {"int": i % 2}}} for i in range(32)]
    slices = [_slice("slice-1", "driver-a", devices)]
    claim = _claim("claim-0", _request("req-0", count=17), constraints=[{"matchAttribute": "driver-a/numa"}])
    with cost.max_cost(20_000), pytest.raises(cost.CostExceeded):
        allocate(_node(), [claim], classes=CLASSES, slices=slices)


def test_an_invalid_pool_fails_the_node_only():
    slices = [_slice("slice-1", "driver-a", ["device-1"], pool="pool-1", count=2),
              _slice("slice-2", "driver-a", ["device-1"], pool="pool-1", count=2)]
    with pytest.raises(FailedAllocationOnNode, match="^invalid resource pools were encountered$"):
        allocate(_node(), [_claim("claim-0", _request("req-0"))], classes=CLASSES, slices=slices)


def test_a_class_selector_that_does_not_compile_names_the_class_and_selector():
    broken = _typed({"kind": "DeviceClass", "metadata": {"name": "class-x"},
                     "spec": {"selectors": [{"cel": {"expression": "true"}}, {"cel": {"expression": "device.nosuch("}}]}})
    with pytest.raises(AllocationError, match="^class class-x: selector #1: CEL compile error: "):
        allocate(_node(), [_claim("claim-0", _request("req-0", cls="class-x"))], classes={"class-x": broken},
                 slices=[_slice("slice-1", "driver-a", ["device-1"])])


def test_a_claim_selector_that_fails_at_runtime_names_the_claim():
    selector = {"cel": {"expression": 'device.attributes["driver-a"].model == "x"'}}
    claim = _typed({"kind": "ResourceClaim", "metadata": {"name": "claim-0", "namespace": "team"},
                    "spec": {"devices": {"requests": [_request("req-0", selectors=[selector])]}}})
    with pytest.raises(AllocationError, match="^claim team/claim-0: selector #0: CEL runtime error: "):
        allocate(_node(), [claim], classes=CLASSES, slices=[_slice("slice-1", "driver-a", ["device-1"])])


@pytest.mark.parametrize("where, node, expected", [
    ({"nodeName": "node-1"}, _node("node-1"), True),
    ({"nodeName": "node-1"}, _node("node-2"), False),
    ({"allNodes": True}, _node("node-2"), True),
    ({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "region", "operator": "In", "values": ["r1"]}]}]}}, _node("node-2", region="r1"), True),
    ({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "region", "operator": "In", "values": ["r1"]}]}]}}, _node("node-2", region="r2"), False),
    ({}, _node("node-1"), False),
])
def test_node_matches(where, node, expected):
    spec = _slice("s", "driver-a", [], **(where or {"allNodes": False})).spec
    assert node_matches(node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector) is expected


def test_a_network_attached_pool_gives_the_slices_node_selector():
    """createNodeSelector: the requirements of the slice's one term, not a node name."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}]}
    slices = [_slice("slice-1", "driver-a", ["device-1"], nodeSelector=selector)]
    [result] = allocate(_node("node-9", region="r1"), [_claim("claim-0", _request("req-0"))],
                        classes=CLASSES, slices=slices)
    assert result.node_selector == slices[0].spec.node_selector
    [everywhere] = allocate(_node("node-9"), [_claim("claim-0", _request("req-0"))], classes=CLASSES,
                            slices=[_slice("slice-1", "driver-a", ["device-1"], allNodes=True)])
    assert everywhere.node_selector is None


def test_shortfalls_name_the_request_that_cannot_be_met():
    slices = [_slice("slice-1", "driver-a", ["device-1", "device-2"])]
    allocated = frozenset({DeviceID("driver-a", "slice-1", "device-1")})
    claims = [_claim("claim-0", _request("req-0"), _request("req-1", count=2))]
    assert allocate(_node(), claims, classes=CLASSES, slices=slices, allocated=allocated) is None
    assert shortfalls(_node(), claims, classes=CLASSES, slices=slices, allocated=allocated) == \
        (Shortfall(claim=0, request="req-1", wanted=2, available=1),)
    # Each request alone fits; together they do not: no single request to blame.
    together = [_claim("claim-0", _request("req-0"), _request("req-1"))]
    assert allocate(_node(), together, classes=CLASSES, slices=slices, allocated=allocated) is None
    assert shortfalls(_node(), together, classes=CLASSES, slices=slices, allocated=allocated) == ()


def test_the_search_order_is_pools_then_slices_then_devices_as_given():
    """Which devices are chosen matters: simulate writes them into the claims."""
    slices = [_slice("slice-2", "driver-a", ["device-9", "device-3"], pool="pool-b"),
              _slice("slice-1", "driver-a", ["device-1"], pool="pool-a")]
    [result] = allocate(_node(), [_claim("claim-0", _request("req-0", count=2))], classes=CLASSES, slices=slices)
    assert [(r.pool, r.device) for r in result.devices.results] == [("pool-b", "device-9"), ("pool-b", "device-3")]


def test_a_newer_generation_replaces_the_pool():
    slices = [_slice("old", "driver-a", ["device-1"], pool="p", generation=1),
              _slice("new", "driver-a", ["device-2"], pool="p", generation=2)]
    [result] = allocate(_node(), [_claim("claim-0", _request("req-0"))], classes=CLASSES, slices=slices)
    assert result.devices.results[0].device == "device-2"


def test_features_beyond_v1_35_are_refused():
    with pytest.raises(ValueError, match="partitionable_devices"):
        allocate(_node(), [], classes={}, slices=[], features=Features(partitionable_devices=True))


def test_a_kept_outcome_is_only_for_the_same_devices_in_use_and_classes():
    """The next pod of a template gets the kept outcome; a device taken meanwhile on the node,
    or a class changed, makes it search again."""
    slices = [_slice("slice-1", "driver-a", ["device-1", "device-2"])]
    node = _node()
    first = allocate(node, [_claim("claim-0", _request("req-0"))], classes=CLASSES, slices=slices)
    again = allocate(node, [_claim("claim-1", _request("req-0"))], classes=CLASSES, slices=slices)
    assert again == first and first[0].devices.results[0].device == "device-1"
    taken = frozenset({DeviceID("driver-a", "slice-1", "device-1")})
    [after] = allocate(node, [_claim("claim-2", _request("req-0"))], classes=CLASSES, slices=slices, allocated=taken)
    assert after.devices.results[0].device == "device-2"
    other = {"class-a": _class("class-a", "driver-b")}
    assert allocate(node, [_claim("claim-3", _request("req-0"))], classes=other, slices=slices) is None


def test_a_class_selector_without_cel_is_an_error_not_a_crash():
    broken = _typed({"kind": "DeviceClass", "metadata": {"name": "class-x"}, "spec": {"selectors": [{}]}})
    with pytest.raises(AllocationError, match=r"^class class-x: selector #0: CEL expression empty"):
        allocate(_node(), [_claim("claim-0", _request("req-0", cls="class-x"))], classes={"class-x": broken},
                 slices=[_slice("slice-1", "driver-a", ["device-1"])])


@st.composite
def constrained(draw):
    """One slice of up to five devices of driver-a, each with numa 0 or 1 or none, and one
    claim of up to two requests of class-a with a matchAttribute on numa over all of them, one
    of them, or none."""
    devices = []
    for i in range(draw(st.integers(0, 5))):
        numa = draw(st.sampled_from([0, 1, None]))
        devices.append({"name": f"device-{i}", "attributes": {} if numa is None else {"numa": {"int": numa}}})
    requests = [_request(f"req-{r}", count=draw(st.integers(1, 2))) for r in range(draw(st.integers(1, 2)))]
    scope = draw(st.sampled_from(["all", "first", "none"]))
    constraints = [] if scope == "none" else [
        {"matchAttribute": "driver-a/numa", **({"requests": ["req-0"]} if scope == "first" else {})}]
    return [_slice("slice-1", "driver-a", devices)], [_claim("claim-0", *requests, constraints=constraints)]


def _numa(device: model.Device):
    attr = device.attributes.get("numa")
    return None if attr is None else attr.int_


def _some_assignment(slices, claim) -> bool:
    """Brute force: distinct devices for every request slot such that the constrained
    requests' devices all have numa, and one value."""
    devices = list(slices[0].spec.devices)
    slots = [r.name for r in claim.spec.devices.requests for _ in range(r.exactly.count)]
    constraint = claim.spec.devices.constraints[0] if claim.spec.devices.constraints else None
    for chosen in itertools.permutations(devices, len(slots)):
        if constraint is None:
            return True
        values = [_numa(d) for d, slot in zip(chosen, slots) if not constraint.requests or slot in constraint.requests]
        if None not in values and len(set(values)) <= 1:
            return True
    return False


@pytest.mark.parametrize("version", VERSIONS)
@given(constrained())
def test_the_search_finds_a_solution_whenever_one_exists(version, problem):
    """The search is exhaustive: with a matchAttribute constraint it fails only when no
    assignment of devices would keep it, and what it returns keeps it (v1.36's search tries
    each set of devices once instead of each ordering: it finds the same)."""
    slices, [claim] = problem
    got = allocate(_node(), [claim], classes=CLASSES, slices=slices, features=_features(version))
    assert (got is not None) == _some_assignment(slices, claim)
    if got is not None and claim.spec.devices.constraints:
        constraint = claim.spec.devices.constraints[0]
        by_name = {d.name: d for d in slices[0].spec.devices}
        values = [_numa(by_name[r.device]) for r in got[0].devices.results
                  if not constraint.requests or r.request in constraint.requests]
        assert None not in values and len(set(values)) <= 1


@st.composite
def fleets(draw):
    """Up to four nodes, each with a slice of up to three devices drawn from a few kinds (so
    nodes often look alike), some of them in use, and a claim of one or two requests."""
    kinds = [{}, {"numa": {"int": 0}}, {"numa": {"int": 1}}]
    slices, devices = [], []
    for n in range(draw(st.integers(1, 4))):
        spec = [{"name": f"device-{i}", "attributes": draw(st.sampled_from(kinds))}
                for i in range(draw(st.integers(0, 3)))]
        slices.append(_slice(f"node-{n}-slice", draw(st.sampled_from(DRIVERS)), spec, node=f"node-{n}"))
        devices += [DeviceID(slices[-1].spec.driver, slices[-1].spec.pool.name, d["name"]) for d in spec]
    allocated = frozenset(d for d in devices if draw(st.integers(0, 3)) == 0)
    constraints = draw(st.sampled_from([[], [{"matchAttribute": "driver-a/numa"}]]))
    claim = _claim("claim-0", *[_request(f"req-{r}", draw(st.sampled_from(sorted(CLASSES))), draw(st.integers(1, 2)))
                                for r in range(draw(st.integers(1, 2)))], constraints=constraints)
    return [_node(f"node-{n}") for n in range(len(slices))], slices, allocated, claim


@pytest.mark.parametrize("version", VERSIONS)
@given(fleets())
def test_nodes_that_look_alike_share_a_search_without_sharing_devices(version, fleet):
    """A node whose pools look like an earlier node's gets that node's outcome by position:
    the same as its own search would give, with its own devices and node selector."""
    nodes, slices, allocated, claim = fleet
    shared = slice_index(slices)
    features = _features(version)
    for node in nodes:
        kept = allocate(node, [claim], classes=CLASSES, slices=shared, allocated=allocated, features=features)
        alone = allocate(node, [claim], classes=CLASSES, slices=slice_index(list(slices)), allocated=allocated,
                         features=features)
        assert kept == alone

"""The structured-parameters allocator (policylang/dra/structured.py) against upstream's
allocator test table (tests/conformance/dra/allocator.yaml, each case named after the
upstream case it transcribes), and its properties."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import yaml

from dra_cel_double import install

install()

from policylang.cluster import model  # noqa: E402
from policylang.cluster.load import structure_object  # noqa: E402
from policylang.dra import structured  # noqa: E402
from policylang.dra.structured import AllocationError, DeviceID, Features, allocate  # noqa: E402

CASES = yaml.safe_load((Path(__file__).parent / "conformance/dra/allocator.yaml").read_text())

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


def _run(case: dict):
    objects = [_typed(raw) for raw in case.get("objects") or []]
    classes = {o.metadata.name: o for o in objects if isinstance(o, model.DeviceClass)}
    slices = [o for o in objects if isinstance(o, model.ResourceSlice)]
    node = structure_object({"kind": "Node", "metadata": case["node"]}, "allocator.yaml", validate=False)
    claims = [_typed(raw) for raw in case.get("claims") or []]
    allocated = frozenset(DeviceID(*d.split("/")) for d in case.get("allocated") or [])
    features = Features(**{FEATURES[f]: True for f in case.get("features") or []})
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

"""The DRA allocator fact file (tests/conformance/dra/allocator.yaml) is well formed.

The file is upstream's allocator table taken as facts; tests/test_dra_allocator.py runs it.
These checks catch a case the harness would misread: a missing key, two expectations, a
result naming a device or request the case does not have, an object the loader refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from policylang.cluster import load
from policylang.diagnostics import InputError

HERE = Path(__file__).parent / "conformance" / "dra"
FILE = HERE / "allocator.yaml"
# Each file's cases with the features they may use: v1.35's table, the DRA features on by default
# there (pkg/features/kube_features.go); v1.36's and v1.37's, every feature internal/incubating of
# v0.36.3 / v0.37.2 supports (upstream's table runs each case with its own).
INCUBATING_136 = {"AdminAccess", "PrioritizedList", "PartitionableDevices", "DeviceTaints",
                  "DeviceBindingAndStatus", "ConsumableCapacity"}
FILES = {"allocator.yaml": {"AdminAccess", "PrioritizedList"},
         "allocator_136.yaml": INCUBATING_136,
         "allocator_137.yaml": INCUBATING_136 | {"FractionalCapacityRange"}}
ALL = [(name, case) for name in FILES for case in yaml.safe_load((HERE / name).read_text())]
CASES = [case for name, case in ALL]
KEYS = {"name", "features", "node", "objects", "allocated", "claims", "expect"}
# v1.36+: the allocated state's shared devices (AllocatedSharedDeviceIDs) and their capacity.
OPTIONAL_KEYS = {"shared", "aggregated"}
EXPECTATIONS = {"allocations", "unsatisfiable", "error", "error_contains"}
OBJECT_KINDS = {"DeviceClass", "ResourceSlice"}


def _ids():
    return [f"{name}-{case['name']}" for name, case in ALL]


def test_names_are_unique():
    assert len(set(_ids())) == len(ALL)


@pytest.mark.parametrize("file, case", ALL, ids=_ids())
def test_case_shape(file, case):
    assert KEYS <= set(case) <= KEYS | OPTIONAL_KEYS
    assert set(case["features"]) <= FILES[file]
    assert case["node"] is None or set(case["node"]) <= {"name", "labels"}
    assert {o["kind"] for o in case["objects"]} <= OBJECT_KINDS
    assert {c["kind"] for c in case["claims"]} <= {"ResourceClaim"}
    for obj in case["objects"] + case["claims"]:
        assert obj["apiVersion"] == "resource.k8s.io/v1"
    assert all(len(device_id.split("/")) == 3 for device_id in case["allocated"])
    (expectation,) = case["expect"]
    assert expectation in EXPECTATIONS
    if expectation == "unsatisfiable":
        assert case["expect"]["unsatisfiable"] is True and case["claims"]


@pytest.mark.parametrize("case", [c for c in CASES if c["expect"].get("allocations")],
                         ids=lambda c: c["name"])
def test_results_name_the_case_devices_and_requests(case):
    """One allocation per claim; each result is a device some slice publishes and a request
    (or request/subrequest) of its own claim."""
    published = {(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
                 for s in case["objects"] if s["kind"] == "ResourceSlice"
                 for d in s["spec"].get("devices", [])}
    allocations = case["expect"]["allocations"]
    assert len(allocations) == len(case["claims"])
    for claim, allocation in zip(case["claims"], allocations, strict=True):
        requests = set()
        for request in claim["spec"]["devices"]["requests"]:
            requests.add(request["name"])
            requests.update(f"{request['name']}/{sub['name']}" for sub in request.get("firstAvailable", []))
        for result in allocation["devices"]["results"]:
            assert (result["driver"], result["pool"], result["device"]) in published
            assert result["request"] in requests


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_objects_load(case):
    """Every object loads, but the quantities beyond int64 milli-units a few v1.37 cases use on
    purpose (their overflow checks), which policylang refuses as out of range, in its words."""
    for index, raw in enumerate(case["objects"] + case["claims"]):
        try:
            load.structure_object(raw, str(FILE), index, validate=False)
        except InputError as err:
            assert "is out of range: a Kubernetes quantity must fit in a 64-bit count of milli-units" in str(err)
            assert case["name"] in OUT_OF_RANGE


# The v1.37 cases that need quantities policylang cannot hold (tests/test_dra_allocator_136.py).
OUT_OF_RANGE = {"consumable-capacity-range-policy-allocation-mode-all-overflow-aborts",
                "consumable-capacity-range-policy-overflow-aborts-not-skip",
                "consumable-capacity-range-policy-request-above-int64-rejected",
                "consumable-capacity-range-policy-rounded-value-overflow-rejected",
                "consumable-capacity-requests-are-not-modified",
                "partitionable-devices-counter-quantities-are-not-modified"}

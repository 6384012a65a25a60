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

FILE = Path(__file__).parent / "conformance" / "dra" / "allocator.yaml"
CASES = yaml.safe_load(FILE.read_text())
KEYS = {"name", "features", "node", "objects", "allocated", "claims", "expect"}
EXPECTATIONS = {"allocations", "unsatisfiable", "error", "error_contains"}
# kube-scheduler v1.35's DRA features that are on by default (pkg/features/kube_features.go).
DEFAULT_FEATURES = {"AdminAccess", "PrioritizedList"}
OBJECT_KINDS = {"DeviceClass", "ResourceSlice"}


def _ids():
    return [case["name"] for case in CASES]


def test_names_are_unique():
    assert len(set(_ids())) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_case_shape(case):
    assert set(case) == KEYS
    assert set(case["features"]) <= DEFAULT_FEATURES
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
    for index, raw in enumerate(case["objects"] + case["claims"]):
        load.structure_object(raw, str(FILE), index, validate=False)

"""resource.k8s.io/v1 objects load as the API server stores them: camelCase fields, the
attribute values named like builtins (int, bool), the request defaults, and a pod's claims."""

import json

from policylang.api import model
from policylang.cluster.dump import dump_object
from policylang.cluster.load import load_objects
from policylang.api.quantity import parse_quantity

OBJECTS = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
     "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
              "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"mode": "fast"}}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-1-gpu"},
     "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
              "pool": {"name": "node-1", "generation": 2, "resourceSliceCount": 1},
              "devices": [{"name": "gpu-0",
                           "attributes": {"model": {"string": "a100"}, "cores": {"int": 108},
                                          "mig": {"bool": False}, "driverVersion": {"version": "1.2.3"}},
                           "capacity": {"memory": {"value": "40Gi"}}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
     "spec": {"devices": {
         "requests": [{"name": "one", "exactly": {"deviceClassName": "gpu"}},
                      {"name": "all", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
                      {"name": "alt", "firstAvailable": [{"name": "big", "deviceClassName": "gpu", "count": 2}]}],
         "constraints": [{"requests": ["one", "alt"], "matchAttribute": "gpu.example.com/model"}]}},
     "status": {"allocation": {"devices": {"results": [
                    {"request": "one", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
                     "shareID": "s"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}},
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
     "spec": {"metadata": {"labels": {"a": "b"}},
              "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
     "spec": {"containers": [{"name": "c"}],
              "resourceClaims": [{"name": "a", "resourceClaimName": "c"},
                                 {"name": "b", "resourceClaimTemplateName": "t"}]},
     "status": {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-x"}]}},
]


def _load(tmp_path):
    (tmp_path / "dra.yaml").write_text(json.dumps({"kind": "List", "items": OBJECTS}))
    return load_objects(tmp_path / "dra.yaml")


def test_the_four_kinds_and_a_pods_claims_load(tmp_path):
    cls, slice_, claim, template, pod = _load(tmp_path)
    assert isinstance(cls, model.DeviceClass)
    assert cls.spec.selectors[0].cel.expression == 'device.driver == "gpu.example.com"'
    assert cls.spec.config[0].opaque.parameters == {"mode": "fast"}
    device = slice_.spec.devices[0]
    assert slice_.spec.node_name == "node-1" and slice_.spec.pool.generation == 2
    assert device.attributes["cores"] == model.DeviceAttribute(int_=108)
    assert device.attributes["mig"] == model.DeviceAttribute(bool_=False)
    assert device.attributes["driverVersion"].version == "1.2.3"
    assert device.capacity["memory"].value == parse_quantity("40Gi")
    one, all_, alt = claim.spec.devices.requests
    # SetDefaults_ExactDeviceRequest: ExactCount with count 1; All has no count.
    assert (one.exactly.allocation_mode, one.exactly.count) == ("ExactCount", 1)
    assert (all_.exactly.allocation_mode, all_.exactly.count) == ("All", 0)
    assert alt.exactly is None and alt.first_available[0].count == 2
    assert claim.spec.devices.constraints[0].match_attribute == "gpu.example.com/model"
    assert claim.metadata.namespace == template.metadata.namespace == "default"
    assert claim.status.allocation.devices.results[0].share_id == "s"
    assert claim.status.allocation.node_selector.node_selector_terms[0].match_fields[0].values == ("node-1",)
    assert claim.status.reserved_for[0].uid == "u1"
    assert template.spec.metadata.labels == {"a": "b"}
    assert template.spec.spec.devices.requests[0].exactly.device_class_name == "gpu"
    assert [(c.resource_claim_name, c.resource_claim_template_name) for c in pod.spec.resource_claims] == \
        [("c", None), (None, "t")]
    assert pod.status.resource_claim_statuses[0].resource_claim_name == "p-b-x"


def test_attribute_values_dump_under_the_apis_names(tmp_path):
    slice_ = _load(tmp_path)[1]
    dumped = dump_object(slice_)
    assert dumped["spec"]["devices"][0]["attributes"]["cores"] == {"int": 108}
    assert dumped["spec"]["devices"][0]["attributes"]["mig"] == {"bool": False}

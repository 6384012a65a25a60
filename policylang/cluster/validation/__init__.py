"""The API server's validation of the fields the scheduler reads (core.py: core/v1, storage and
scheduling; resource.py: resource.k8s.io/v1), as facts transcribed from
pkg/apis/core/validation/validation.go (validateTolerations, validateNodeTaints,
ValidateNodeSelectorRequirement, validatePreferredSchedulingTerms, validatePodAffinityTerm,
validateTopologySpreadConstraints, validateContainerPorts, ValidateResourceQuantityValue) and
apimachinery's metav1 validation (ValidateLabels, ValidateLabelSelector), with their texts; and,
for the other kinds the stdlib reads, their enums (access, volume and binding modes, preemption
policies) and a Service's selector; for resource.k8s.io/v1 (pkg/apis/resource/validation/
validation.go), the names, limits and unions of claims, templates, classes and slices, and every
CEL selector compiled as the API server compiles it.

``CHECKS`` maps a model class's name to the checks of one of its objects: each check takes the typed
object (just decoded) and yields ``(path, body)``, the path relative to the object in the API's
spelling (``operator``, ``values``, ``[1]``) and the field error's body (api/errors.py). The loader
runs them in the same pass as decoding (load.py), so a bad field is refused as the API server
refuses it, naming the field; upstream's plugin tests, which build objects without the API
server, load without them (``validate=False``).
"""

from __future__ import annotations

from typing import Callable, Iterator

from .core import (Problem, claim_spec, container_port, drop_disabled, label_selector, label_selector_requirement,
                   node_selector_requirement, node_status, object_meta, pod_affinity_term, pod_spec,
                   preferred_term, priority_class, resource_requirements, service_spec, storage_class, taint,
                   toleration, topology_spread_constraint, volume_spec)
from .resource import (consumer_reference, counter_set, device, device_attribute, device_claim, device_class_spec,
                       device_counter_consumption, device_taint, device_toleration,
                       device_request, device_request_allocation_result, device_selector, device_sub_request,
                       exact_device_request, resource_claim, resource_slice_spec)

CHECKS: dict[str, Callable[[object], Iterator[Problem]]] = {
    "ObjectMeta": object_meta,
    "Toleration": toleration,
    "Taint": taint,
    "NodeStatus": node_status,
    "NodeSelectorRequirement": node_selector_requirement,
    "LabelSelectorRequirement": label_selector_requirement,
    "LabelSelector": label_selector,
    "PreferredSchedulingTerm": preferred_term,
    "WeightedPodAffinityTerm": preferred_term,
    "PodAffinityTerm": pod_affinity_term,
    "TopologySpreadConstraint": topology_spread_constraint,
    "ContainerPort": container_port,
    "ResourceRequirements": resource_requirements,
    "PodSpec": pod_spec,
    "PersistentVolumeClaimSpec": claim_spec,
    "PersistentVolumeSpec": volume_spec,
    "StorageClass": storage_class,
    "ServiceSpec": service_spec,
    "PriorityClass": priority_class,
    "DeviceSelector": device_selector,
    "ExactDeviceRequest": exact_device_request,
    "DeviceSubRequest": device_sub_request,
    "DeviceRequest": device_request,
    "DeviceClaim": device_claim,
    "ResourceClaimConsumerReference": consumer_reference,
    "DeviceRequestAllocationResult": device_request_allocation_result,
    "ResourceClaim": resource_claim,
    "DeviceClassSpec": device_class_spec,
    "DeviceAttribute": device_attribute,
    "Device": device,
    "ResourceSliceSpec": resource_slice_spec,
    "DeviceTaint": device_taint,
    "DeviceToleration": device_toleration,
    "CounterSet": counter_set,
    "DeviceCounterConsumption": device_counter_consumption,
}


class FieldProblem(ValueError):
    """A field the API server would refuse: its path below the object being decoded, and why."""

    def __init__(self, path: str, body: str):
        super().__init__(body)
        self.path = path

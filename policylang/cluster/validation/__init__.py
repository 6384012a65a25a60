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

``CHECKS`` maps a model class to the checks of one of its objects: each check takes the typed
object (just decoded) and yields ``(path, body)``, the path relative to the object in the API's
spelling (``operator``, ``values``, ``[1]``) and the field error's body (apierrors). The loader
runs them in the same pass as decoding (load.py), so a bad field is refused as the API server
refuses it, naming the field; upstream's plugin tests, which build objects without the API
server, load without them (``validate=False``).
"""

from __future__ import annotations

from typing import Callable, Iterator

from .. import model
from .core import (Problem, claim_spec, container_port, label_selector, label_selector_requirement,
                   node_selector_requirement, object_meta, pod_affinity_term, pod_spec,
                   preferred_term, priority_class, resource_requirements, service_spec, storage_class, taint,
                   toleration, topology_spread_constraint, volume_spec)
from .resource import (consumer_reference, device, device_attribute, device_claim, device_class_spec,
                       device_request, device_request_allocation_result, device_selector, device_sub_request,
                       exact_device_request, resource_claim, resource_slice_spec)

CHECKS: dict[type, Callable[[object], Iterator[Problem]]] = {
    model.ObjectMeta: object_meta,
    model.Toleration: toleration,
    model.Taint: taint,
    model.NodeSelectorRequirement: node_selector_requirement,
    model.LabelSelectorRequirement: label_selector_requirement,
    model.LabelSelector: label_selector,
    model.PreferredSchedulingTerm: preferred_term,
    model.WeightedPodAffinityTerm: preferred_term,
    model.PodAffinityTerm: pod_affinity_term,
    model.TopologySpreadConstraint: topology_spread_constraint,
    model.ContainerPort: container_port,
    model.ResourceRequirements: resource_requirements,
    model.PodSpec: pod_spec,
    model.PersistentVolumeClaimSpec: claim_spec,
    model.PersistentVolumeSpec: volume_spec,
    model.StorageClass: storage_class,
    model.ServiceSpec: service_spec,
    model.PriorityClass: priority_class,
    model.DeviceSelector: device_selector,
    model.ExactDeviceRequest: exact_device_request,
    model.DeviceSubRequest: device_sub_request,
    model.DeviceRequest: device_request,
    model.DeviceClaim: device_claim,
    model.ResourceClaimConsumerReference: consumer_reference,
    model.DeviceRequestAllocationResult: device_request_allocation_result,
    model.ResourceClaim: resource_claim,
    model.DeviceClassSpec: device_class_spec,
    model.DeviceAttribute: device_attribute,
    model.Device: device,
    model.ResourceSliceSpec: resource_slice_spec,
}


class FieldProblem(ValueError):
    """A field the API server would refuse: its path below the object being decoded, and why."""

    def __init__(self, path: str, body: str):
        super().__init__(body)
        self.path = path


def first_problem(obj) -> FieldProblem | None:
    check = CHECKS.get(type(obj))
    if check is None:
        return None
    for path, body in check(obj):
        return FieldProblem(path, body)
    return None

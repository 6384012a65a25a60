"""Dynamic Resource Allocation, resource.k8s.io/v1: device classes, resource claims and their
templates, resource slices; transcribed from k8s.io/api@v0.35.4/resource/v1/types.go.

Every field scheduling reads is here, with the API server's defaults
(pkg/apis/resource/v1/defaults.go): a request's allocationMode is ExactCount and its count 1.
Fields of features whose gates are off in v1.35 (consumable capacity, partitionable devices'
counters, binding conditions) are typed too, so a dump that has them loads as it is stored.

Three attributes would shadow a builtin in the class body (a DeviceAttribute's ``int`` and
``bool``); they are spelled ``int_`` and ``bool_``, which ``api_name`` maps back to the API's
``int`` and ``bool``.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from ...frozen import frozen
from ..quantity import Quantity
from .meta import NodeSelector, ObjectMeta, _list, _map

# DeviceAllocationMode (types.go)
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"


def _default_count(self) -> int:
    # SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest: ExactCount without a count is 1.
    return 1 if self.allocation_mode == ALLOCATION_MODE_EXACT_COUNT else 0


def _count():
    return attrs.field(default=attrs.Factory(_default_count, takes_self=True))


# ---- selectors, configuration, tolerations: shared by classes, claims and results ----------

@frozen
class CELDeviceSelector:
    expression: str = ""


@frozen
class DeviceSelector:
    cel: Optional[CELDeviceSelector] = None


@frozen
class OpaqueDeviceConfiguration:
    driver: str = ""
    parameters: Any = None   # runtime.RawExtension: the driver's own JSON, kept as it came


@frozen
class DeviceClassConfiguration:
    opaque: Optional[OpaqueDeviceConfiguration] = None


@frozen
class DeviceToleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: Optional[int] = None


# ---- DeviceClass ---------------------------------------------------------------------

@frozen
class DeviceClassSpec:
    selectors: tuple[DeviceSelector, ...] = _list()
    config: tuple[DeviceClassConfiguration, ...] = _list()
    extended_resource_name: Optional[str] = None


@frozen
class DeviceClass:
    kind: str = "DeviceClass"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: DeviceClassSpec = attrs.field(factory=DeviceClassSpec)


# ---- ResourceClaim -------------------------------------------------------------------

@frozen
class CapacityRequirements:
    requests: dict[str, Quantity] = _map()


@frozen
class ExactDeviceRequest:
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = _list()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = _count()
    admin_access: Optional[bool] = None
    tolerations: tuple[DeviceToleration, ...] = _list()
    capacity: Optional[CapacityRequirements] = None


@frozen
class DeviceSubRequest:
    name: str = ""
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = _list()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = _count()
    tolerations: tuple[DeviceToleration, ...] = _list()
    capacity: Optional[CapacityRequirements] = None


@frozen
class DeviceRequest:
    name: str = ""
    # One of the two: exactly these devices, or the first of the subrequests that can be met.
    exactly: Optional[ExactDeviceRequest] = None
    first_available: tuple[DeviceSubRequest, ...] = _list()


@frozen
class DeviceConstraint:
    requests: tuple[str, ...] = _list()   # empty: every request of the claim
    match_attribute: Optional[str] = None
    distinct_attribute: Optional[str] = None


@frozen
class DeviceClaimConfiguration:
    requests: tuple[str, ...] = _list()
    opaque: Optional[OpaqueDeviceConfiguration] = None


@frozen
class DeviceClaim:
    requests: tuple[DeviceRequest, ...] = _list()
    constraints: tuple[DeviceConstraint, ...] = _list()
    config: tuple[DeviceClaimConfiguration, ...] = _list()


@frozen
class ResourceClaimSpec:
    devices: DeviceClaim = attrs.field(factory=DeviceClaim)


@frozen
class DeviceRequestAllocationResult:
    request: str = ""   # the claim's request, or "request/subrequest" for a firstAvailable one
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: Optional[bool] = None
    tolerations: tuple[DeviceToleration, ...] = _list()
    binding_conditions: tuple[str, ...] = _list()
    binding_failure_conditions: tuple[str, ...] = _list()
    share_id: Optional[str] = None
    consumed_capacity: dict[str, Quantity] = _map()


@frozen
class DeviceAllocationConfiguration:
    source: str = ""   # FromClass or FromClaim
    requests: tuple[str, ...] = _list()
    opaque: Optional[OpaqueDeviceConfiguration] = None


@frozen
class DeviceAllocationResult:
    results: tuple[DeviceRequestAllocationResult, ...] = _list()
    config: tuple[DeviceAllocationConfiguration, ...] = _list()


@frozen
class AllocationResult:
    devices: DeviceAllocationResult = attrs.field(factory=DeviceAllocationResult)
    # The nodes the allocated devices can be reached from (None: every node).
    node_selector: Optional[NodeSelector] = None
    allocation_timestamp: Optional[str] = None


@frozen
class ResourceClaimConsumerReference:
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


@frozen
class Condition:
    """metav1.Condition."""
    type: str = ""
    status: str = ""
    observed_generation: int = 0
    last_transition_time: str = ""
    reason: str = ""
    message: str = ""


@frozen
class NetworkDeviceData:
    interface_name: str = ""
    ips: tuple[str, ...] = _list()
    hardware_address: str = ""


@frozen
class AllocatedDeviceStatus:
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: Optional[str] = None
    conditions: tuple[Condition, ...] = _list()
    data: Any = None   # runtime.RawExtension
    network_data: Optional[NetworkDeviceData] = None


@frozen
class ResourceClaimStatus:
    allocation: Optional[AllocationResult] = None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = _list()
    devices: tuple[AllocatedDeviceStatus, ...] = _list()


@frozen
class ResourceClaim:
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: ResourceClaimSpec = attrs.field(factory=ResourceClaimSpec)
    status: ResourceClaimStatus = attrs.field(factory=ResourceClaimStatus)


# ---- ResourceClaimTemplate -----------------------------------------------------------

@frozen
class ResourceClaimTemplateSpec:
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)   # copied into each claim made from it
    spec: ResourceClaimSpec = attrs.field(factory=ResourceClaimSpec)


@frozen
class ResourceClaimTemplate:
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = attrs.field(factory=ResourceClaimTemplateSpec)


# ---- ResourceSlice -------------------------------------------------------------------

@frozen
class ResourcePool:
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


@frozen
class DeviceAttribute:
    """Exactly one of the four is set."""
    int_: Optional[int] = None
    bool_: Optional[bool] = None
    string: Optional[str] = None
    version: Optional[str] = None   # semantic version 2.0.0


@frozen
class CapacityRequestPolicyRange:
    min: Optional[Quantity] = None
    max: Optional[Quantity] = None
    step: Optional[Quantity] = None


@frozen
class CapacityRequestPolicy:
    default: Optional[Quantity] = None
    valid_values: tuple[Quantity, ...] = _list()
    valid_range: Optional[CapacityRequestPolicyRange] = None


@frozen
class DeviceCapacity:
    value: Quantity = attrs.field(factory=Quantity)
    request_policy: Optional[CapacityRequestPolicy] = None


@frozen
class Counter:
    value: Quantity = attrs.field(factory=Quantity)


@frozen
class CounterSet:
    name: str = ""
    counters: dict[str, Counter] = _map()


@frozen
class DeviceCounterConsumption:
    counter_set: str = ""
    counters: dict[str, Counter] = _map()


@frozen
class DeviceTaint:
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: Optional[str] = None


@frozen
class Device:
    name: str = ""
    # Keys are qualified names: "domain/id", or an id the driver's name qualifies.
    attributes: dict[str, DeviceAttribute] = _map()
    capacity: dict[str, DeviceCapacity] = _map()
    consumes_counters: tuple[DeviceCounterConsumption, ...] = _list()
    # With the slice's perDeviceNodeSelection, each device says where it is: one of the three.
    node_name: Optional[str] = None
    node_selector: Optional[NodeSelector] = None
    all_nodes: Optional[bool] = None
    taints: tuple[DeviceTaint, ...] = _list()
    binds_to_node: Optional[bool] = None
    binding_conditions: tuple[str, ...] = _list()
    binding_failure_conditions: tuple[str, ...] = _list()
    allow_multiple_allocations: Optional[bool] = None


@frozen
class ResourceSliceSpec:
    driver: str = ""
    pool: ResourcePool = attrs.field(factory=ResourcePool)
    # Where the devices are: exactly one of the four.
    node_name: Optional[str] = None
    node_selector: Optional[NodeSelector] = None
    all_nodes: Optional[bool] = None
    per_device_node_selection: Optional[bool] = None
    devices: tuple[Device, ...] = _list()
    shared_counters: tuple[CounterSet, ...] = _list()


@frozen
class ResourceSlice:
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: ResourceSliceSpec = attrs.field(factory=ResourceSliceSpec)


# ---- DeviceTaintRule -------------------------------------------------------------------

@frozen
class DeviceTaintSelector:
    """Which devices a rule taints: those of the driver, pool and device named (each left out:
    any). resource.k8s.io/v1 (v1.37; v1beta2 in v1.36, behind DRADeviceTaintRules, off)."""
    driver: Optional[str] = None
    pool: Optional[str] = None
    device: Optional[str] = None


@frozen
class DeviceTaintRuleSpec:
    device_selector: Optional[DeviceTaintSelector] = None
    taint: DeviceTaint = attrs.field(factory=DeviceTaint)


@frozen
class DeviceTaintRule:
    """A taint for the devices its selector names, which the scheduler's ResourceSlice tracker
    adds to theirs (k8s.io/dynamic-resource-allocation resourceslice/tracker applyPatches) where
    DRADeviceTaintRules is on (v1.37)."""
    kind: str = "DeviceTaintRule"
    metadata: ObjectMeta = attrs.field(factory=ObjectMeta)
    spec: DeviceTaintRuleSpec = attrs.field(factory=DeviceTaintRuleSpec)

"""The API server's validation of the fields the scheduler reads, as facts transcribed from
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

import functools
import json
import re
from typing import Callable, Iterator

from .. import apierrors as E
from . import model
from .selectors import label_key_errors, label_value_errors

Problem = tuple[str, str]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")      # sets.List: sorted
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")


# Label keys and values repeat across thousands of objects: each distinct one is checked once.
@functools.lru_cache(maxsize=65536)
def _key_problem(key: str) -> str | None:
    errs = label_key_errors(key)
    return E.invalid(key, "; ".join(errs)) if errs else None


@functools.lru_cache(maxsize=65536)
def _value_problem(value: str) -> str | None:
    errs = label_value_errors(value)
    return E.invalid(value, "; ".join(errs)) if errs else None


def _labels(labels: dict, path: str) -> Iterator[Problem]:
    """metav1validation.ValidateLabels: each key a qualified name, each value a label value."""
    for key, value in labels.items():
        problem = _key_problem(key)
        if problem:
            yield path, problem
        problem = _value_problem(value)
        if problem:
            yield path, problem


def _label_name(key: str, path: str) -> Iterator[Problem]:
    problem = _key_problem(key)
    if problem:
        yield path, problem


def object_meta(meta: model.ObjectMeta) -> Iterator[Problem]:
    yield from _labels(meta.labels, "labels")


def toleration(t: model.Toleration) -> Iterator[Problem]:
    """validateTolerations, for one toleration."""
    if t.key:
        yield from _label_name(t.key, "key")
    if not t.key and t.operator != "Exists":
        yield "operator", E.invalid(t.operator, 'operator must be Exists when `key` is empty, which means '
                                                '"match all values and all keys"')
    if t.toleration_seconds is not None and t.effect != "NoExecute":
        yield "effect", E.invalid(t.effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
    if t.operator in ("Equal", ""):
        errs = label_value_errors(t.value)
        if errs:
            yield "operator", E.invalid(t.value, ";".join(errs))
    elif t.operator == "Exists":
        if t.value:
            yield "operator", E.invalid(t.value, "value must be empty when `operator` is 'Exists'")
    else:
        yield "operator", E.not_supported(t.operator, TOLERATION_OPERATORS)
    if t.effect and t.effect not in TAINT_EFFECTS:
        yield "effect", E.not_supported(t.effect, TAINT_EFFECTS)


def taint(t: model.Taint) -> Iterator[Problem]:
    """validateNodeTaints, for one taint."""
    if not t.key:
        yield "key", E.required()
    else:
        yield from _label_name(t.key, "key")
    problem = _value_problem(t.value)
    if problem:
        yield "value", problem
    if not t.effect:
        yield "effect", E.required()
    elif t.effect not in TAINT_EFFECTS:
        yield "effect", E.not_supported(t.effect, TAINT_EFFECTS)


def node_selector_requirement(r: model.NodeSelectorRequirement) -> Iterator[Problem]:
    """ValidateNodeSelectorRequirement."""
    if r.operator in ("In", "NotIn"):
        if not r.values:
            yield "values", E.required("must be specified when `operator` is 'In' or 'NotIn'")
    elif r.operator in ("Exists", "DoesNotExist"):
        if r.values:
            yield "values", E.forbidden("may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif r.operator in ("Gt", "Lt"):
        if len(r.values) != 1:
            yield "values", E.required("must be specified single value when `operator` is 'Lt' or 'Gt'")
    else:
        yield "operator", E.invalid(r.operator, "not a valid selector operator")
    yield from _label_name(r.key, "key")


def label_selector_requirement(r: model.LabelSelectorRequirement) -> Iterator[Problem]:
    """metav1validation.ValidateLabelSelectorRequirement."""
    if r.operator in ("In", "NotIn"):
        if not r.values:
            yield "values", E.required("must be specified when `operator` is 'In' or 'NotIn'")
    elif r.operator in ("Exists", "DoesNotExist"):
        if r.values:
            yield "values", E.forbidden("may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    else:
        yield "operator", E.invalid(r.operator, "not a valid selector operator")
    yield from _label_name(r.key, "key")


def label_selector(s: model.LabelSelector) -> Iterator[Problem]:
    yield from _labels(s.match_labels, "matchLabels")


def preferred_term(t) -> Iterator[Problem]:
    """validatePreferredSchedulingTerms and validateWeightedPodAffinityTerms: weight in 1..100."""
    if not 1 <= t.weight <= 100:
        yield "weight", E.invalid(t.weight, "must be in the range 1-100")


def pod_affinity_term(t: model.PodAffinityTerm) -> Iterator[Problem]:
    """validatePodAffinityTerm: a topology key is required and is a label name."""
    if not t.topology_key:
        yield "topologyKey", E.required("can not be empty")
    else:
        yield from _label_name(t.topology_key, "topologyKey")


def topology_spread_constraint(c: model.TopologySpreadConstraint) -> Iterator[Problem]:
    """validateTopologySpreadConstraints, for one constraint (the pair rule is on the PodSpec)."""
    if c.max_skew <= 0:
        yield "maxSkew", E.invalid(c.max_skew, "must be greater than zero")
    if not c.topology_key:
        yield "topologyKey", E.required("can not be empty")
    else:
        yield from _label_name(c.topology_key, "topologyKey")
    if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
        yield "whenUnsatisfiable", E.not_supported(c.when_unsatisfiable, WHEN_UNSATISFIABLE)
    if c.min_domains is not None:
        if c.min_domains <= 0:
            yield "minDomains", E.invalid(c.min_domains, "must be greater than 0")
        elif c.when_unsatisfiable != "DoNotSchedule":
            yield "minDomains", E.invalid(c.min_domains, "can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                                                         f"not {c.when_unsatisfiable}")
    for name, policy in (("nodeAffinityPolicy", c.node_affinity_policy), ("nodeTaintsPolicy", c.node_taints_policy)):
        if policy is not None and policy not in NODE_INCLUSION_POLICIES:
            yield name, E.not_supported(policy, NODE_INCLUSION_POLICIES)


def container_port(p: model.ContainerPort) -> Iterator[Problem]:
    """validateContainerPorts, for one port."""
    if p.container_port == 0:
        yield "containerPort", E.required()
    elif not 1 <= p.container_port <= 65535:
        yield "containerPort", E.invalid(p.container_port, "must be between 1 and 65535, inclusive")
    if p.host_port and not 1 <= p.host_port <= 65535:
        yield "hostPort", E.invalid(p.host_port, "must be between 1 and 65535, inclusive")
    if p.protocol not in PORT_PROTOCOLS:
        yield "protocol", E.not_supported(p.protocol, PORT_PROTOCOLS)


def _quantities(resources: dict, path: str) -> Iterator[Problem]:
    """ValidateResourceQuantityValue: a request or limit is not negative."""
    for name, q in resources.items():
        if q.nanos < 0:
            yield f"{path}[{name!r}]", E.invalid(str(q), "must be greater than or equal to 0")


def resource_requirements(r) -> Iterator[Problem]:
    yield from _quantities(r.requests, "requests")
    yield from _quantities(r.limits, "limits")


def pod_spec(s: model.PodSpec) -> Iterator[Problem]:
    yield from _labels(s.node_selector, "nodeSelector")
    seen = set()
    for i, c in enumerate(s.topology_spread_constraints):
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            yield f"topologySpreadConstraints[{i}]", E.duplicate(f"{{{c.topology_key}, {c.when_unsatisfiable}}}")
        seen.add(pair)
    if s.preemption_policy is not None and s.preemption_policy not in PREEMPTION_POLICIES:
        yield "preemptionPolicy", E.not_supported(s.preemption_policy, PREEMPTION_POLICIES)


ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")   # sets.List: sorted
VOLUME_MODES = ("Block", "Filesystem")
VOLUME_BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


def _access_modes(modes, path: str) -> Iterator[Problem]:
    for mode in modes:
        if mode not in ACCESS_MODES:
            yield path, E.not_supported(mode, ACCESS_MODES)


def claim_spec(s: model.PersistentVolumeClaimSpec) -> Iterator[Problem]:
    """ValidatePersistentVolumeClaimSpec: access modes and the volume mode are enums."""
    yield from _access_modes(s.access_modes, "accessModes")
    if s.volume_mode is not None and s.volume_mode not in VOLUME_MODES:
        yield "volumeMode", E.not_supported(s.volume_mode, VOLUME_MODES)


def volume_spec(s: model.PersistentVolumeSpec) -> Iterator[Problem]:
    yield from _access_modes(s.access_modes, "accessModes")
    if s.volume_mode is not None and s.volume_mode not in VOLUME_MODES:
        yield "volumeMode", E.not_supported(s.volume_mode, VOLUME_MODES)


def storage_class(c: model.StorageClass) -> Iterator[Problem]:
    """ValidateStorageClass: the volume binding mode is an enum."""
    if c.volume_binding_mode is not None and c.volume_binding_mode not in VOLUME_BINDING_MODES:
        yield "volumeBindingMode", E.not_supported(c.volume_binding_mode, VOLUME_BINDING_MODES)


def service_spec(s: model.ServiceSpec) -> Iterator[Problem]:
    """ValidateService: the selector is a label map."""
    yield from _labels(s.selector, "selector")


def priority_class(c: model.PriorityClass) -> Iterator[Problem]:
    if c.preemption_policy not in PREEMPTION_POLICIES:
        yield "preemptionPolicy", E.not_supported(c.preemption_policy, PREEMPTION_POLICIES)


# ---- resource.k8s.io/v1: pkg/apis/resource/validation/validation.go ------------------------
# Limits from k8s.io/api resource/v1 types.go.
DEVICE_REQUESTS_MAX_SIZE = 32           # DeviceRequestsMaxSize (= AllocationResultsMaxSize)
DEVICE_CONSTRAINTS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
DEVICE_SELECTORS_MAX_SIZE = 32
FIRST_AVAILABLE_MAX_SIZE = 8            # FirstAvailableDeviceRequestMaxSize
DEVICE_TOLERATIONS_MAX_LENGTH = 16
RESERVED_FOR_MAX_SIZE = 256             # ResourceClaimReservedForMaxSize
ALLOCATION_RESULTS_MAX_SIZE = 32
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32      # ResourceSliceMaxAttributesAndCapacitiesPerDevice
DEVICE_MAX_ID_LENGTH = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DRIVER_NAME_MAX_LENGTH = 63
ALLOCATION_MODES = ("All", "ExactCount")
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
# semverRe (validation.go): semver.org 2.0.0's regular expression.
_SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
           r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?")


def _regex(msg: str, fmt: str, *examples: str) -> str:
    return f"{msg} (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def _dns_label(name: str, path: str) -> Iterator[Problem]:
    """ValidateDNS1123Label: a request's or a device's name."""
    if len(name.encode()) > 63:
        yield path, E.invalid(name, "must be no more than 63 bytes")
    if not re.fullmatch(_DNS1123_LABEL_FMT, name):
        yield path, E.invalid(name, "must not contain dots" if re.fullmatch(_DNS1123_SUBDOMAIN_FMT, name) else _regex(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
            "and end with an alphanumeric character", _DNS1123_LABEL_FMT, "my-name", "123-abc"))


def _dns_subdomain(name: str, path: str) -> Iterator[Problem]:
    if len(name.encode()) > 253:
        yield path, E.invalid(name, "must be no more than 253 bytes")
    if not re.fullmatch(_DNS1123_SUBDOMAIN_FMT, name):
        yield path, E.invalid(name, _regex(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
            "must start and end with an alphanumeric character", _DNS1123_SUBDOMAIN_FMT, "example.com"))


def _driver_name(name: str, path: str) -> Iterator[Problem]:
    """ValidateCSIDriverName, which a DRA driver's name reuses."""
    if not name:
        yield path, E.required()
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        yield path, E.too_long(DRIVER_NAME_MAX_LENGTH)
    for _, body in _dns_subdomain(name.lower(), path):
        yield path, body.replace(E.go_value(name.lower()), E.go_value(name), 1)


def _pool_name(name: str, path: str) -> Iterator[Problem]:
    if not name:
        yield path, E.required()
        return
    if len(name) > 253:
        yield path, E.too_long(253)
    for part in name.split("/"):
        yield from _dns_subdomain(part, path)


def _c_identifier(name: str, path: str) -> Iterator[Problem]:
    if len(name) > DEVICE_MAX_ID_LENGTH:
        yield path, E.too_long(DEVICE_MAX_ID_LENGTH)
    if not re.fullmatch(_C_IDENTIFIER_FMT, name):
        yield path, E.invalid(name, _regex("a valid C identifier must start with alphabetic character or '_', "
                                           "followed by a string of alphanumeric characters or '_'",
                                           _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName"))


def _qualified_name(name: str, path: str) -> Iterator[Problem]:
    """validateQualifiedName: an attribute's or a capacity's name, `id` or `domain/id`."""
    parts = name.split("/")
    if len(parts) == 1:
        yield from _c_identifier(parts[0], path)
    elif len(parts) == 2:
        if not parts[0]:
            yield path, E.invalid("", "the domain must not be empty")
        else:
            yield from _driver_name(parts[0], path)
        if not parts[1]:
            yield path, E.invalid("", "the name must not be empty")
        else:
            yield from _c_identifier(parts[1], path)


def _too_many(items, limit: int, path: str) -> Iterator[Problem]:
    if len(items) > limit:
        yield path, E.too_many(len(items), limit)


def _unique(keys, path: str) -> Iterator[Problem]:
    seen = set()
    for i, key in enumerate(keys):
        if key in seen:
            yield f"{path}[{i}]", E.duplicate(key)
        seen.add(key)


def device_selector(s: model.DeviceSelector) -> Iterator[Problem]:
    """validateSelector: a CEL selector that the API server's CEL environment compiles, within its
    length and cost limits (dra/cel.py's validate_selector)."""
    if s.cel is None:
        yield "cel", E.required()
        return
    from ..dra.cel import validate_selector
    problem = validate_selector(s.cel.expression)
    if problem:
        yield "cel.expression", problem


def _allocation_mode(mode: str, count: int) -> Iterator[Problem]:
    if mode == "All":
        if count != 0:
            yield "count", E.invalid(count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if count <= 0:
            yield "count", E.invalid(count, "must be greater than zero")
    else:
        yield "allocationMode", E.not_supported(mode, ALLOCATION_MODES)


def _class_name(name: str) -> Iterator[Problem]:
    if not name:
        yield "deviceClassName", E.required()
    else:
        yield from _dns_subdomain(name, "deviceClassName")


def exact_device_request(r: model.ExactDeviceRequest) -> Iterator[Problem]:
    yield from _class_name(r.device_class_name)
    yield from _too_many(r.selectors, DEVICE_SELECTORS_MAX_SIZE, "selectors")
    yield from _allocation_mode(r.allocation_mode, r.count)
    yield from _too_many(r.tolerations, DEVICE_TOLERATIONS_MAX_LENGTH, "tolerations")


def device_sub_request(r: model.DeviceSubRequest) -> Iterator[Problem]:
    yield from _dns_label(r.name, "name")
    yield from _class_name(r.device_class_name)
    yield from _too_many(r.selectors, DEVICE_SELECTORS_MAX_SIZE, "selectors")
    yield from _allocation_mode(r.allocation_mode, r.count)
    yield from _too_many(r.tolerations, DEVICE_TOLERATIONS_MAX_LENGTH, "tolerations")


def device_request(r: model.DeviceRequest) -> Iterator[Problem]:
    """validateDeviceRequest: a DNS-label name, and exactly one of exactly and firstAvailable (at
    most 8 subrequests, of unique names)."""
    yield from _dns_label(r.name, "name")
    if r.exactly is None and not r.first_available:
        yield "", E.required("exactly one of `exactly` or `firstAvailable` is required")
    elif r.exactly is not None and r.first_available:
        yield "", E.invalid(None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
                                  "are set")
    elif r.first_available:
        if len(r.first_available) > FIRST_AVAILABLE_MAX_SIZE:
            yield "firstAvailable", E.too_many(len(r.first_available), FIRST_AVAILABLE_MAX_SIZE)
        else:
            yield from _unique([s.name for s in r.first_available], "firstAvailable")


def _request_ref(name: str, names: dict, path: str) -> Iterator[Problem]:
    """validateRequestNameRef: a request, or request/subrequest, of the claim."""
    text = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
    segments = name.split("/")
    if len(segments) > 2:
        yield path, E.invalid(name, text)
        return
    for segment in segments:
        yield from _dns_label(segment, path)
    subs = names.get(segments[0], False)
    if subs is False or (len(segments) == 2 and (subs is None or segments[1] not in subs)):
        yield path, E.invalid(name, text)


def _request_names(claim: model.DeviceClaim) -> dict:
    return {r.name: ({s.name for s in r.first_available} if r.first_available else None) for r in claim.requests}


def device_claim(c: model.DeviceClaim) -> Iterator[Problem]:
    """validateDeviceClaim: at most 32 requests of unique names; constraints and configs naming
    requests of the claim."""
    if len(c.requests) > DEVICE_REQUESTS_MAX_SIZE:
        yield "requests", E.too_many(len(c.requests), DEVICE_REQUESTS_MAX_SIZE)
        return
    yield from _unique([r.name for r in c.requests], "requests")
    names = _request_names(c)
    if len(c.constraints) > DEVICE_CONSTRAINTS_MAX_SIZE:
        yield "constraints", E.too_many(len(c.constraints), DEVICE_CONSTRAINTS_MAX_SIZE)
    else:
        for i, constraint in enumerate(c.constraints):
            for j, ref in enumerate(constraint.requests):
                yield from _request_ref(ref, names, f"constraints[{i}].requests[{j}]")
            yield from _unique(constraint.requests, f"constraints[{i}].requests")
            if constraint.match_attribute is not None:
                yield from _fully_qualified(constraint.match_attribute, f"constraints[{i}].matchAttribute")
            elif constraint.distinct_attribute is None:
                yield f"constraints[{i}].matchAttribute", E.required()
    if len(c.config) > DEVICE_CONFIG_MAX_SIZE:
        yield "config", E.too_many(len(c.config), DEVICE_CONFIG_MAX_SIZE)
    else:
        for i, config in enumerate(c.config):
            for j, ref in enumerate(config.requests):
                yield from _request_ref(ref, names, f"config[{i}].requests[{j}]")


def _fully_qualified(name: str, path: str) -> Iterator[Problem]:
    yield from _qualified_name(name, path)
    if "/" not in name:
        yield path, E.invalid(name, "a fully qualified name must be a domain and a name separated by a slash")


def consumer_reference(r: model.ResourceClaimConsumerReference) -> Iterator[Problem]:
    """validateResourceClaimUserReference."""
    if not r.resource:
        yield "resource", E.required()
    if not r.name:
        yield "name", E.required()
    if not r.uid:
        yield "uid", E.required()


def device_request_allocation_result(r: model.DeviceRequestAllocationResult) -> Iterator[Problem]:
    yield from _driver_name(r.driver, "driver")
    yield from _pool_name(r.pool, "pool")
    yield from _dns_label(r.device, "device")


def resource_claim(c: model.ResourceClaim) -> Iterator[Problem]:
    """ValidateResourceClaim and its status: at most 256 reservedFor entries (unique by uid),
    only on an allocated claim; at most 32 results naming requests of the claim."""
    status = c.status
    if len(status.reserved_for) > RESERVED_FOR_MAX_SIZE:
        yield "status.reservedFor", E.too_many(len(status.reserved_for), RESERVED_FOR_MAX_SIZE)
    else:
        yield from _unique([r.uid for r in status.reserved_for], "status.reservedFor")
    if status.reserved_for and status.allocation is None:
        yield "status.reservedFor", E.forbidden("may not be specified when `allocated` is not set")
    if status.allocation is not None:
        results = status.allocation.devices.results
        if len(results) > ALLOCATION_RESULTS_MAX_SIZE:
            yield "status.allocation.devices.results", E.too_many(len(results), ALLOCATION_RESULTS_MAX_SIZE)
        else:
            names = _request_names(c.spec.devices)
            for i, r in enumerate(results):
                yield from _request_ref(r.request, names, f"status.allocation.devices.results[{i}].request")


def device_class_spec(s: model.DeviceClassSpec) -> Iterator[Problem]:
    yield from _too_many(s.selectors, DEVICE_SELECTORS_MAX_SIZE, "selectors")
    yield from _too_many(s.config, DEVICE_CONFIG_MAX_SIZE, "config")


def device_attribute(a: model.DeviceAttribute) -> Iterator[Problem]:
    """validateDeviceAttribute: exactly one value; strings and versions at most 64 bytes, versions
    semver 2.0.0."""
    set_ = [v for v in (a.bool_, a.int_, a.string, a.version) if v is not None]
    if a.string is not None and len(a.string.encode()) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        yield "string", E.too_long(DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)
    if a.version is not None:
        if not re.fullmatch(_SEMVER, a.version):
            yield "version", E.invalid(a.version, "must be a string compatible with semver.org spec 2.0.0")
        if len(a.version.encode()) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            yield "version", E.too_long(DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)
    if not set_:
        yield "", E.invalid("", "exactly one value must be specified")
    elif len(set_) > 1:
        # The attribute as JSON, in the Go struct's field order.
        shown = {k: v for k, v in (("int", a.int_), ("bool", a.bool_), ("string", a.string),
                                   ("version", a.version)) if v is not None}
        yield "", f"Invalid value: {json.dumps(shown, separators=(',', ':'))}: exactly one value must be specified"


def device(d: model.Device) -> Iterator[Problem]:
    """validateDevice: a DNS-label name, at most 32 attributes and capacities together, each named
    as a qualified name."""
    yield from _dns_label(d.name, "name")
    total = len(d.attributes) + len(d.capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        yield "", E.invalid(total, f"the total number of attributes and capacities must not exceed "
                                   f"{MAX_ATTRIBUTES_AND_CAPACITIES}")
    for key in d.attributes:
        yield from _qualified_name(key, f"attributes[{key}]")
    for key in d.capacity:
        yield from _qualified_name(key, f"capacity[{key}]")


def resource_slice_spec(s: model.ResourceSliceSpec) -> Iterator[Problem]:
    """validateResourceSliceSpec: the driver's and the pool's names, the pool's counts, exactly one
    of nodeName, nodeSelector (one term), allNodes and perDeviceNodeSelection, at most 128
    devices (64 with taints or counters) of unique names."""
    yield from _driver_name(s.driver, "driver")
    yield from _pool_name(s.pool.name, "pool.name")
    if s.pool.resource_slice_count <= 0:
        yield "pool.resourceSliceCount", E.invalid(s.pool.resource_slice_count, "must be greater than zero")
    if s.pool.generation < 0:
        yield "pool.generation", E.invalid(s.pool.generation, "must be greater than or equal to zero")
    fields = []
    if s.node_name is not None:
        if s.node_name:
            fields.append("`nodeName`")
        else:
            yield "nodeName", E.invalid("", "must be either unset or set to a non-empty string")
    if s.node_selector is not None:
        fields.append("`nodeSelector`")
        if len(s.node_selector.node_selector_terms) != 1:
            yield "nodeSelector.nodeSelectorTerms", E.invalid(
                len(s.node_selector.node_selector_terms), "must have exactly one node selector term")
    for name, value in (("allNodes", s.all_nodes), ("perDeviceNodeSelection", s.per_device_node_selection)):
        if value is not None:
            if value:
                fields.append(f"`{name}`")
            else:
                yield name, E.invalid(False, "must be either unset or set to true")
    where = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not fields:
        yield "", E.required(where)
    elif len(fields) > 1:
        yield "", E.invalid("{" + ", ".join(fields) + "}", where + ", but multiple fields are set")
    if s.shared_counters and s.devices:
        yield "", E.invalid("", "only one of `sharedCounters` or `devices` is allowed")
    limit = (RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_COUNTERS
             if any(d.taints or d.consumes_counters for d in s.devices) else RESOURCE_SLICE_MAX_DEVICES)
    if len(s.devices) > limit:
        yield "devices", E.too_many(len(s.devices), limit)
    else:
        yield from _unique([d.name for d in s.devices], "devices")


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

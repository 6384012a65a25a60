"""The API server's validation of resource.k8s.io/v1 (pkg/apis/resource/validation/
validation.go): the names, limits and unions of claims, templates, classes and slices, and every
CEL selector compiled as the API server compiles it."""

from __future__ import annotations

import json
import re
from typing import Iterator

from ...api import errors as E
from ...api import model
from ...api.requests import is_extended_resource_name
from ...api.selectors import label_value_errors
from .core import Problem, _key_problem, extended_resource_field_kept

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
    length and cost limits (dra/cel.py's validate_selector). A dump's objects are stored ones, so
    they are checked in the stored-expressions environment the scheduler compiles them in, as the
    API server checks an object it already holds."""
    if s.cel is None:
        yield "cel", E.required()
        return
    from ...dra.cel import validate_selector
    problem = validate_selector(s.cel.expression, stored=True)
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
    """validateDeviceClassSpec: the limits, and an extendedResourceName that is an extended
    resource name (v1helper.IsExtendedResourceName), where the admitting API server keeps the
    field: with DRAExtendedResource on (v1.36's default), as v1.35 and v1.34 drop it when the gate
    is off before validating (registry/resource/deviceclass/strategy.go,
    dropDisabledDRAExtendedResourceFields)."""
    yield from _too_many(s.selectors, DEVICE_SELECTORS_MAX_SIZE, "selectors")
    yield from _too_many(s.config, DEVICE_CONFIG_MAX_SIZE, "config")
    if (s.extended_resource_name is not None and extended_resource_field_kept()
            and not is_extended_resource_name(s.extended_resource_name)):
        yield "extendedResourceName", E.invalid(s.extended_resource_name, "must be a valid extended resource name")


# BindingConditionsMaxSize, BindingFailureConditionsMaxSize (pkg/apis/resource/types.go).
BINDING_CONDITIONS_MAX_SIZE = 4
BINDING_FAILURE_CONDITIONS_MAX_SIZE = 4
# validDeviceTaintEffects (sets.List: sorted) and validDeviceTolerationOperators, v1.35 to v1.37.
DEVICE_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
DEVICE_TOLERATION_OPERATORS = ("Equal", "Exists")


def _device_label_value(value: str, path: str) -> Iterator[Problem]:
    """validateLabelValue: one error per message."""
    for message in label_value_errors(value):
        yield path, E.invalid(value, message)


def device_taint(t: model.DeviceTaint) -> Iterator[Problem]:
    """validateDeviceTaint (a ResourceSlice device's taint, a DeviceTaintRule's): a label name
    for key, a label value, an effect NoSchedule, NoExecute or None."""
    problem = _key_problem(t.key)
    if problem:
        yield "key", problem
    if t.value:
        yield from _device_label_value(t.value, "value")
    if not t.effect:
        yield "effect", E.required()
    elif t.effect not in DEVICE_TAINT_EFFECTS:
        yield "effect", E.not_supported(t.effect, DEVICE_TAINT_EFFECTS)


def device_toleration(t: model.DeviceToleration) -> Iterator[Problem]:
    """validateDeviceToleration (a request's): a label name for key if any; Exists without a
    value, Equal with a label value; an effect of a device taint, if any."""
    if t.key:
        problem = _key_problem(t.key)
        if problem:
            yield "key", problem
    if t.operator == "Exists":
        if t.value:
            yield "value", E.invalid(t.value, "must be empty for operator `Exists`")
    elif t.operator == "Equal":
        yield from _device_label_value(t.value, "value")
    elif not t.operator:
        yield "operator", E.required()
    else:
        yield "operator", E.not_supported(t.operator, DEVICE_TOLERATION_OPERATORS)
    if t.effect and t.effect not in DEVICE_TAINT_EFFECTS:
        yield "effect", E.not_supported(t.effect, DEVICE_TAINT_EFFECTS)


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
    yield from _binding_parameters(d.binding_conditions, d.binding_failure_conditions)


def _binding_parameters(conditions, failures) -> Iterator[Problem]:
    """validateDeviceBindingParameters: at most 4 of each, each a label name, no duplicates, no
    overlap, and both or neither."""
    for field_name, items, limit in (("bindingConditions", conditions, BINDING_CONDITIONS_MAX_SIZE),
                                     ("bindingFailureConditions", failures, BINDING_FAILURE_CONDITIONS_MAX_SIZE)):
        if len(items) > limit:
            yield field_name, E.too_many(len(items), limit)
        for i, item in enumerate(items):
            problem = _key_problem(item)
            if problem:
                yield f"{field_name}[{i}]", problem
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        if c in seen:
            yield f"bindingConditions[{i}]", E.duplicate(c)
        seen.add(c)
    seen_failures: set[str] = set()
    for i, c in enumerate(failures):
        if c in seen_failures:
            yield f"bindingFailureConditions[{i}]", E.duplicate(c)
        seen_failures.add(c)
        if c in conditions:
            yield f"bindingFailureConditions[{i}]", E.invalid(c, "bindingFailureConditions must not overlap with "
                                                                 "bindingConditions")
    if not conditions and failures:
        yield "bindingConditions", E.invalid(list(conditions), "bindingConditions are required to use "
                                                                "bindingFailureConditions")
    if not failures and conditions:
        yield "bindingFailureConditions", E.invalid(list(failures), "bindingFailureConditions are required to use "
                                                                     "bindingConditions")


def counter_set(c: model.CounterSet) -> Iterator[Problem]:
    """validateCounterSet: a DNS-label name; counters required, each named as a DNS label."""
    if not c.name:
        yield "name", E.required()
    else:
        yield from _dns_label(c.name, "name")
    if not c.counters:
        yield "counters", E.required()
    for key in c.counters:
        yield from _dns_label(key, f"counters[{key}]")


def device_counter_consumption(c: model.DeviceCounterConsumption) -> Iterator[Problem]:
    """validateDeviceCounterConsumption: the counter set's name (a DNS label) and the counters
    consumed, required, each named as a DNS label."""
    if not c.counter_set:
        yield "counterSet", E.required()
    else:
        yield from _dns_label(c.counter_set, "counterSet")
    if not c.counters:
        yield "counters", E.required()
    for key in c.counters:
        yield from _dns_label(key, f"counters[{key}]")


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

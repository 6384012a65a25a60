"""The API server's validation of the core/v1, storage and scheduling objects the scheduler
reads, as facts transcribed from pkg/apis/core/validation/validation.go (validateTolerations,
validateNodeTaints, ValidateNodeSelectorRequirement, validatePreferredSchedulingTerms,
validatePodAffinityTerm, validateTopologySpreadConstraints, validateContainerPorts,
ValidateResourceQuantityValue) and apimachinery's metav1 validation (ValidateLabels,
ValidateLabelSelector), with their texts; and, for the other kinds the stdlib reads, their enums
(access, volume and binding modes, preemption policies) and a Service's selector."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from typing import Iterator

from ...api import errors as E
from ...api import model
from ...api.selectors import decimal_integer, label_key_errors, label_value_errors

Problem = tuple[str, str]

_CANONICAL_INTEGER = re.compile(r"0|-?[1-9][0-9]*")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
# v1.35 names Lt and Gt among the supported operators even when its gate refuses them.
TOLERATION_OPERATORS_135 = ("Equal", "Exists", "Lt", "Gt")

# The Kubernetes whose API server admitted the objects being read (target.py): v1.35 knows the
# Lt and Gt toleration operators, and accepts them with its TaintTolerationComparisonOperators
# gate (GetValidationOptionsFromPodSpecAndMeta: AllowTaintTolerationComparisonOperators).
_ADMITTED_AS = contextvars.ContextVar("admitted_as", default=None)


@contextlib.contextmanager
def admitted_as(target):
    """Validate what is read inside as ``target``'s API server would (None: v1.35's defaults)."""
    token = _ADMITTED_AS.set(target)
    try:
        yield
    finally:
        _ADMITTED_AS.reset(token)


def _comparison_operators() -> "tuple[bool, bool]":
    """(whether the version knows Lt and Gt, whether its gate accepts them)."""
    target = _ADMITTED_AS.get()
    if target is None:
        return True, False
    return target.minor >= 35, target.gate("TaintTolerationComparisonOperators")


def extended_resource_field_kept() -> bool:
    """Whether the admitting API server keeps a DeviceClass's spec.extendedResourceName: with its
    DRAExtendedResource gate on (v1.36 and v1.37 by default; None is v1.35's default, off)."""
    target = _ADMITTED_AS.get()
    return target is not None and target.gate("DRAExtendedResource")
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
    elif t.operator in ("Lt", "Gt") and _comparison_operators()[0]:
        if not _comparison_operators()[1]:
            yield "operator", E.not_supported(t.operator, TOLERATION_OPERATORS_135)
        elif decimal_integer(t.value) is None:
            # content.IsDecimalInteger, then strconv.ParseInt's range.
            yield "value", E.invalid(t.value, "must be non-empty" if not t.value else
                                     "must be a valid decimal integer in canonical form"
                                     if not _CANONICAL_INTEGER.fullmatch(t.value) else
                                     f'strconv.ParseInt: parsing {E.go_quote(t.value)}: value out of range')
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

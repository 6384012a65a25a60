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


def _admitting():
    """The target whose API server admitted what is being read (the default target when unset)."""
    target = _ADMITTED_AS.get()
    if target is None:
        from ...target import DEFAULT
        return DEFAULT
    return target


def api_gate(name: str) -> bool:
    """A feature gate of the admitting API server: as --feature-gates set it, else its version's
    default; a gate the version does not have yet is off, one it removed after graduation on."""
    target = _admitting()
    return _api_gate(target.version, target.explicit, name)


@functools.lru_cache(maxsize=256)
def _api_gate(version: str, explicit: tuple, name: str) -> bool:
    from ...target import VERSIONS, gate_specs
    given = dict(explicit)
    if name in given:
        return given[name]
    spec = gate_specs(version).get(name)
    if spec is not None:
        return spec.default
    return any(name in gate_specs(v) for v in VERSIONS[:VERSIONS.index(version)])


# ---- fields the API server drops (dropDisabledFields) ------------------------------------------
# pkg/registry/core/node/strategy.go (dropDisabledFields) and pkg/api/pod/util.go
# (dropDisabledFields: dropContainerRestartRules, bindMountOptions, hostUsers), for an object
# created; a field the version's API does not have at all is dropped by its decoding.

def _without(obj: dict, key: str) -> dict:
    return {k: v for k, v in obj.items() if k != key}


_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _containers(spec: dict) -> Iterator[dict]:
    for field in _CONTAINER_LISTS:
        if isinstance(spec.get(field), list):
            yield from (c for c in spec[field] if isinstance(c, dict))


def _has_bind_mount_options(c: dict) -> bool:
    mounts = c.get("volumeMounts")
    return isinstance(mounts, list) and any(isinstance(m, dict) and "bindMountOptions" in m for m in mounts)


def _each_container(spec: dict, change) -> dict:
    out = dict(spec)
    for field in _CONTAINER_LISTS:
        if isinstance(spec.get(field), list):
            out[field] = [change(c) if isinstance(c, dict) else c for c in spec[field]]
    return out


def drop_disabled(kind: str, raw: dict) -> dict:
    """``raw`` without the fields the admitting API server would not store."""
    if kind == "Node":
        status = raw.get("status")
        if isinstance(status, dict) and "declaredFeatures" in status and not api_gate("NodeDeclaredFeatures"):
            return {**raw, "status": _without(status, "declaredFeatures")}
        return raw
    if kind != "Pod" or not isinstance(raw.get("spec"), dict):
        return raw
    # Most pods have none of these fields: nothing is copied for them.
    spec = raw["spec"]
    if any("restartPolicyRules" in c for c in _containers(spec)) and not api_gate("ContainerRestartRules"):
        spec = _each_container(spec, lambda c: _without(c, "restartPolicyRules"))
    if any(_has_bind_mount_options(c) for c in _containers(spec)) and not api_gate("VolumeBindMountOptions"):
        # v1.37 alpha: the field is new there
        spec = _each_container(spec, lambda c: {**c, "volumeMounts": [_without(m, "bindMountOptions")
                                                                      if isinstance(m, dict) else m
                                                                      for m in c["volumeMounts"]]}
                               if _has_bind_mount_options(c) else c)
    if "hostUsers" in spec and not api_gate("UserNamespacesSupport"):
        spec = _without(spec, "hostUsers")
    return raw if spec is raw["spec"] else {**raw, "spec": spec}


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
    yield from _restart_rules(s)
    yield from _bind_mount_options(s)
    # validateHostUsers: hostNetwork with a user namespace only with UserNamespacesHostNetworkSupport
    # (v1.35+, alpha off; pkg/api/pod/util.go useAllowUserNamespacesHostNetworkSupport).
    if s.host_users is False and s.host_network and not api_gate("UserNamespacesHostNetworkSupport"):
        yield "hostNetwork", E.forbidden("when `hostUsers` is false")
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


# ---- NodeDeclaredFeatures: what the API server checks of the fields the plugin reads ------------

# validateNodeDeclaredFeatureName (validation.go, v1.35+): an UpperCamelCase segment, then
# '/'-separated alphanumeric ones; at most a DNS-1123 subdomain's 253 characters.
_DECLARED_FEATURE = re.compile(r"[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*")
_DECLARED_FEATURE_MAX = 253


def node_status(s: model.NodeStatus) -> Iterator[Problem]:
    """validateNodeDeclaredFeatures: valid names, sorted, no repeats."""
    features = s.declared_features
    for i, name in enumerate(features):
        if len(name) > _DECLARED_FEATURE_MAX:
            yield f"declaredFeatures[{i}]", E.invalid(name, f"invalid feature name {E.go_quote(name)}: must be no more "
                                                            f"than {_DECLARED_FEATURE_MAX} characters")
        elif not _DECLARED_FEATURE.fullmatch(name):
            yield f"declaredFeatures[{i}]", E.invalid(name, f"invalid feature name {E.go_quote(name)}: must start with "
                                                            "an UpperCamelCase segment, with subsequent segments separated "
                                                            "by '/' (e.g., MyFeature or MyFeature/mySubFeature), and "
                                                            "contain only alphanumeric characters and slashes")
        if i + 1 < len(features):
            following = features[i + 1]
            if name == following:
                yield f"declaredFeatures[{i + 1}]", E.duplicate(following)
            elif name > following:
                yield f"declaredFeatures[{i + 1}]", E.invalid(following, "list must be sorted alphabetically")


CONTAINER_RESTART_POLICIES = ("Always", "Never", "OnFailure")     # sets.List: sorted
RESTART_RULE_OPERATORS = ("In", "NotIn")
BIND_MOUNT_OPTIONS = ("nodev", "noexec", "nosuid")


def _restart_rules(s: model.PodSpec) -> Iterator[Problem]:
    """validateContainers / validateInitContainerRestartPolicy / validateContainerRestartPolicy, for
    containers that have restartPolicyRules (the loader dropped them where ContainerRestartRules is
    off): the action RestartAllContainers only with RestartAllContainersOnContainerExits (v1.35+),
    which also lets a sidecar (an init container with restartPolicy Always) have rules."""
    if not any(c.restart_policy_rules for c in (*s.containers, *s.init_containers)):
        return
    all_containers = api_gate("RestartAllContainersOnContainerExits")
    for field, containers in (("containers", s.containers), ("initContainers", s.init_containers)):
        for i, c in enumerate(containers):
            if not c.restart_policy_rules:
                continue
            path = f"{field}[{i}]"
            if c.restart_policy is None:
                yield f"{path}.restartPolicy", E.required("must specify restartPolicy when restart rules are used")
            elif field == "initContainers" and c.restart_policy == "Always" and not all_containers:
                yield f"{path}.restartPolicyRules", E.forbidden("restartPolicyRules are not allowed for init "
                                                                "containers with restart policy Always")
            else:
                yield from _restart_policy(c, path, all_containers)


def _restart_policy(c: model.Container, path: str, all_containers: bool) -> Iterator[Problem]:
    if c.restart_policy not in CONTAINER_RESTART_POLICIES:
        yield f"{path}.restartPolicy", E.not_supported(c.restart_policy, CONTAINER_RESTART_POLICIES)
    if len(c.restart_policy_rules) > 20:
        yield f"{path}.restartPolicyRules", E.too_many(len(c.restart_policy_rules), 20)
    actions = ("Restart", "RestartAllContainers") if all_containers else ("Restart",)
    for j, rule in enumerate(c.restart_policy_rules):
        at = f"{path}.restartPolicyRules[{j}]"
        if rule.action not in actions:
            yield f"{at}.action", E.not_supported(rule.action, actions)
        if rule.exit_codes is None:
            yield f"{at}.exitCodes", E.required("must be specified")
        else:
            if rule.exit_codes.operator not in RESTART_RULE_OPERATORS:
                yield f"{at}.exitCodes.operator", E.not_supported(rule.exit_codes.operator, RESTART_RULE_OPERATORS)
            if len(rule.exit_codes.values) > 255:
                yield f"{at}.exitCodes.values", E.too_many(len(rule.exit_codes.values), 255)


def _bind_mount_options(s: model.PodSpec) -> Iterator[Problem]:
    """validateBindMountOptions (v1.37): each option supported, none twice."""
    for field, containers in (("containers", s.containers), ("initContainers", s.init_containers),
                              ("ephemeralContainers", s.ephemeral_containers)):
        for i, c in enumerate(containers):
            for j, m in enumerate(c.volume_mounts):
                seen = set()
                for k, option in enumerate(m.bind_mount_options):
                    at = f"{field}[{i}].volumeMounts[{j}].bindMountOptions[{k}]"
                    if option not in BIND_MOUNT_OPTIONS:
                        yield at, E.not_supported(option, BIND_MOUNT_OPTIONS)
                    if option in seen:
                        yield at, E.duplicate(option)
                    seen.add(option)

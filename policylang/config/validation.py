"""kube-scheduler's validation of a decoded KubeSchedulerConfiguration, as facts transcribed
from pkg/scheduler/apis/config/validation/validation.go (ValidateKubeSchedulerConfiguration)
and validation_pluginargs.go (each plugin's args, after v1's defaults from
pkg/scheduler/apis/config/v1/defaults.go), plus what the framework refuses when it builds a
profile (pkg/scheduler/framework/runtime/framework.go: a plugin that does not exist, one
enabled at a point it does not extend, one registered twice at a point).

``validate(config)`` yields ``(field path, body)`` with apimachinery's field error bodies
(api/errors.py), in kube-scheduler's words.

Two places where the path differs from kube-scheduler's text: validation.go's table keys
NodeResourcesFit's validator as "NodeResourcesFitArgs", so upstream validates those args only
when the plugin is built, with no path ("scoringStrategy.type: Unsupported value…"); here they
carry the full path, as every other plugin's do. A duplicate schedulerName prints the name where
upstream prints the first profile's path as a Go struct.
"""

from __future__ import annotations

import json
import re
from typing import Iterator

from ..api import errors as E
from ..api.selectors import label_key_errors
from ..cluster.validation import node_selector_requirement
from ..plugins import registry

API_VERSION = "kubescheduler.config.k8s.io/v1"
SCORING_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")   # sets.List: sorted
DEFAULTING_TYPES = ("System", "List")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
MAX_CUSTOM_PRIORITY_SCORE = 10
# invalidPluginsByVersion: plugins removed by v1.
REMOVED_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
# The framework's interface per extension point, as its "does not extend" error names it.
POINT_INTERFACES = {"preEnqueue": "PreEnqueuePlugin", "queueSort": "QueueSortPlugin", "preFilter": "PreFilterPlugin",
                    "filter": "FilterPlugin", "postFilter": "PostFilterPlugin", "preScore": "PreScorePlugin",
                    "score": "ScorePlugin", "reserve": "ReservePlugin", "permit": "PermitPlugin",
                    "preBind": "PreBindPlugin", "bind": "BindPlugin", "postBind": "PostBindPlugin"}
# Which of our points a plugin must implement to be enabled at one of theirs.
POINT_NEEDS = {"filter": "filter", "preFilter": "filter", "score": "score", "preScore": "score",
               "postFilter": "postFilter"}

Problem = tuple[str, str]


def _labelname(value: str, path: str) -> Iterator[Problem]:
    """metav1validation.ValidateLabelName: one error per message."""
    for msg in label_key_errors(value):
        yield path, E.invalid(value, msg)


def validate(config: dict, target=None) -> Iterator[Problem]:
    """ValidateKubeSchedulerConfiguration of ``target``'s version and gates (default: the default
    target), on the configuration as decoded (defaults applied here)."""
    from ..target import DEFAULT
    target = DEFAULT if target is None else target
    parallelism = config.get("parallelism", 16)
    if parallelism <= 0:
        yield "parallelism", E.invalid(parallelism, "should be an integer value greater than zero")
    yield from _leader_election(config.get("leaderElection") or {})
    burst = (config.get("clientConnection") or {}).get("burst", 100)
    if burst < 0:
        yield "clientConnection.burst", E.invalid(burst, "must be non-negative")

    profiles = config.get("profiles") or [{}]
    names: dict[str, int] = {}
    for i, profile in enumerate(profiles):
        path = f"profiles[{i}]"
        name = profile.get("schedulerName", "default-scheduler" if len(profiles) == 1 else "")
        if not name:
            yield f"{path}.schedulerName", E.required()
        elif name in names:
            yield f"{path}.schedulerName", E.duplicate(name)
        names.setdefault(name, i)
        yield from _percentage(profile.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
        yield from _plugins(profile.get("plugins") or {}, f"{path}.plugins")
        yield from _plugin_config(profile.get("pluginConfig") or [], path, target)
    yield from _common_queue_sort(profiles)

    yield from _percentage(config.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    initial = config.get("podInitialBackoffSeconds", 1)
    if initial <= 0:
        yield "podInitialBackoffSeconds", E.invalid(initial, "must be greater than 0")
    maximum = config.get("podMaxBackoffSeconds", 10)
    if maximum < initial:
        yield "podMaxBackoffSeconds", E.invalid(maximum, "must be greater than or equal to PodInitialBackoffSeconds")
    yield from _extenders(config.get("extenders") or [])


def _percentage(value, path: str) -> Iterator[Problem]:
    if value is not None and not 0 <= value <= 100:
        yield path, E.invalid(value, "not in valid range [0-100]")


def _seconds(duration: str) -> float:
    """time.ParseDuration, in seconds (the syntax was checked when decoding)."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    sign = -1 if duration.startswith("-") else 1
    return sign * sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)",
                                                               duration))


def _leader_election(le: dict) -> Iterator[Problem]:
    """The resourceLock rule of validation.go and component-base's
    ValidateLeaderElectionConfiguration, with v1's defaults (leaderElect true, leases, 15s/10s/2s)."""
    if not le.get("leaderElect", True):
        return
    lock = le.get("resourceLock") or "leases"
    if lock != "leases":
        yield "leaderElection.resourceLock", E.invalid(lock, 'resourceLock value must be "leases"')
    lease, renew, retry = (_seconds(le[k]) if k in le else d for k, d in
                           (("leaseDuration", 15), ("renewDeadline", 10), ("retryPeriod", 2)))
    if lease <= 0:
        yield "leaderElection.leaseDuration", E.invalid(le.get("leaseDuration"), "must be greater than zero")
    if renew <= 0:
        yield "leaderElection.renewDeadline", E.invalid(le.get("renewDeadline"), "must be greater than zero")
    if retry <= 0:
        yield "leaderElection.retryPeriod", E.invalid(le.get("retryPeriod"), "must be greater than zero")
    if lease <= renew:
        yield "leaderElection.leaseDuration", E.invalid(le.get("leaseDuration", "15s"),
                                                        "LeaseDuration must be greater than RenewDeadline")


def _plugins(plugins: dict, path: str) -> Iterator[Problem]:
    known = registry.known()
    for point, block in plugins.items():
        seen: set[str] = set()
        for j, plugin in enumerate(block.get("enabled") or []):
            at = f"{path}.{point}.enabled[{j}]"
            name = plugin.get("name", "")
            if not name:
                yield f"{at}.name", E.required()
                continue
            if name in REMOVED_PLUGINS:
                if point != "multiPoint":
                    yield at, E.invalid(name, f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration '
                                              f'is version "{API_VERSION}")')
                continue
            if name not in known:
                yield f"{at}.name", f'plugin "{name}" does not exist' + _did_you_mean(name, known)
                continue
            if name in seen:
                yield f"{at}.name", f'plugin "{name}" already registered as "{POINT_INTERFACES.get(point, point)}"'
            seen.add(name)
            if point in POINT_NEEDS and POINT_NEEDS[point] not in registry.implements(name):
                yield f"{at}.name", f'plugin "{name}" does not extend {POINT_INTERFACES[point]} plugin'
            elif point in ("queueSort", "bind") and registry.NO_DECISION_POINTS.get(name) != point:
                # In tree, only PrioritySort sorts the queue and only DefaultBinder binds.
                yield f"{at}.name", f'plugin "{name}" does not extend {POINT_INTERFACES[point]} plugin'
            weight = plugin.get("weight", 0)
            if weight < 0:
                yield f"{at}.weight", E.invalid(weight, "must be greater than or equal to 0")


def _did_you_mean(name: str, options) -> str:
    import difflib
    close = difflib.get_close_matches(name, sorted(options), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _plugin_config(entries: list, path: str, target) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        at = f"{path}.pluginConfig[{i}]"
        name = entry.get("name", "")
        if name in seen:
            yield at, E.duplicate(name)
        seen.add(name)
        if name in REMOVED_PLUGINS:
            yield at, E.invalid(name, f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is '
                                      f'version "{API_VERSION}")')
        elif name in ARGS_VALIDATORS:
            args = entry.get("args")
            yield from ARGS_VALIDATORS[name](args if isinstance(args, dict) else {}, f"{at}.args", target)


def _common_queue_sort(profiles: list) -> Iterator[Problem]:
    """validateCommonQueueSort: every profile has profile 0's queueSort set and its args."""
    def queue_sort(p):
        return (p.get("plugins") or {}).get("queueSort") or {}

    canon = queue_sort(profiles[0])
    enabled = canon.get("enabled") or []
    if len(enabled) > 1:
        yield "profiles[0].plugins.queueSort.Enabled", E.invalid(len(enabled), "only one queue sort plugin can be "
                                                                               "enabled")
    name = enabled[0].get("name") if enabled else None
    canon_args = next((c.get("args") for c in profiles[0].get("pluginConfig") or [] if name and c.get("name") == name),
                      None)
    for i in range(1, len(profiles)):
        current = queue_sort(profiles[i])
        if current != canon:
            yield f"profiles[{i}].plugins.queueSort", E.invalid(json.dumps(current, separators=(",", ":")),
                                                                "must be the same for all profiles")
        for c in profiles[i].get("pluginConfig") or []:
            if name and c.get("name") == name and c.get("args") != canon_args:
                yield f"profiles[{i}].pluginConfig.args", E.invalid(json.dumps(c.get("args"), separators=(",", ":")),
                                                                    "queueSort must be the same for all profiles")


def _extenders(extenders: list) -> Iterator[Problem]:
    """validateExtenders."""
    binders, managed = 0, set()
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        if ext.get("prioritizeVerb") and ext.get("weight", 0) <= 0:
            yield f"{path}.weight", E.invalid(ext.get("weight", 0), "must have a positive weight applied to it")
        if ext.get("bindVerb"):
            binders += 1
        for j, resource in enumerate(ext.get("managedResources") or []):
            at = f"{path}.managedResources[{j}].name"
            name = resource.get("name", "")
            yield from _extended_resource_name(name, at)
            if name in managed:
                yield at, E.invalid(name, "duplicate extender managed resource name")
            managed.add(name)
    if binders > 1:
        yield "extenders", E.invalid(f"found {binders} extenders implementing bind", "only one extender can implement "
                                                                                     "bind")


def _extended_resource_name(name: str, path: str) -> Iterator[Problem]:
    """validateExtendedResourceName: a qualified name, not native (no kubernetes.io/ prefix, has a
    domain), and valid behind "requests." (v1helper.IsExtendedResourceName)."""
    errs = label_key_errors(name)
    if errs:
        for msg in errs:
            yield path, E.invalid(name, msg)
        return
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests.") or label_key_errors("requests." + name):
        yield path, E.invalid(name, "is an invalid extended resource name")


# ---- plugin args (validation_pluginargs.go), each after its v1 defaults -------------------------

def default_preemption(args: dict, path: str, target=None) -> Iterator[Problem]:
    pct = args.get("minCandidateNodesPercentage", 10)
    absolute = args.get("minCandidateNodesAbsolute", 100)
    if not 0 <= pct <= 100:
        yield f"{path}.minCandidateNodesPercentage", E.invalid(pct, "not in valid range [0, 100]")
    if absolute < 0:
        yield f"{path}.minCandidateNodesAbsolute", E.invalid(absolute, "not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        yield f"{path}.minCandidateNodesPercentage", E.invalid(pct, "cannot be zero at the same time as "
                                                                    "minCandidateNodesAbsolute")
        yield f"{path}.minCandidateNodesAbsolute", E.invalid(absolute, "cannot be zero at the same time as "
                                                                       "minCandidateNodesPercentage")


def inter_pod_affinity(args: dict, path: str, target=None) -> Iterator[Problem]:
    weight = args.get("hardPodAffinityWeight", 1)
    if not 0 <= weight <= 100:
        yield f"{path}.hardPodAffinityWeight", E.invalid(weight, "not in valid range [0, 100]")


def _shape(shape: list, path: str) -> Iterator[Problem]:
    """validateFunctionShape."""
    if not shape:
        yield path, E.required("at least one point must be specified")
        return
    for i in range(1, len(shape)):
        if shape[i - 1].get("utilization", 0) >= shape[i].get("utilization", 0):
            yield f"{path}[{i}].utilization", E.invalid(shape[i].get("utilization", 0),
                                                        "values must be sorted in increasing order")
            break
    for i, point in enumerate(shape):
        utilization, score = point.get("utilization", 0), point.get("score", 0)
        if not 0 <= utilization <= 100:
            yield f"{path}[{i}].utilization", E.invalid(utilization, "not in valid range [0, 100]")
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            yield f"{path}[{i}].score", E.invalid(score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")


def defaulted_resources(resources: list | None) -> list:
    """v1's defaults for a list of ResourceSpec: cpu and memory when empty, weight 0 → 1."""
    if not resources:
        return [dict(r) for r in DEFAULT_RESOURCES]
    return [{**r, "weight": r.get("weight") or 1} for r in resources]


def node_resources_fit(args: dict, path: str, target=None) -> Iterator[Problem]:
    for i, res in enumerate(args.get("ignoredResources") or []):
        yield from _labelname(res, f"{path}.ignoredResources[{i}]")
    for i, group in enumerate(args.get("ignoredResourceGroups") or []):
        at = f"{path}.ignoredResourceGroups[{i}]"
        if "/" in group:
            yield at, E.invalid(group, "resource group name can't contain '/'")
        yield from _labelname(group, at)
    strategy = args.get("scoringStrategy")
    at = f"{path}.scoringStrategy"
    if strategy is None:
        return      # defaulted: LeastAllocated on cpu and memory
    kind = strategy.get("type", "")
    if kind not in SCORING_STRATEGIES:
        yield f"{at}.type", E.not_supported(kind, SCORING_STRATEGIES)
    for i, res in enumerate(defaulted_resources(strategy.get("resources"))):
        if not 0 < res["weight"] <= 100:
            yield f"{at}.resources[{i}].weight", E.invalid(res["weight"], f"resource weight of {res.get('name', '')} "
                                                                          "not in valid range (0, 100]")
    ratio = strategy.get("requestedToCapacityRatio")
    if target is not None and target.minor < 36:
        # v1.34/v1.35 validate a ratio's shape wherever it is given, at scoringStrategy.shape, and
        # require none: RequestedToCapacityRatio without one fails when the plugin is built (NewFit
        # reads its shape), which kube-scheduler reports as it starts; policylang reports it here.
        if ratio is not None:
            yield from _shape(ratio.get("shape") or [], f"{at}.shape")
        elif kind == "RequestedToCapacityRatio":
            yield f"{at}.requestedToCapacityRatio", E.required("must be specified when type is "
                                                               "RequestedToCapacityRatio")
        return
    # v1.36 (validation_pluginargs.go ValidateNodeResourcesFitArgs): a ratio exactly when the
    # type is RequestedToCapacityRatio, its shape at requestedToCapacityRatio.shape.
    if kind == "RequestedToCapacityRatio":
        if ratio is None:
            yield f"{at}.requestedToCapacityRatio", E.required("must be specified when type is "
                                                               "RequestedToCapacityRatio")
        else:
            yield from _shape(ratio.get("shape") or [], f"{at}.requestedToCapacityRatio.shape")
    elif ratio is not None:
        yield f"{at}.requestedToCapacityRatio", E.forbidden("must be nil when type is not RequestedToCapacityRatio")


def pod_topology_spread(args: dict, path: str, target=None) -> Iterator[Problem]:
    constraints = args.get("defaultConstraints") or []
    kind = args.get("defaultingType") or "System"
    if kind not in DEFAULTING_TYPES:
        yield f"{path}.defaultingType", E.not_supported(kind, DEFAULTING_TYPES)
    elif kind == "System" and constraints:
        yield f"{path}.defaultingType", E.invalid(kind, "when .defaultConstraints are not empty")
    seen = set()
    for i, c in enumerate(constraints):
        at = f"{path}.defaultConstraints[{i}]"
        skew = c.get("maxSkew", 0)
        if skew <= 0:
            yield f"{at}.maxSkew", E.invalid(skew, "not in valid range (0, inf)")
        key = c.get("topologyKey", "")
        if not key:
            yield f"{at}.topologyKey", E.required("can not be empty")
        else:
            yield from _labelname(key, f"{at}.topologyKey")
        action = c.get("whenUnsatisfiable", "")
        if not action:
            yield f"{at}.whenUnsatisfiable", E.required("can not be empty")
        elif action not in WHEN_UNSATISFIABLE:
            yield f"{at}.whenUnsatisfiable", E.not_supported(action, WHEN_UNSATISFIABLE)
        if c.get("labelSelector") is not None:
            yield f"{at}.labelSelector", E.forbidden("constraint must not define a selector, as they deduced for "
                                                     "each pod")
        if (key, action) in seen:
            yield at, E.duplicate(f"{{{key}, {action}}}")
        seen.add((key, action))


def node_resources_balanced_allocation(args: dict, path: str, target=None) -> Iterator[Problem]:
    seen = set()
    for i, res in enumerate(defaulted_resources(args.get("resources"))):
        at = f"{path}.resources[{i}]"
        name = res.get("name", "")
        if name in seen:
            yield f"{at}.name", E.duplicate(name)
        seen.add(name)
        if res["weight"] != 1:
            yield f"{at}.weight", E.invalid(res["weight"], "must be 1")


def node_affinity(args: dict, path: str, target=None) -> Iterator[Problem]:
    """nodeaffinity.NewNodeSelector / NewPreferredSchedulingTerms: each requirement parses (the
    label requirements as NodeSelectorRequirements; the field ones on metadata.name, one value)."""
    from ..api import model
    added = args.get("addedAffinity") or {}
    at = f"{path}.addedAffinity"
    required = added.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = [(f"{at}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", t)
             for i, t in enumerate(required.get("nodeSelectorTerms") or [])]
    # Upstream's paths for preferred terms leave out ".preference".
    terms += [(f"{at}.preferredDuringSchedulingIgnoredDuringExecution[{i}]", t.get("preference") or {})
              for i, t in enumerate(added.get("preferredDuringSchedulingIgnoredDuringExecution") or [])]
    for term_path, term in terms:
        for j, r in enumerate(term.get("matchExpressions") or []):
            req = model.NodeSelectorRequirement(key=r.get("key", ""), operator=r.get("operator", ""),
                                                values=tuple(r.get("values") or ()))
            for sub, body in node_selector_requirement(req):
                yield f"{term_path}.matchExpressions[{j}].{sub}", body
        for j, r in enumerate(term.get("matchFields") or []):
            fp = f"{term_path}.matchFields[{j}]"
            values = r.get("values") or []
            if len(values) != 1:
                yield f"{fp}.values", E.invalid(values, "must have one element")
            elif r.get("operator") not in ("In", "NotIn"):
                yield f"{fp}.operator", E.invalid(r.get("operator", ""), "not a valid selector operator")
            elif r.get("key") != "metadata.name":
                yield f"{fp}.key", E.not_supported(r.get("key", ""), ("metadata.name",))


def volume_binding(args: dict, path: str, target=None) -> Iterator[Problem]:
    timeout = args.get("bindTimeoutSeconds", 600)
    if timeout < 0:
        yield f"{path}.bindTimeoutSeconds", E.invalid(timeout, "invalid BindTimeoutSeconds, should not be a "
                                                               "negative value")
    # ValidateVolumeBindingArgsWithOptions: with StorageCapacityScoring (beta, on in v1.37) a shape
    # is validated as the score's (an empty or missing one was defaulted, defaults.go); without it
    # any shape is refused.
    if target is not None and target.gate("StorageCapacityScoring"):
        if args.get("shape"):
            yield from _shape(args["shape"], f"{path}.shape")
    elif args.get("shape") is not None:
        yield f"{path}.shape", E.invalid(json.dumps(args["shape"], separators=(",", ":")),
                                         "unexpected field `shape`, remove it or turn on the feature gate "
                                         "StorageCapacityScoring")


def dynamic_resources(args: dict, path: str, target=None) -> Iterator[Problem]:
    timeout = args.get("filterTimeout")
    if timeout is not None and _seconds(timeout) < 0:
        yield f"{path}.filterTimeout", E.invalid(timeout, "must be zero or positive")


ARGS_VALIDATORS = {
    "DefaultPreemption": default_preemption,
    "InterPodAffinity": inter_pod_affinity,
    "NodeAffinity": node_affinity,
    "NodeResourcesBalancedAllocation": node_resources_balanced_allocation,
    "NodeResourcesFit": node_resources_fit,
    "PodTopologySpread": pod_topology_spread,
    "VolumeBinding": volume_binding,
    "DynamicResources": dynamic_resources,
}

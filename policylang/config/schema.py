"""Strict decoding of a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), as
kube-scheduler decodes its --config: every field known, every value of its Go type.

The schema is transcribed as facts from staging/src/k8s.io/kube-scheduler/config/v1/types.go
and types_pluginargs.go (and component-base's LeaderElectionConfiguration and
ClientConnectionConfiguration); the core/v1 types plugin args embed (NodeAffinity,
TopologySpreadConstraint) are read from the cluster model, which has every field of those.

``decode(doc)`` walks the YAML nodes (so every problem has its line and column) and gives the
plain value, the span of every field path it saw, and the problems: unknown fields (with a
did-you-mean, and what became of fields older versions had) and wrongly typed values.
"""

from __future__ import annotations

import difflib
import functools
import re
import typing
from typing import Any

import attrs

from ..frozen import frozen
from ..source import Span
from ..yaml_source import YamlNode


@frozen
class Scalar:
    name: str          # the Go type, as a message names it: string, int32, int64, float64, bool, duration


@frozen
class ListOf:
    item: Any


@frozen
class MapOf:
    value: Any


@frozen
class Obj:
    name: str
    fields: dict = attrs.field(hash=False)


@frozen
class Args:
    """A PluginConfig's args: the schema is chosen by the plugin's name (decodeNestedObjects)."""


STRING, INT32, INT64, FLOAT, BOOL, DURATION = (Scalar(n) for n in ("string", "int32", "int64", "float64", "bool",
                                                                     "duration"))
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
# metav1.Duration: time.ParseDuration's syntax.
_DURATION = re.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+|[-+]?0")

POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve",
          "permit", "preBind", "bind", "postBind")

PLUGIN = Obj("Plugin", {"name": STRING, "weight": INT32})
PLUGIN_SET = Obj("PluginSet", {"enabled": ListOf(PLUGIN), "disabled": ListOf(PLUGIN)})
PLUGINS = Obj("Plugins", {**{p: PLUGIN_SET for p in POINTS}, "multiPoint": PLUGIN_SET})
PLUGIN_CONFIG = Obj("PluginConfig", {"name": STRING, "args": Args()})
PROFILE = Obj("KubeSchedulerProfile", {"schedulerName": STRING, "percentageOfNodesToScore": INT32,
                                       "plugins": PLUGINS, "pluginConfig": ListOf(PLUGIN_CONFIG)})
# component-base/config/v1alpha1/types.go
LEADER_ELECTION = Obj("LeaderElectionConfiguration", {
    "leaderElect": BOOL, "leaseDuration": DURATION, "renewDeadline": DURATION, "retryPeriod": DURATION,
    "resourceLock": STRING, "resourceName": STRING, "resourceNamespace": STRING})
CLIENT_CONNECTION = Obj("ClientConnectionConfiguration", {
    "kubeconfig": STRING, "acceptContentTypes": STRING, "contentType": STRING, "qps": FLOAT, "burst": INT32})
EXTENDER = Obj("Extender", {
    "urlPrefix": STRING, "filterVerb": STRING, "preemptVerb": STRING, "prioritizeVerb": STRING, "weight": INT64,
    "bindVerb": STRING, "enableHTTPS": BOOL,
    "tlsConfig": Obj("ExtenderTLSConfig", {"insecure": BOOL, "serverName": STRING, "certFile": STRING,
                                           "keyFile": STRING, "caFile": STRING, "certData": STRING,
                                           "keyData": STRING, "caData": STRING}),
    "httpTimeout": DURATION, "nodeCacheCapable": BOOL,
    "managedResources": ListOf(Obj("ExtenderManagedResource", {"name": STRING, "ignoredByScheduler": BOOL})),
    "ignorable": BOOL})
CONFIGURATION = Obj("KubeSchedulerConfiguration", {
    "apiVersion": STRING, "kind": STRING, "parallelism": INT32, "leaderElection": LEADER_ELECTION,
    "clientConnection": CLIENT_CONNECTION, "enableProfiling": BOOL, "enableContentionProfiling": BOOL,
    "percentageOfNodesToScore": INT32, "podInitialBackoffSeconds": INT64, "podMaxBackoffSeconds": INT64,
    "profiles": ListOf(PROFILE), "extenders": ListOf(EXTENDER), "delayCacheUntilActive": BOOL})


def _from_model(cls) -> Obj:
    """A core/v1 type's schema from the cluster model's attrs class of it."""
    from ..api import model
    hints = typing.get_type_hints(cls)

    def of(t):
        origin, args = typing.get_origin(t), typing.get_args(t)
        if origin is typing.Union:
            return of(next(a for a in args if a is not type(None)))
        if origin is tuple:
            return ListOf(of(args[0]))
        if origin is dict:
            return MapOf(of(args[1]))
        if attrs.has(t):
            return _from_model(t)
        return {str: STRING, int: INT32, bool: BOOL}[t]

    return Obj(cls.__name__, {model.api_name(a.name): of(hints[a.name]) for a in attrs.fields(cls)})


def _args(name: str, fields: dict) -> Obj:
    return Obj(f"{name}Args", {"apiVersion": STRING, "kind": STRING, **fields})


RESOURCE_SPEC = Obj("ResourceSpec", {"name": STRING, "weight": INT64})
SHAPE = ListOf(Obj("UtilizationShapePoint", {"utilization": INT32, "score": INT32}))


def plugin_args() -> dict[str, Obj]:
    """Each in-tree plugin's args type (types_pluginargs.go); a plugin not here takes none."""
    from ..api import model
    return {
        "DefaultPreemption": _args("DefaultPreemption", {"minCandidateNodesPercentage": INT32,
                                                         "minCandidateNodesAbsolute": INT32}),
        "InterPodAffinity": _args("InterPodAffinity", {"hardPodAffinityWeight": INT32,
                                                       "ignorePreferredTermsOfExistingPods": BOOL}),
        "NodeResourcesFit": _args("NodeResourcesFit", {
            "ignoredResources": ListOf(STRING), "ignoredResourceGroups": ListOf(STRING),
            "scoringStrategy": Obj("ScoringStrategy", {
                "type": STRING, "resources": ListOf(RESOURCE_SPEC),
                "requestedToCapacityRatio": Obj("RequestedToCapacityRatioParam", {"shape": SHAPE})})}),
        "PodTopologySpread": _args("PodTopologySpread", {
            "defaultConstraints": ListOf(_from_model(model.TopologySpreadConstraint)), "defaultingType": STRING}),
        "NodeResourcesBalancedAllocation": _args("NodeResourcesBalancedAllocation",
                                                 {"resources": ListOf(RESOURCE_SPEC)}),
        "VolumeBinding": _args("VolumeBinding", {"bindTimeoutSeconds": INT64, "shape": SHAPE}),
        "NodeAffinity": _args("NodeAffinity", {"addedAffinity": _from_model(model.NodeAffinity)}),
        "DynamicResources": _args("DynamicResources", {"filterTimeout": DURATION, "bindingTimeout": DURATION}),
    }


# Fields of older versions, and where they went (the v1alpha1 Policy API and the fields that
# moved into profiles in v1beta1): said after "unknown field" so a port knows what to do.
MOVED = {
    ("KubeSchedulerConfiguration", "algorithmSource"):
        "the Policy API (algorithmSource) was removed in Kubernetes 1.23; enable and configure plugins in "
        "profiles[].plugins and profiles[].pluginConfig",
    ("KubeSchedulerConfiguration", "schedulerName"): "since v1beta1 it is profiles[].schedulerName",
    ("KubeSchedulerConfiguration", "plugins"): "since v1beta1 it is profiles[].plugins",
    ("KubeSchedulerConfiguration", "pluginConfig"): "since v1beta1 it is profiles[].pluginConfig",
    ("KubeSchedulerConfiguration", "hardPodAffinitySymmetricWeight"):
        "since v1beta1 it is the InterPodAffinity plugin's args: hardPodAffinityWeight",
    ("KubeSchedulerConfiguration", "bindTimeoutSeconds"):
        "since v1beta1 it is the VolumeBinding plugin's args: bindTimeoutSeconds",
    ("KubeSchedulerConfiguration", "healthzBindAddress"): "v1 has no such field: kube-scheduler serves /healthz "
                                                          "on its secure port (--bind-address, --secure-port)",
    ("KubeSchedulerConfiguration", "metricsBindAddress"): "v1 has no such field: kube-scheduler serves /metrics "
                                                          "on its secure port (--bind-address, --secure-port)",
}


@frozen
class Problem:
    path: str
    span: Span
    body: str
    hint: str | None = None     # a did-you-mean, when a close spelling exists: the fix


@attrs.define
class Decoded:
    value: Any
    spans: dict[str, Span]        # field path → where its value is
    problems: list[Problem]

    def span_of(self, path: str, fallback: Span) -> Span:
        """Where a field is: the field, else its nearest ancestor in the file."""
        while path:
            if path in self.spans:
                return self.spans[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return fallback


def _go_type(value) -> str:
    return {bool: "bool", int: "number", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


def _short(value) -> str:
    from ..api.errors import go_value
    text = go_value(value) if isinstance(value, (str, int, float, bool)) else "…"
    return text if len(text) <= 40 else text[:40] + "…"


# Extension points the v1 Plugins type gained (kube-scheduler config/v1/types.go), by the minor
# version that added them: the pod-group ones, which only Workload API plugins implement (not
# modelled here). A configuration may name them from that version on, for instance to disable '*'.
POINTS_SINCE = {"placementGenerate": 36, "placementScore": 36, "podGroupPostFilter": 37}


@functools.cache
def configuration_type(minor: int) -> Obj:
    """KubeSchedulerConfiguration as kube-scheduler 1.<minor> decodes it."""
    extra = [p for p, since in POINTS_SINCE.items() if minor >= since]
    if not extra:
        return CONFIGURATION
    plugins = Obj("Plugins", {**PLUGINS.fields, **{p: PLUGIN_SET for p in extra}})
    profile = Obj("KubeSchedulerProfile", {**PROFILE.fields, "plugins": plugins})
    return Obj("KubeSchedulerConfiguration", {**CONFIGURATION.fields, "profiles": ListOf(profile)})


def decode(doc: YamlNode, minor: "int | None" = None) -> Decoded:
    """The document decoded strictly as kube-scheduler 1.<minor> decodes it (default: the
    default target's version)."""
    from ..target import DEFAULT
    out = Decoded(None, {}, [])
    arg_types = plugin_args()
    out.value = _decode(doc, configuration_type(DEFAULT.minor if minor is None else minor), "", out, arg_types)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _decode(y: YamlNode, t, path: str, out: Decoded, arg_types: dict):
    if y.node.tag == "tag:yaml.org,2002:null":
        return None     # JSON null, or a key with no value: the field is absent
    out.spans[path] = y.value_span
    if isinstance(t, Scalar):
        return _scalar(y, t, path, out)
    if isinstance(t, ListOf):
        if not y.is_seq:
            out.problems.append(Problem(path, y.value_span, f"expected a list, got {_go_type(y.value)}"))
            return None
        items = [_decode(item, t.item, f"{path}[{i}]", out, arg_types) for i, item in enumerate(y)]
        return [_zero(t.item) if v is None else v for v in items]   # a null item is Go's zero value
    if isinstance(t, MapOf):
        if not y.is_map:
            out.problems.append(Problem(path, y.value_span, f"expected an object, got {_go_type(y.value)}"))
            return None
        return {k: _decode(v, t.value, f"{path}[{k}]", out, arg_types) for k, v in y.items()}
    if not y.is_map:
        out.problems.append(Problem(path, y.value_span, f"expected an object ({t.name}), got {_go_type(y.value)}"))
        return None
    value, args = {}, []
    for key, child in y.items():
        field_path = _join(path, key)
        if isinstance(t.fields.get(key), Args):
            args.append((key, child, field_path))    # after the plugin's name, wherever it stands
            continue
        if key not in t.fields:
            close = difflib.get_close_matches(key, list(t.fields), n=1, cutoff=0.6)
            moved = MOVED.get((t.name, key))
            body = f'unknown field "{key}"' + (f" ({moved})" if moved else "")
            out.problems.append(Problem(field_path, child.span, body + (f' (did you mean "{close[0]}"?)'
                                                                         if close and not moved else ""),
                                        close[0] if close and not moved else None))
            continue
        value[key] = _decode(child, t.fields[key], field_path, out, arg_types)
    for key, child, field_path in args:
        if child.node.tag != "tag:yaml.org,2002:null":
            out.spans[field_path] = child.value_span
            value[key] = _plugin_args(child, value.get("name"), field_path, out, arg_types)
    return {k: v for k, v in value.items() if v is not None}


def _zero(t):
    if isinstance(t, (Obj, MapOf)):
        return {}
    if isinstance(t, ListOf):
        return []
    return {"string": "", "duration": "0s", "bool": False}.get(getattr(t, "name", ""), 0)


def _plugin_args(y: YamlNode, name, path: str, out: Decoded, arg_types: dict):
    """decodeNestedObjects: args of an in-tree plugin are decoded strictly as its Args type; a
    plugin without an args type (out of tree, or taking none) keeps them as they are."""
    schema = arg_types.get(name) if isinstance(name, str) else None
    if schema is None or not y.is_map:
        return _decode(y, schema, path, out, arg_types) if schema is not None else y.value
    kind = y.get("kind")
    if kind is not None and kind.scalar not in (None, schema.name):
        out.problems.append(Problem(_join(path, "kind"), kind.value_span,
                                    f"args for plugin {name} were not of type {schema.name}, got {kind.scalar}"))
    return _decode(y, schema, path, out, arg_types)


def _scalar(y: YamlNode, t: Scalar, path: str, out: Decoded):
    value = y.scalar if not (y.is_map or y.is_seq) else y.value

    def wrong():
        out.problems.append(Problem(path, y.value_span,
                                    f"expected {t.name}, got {_go_type(value)} {_short(value)}"))
        return None

    if t.name in ("string", "duration"):
        if not isinstance(value, str):
            return wrong()
        if t.name == "duration" and not _DURATION.fullmatch(value):
            out.problems.append(Problem(path, y.value_span, f'invalid duration "{value}" (e.g. "10s", "1m30s")'))
            return None
        return value
    if t.name == "bool":
        return value if isinstance(value, bool) else wrong()
    if t.name == "float64":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else wrong()
    if isinstance(value, bool) or not isinstance(value, int):
        return wrong()
    low, high = _INT_RANGE[t.name]
    if not low <= value <= high:
        out.problems.append(Problem(path, y.value_span, f"{value} does not fit {t.name}"))
        return None
    return value

"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) → policylang profiles.

A configuration is read as kube-scheduler reads its --config, and refused where kube-scheduler
would refuse to start: strictly decoded (schema.py: unknown fields, wrong types), then
validated (validation.py: enums, ranges, cross-field rules, each plugin's args). Every
error names the field and its line and column in the user's file. It may be the file's only
document, one document among several, or the YAML held in a ConfigMap's data key, as it is
usually deployed.

The configuration is then merged with the target version's default plugins as upstream merges it
(``mergePluginSet``, then the framework's MultiPoint expansion), and becomes ordinary .sched
source: one `profile` per schedulerName, one `use` per plugin with its args as params. That
source is then checked and compiled like any other.
"""

from __future__ import annotations

from pathlib import Path
import re

import attrs
import yaml

from . import schema, validation
from .defaults import default_plugins
from ..diagnostics import InputError, InputErrors
from ..frozen import frozen
from ..inputs import check_node_graph, read_text
from ..syntax.literal import to_literal
from ..plugins import registry
from ..source import Span
from ..yaml_source import YamlNode

# The grammar's PROFILE_NAME: what a schedulerName may be to become `profile NAME`.
_PROFILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
API_VERSIONS = ("kubescheduler.config.k8s.io/v1",)
POINTS = schema.POINTS
# Versions kube-scheduler read once, and the release that stopped reading them (KEP-785).
REMOVED_VERSIONS = {"kubescheduler.config.k8s.io/v1alpha1": "1.19", "kubescheduler.config.k8s.io/v1beta1": "1.23",
                    "kubescheduler.config.k8s.io/v1beta2": "1.28", "kubescheduler.config.k8s.io/v1beta3": "1.29"}

# The default plugins (per target) and what each implements among the points that change a decision are
# the stdlib's own: config/defaults.py and plugins/registry.py read them from default.sched and each plugin's .sched.
# Our extension points and the upstream points they stand for.
OUR_POINTS = {"filter": ("preFilter", "filter"), "score": ("preScore", "score"), "postfilter": ("postFilter",)}


@attrs.define
class _Set:
    enabled: list  # of (name, weight)
    disabled: set


def _plugin_set(raw) -> _Set:
    """A decoded PluginSet (types and names already checked)."""
    raw = raw or {}
    enabled = [(p.get("name", ""), p.get("weight", 0)) for p in raw.get("enabled") or []]
    return _Set(enabled, {p.get("name", "") for p in raw.get("disabled") or []})


def _merge(default: _Set, custom: _Set) -> _Set:
    """mergePluginSet: a custom entry replaces a default one in place; the rest append."""
    disabled = custom.disabled | default.disabled
    custom_index = {name: i for i, (name, _) in enumerate(custom.enabled)}
    replaced, enabled = set(), []
    if "*" not in disabled:
        for name, weight in default.enabled:
            if name in disabled:
                continue
            if name in custom_index:
                replaced.add(custom_index[name])
                name, weight = custom.enabled[custom_index[name]]
            enabled.append((name, weight))
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return _Set(enabled, disabled)


def _expand(point: str, multipoint: _Set, specific: _Set) -> list[str]:
    """The framework's MultiPoint expansion for one extension point: overrides, then
    MultiPoint plugins implementing it, then the point's other plugins."""
    if "*" in specific.disabled:
        return [n for n, _ in specific.enabled]
    explicit = [n for n, _ in specific.enabled]
    from_multipoint, overrides = [], set()
    for name, _ in multipoint.enabled:
        if point not in registry.implements(name) or name in specific.disabled:
            continue
        if name in explicit:
            overrides.add(name)
        elif name not in from_multipoint:
            from_multipoint.append(name)
    return ([n for n in explicit if n in overrides] + from_multipoint
            + [n for n in explicit if n not in overrides])


@frozen
class Configuration:
    """A configuration that kube-scheduler would start with: its decoded value, where its fields
    are in the file, and what the file is (for messages)."""
    path: str
    value: dict
    spans: dict = attrs.field(eq=False, repr=False)
    obj: str | None = None        # "ConfigMap ns/name, data key K" when held in a ConfigMap

    def span_of(self, field: str) -> Span:
        decoded = schema.Decoded(self.value, self.spans, [])
        return decoded.span_of(field, Span(self.path, 1, 1, 1, 2))

    def error(self, field: str | None, message: str) -> InputError:
        span = self.span_of(field or "")
        return InputError(message, path=self.path, obj=self.obj, field=field, line=span.line, column=span.column)


def profile_source(profile: dict, index: int, config: Configuration, lines: dict, target=None) -> str:
    """One profile as .sched source, merged with ``target``'s default plugins (default: the
    default target's); ``lines`` gets, for each line of it, the span in the configuration it
    comes from (so an error in the generated text points into the file)."""
    where = f"profiles[{index}]"
    count = len(config.value.get("profiles") or [{}])
    scheduler_name = profile.get("schedulerName", "default-scheduler" if count == 1 else "")
    if not _PROFILE_NAME.fullmatch(scheduler_name):
        # It becomes the name in `profile NAME {`: never text that could end the line.
        raise config.error(f"{where}.schedulerName",
                           f"not a valid scheduler name here: {scheduler_name!r} (a policylang profile name has "
                           "letters, digits, '_', '.' and '-')")
    plugins = profile.get("plugins") or {}
    multipoint = _merge(_Set(list(default_plugins(target)), set()), _plugin_set(plugins.get("multiPoint")))
    points = {p: _plugin_set(plugins.get(p)) for p in POINTS}
    filters = _expand("filter", multipoint, points["filter"])
    scores = _expand("score", multipoint, points["score"])
    postfilters = _expand("postFilter", multipoint, points["postFilter"])

    weights: dict[str, int] = {}
    for name, weight in points["score"].enabled + multipoint.enabled:
        weights.setdefault(name, weight or 1)

    args, args_at = _plugin_args(profile.get("pluginConfig") or [], where)
    order = list(filters) + [n for n in postfilters + scores if n not in filters]
    order = list(dict.fromkeys(order))
    out = [f"profile {scheduler_name} {{"]
    lines[len(lines) + 1] = config.span_of(where)
    for plugin in order:
        parts = [f"    use {plugin}"]
        if args.get(plugin):
            parts.append(to_literal(args[plugin]))
        if plugin in scores:
            parts.append(f"weight {weights.get(plugin, 1)}")
        for ours, theirs in (("filter", "filter"), ("score", "score"), ("postfilter", "postFilter")):
            implemented = theirs in registry.implements(plugin)
            enabled = plugin in {"filter": filters, "score": scores, "postFilter": postfilters}[theirs]
            if implemented and not enabled:
                parts.append(f"without {ours}")
        out.append(" ".join(parts))
        lines[len(lines) + 1] = config.span_of(args_at.get(plugin, f"{where}.plugins"))
    pct = profile.get("percentageOfNodesToScore", config.value.get("percentageOfNodesToScore"))
    if pct is not None:
        out.append(f"    percentage_of_nodes_to_score {pct}")
        lines[len(lines) + 1] = config.span_of(f"{where}.percentageOfNodesToScore")
    out.append("}")
    lines[len(lines) + 1] = config.span_of(where)
    return "\n".join(out) + "\n"


def _plugin_args(entries: list, where: str) -> tuple[dict, dict]:
    """The args each plugin's params take (v1's defaults applied where the stdlib's params do
    not already hold them), and the path of each plugin's args. Args a plugin has no param for
    (DynamicResources' timeouts, VolumeBinding's bindTimeoutSeconds) change no decision here:
    they were validated, and are left out."""
    out, at = {}, {}
    for i, entry in enumerate(entries):
        name, args = entry.get("name", ""), entry.get("args")
        if not isinstance(args, dict) or name not in registry.plugins():
            continue
        params = registry.params(name)
        kept = {k: v for k, v in args.items() if k in params}
        strategy = kept.get("scoringStrategy")
        if name == "NodeResourcesFit" and isinstance(strategy, dict):
            kept["scoringStrategy"] = {**strategy,
                                       "resources": validation.defaulted_resources(strategy.get("resources"))}
        if name == "NodeResourcesBalancedAllocation" and "resources" in kept:
            kept["resources"] = validation.defaulted_resources(kept["resources"])
        out[name] = kept
        at[name] = f"{where}.pluginConfig[{i}].args"
    return out, at


# ---- reading a configuration ----------------------------------------------------------------------

def _compose(text: str, path: str) -> list:
    try:
        # The pure-Python loader: its marks can be moved (a ConfigMap's embedded document), and a
        # configuration is small.
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise InputError(f"invalid YAML{where}: {getattr(err, 'problem', None) or err}", path=path) from None
    except RecursionError:
        raise InputError("nested too deeply", path=path) from None
    for node in nodes:
        if node is not None:
            check_node_graph(node, path)
    return [YamlNode(n, path) for n in nodes if n is not None]


def _kind(doc: YamlNode):
    kind = doc.get("kind") if doc.is_map else None
    return kind.scalar if kind is not None else None


def _shift(node: yaml.Node, lines: int, columns: int) -> None:
    """Move the marks of a document composed from a ConfigMap's value to where that value's
    text stands in the file (a block scalar: `lines` below, `columns` to the right)."""
    stack, seen, moved = [node], set(), set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for mark in (n.start_mark, n.end_mark):
            if id(mark) not in moved:     # nodes may share a mark: move each once
                moved.add(id(mark))
                mark.column += columns
                mark.line += lines
        if isinstance(n, yaml.MappingNode):
            stack += [x for pair in n.value for x in pair]
        elif isinstance(n, yaml.SequenceNode):
            stack += n.value


def _from_config_map(doc: YamlNode, text: str, path: str) -> list[tuple[YamlNode, str]]:
    """The configurations held in a ConfigMap's data keys, with their marks in the file."""
    found = []
    data = doc.get("data")
    meta = doc.get("metadata")
    ns, name = (meta.get(k) if meta is not None and meta.is_map else None for k in ("namespace", "name"))
    label = "/".join(str(x.scalar) for x in (ns, name) if x is not None and x.scalar is not None)
    for key, value in (data.items() if data is not None and data.is_map else ()):
        if not isinstance(value.scalar, str) or "KubeSchedulerConfiguration" not in value.scalar:
            continue
        try:
            inner = [d for d in _compose(value.scalar, path) if _kind(d) == "KubeSchedulerConfiguration"]
        except InputError as err:
            raise InputError(f"data key {key!r}: {err.message} (lines counted in the key's text)", path=path,
                             line=value.span.line, column=value.span.column) from None
        for d in inner:
            start = value.node.start_mark
            if value.node.style == "|":     # literal: the text's lines are the file's lines
                body = text.splitlines()[start.line + 1:]
                first = next((ln for ln in body if ln.strip()), "")
                _shift(d.node, start.line + 1, len(first) - len(first.lstrip(" ")))
            else:   # a quoted or plain scalar: every field is reported at the data key
                _flatten_marks(d.node, value.span)
            found.append((d, f"ConfigMap {label}, data key {key}"))
    return found


def _flatten_marks(node: yaml.Node, span: Span) -> None:
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for mark in (n.start_mark, n.end_mark):
            mark.line, mark.column = span.line - 1, span.column - 1
        if isinstance(n, yaml.MappingNode):
            stack += [x for pair in n.value for x in pair]
        elif isinstance(n, yaml.SequenceNode):
            stack += n.value


def find_configuration(path: str, text: str) -> tuple[YamlNode, str | None]:
    """The one KubeSchedulerConfiguration in a file: a document of it, or a ConfigMap's data
    key holding it; a clear error when there is none or more than one."""
    docs = _compose(text, path)
    found: list[tuple[YamlNode, str | None]] = []
    for doc in docs:
        kind = _kind(doc)
        if kind == "KubeSchedulerConfiguration":
            found.append((doc, None))
        elif kind == "ConfigMap":
            found += _from_config_map(doc, text, path)
    if not found:
        kinds = ", ".join(sorted({str(_kind(d)) for d in docs})) or "none"
        raise InputError(f"no KubeSchedulerConfiguration in this file (kinds found: {kinds}); give a file with one, "
                         "or a ConfigMap holding one in a data key", path=path, field="kind")
    if len(found) > 1:
        lines = ", ".join(str(d.span.line) for d, _ in found)
        raise InputError(f"{len(found)} KubeSchedulerConfigurations in this file (at lines {lines}); kube-scheduler "
                         "reads one: give a file with one", path=path)
    return found[0]


def is_configuration(path: str | Path) -> bool:
    """Whether a file holds a KubeSchedulerConfiguration (as YAML or JSON, alone, among other
    documents, or in a ConfigMap), whatever its name."""
    try:
        text = read_text(path)
    except InputError:
        return False
    if "KubeSchedulerConfiguration" not in text:
        return False
    try:
        find_configuration(str(path), text)
    except InputError:
        return False
    return True


@frozen
class ConfigProblem:
    """Why kube-scheduler would refuse a configuration: at a field (its path and span)."""
    field: str | None
    span: Span
    message: str
    stage: str               # "version", "decoding" (unknown fields, types) or "validation"
    hint: str | None = None  # the one close spelling of a misspelt field: a certain fix


def check_configuration(doc: YamlNode, path: str, obj: str | None = None,
                        target=None) -> tuple[Configuration | None, list[ConfigProblem]]:
    """A configuration document checked as kube-scheduler of ``target``'s version and gates
    (default: the default target) checks its --config: the apiVersion, then strict decoding,
    then validation (each stage only when the one before passed, as kube-scheduler stops at the
    first that fails)."""
    from ..target import DEFAULT
    target = DEFAULT if target is None else target
    release = f"v{target.version}"
    version = doc.get("apiVersion")
    value = version.scalar if version is not None else None
    if value not in API_VERSIONS:
        where = version.value_span if version is not None else doc.span
        if value in REMOVED_VERSIONS:
            message = (f"apiVersion {value} was removed in Kubernetes {REMOVED_VERSIONS[value]}; kube-scheduler {release} "
                       f"reads only {API_VERSIONS[0]} (its defaults differ: port the file, then check plugin weights "
                       "and args against v1's)")
        else:
            message = f"unsupported apiVersion {value!r}: kube-scheduler {release} reads {API_VERSIONS[0]}"
        return None, [ConfigProblem("apiVersion", where, message, "version")]
    decoded = schema.decode(doc, target.minor)
    if decoded.problems:
        return None, [ConfigProblem(p.path or None, p.span, p.body, "decoding", p.hint) for p in decoded.problems]
    config = Configuration(path, decoded.value or {}, decoded.spans, obj)
    problems = [ConfigProblem(field, config.span_of(field), body, "validation")
                for field, body in validation.validate(config.value, target)]
    return (None if problems else config), problems


def read_configuration(path: str | Path, target=None) -> Configuration:
    """The file's configuration, decoded strictly and validated as kube-scheduler of ``target``
    (default: the default target) does; InputErrors (every problem, each with its line and
    column) where it would refuse to start."""
    path = str(path)
    doc, obj = find_configuration(path, read_text(path))
    config, problems = check_configuration(doc, path, obj, target)
    if problems:
        raise InputErrors([InputError(p.message, path=path, obj=obj, field=p.field, line=p.span.line,
                                      column=p.span.column) for p in problems])
    return config


def configuration_source(config: Configuration, target=None) -> tuple[str, dict]:
    """The .sched text equivalent to a configuration for ``target`` (its default plugins), and
    for each of its lines the span in the configuration file it comes from."""
    name = "".join(c if c.isprintable() else "?" for c in Path(config.path).name)
    lines: dict[int, Span] = {1: Span(config.path, 1, 1, 1, 2)}
    text = f"# Generated from {name} (KubeSchedulerConfiguration).\n"
    profiles = config.value.get("profiles") or [{}]
    for i, profile in enumerate(profiles):
        if i:
            text += "\n"
            lines[len(lines) + 1] = config.span_of(f"profiles[{i}]")
        text += profile_source(profile, i, config, lines, target)
    return text, lines


def config_source(path: str | Path, target=None) -> str:
    """The .sched text equivalent to a KubeSchedulerConfiguration file, for ``target``."""
    return configuration_source(read_configuration(path, target), target)[0]

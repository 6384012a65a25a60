"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) → policylang profiles.

The configuration is merged with v1.35's default plugins as upstream merges it
(``mergePluginSet``, then the framework's MultiPoint expansion), and becomes ordinary
.sched source: one `profile` per schedulerName, one `use` per plugin with its args as
params. That source is then checked and compiled like any other.
"""

from __future__ import annotations

from pathlib import Path
import re

import attrs

from .diagnostics import InputError
from .inputs import read_text, yaml_document
from .literal import to_literal
from .plugins import registry

# The grammar's PROFILE_NAME: what a schedulerName may be to become `profile NAME`.
_PROFILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
API_VERSIONS = ("kubescheduler.config.k8s.io/v1",)
POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve",
          "permit", "preBind", "bind", "postBind")

# v1.35's default plugins and what each implements among the points that change a decision are
# the stdlib's own: plugins/registry.py reads them from default.sched and each plugin's .sched.
# Our extension points and the upstream points they stand for.
OUR_POINTS = {"filter": ("preFilter", "filter"), "score": ("preScore", "score"), "postfilter": ("postFilter",)}


@attrs.define
class _Set:
    enabled: list  # of (name, weight)
    disabled: set


def _plugin_set(raw, where: str, path: str) -> _Set:
    raw = raw or {}
    if not isinstance(raw, dict):
        raise InputError("expected enabled/disabled lists", path=path, field=where)
    enabled, disabled = [], set()
    for key, into in (("enabled", enabled), ("disabled", None)):
        if not isinstance(raw.get(key) or [], list):
            raise InputError("expected a list of plugins", path=path, field=f"{where}.{key}")
        for i, p in enumerate(raw.get(key) or []):
            if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                raise InputError("each plugin needs a name", path=path, field=f"{where}.{key}[{i}]")
            weight = p.get("weight", 0)
            if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
                raise InputError(f"weight must be a non-negative integer, got {weight!r}", path=path,
                                 field=f"{where}.{key}[{i}].weight")
            if into is None:
                disabled.add(p["name"])
            else:
                into.append((p["name"], weight))
    return _Set(enabled, disabled)


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


def profile_source(profile: dict, index: int, path: str, global_pct) -> str:
    where = f"profiles[{index}]"
    scheduler_name = profile.get("schedulerName") or "default-scheduler"
    if not isinstance(scheduler_name, str) or not _PROFILE_NAME.fullmatch(scheduler_name):
        # It becomes the name in `profile NAME {`: never text that could end the line.
        raise InputError(f"not a valid scheduler name: {scheduler_name!r}", path=path,
                         field=f"{where}.schedulerName")
    plugins = profile.get("plugins") or {}
    if not isinstance(plugins, dict):
        raise InputError("expected a mapping of extension points", path=path, field=f"{where}.plugins")
    for key in plugins:
        if key != "multiPoint" and key not in POINTS:
            raise InputError(f"unknown extension point '{key}'", path=path, field=f"{where}.plugins.{key}")
    multipoint = _merge(_Set(list(registry.default_plugins()), set()),
                        _plugin_set(plugins.get("multiPoint"), f"{where}.plugins.multiPoint", path))
    points = {p: _plugin_set(plugins.get(p), f"{where}.plugins.{p}", path) for p in POINTS}
    filters = _expand("filter", multipoint, points["filter"])
    scores = _expand("score", multipoint, points["score"])
    postfilters = _expand("postFilter", multipoint, points["postFilter"])

    weights: dict[str, int] = {}
    for name, weight in points["score"].enabled + multipoint.enabled:
        weights.setdefault(name, weight or 1)

    known = registry.known()
    for plugin in sorted({*filters, *scores, *postfilters, *(n for n, _ in multipoint.enabled)}):
        if plugin not in known:
            raise InputError(f"unknown plugin '{plugin}'", path=path, field=f"{where}.plugins")

    args = _plugin_args(profile.get("pluginConfig"), where, path)
    order = list(filters) + [n for n in postfilters + scores if n not in filters]
    order = list(dict.fromkeys(order))
    lines = [f"profile {scheduler_name} {{"]
    for plugin in order:
        parts = [f"    use {plugin}"]
        if plugin in args and args[plugin]:
            parts.append(to_literal(args[plugin]))
        if plugin in scores:
            parts.append(f"weight {weights.get(plugin, 1)}")
        for ours, theirs in (("filter", "filter"), ("score", "score"), ("postfilter", "postFilter")):
            implemented = theirs in registry.implements(plugin)
            enabled = plugin in {"filter": filters, "score": scores, "postFilter": postfilters}[theirs]
            if implemented and not enabled:
                parts.append(f"without {ours}")
        lines.append(" ".join(parts))
    pct = profile.get("percentageOfNodesToScore", global_pct)
    if pct is not None:
        if not isinstance(pct, int) or isinstance(pct, bool) or not 0 <= pct <= 100:
            raise InputError(f"must be an integer in 0..100, got {pct!r}", path=path,
                             field=f"{where}.percentageOfNodesToScore")
        lines.append(f"    percentage_of_nodes_to_score {pct}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _plugin_args(raw, where: str, path: str) -> dict:
    out = {}
    if not isinstance(raw or [], list):
        raise InputError("expected a list of {name, args}", path=path, field=f"{where}.pluginConfig")
    for i, entry in enumerate(raw or []):
        field = f"{where}.pluginConfig[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InputError("each pluginConfig entry needs a name", path=path, field=field)
        args = entry.get("args") or {}
        if not isinstance(args, dict):
            raise InputError("args must be a mapping", path=path, field=f"{field}.args")
        out[entry["name"]] = {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}
    return out


def config_source(path: str | Path) -> str:
    """The .sched text equivalent to a KubeSchedulerConfiguration file."""
    path = str(path)
    doc = yaml_document(read_text(path), path)
    if not isinstance(doc, dict) or doc.get("kind") != "KubeSchedulerConfiguration":
        raise InputError("expected kind: KubeSchedulerConfiguration", path=path, field="kind")
    if doc.get("apiVersion") not in API_VERSIONS:
        raise InputError(f"unsupported apiVersion {doc.get('apiVersion')!r} (want {API_VERSIONS[0]})",
                         path=path, field="apiVersion")
    profiles = doc.get("profiles") or [{"schedulerName": "default-scheduler"}]
    if not isinstance(profiles, list) or not all(isinstance(p, dict) for p in profiles):
        raise InputError("expected a list of profiles (mappings)", path=path, field="profiles")
    name = "".join(c if c.isprintable() else "?" for c in Path(path).name)
    header = f"# Generated from {name} (KubeSchedulerConfiguration).\n"
    return header + "\n".join(profile_source(p, i, path, doc.get("percentageOfNodesToScore"))
                              for i, p in enumerate(profiles))

"""KubeSchedulerConfiguration files: what kube-scheduler would refuse to start with."""

from __future__ import annotations

import difflib
import re

from ...plugins import registry
from ..edits import Text
from ..model import Edit
from ..registry import rule

# Extension points whose plugins we know exactly, and who implements them.
POINT_NEEDS = {"filter": "filter", "preFilter": "filter", "score": "score", "preScore": "score",
               "postFilter": "postFilter"}
SINGLE_PLUGIN_POINTS = {point: {name} for name, point in registry.NO_DECISION_POINTS.items()}

CONFIG_HEAD = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
"""

UNKNOWN_PLUGIN = rule(
    "S106", "unknown-plugin", "correctness", "error", example_lang="yaml",
    summary="A plugin name or extension point kube-scheduler does not have.",
    rationale="""kube-scheduler refuses to start when a profile enables, disables or configures a
    plugin its registry does not have, or names an extension point that does not exist; a typo in
    a plugin name therefore takes scheduling down. If you run a scheduler built with out-of-tree
    plugins, ignore this rule for that file.""",
    bad=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourceFit
        weight: 2""",
    good=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 2""")

PERCENTAGE = rule(
    "S107", "percentage-of-nodes-to-score", "correctness", "error", example_lang="yaml",
    summary="percentageOfNodesToScore outside 0..100.",
    rationale="""percentageOfNodesToScore is a percentage: 0 means kube-scheduler's adaptive default,
    100 means every feasible node is scored. The configuration is rejected with any other value.""",
    bad=CONFIG_HEAD + "percentageOfNodesToScore: 150",
    good=CONFIG_HEAD + "percentageOfNodesToScore: 50")

DUPLICATE_PROFILE = rule(
    "S109", "duplicate-scheduler-name", "correctness", "error", example_lang="yaml",
    summary="Two profiles with the same schedulerName.",
    rationale="""Pods choose a profile by spec.schedulerName, so each profile needs its own name
    (only a configuration's single profile may leave it out, to be default-scheduler);
    kube-scheduler refuses a configuration where two profiles share one.""",
    bad=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: ImageLocality""",
    good=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
- schedulerName: no-image-locality
  plugins:
    score:
      disabled:
      - name: ImageLocality""")

WRONG_POINT = rule(
    "S110", "plugin-not-at-extension-point", "correctness", "error", example_lang="yaml",
    summary="A plugin enabled at an extension point it does not implement.",
    rationale="""Each plugin implements some extension points: NodePorts filters but does not score,
    ImageLocality scores but does not filter. Enabling a plugin at a point it does not implement
    makes kube-scheduler fail at startup (`does not extend score plugin`). Use multiPoint to enable
    a plugin wherever it applies.""",
    bad=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodePorts
        weight: 1""",
    good=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodePorts""")

API_VERSION = rule(
    "S114", "unsupported-config-version", "correctness", "error", example_lang="yaml",
    summary="A KubeSchedulerConfiguration apiVersion current kube-scheduler no longer reads.",
    rationale="""kubescheduler.config.k8s.io/v1beta2 and v1beta3 were removed (in Kubernetes 1.28 and
    1.29); only v1 is read. Their defaults also differ from v1's, so porting a file is more than
    changing the version: check the plugin weights and args against v1's defaults.""",
    bad="""
apiVersion: kubescheduler.config.k8s.io/v1beta3
kind: KubeSchedulerConfiguration""",
    good="""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration""")


def profiles(doc):
    seq = doc.get("profiles")
    return [p for p in seq if p.is_map] if seq is not None and seq.is_seq else []


def plugin_entries(profile):
    """(point, enabled|disabled, name, node of the name) for every plugin a profile lists."""
    plugins = profile.get("plugins")
    if plugins is None or not plugins.is_map:
        return
    for point, block in plugins.items():
        if not block.is_map:
            continue
        for key in ("enabled", "disabled"):
            seq = block.get(key)
            for entry in (seq if seq is not None and seq.is_seq else []):
                name = entry.get("name") if entry.is_map else None
                if name is not None and isinstance(name.scalar, str):
                    yield point, key, name.scalar, name


@UNKNOWN_PLUGIN.on("config")
def _unknown(ctx):
    from ...config.read import POINTS     # here: linting a .sched file needs no configuration reader

    for profile in profiles(ctx.doc):
        plugins = profile.get("plugins")
        for point, block in (plugins.items() if plugins is not None else ()):
            if point != "multiPoint" and point not in POINTS:
                yield UNKNOWN_PLUGIN.finding(f"unknown extension point '{point}'", block.span,
                                             *_did_you_mean(point, POINTS + ("multiPoint",)))
        for point, state, name, node in plugin_entries(profile):
            if name not in registry.known() and not (state == "disabled" and name == "*"):
                yield UNKNOWN_PLUGIN.finding(f"unknown plugin '{name}'", node.value_span,
                                             *_did_you_mean(name, registry.known()))
        config = profile.get("pluginConfig")
        for entry in (config if config is not None and config.is_seq else []):
            name = entry.get("name") if entry.is_map else None
            if name is not None and isinstance(name.scalar, str) and name.scalar not in registry.known():
                yield UNKNOWN_PLUGIN.finding(f"pluginConfig for unknown plugin '{name.scalar}'", name.value_span,
                                             *_did_you_mean(name.scalar, registry.known()))


def _did_you_mean(name, options) -> tuple[str, ...]:
    close = difflib.get_close_matches(name, sorted(options), n=1, cutoff=0.6)
    return (f"help: did you mean '{close[0]}'?",) if close else ()


@PERCENTAGE.on("config")
def _percentage(ctx):
    for holder in [ctx.doc] + profiles(ctx.doc):
        pct = holder.get("percentageOfNodesToScore")
        if pct is None or pct.scalar is None:
            continue
        v = pct.scalar
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 100:
            yield PERCENTAGE.finding(f"percentageOfNodesToScore is {v!r}; it must be a whole number in 0..100",
                                     pct.span)


@DUPLICATE_PROFILE.on("config")
def _duplicates(ctx):
    seen = {}
    listed = profiles(ctx.doc)
    for profile in listed:
        name_node = profile.get("schedulerName")
        if (name_node is None or not name_node.scalar) and len(listed) > 1:
            continue    # v1 names only a single profile default-scheduler: S117 reports it unnamed
        name = name_node.scalar if name_node is not None and name_node.scalar else "default-scheduler"
        where = name_node if name_node is not None else profile
        if name in seen:
            yield DUPLICATE_PROFILE.finding(f"a profile named '{name}' is already declared on line {seen[name]}",
                                            where.span, "help: give each profile its own schedulerName")
        else:
            seen[name] = where.span.line


@WRONG_POINT.on("config")
def _wrong_point(ctx):
    for profile in profiles(ctx.doc):
        for point, state, name, node in plugin_entries(profile):
            if state != "enabled" or name not in registry.known():
                continue
            if point in POINT_NEEDS and POINT_NEEDS[point] not in registry.implements(name):
                yield WRONG_POINT.finding(f"{name} is not a {point} plugin", node.value_span,
                                          f"help: {name} implements {_implements(name)}")
            elif point in SINGLE_PLUGIN_POINTS and name not in SINGLE_PLUGIN_POINTS[point]:
                yield WRONG_POINT.finding(f"{name} is not a {point} plugin", node.value_span)


def _implements(name: str) -> str:
    points = sorted(registry.implements(name))
    return ", ".join(points) if points else "none of filter, score and postFilter"


@API_VERSION.on("config")
def _api_version(ctx):
    from ...config.read import API_VERSIONS, REMOVED_VERSIONS

    version = ctx.doc.get("apiVersion")
    value = version.scalar if version is not None else None
    if value not in API_VERSIONS:
        removed = f" (removed in Kubernetes {REMOVED_VERSIONS[value]})" if value in REMOVED_VERSIONS else ""
        yield API_VERSION.finding(f"apiVersion {value!r} is not read by current kube-scheduler{removed}",
                                  (version or ctx.doc).span, f"help: use {API_VERSIONS[0]}")


# ---- what kube-scheduler's strict decoding and validation refuse (config.check_configuration) ----

UNKNOWN_FIELD = rule(
    "S115", "unknown-config-field", "correctness", "error", example_lang="yaml", fixable=True,
    summary="A field KubeSchedulerConfiguration v1 does not have (a typo, or a field of an older version).",
    rationale="""kube-scheduler decodes its configuration strictly: a field it does not know, such as
    `pluginConfigs` for `pluginConfig` or the long-removed `algorithmSource`, stops it from
    starting (`strict decoding error: unknown field`). Where one known field is a close spelling,
    `--fix` renames the field to it.""",
    bad=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  pluginConfigs:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated}""",
    good=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated}""")

SCORING_STRATEGY = rule(
    "S116", "unsupported-scoring-strategy", "correctness", "error", example_lang="yaml", fixable=True,
    summary="A NodeResourcesFit scoringStrategy type other than LeastAllocated, MostAllocated and "
            "RequestedToCapacityRatio.",
    rationale="""NodeResourcesFit scores by one of three strategies; any other type (a typo such as
    `MostAlocated`) is refused by kube-scheduler's validation (`Unsupported value`), so the
    scheduler does not start. Where one strategy is a close spelling, `--fix` writes it.""",
    bad=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAlocated}""",
    good=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated}""")

REFUSED = rule(
    "S117", "invalid-config-value", "correctness", "error", example_lang="yaml",
    summary="A value kube-scheduler's validation refuses: a wrong type, a range, an enum, a cross-field "
            "rule, a plugin's args.",
    rationale="""Beyond unknown fields and plugin names, kube-scheduler validates every value of its
    configuration (pkg/scheduler/apis/config/validation: parallelism, backoffs, leader election,
    queueSort alike in every profile, each plugin's args: DefaultPreemption's candidates,
    InterPodAffinity's hardPodAffinityWeight, NodeResourcesFit's resources and shape,
    PodTopologySpread's defaultConstraints, …) and refuses to start when one is invalid. The
    finding gives kube-scheduler's own message.""",
    bad=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 150""",
    good=CONFIG_HEAD + """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 50""")

# What the rules above already report, so S117 does not say it twice.
_OTHER_RULES = (
    (re.compile(r"percentageOfNodesToScore$"), re.compile("not in valid range")),       # S107
    (re.compile(r"schedulerName$"), re.compile("^Duplicate value")),                    # S109
    (re.compile(r""), re.compile(r'^plugin ".*" does not (exist|extend)')),             # S106, S110
    (re.compile(r"scoringStrategy\.type$"), re.compile("^Unsupported value")),          # S116
)


def _problems(ctx):
    from ...config.read import check_configuration
    return check_configuration(ctx.doc, ctx.path)[1]


def _rename(ctx, span, new: str):
    """The edit replacing the text at a single-line span (a key or a plain scalar) with ``new``,
    keeping its quotes; none inside a ConfigMap's embedded text, whose offsets are not the file's."""
    if ctx.embedded or span.line != span.end_line:
        return ()
    text = Text(ctx.text)
    start, end = text.offset(span.line, span.column), text.offset(span.end_line, span.end_column)
    old = ctx.text[start:end]
    quote = old[0] if old[:1] in ("'", '"') and old[-1:] == old[:1] and len(old) > 1 else ""
    return (Edit(start, end, f"{quote}{new}{quote}"),)


@UNKNOWN_FIELD.on("config")
def _unknown_field(ctx):
    for p in _problems(ctx):
        if p.stage == "decoding" and p.message.startswith("unknown field") and \
                not re.search(r"\.plugins\.[^.]+$", p.field or ""):    # an extension point: S106's
            key = p.field.rsplit(".", 1)[-1] if p.field else ""
            fix = _rename(ctx, p.span, p.hint) if p.hint else ()
            yield UNKNOWN_FIELD.finding(f"{p.field}: {p.message}", p.span,
                                        *((f"help: rename '{key}' to '{p.hint}'",) if p.hint else ()), edits=fix)


@SCORING_STRATEGY.on("config")
def _scoring_strategy(ctx):
    from ...config.validation import SCORING_STRATEGIES
    for profile in profiles(ctx.doc):
        config = profile.get("pluginConfig")
        for entry in (config if config is not None and config.is_seq else []):
            name = entry.get("name") if entry.is_map else None
            kind = entry.at("args", "scoringStrategy", "type") if entry.is_map else None
            if name is None or name.scalar != "NodeResourcesFit" or kind is None or kind.scalar in SCORING_STRATEGIES:
                continue
            value = kind.scalar
            close = difflib.get_close_matches(str(value), SCORING_STRATEGIES, n=1, cutoff=0.6)
            supported = ", ".join(f'"{s}"' for s in SCORING_STRATEGIES)
            yield SCORING_STRATEGY.finding(f"scoringStrategy type {value!r} is not one of {supported}",
                                           kind.value_span, *((f"help: did you mean '{close[0]}'?",) if close else ()),
                                           edits=_rename(ctx, kind.value_span, close[0]) if close else ())


@REFUSED.on("config")
def _refused(ctx):
    for p in _problems(ctx):
        if p.stage == "version" or (p.stage == "decoding" and p.message.startswith("unknown field")):
            continue    # S114, S115
        if any(path.search(p.field or "") and text.search(p.message) for path, text in _OTHER_RULES):
            continue
        yield REFUSED.finding(f"{p.field}: {p.message}" if p.field else p.message, p.span)

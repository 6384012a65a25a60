"""Scores and profiles: scores that cannot rank nodes, scores whose filter is gone, and
weights that say nothing."""

from __future__ import annotations

import attrs

from ...syntax import ast
from ...diagnostics import InputError, PolicyError
from ...frozen import frozen
from ...syntax.parse import parse
from ...plugins import registry
from ..registry import rule
from ..sched_ast import const_int, head_span, name_span
from .config import plugin_entries, profiles

SCORE_IGNORES_NODE = rule(
    "S203", "score-ignores-node", "suspicious", "warning",
    summary="A score `value` (or a `prefer` condition) that does not depend on `node`.",
    rationale="""Scores rank the feasible nodes against each other. A value computed from the pod, the
    cluster, params or `feasible` alone is the same on every node, so it adds the same amount to
    every total and never changes where a pod goes, while still costing a pass over the nodes;
    the same holds for a `prefer` whose condition does not look at the node. A literal value is
    taken as deliberate (a plugin that scores every node alike, as DynamicResources does for pods
    without claims) and not reported.""",
    bad="""
policy P
score bigger_pods_first {
    value len(pod.spec.containers) * 10
}""",
    good="""
policy P
score fewer_pods {
    value 100 - min(100, len(node.pods))
}""")

SCORE_WITHOUT_FILTER = rule(
    "S105", "score-without-filter", "correctness", "warning",
    summary="A score plugin enabled while the filter it relies on is disabled.",
    rationale="""Some scores assume their filter already removed the nodes that cannot take the pod:
    NodeResourcesFit and NodeResourcesBalancedAllocation score resource use assuming the pod fits
    (NodeResourcesFit's filter), and VolumeBinding's and DynamicResources' scores read what their
    own filters computed. With that filter disabled, a node without room for the pod can score
    best and win; the kubelet then rejects the pod (OutOfcpu, OutOfmemory). Disable the score
    too, or keep the filter.""",
    bad="""
profile lean {
    use NodeUnschedulable
    use TaintToleration weight 3
    use NodeResourcesFit weight 1 without filter
}""",
    good="""
profile lean {
    use NodeUnschedulable
    use TaintToleration weight 3
    use NodeResourcesFit weight 1
}""")

EQUAL_WEIGHTS = rule(
    "S306", "equal-score-weights", "style", "info",
    summary="A profile whose score plugins all have the same weight, above 1.",
    rationale="""Only the ratios between weights matter: a node's total is the weighted sum of its
    scores, and the highest total wins. When every score has weight 5, the profile ranks nodes
    exactly as with weight 1 everywhere, but reads as if the weights had been tuned. Write 1, or
    give the scores that matter more a larger weight.""",
    bad="""
profile balanced {
    use TaintToleration weight 5
    use NodeResourcesFit weight 5
    use ImageLocality weight 5
}""",
    good="""
profile balanced {
    use TaintToleration weight 3
    use NodeResourcesFit weight 2
    use ImageLocality weight 1
}""")

@frozen
class Entry:
    """One plugin of a profile as it will run."""
    name: str
    filter: bool
    score: bool
    weight: int | None
    span: object = attrs.field(eq=False)
    # The plugins whose filters its score assumes have run (`policy P assumes filter Q`).
    assumes_filter: tuple = ()


# ---- .sched -------------------------------------------------------------------------------------

@SCORE_IGNORES_NODE.on("sched")
def _ignores_node(ctx):
    for score in ctx.module.of_type(ast.Score):
        normalize = [s for s in score.body if isinstance(s, ast.Normalize) and s.expr is not None]
        if any("node" in (ctx.deps(n.expr) or ()) for n in normalize):
            continue
        for s in score.body:
            if isinstance(s, ast.Value) and not isinstance(s.expr, ast.Literal):
                deps = ctx.deps(s.expr)
                if deps is not None and "node" not in deps:
                    yield SCORE_IGNORES_NODE.finding(
                        "this value does not depend on `node`: every node gets the same score",
                        head_span(s.expr.span, ctx.text), "help: score something about the node, or remove the score")
    for r in ctx.module.of_type(ast.Rule):
        for s in r.body:
            if isinstance(s, ast.Prefer):
                deps = ctx.deps(s.cond)
                if deps is not None and "node" not in deps and deps:
                    yield SCORE_IGNORES_NODE.finding(
                        "this preference does not depend on `node`: it adds the same weight to every node",
                        head_span(s.cond.span, ctx.text))


def _sched_entries(ctx, profile: ast.Profile) -> list[Entry]:
    out = []
    for use in profile.uses:
        module = ctx.policy_module(use)
        if module is None or module.policy is None:
            continue
        rules = module.of_type(ast.Rule)
        has_filter = bool(module.of_type(ast.Filter)) or any(
            isinstance(s, (ast.Require, ast.Spread)) for r in rules for s in r.body)
        has_score = bool(module.of_type(ast.Score)) or any(isinstance(s, ast.Prefer) for r in rules for s in r.body)
        weight = const_int(use.weight) if use.weight is not None else 1
        out.append(Entry(module.policy.name, has_filter and "filter" not in use.without,
                         has_score and "score" not in use.without, weight, use.span, module.policy.assumes_filter))
    return out


@SCORE_WITHOUT_FILTER.on("sched")
def _sched_without_filter(ctx):
    for profile in ctx.module.of_type(ast.Profile):
        for entry, needed in _missing_filters(_sched_entries(ctx, profile)):
            yield SCORE_WITHOUT_FILTER.finding(_without_filter_message(entry.name, needed), head_span(entry.span, ctx.text),
                                               _without_filter_help(entry.name, needed))


@EQUAL_WEIGHTS.on("sched")
def _sched_equal(ctx):
    for profile in ctx.module.of_type(ast.Profile):
        weight = _equal_weight(_sched_entries(ctx, profile))
        if weight is not None:
            span = name_span(ctx.text, profile.span, "profile", profile.name)
            yield EQUAL_WEIGHTS.finding(_equal_message(weight), span,
                                        "help: write weight 1, or weight the scores that matter more higher")


# ---- shared ---------------------------------------------------------------------------------------

def _missing_filters(entries: list[Entry]):
    filters = {e.name for e in entries if e.filter}
    for e in entries:
        for needed in e.assumes_filter if e.score else ():
            if needed not in filters:
                yield e, needed


def _without_filter_message(name: str, needed: str) -> str:
    if name == needed:
        return f"{name}'s score is enabled but its filter is not: it can rank nodes that cannot take the pod"
    return f"{name} scores nodes, but {needed}'s filter is not in this profile: it can rank nodes that cannot take the pod"


def _without_filter_help(name: str, needed: str) -> str:
    return f"help: enable {needed}'s filter, or disable {name}'s score"


def _equal_weight(entries: list[Entry]) -> int | None:
    weights = {e.weight for e in entries if e.score}
    scored = [e for e in entries if e.score]
    if len(scored) >= 2 and len(weights) == 1:
        (w,) = weights
        if w is not None and w > 1:
            return w
    return None


def _equal_message(weight: int) -> str:
    return f"every score in this profile has weight {weight}: only ratios matter, so this ranks nodes as weight 1 does"


# ---- KubeSchedulerConfiguration ---------------------------------------------------------------------

def _config_entries(ctx, index: int, profile) -> list[Entry] | None:
    """The profile after merging with kube-scheduler's defaults, or None when it cannot be
    built (the problems are reported by the config rules)."""
    from ...config.read import check_configuration, profile_source    # here: a .sched file's lint needs no reader

    config, _ = check_configuration(ctx.doc, ctx.path)
    if config is None:
        return None
    try:
        source = profile_source((config.value.get("profiles") or [{}])[index], index, config, {})
        module = parse(source, ctx.path)
    except (InputError, PolicyError, IndexError):
        return None
    out = []
    for p in module.of_type(ast.Profile):
        for use in p.uses:
            found = registry.plugin(use.ref)
            implements = found.implements if found is not None else frozenset()
            out.append(Entry(use.ref, "filter" in implements and "filter" not in use.without,
                             "score" in implements and "score" not in use.without,
                             const_int(use.weight) if use.weight is not None else None, None,
                             found.assumes_filter if found is not None else ()))
    return out


def _config_location(profile, name: str, points: tuple[str, ...], state: str):
    for point, st, n, node in plugin_entries(profile):
        if n == name and point in points and st == state:
            return node.value_span
    for key in ("schedulerName", "plugins"):
        if profile.get(key) is not None:
            return profile.get(key).span
    return profile.value_span


@SCORE_WITHOUT_FILTER.on("config")
def _config_without_filter(ctx):
    for i, profile in enumerate(profiles(ctx.doc)):
        for entry, needed in _missing_filters(_config_entries(ctx, i, profile) or []):
            span = _config_location(profile, needed, ("filter", "preFilter", "multiPoint"), "disabled")
            yield SCORE_WITHOUT_FILTER.finding(_without_filter_message(entry.name, needed), span,
                                               _without_filter_help(entry.name, needed))


@EQUAL_WEIGHTS.on("config")
def _config_equal(ctx):
    for i, profile in enumerate(profiles(ctx.doc)):
        weight = _equal_weight(_config_entries(ctx, i, profile) or [])
        if weight is not None:
            span = _config_location(profile, "", (), "")
            yield EQUAL_WEIGHTS.finding(_equal_message(weight), span)

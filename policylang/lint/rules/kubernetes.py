"""Kubernetes semantics the API server or the nodes impose, checked both in .sched rules
(`tolerate`, `spread`, `prefer`, label lookups) and in workload manifests."""

from __future__ import annotations

from ...syntax import ast
from ..registry import rule
from ..k8s import is_unknown_reserved, reserved_notes, topology_problem
from ..sched_ast import all_exprs, const_int, const_string, head_span

MAX_SKEW = rule(
    "S103", "spread-max-skew", "correctness", "error",
    summary="A topology spread constraint with `max_skew` (maxSkew) below 1.",
    rationale="""maxSkew is how many more matching pods one domain may hold than the least loaded
    one; the API server rejects a value below 1, so a policy or manifest with one can never be
    applied. `max_skew 1` is the strictest spread there is.""",
    bad="""
policy P
rule spread_web when pod.metadata.labels["app"] == "web" {
    spread by "topology.kubernetes.io/zone" max_skew 0 when_unsatisfiable DoNotSchedule
}""",
    good="""
policy P
rule spread_web when pod.metadata.labels["app"] == "web" {
    spread by "topology.kubernetes.io/zone" max_skew 1 when_unsatisfiable DoNotSchedule
}""")

RESERVED_LABEL = rule(
    "S104", "reserved-label", "correctness", "warning",
    summary="A label or taint key under the reserved kubernetes.io/ or k8s.io/ prefixes that no component sets.",
    rationale="""Keys under kubernetes.io/ and k8s.io/ (and their subdomains) belong to Kubernetes. The
    well-known ones (kubernetes.io/hostname, topology.kubernetes.io/zone,
    node.kubernetes.io/instance-type, kubernetes.io/os, …) are set by the kubelet, controllers or
    cloud providers; any other key there is set by nobody you can rely on, and the kubelet may not
    set it on its own node. A selector on such a key matches no node, and a custom label under it
    may collide with a future Kubernetes one. Use a prefix you own (example.com/team), or
    node-role.kubernetes.io/ and node-restriction.kubernetes.io/, which are meant for admins.""",
    bad="""
policy P
filter team {
    reject when node.metadata.labels["kubernetes.io/team"] != pod.metadata.labels["team"]
        reason "node(s) belong to another team"
}""",
    good="""
policy P
filter team {
    reject when node.metadata.labels["example.com/team"] != pod.metadata.labels["team"]
        reason "node(s) belong to another team"
}""")

SECONDS_WITHOUT_NOEXECUTE = rule(
    "S111", "toleration-seconds-without-noexecute", "correctness", "error",
    summary="A toleration with a duration (`for`, tolerationSeconds) whose effect is not NoExecute.",
    rationale="""tolerationSeconds says how long a pod may keep running on a node after a NoExecute
    taint appears; it means nothing for NoSchedule or PreferNoSchedule taints, which never evict,
    and the API server rejects a toleration that sets it with another effect.""",
    bad="""
policy P
rule batch when pod.metadata.labels["tier"] == "batch" {
    tolerate "example.com/spot" exists : NoSchedule for 300s
}""",
    good="""
policy P
rule batch when pod.metadata.labels["tier"] == "batch" {
    tolerate "example.com/spot" exists : NoSchedule
}""")

INVALID_TOLERATION = rule(
    "S112", "invalid-toleration", "correctness", "error", example_lang="yaml",
    summary="A manifest toleration the API server rejects: bad operator or effect, a value with Exists, no key with Equal.",
    rationale="""A toleration's operator is Exists or Equal, its effect NoSchedule, PreferNoSchedule,
    NoExecute or empty; `operator: Exists` takes no value, and an empty key (which matches every
    taint) needs `operator: Exists`. Anything else is rejected when the object is created, so the
    workload never starts.""",
    bad="""
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: main, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
  tolerations:
  - key: example.com/spot
    operator: Exists
    value: "true"
    effect: NoSchedule""",
    good="""
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: main, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
  tolerations:
  - key: example.com/spot
    operator: Exists
    effect: NoSchedule""")

PREFERRED_WEIGHT = rule(
    "S113", "preferred-weight-range", "correctness", "error",
    summary="A preference weight (`prefer weight`, preferred affinity `weight`) outside 1..100.",
    rationale="""Preferred node and pod affinity terms carry a weight in 1..100; the API server rejects
    anything else, and `prefer` rules become such terms. A weight of 0 would also add nothing.
    To make one preference count more than another, scale the weights within the range.""",
    bad="""
policy P
rule fast_disks when pod.metadata.labels["io"] == "heavy" {
    prefer weight 500 node.metadata.labels["example.com/disk"] == "nvme"
}""",
    good="""
policy P
rule fast_disks when pod.metadata.labels["io"] == "heavy" {
    prefer weight 100 node.metadata.labels["example.com/disk"] == "nvme"
}""")

NOEXECUTE_FOREVER = rule(
    "S206", "noexecute-toleration-forever", "suspicious", "warning",
    summary="A NoExecute toleration without a duration (`for`, tolerationSeconds): the pod is never evicted.",
    rationale="""A NoExecute taint evicts running pods (node.kubernetes.io/unreachable, not-ready,
    out-of-service, or an admin's drain taint). A toleration without a duration tolerates it
    forever, so the pod stays bound to a dead or draining node instead of being rescheduled;
    Kubernetes' own defaults tolerate not-ready and unreachable for 300s. Give the toleration a
    duration. DaemonSets are not reported: staying on their node is their purpose.""",
    bad="""
policy P
rule web when pod.metadata.labels["app"] == "web" {
    tolerate "node.kubernetes.io/unreachable" exists : NoExecute
}""",
    good="""
policy P
rule web when pod.metadata.labels["app"] == "web" {
    tolerate "node.kubernetes.io/unreachable" exists : NoExecute for 120s
}""")

TOPOLOGY_KEY = rule(
    "S207", "unusual-topology-key", "suspicious", "warning",
    summary="A topology key nodes are unlikely to carry (not hostname, zone, region or a label of your own).",
    rationale="""Spread constraints and pod (anti-)affinity terms group nodes by the value of a label.
    Nodes carry kubernetes.io/hostname, topology.kubernetes.io/zone and topology.kubernetes.io/region;
    another key under the reserved prefixes (kubernetes.io/zone, topology.kubernetes.io/rack) is set
    by nobody, so no node is in any domain: DoNotSchedule spreading then rejects every node, and
    affinity never matches. The failure-domain.beta.kubernetes.io keys are deprecated. Custom,
    non-reserved keys are fine as long as your nodes carry them.""",
    bad="""
policy P
rule spread_web when pod.metadata.labels["app"] == "web" {
    spread by "kubernetes.io/zone" max_skew 1 when_unsatisfiable DoNotSchedule
}""",
    good="""
policy P
rule spread_web when pod.metadata.labels["app"] == "web" {
    spread by "topology.kubernetes.io/zone" max_skew 1 when_unsatisfiable DoNotSchedule
}""")

LABEL_MAPS = ("labels", "nodeSelector")


# ---- .sched ------------------------------------------------------------------------------------

def _rule_stmts(module, kind):
    for r in module.of_type(ast.Rule):
        for s in r.body:
            if isinstance(s, kind):
                yield s


@MAX_SKEW.on("sched")
def _sched_max_skew(ctx):
    for s in _rule_stmts(ctx.module, ast.Spread):
        n = const_int(s.max_skew)
        if n is not None and n < 1:
            yield MAX_SKEW.finding(f"max_skew is {n}; it must be at least 1", s.max_skew.span)


@RESERVED_LABEL.on("sched")
def _sched_reserved(ctx):
    for key, span in _sched_label_keys(ctx.module):
        if is_unknown_reserved(key):
            yield RESERVED_LABEL.finding(_reserved_message(key), span, *reserved_notes(key))


def _sched_label_keys(module):
    """String constants used as label or taint keys: `x.labels["k"]`, `"k" in x.labels`,
    `t.key == "k"`, `taint("k", …)`, `tolerate "k" …`."""
    for e in all_exprs(module):
        if isinstance(e, ast.Index) and isinstance(e.target, ast.Field) and e.target.name in LABEL_MAPS:
            key = const_string(e.key)
            if key is not None:
                yield key, e.key.span
        elif isinstance(e, ast.Binary) and e.op in ("in", "notin") and isinstance(e.right, ast.Field) \
                and e.right.name in LABEL_MAPS and const_string(e.left) is not None:
            yield const_string(e.left), e.left.span
        elif isinstance(e, ast.Binary) and e.op in ("==", "!="):
            for field, other in ((e.left, e.right), (e.right, e.left)):
                if isinstance(field, ast.Field) and field.name in ("key", "topologyKey") and const_string(other):
                    yield const_string(other), other.span
        elif isinstance(e, ast.Call) and e.func == "taint" and e.args and const_string(e.args[0]):
            yield const_string(e.args[0]), e.args[0].span
    for s in _rule_stmts(module, ast.Tolerate):
        yield s.key, s.span


def _reserved_message(key: str) -> str:
    prefix = key.partition("/")[0]
    return f"'{key}' is under the reserved {prefix}/ prefix, and no Kubernetes component sets it"


@SECONDS_WITHOUT_NOEXECUTE.on("sched")
def _sched_seconds(ctx):
    for s in _rule_stmts(ctx.module, ast.Tolerate):
        if s.seconds is not None and s.effect != "NoExecute":
            yield SECONDS_WITHOUT_NOEXECUTE.finding(
                f"a {s.effect} toleration cannot have a duration: only NoExecute taints evict",
                s.seconds.span, "help: remove `for …`, or tolerate NoExecute")


@PREFERRED_WEIGHT.on("sched")
def _sched_weights(ctx):
    for s in _rule_stmts(ctx.module, ast.Prefer):
        n = const_int(s.weight)
        if n is not None and not 1 <= n <= 100:
            yield PREFERRED_WEIGHT.finding(f"preference weight {n} is outside 1..100", s.weight.span)


@NOEXECUTE_FOREVER.on("sched")
def _sched_forever(ctx):
    for s in _rule_stmts(ctx.module, ast.Tolerate):
        if s.effect == "NoExecute" and s.seconds is None:
            yield NOEXECUTE_FOREVER.finding(
                f"this toleration keeps the pod on a node tainted {s.key}:NoExecute forever",
                head_span(s.span, ctx.text), "help: add `for <duration>`, e.g. `for 300s`")


@TOPOLOGY_KEY.on("sched")
def _sched_topology(ctx):
    for s in _rule_stmts(ctx.module, ast.Spread):
        problem = topology_problem(s.topology_key)
        if problem:
            yield TOPOLOGY_KEY.finding(problem[0], head_span(s.span, ctx.text), *problem[1])


# ---- manifests ------------------------------------------------------------------------------------

def _seq(y):
    return [i for i in y if i.is_map] if y is not None and y.is_seq else []


def _spread_constraints(ctx):
    spec = ctx.pod_spec
    return _seq(spec.get("topologySpreadConstraints")) if spec is not None else []


def _pod_affinity_terms(ctx):
    """Every pod (anti-)affinity term of the template, required and preferred."""
    for kind in ("podAffinity", "podAntiAffinity"):
        block = ctx.affinity(kind)
        if block is None:
            continue
        yield from _seq(block.get("requiredDuringSchedulingIgnoredDuringExecution"))
        for w in _seq(block.get("preferredDuringSchedulingIgnoredDuringExecution")):
            term = w.get("podAffinityTerm")
            if term is not None and term.is_map:
                yield term


def _node_requirement_keys(ctx):
    na = ctx.affinity("nodeAffinity")
    if na is None:
        return
    required = na.at("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    terms = _seq(required) + [w.get("preference") for w in _seq(na.get("preferredDuringSchedulingIgnoredDuringExecution"))
                              if w.get("preference") is not None]
    for term in terms:
        for req in _seq(term.get("matchExpressions")):
            key = req.get("key")
            if key is not None and isinstance(key.scalar, str):
                yield key.scalar, key.value_span


@MAX_SKEW.on("manifest")
def _manifest_max_skew(ctx):
    for c in _spread_constraints(ctx):
        skew = c.get("maxSkew")
        n = skew.scalar if skew is not None else None
        if isinstance(n, int) and not isinstance(n, bool) and n < 1:
            yield MAX_SKEW.finding(f"maxSkew is {n}; it must be at least 1", skew.span)


@RESERVED_LABEL.on("manifest")
def _manifest_reserved(ctx):
    found = []
    spec = ctx.pod_spec
    selector = spec.get("nodeSelector") if spec is not None else None
    if selector is not None:
        found += [(k, v.span) for k, v in selector.items()]
    found += list(_node_requirement_keys(ctx))
    found += [(t.get("key").scalar, t.get("key").value_span) for t in ctx.tolerations()
              if t.get("key") is not None and isinstance(t.get("key").scalar, str)]
    template = ctx.template
    labels = template.at("metadata", "labels") if template is not None else None
    if labels is not None:
        found += [(k, v.span) for k, v in labels.items()]
    for key, span in found:
        if is_unknown_reserved(key):
            yield RESERVED_LABEL.finding(_reserved_message(key), span, *reserved_notes(key))


TOLERATION_OPERATORS = ("Exists", "Equal")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _str(t, key) -> str:
    y = t.get(key)
    v = y.scalar if y is not None else None
    return v if isinstance(v, str) else ("" if v is None else str(v))


@SECONDS_WITHOUT_NOEXECUTE.on("manifest")
def _manifest_seconds(ctx):
    for t in ctx.tolerations():
        seconds = t.get("tolerationSeconds")
        if seconds is not None and seconds.scalar is not None and _str(t, "effect") != "NoExecute":
            effect = _str(t, "effect") or "an empty effect"
            yield SECONDS_WITHOUT_NOEXECUTE.finding(f"tolerationSeconds needs effect NoExecute, not {effect}",
                                                    seconds.span, "help: remove tolerationSeconds, or set effect: NoExecute")


@INVALID_TOLERATION.on("manifest")
def _manifest_invalid(ctx):
    for t in ctx.tolerations():
        operator, effect = _str(t, "operator"), _str(t, "effect")
        where = t.get("operator") or t.get("key") or t.get("effect") or t
        if operator and operator not in TOLERATION_OPERATORS:
            yield INVALID_TOLERATION.finding(f"unknown toleration operator '{operator}'", t.get("operator").span,
                                             "help: operators are Exists and Equal")
        if effect and effect not in EFFECTS:
            yield INVALID_TOLERATION.finding(f"unknown taint effect '{effect}'", t.get("effect").span,
                                             "help: effects are NoSchedule, PreferNoSchedule and NoExecute")
        if operator == "Exists" and _str(t, "value"):
            yield INVALID_TOLERATION.finding("a toleration with operator Exists takes no value",
                                             t.get("value").span, "help: remove the value, or use operator Equal")
        if not _str(t, "key") and operator != "Exists":
            yield INVALID_TOLERATION.finding("a toleration without a key must use operator Exists",
                                             where.span, "help: set a key, or operator: Exists to tolerate every taint")


@PREFERRED_WEIGHT.on("manifest")
def _manifest_weights(ctx):
    for kind in ("nodeAffinity", "podAffinity", "podAntiAffinity"):
        block = ctx.affinity(kind)
        if block is None:
            continue
        for w in _seq(block.get("preferredDuringSchedulingIgnoredDuringExecution")):
            weight = w.get("weight")
            n = weight.scalar if weight is not None else None
            if isinstance(n, int) and not isinstance(n, bool) and not 1 <= n <= 100:
                yield PREFERRED_WEIGHT.finding(f"{kind} preference weight {n} is outside 1..100", weight.span)


@NOEXECUTE_FOREVER.on("manifest")
def _manifest_forever(ctx):
    if ctx.kind == "DaemonSet":
        return
    for t in ctx.tolerations():
        if _str(t, "effect") == "NoExecute" and t.get("tolerationSeconds") is None:
            key = _str(t, "key") or "any key"
            yield NOEXECUTE_FOREVER.finding(f"this toleration keeps the pod on a node tainted {key}:NoExecute forever",
                                            t.get("effect").span, "help: add tolerationSeconds, e.g. 300")


@TOPOLOGY_KEY.on("manifest")
def _manifest_topology(ctx):
    for item in list(_spread_constraints(ctx)) + list(_pod_affinity_terms(ctx)):
        key = item.get("topologyKey")
        problem = topology_problem(_str(item, "topologyKey"))
        if problem:
            yield TOPOLOGY_KEY.finding(problem[0], (key or item).span, *problem[1])

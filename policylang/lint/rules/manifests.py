"""Workload manifests: the resources and the replica count the scheduler will see."""

from __future__ import annotations

from ...api.quantity import QuantityError, parse_quantity
from ..registry import rule

POD_HEAD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: main
    image: nginx:1.27
"""

REQUESTS_ABOVE_LIMITS = rule(
    "S108", "requests-above-limits", "correctness", "error", example_lang="yaml",
    summary="A container that requests more of a resource than its limit allows.",
    rationale="""A limit caps what a container may use and a request is what the scheduler reserves
    for it; a request above the limit can never be used, and the API server rejects the pod
    (`must be less than or equal to limit`), so the workload never gets a pod.""",
    bad=POD_HEAD + """    resources:
      requests: {cpu: "2", memory: 1Gi}
      limits: {cpu: "1", memory: 1Gi}""",
    good=POD_HEAD + """    resources:
      requests: {cpu: "1", memory: 1Gi}
      limits: {cpu: "2", memory: 1Gi}""")

MISSING_REQUESTS = rule(
    "S209", "missing-requests", "suspicious", "warning", example_lang="yaml",
    summary="A container without a cpu or memory request (or a limit it would default to).",
    rationale="""NodeResourcesFit only keeps a pod off a full node by its requests. A container without
    them counts as zero for the filter, so it can be placed on a node with no room left, and as
    100m cpu / 200Mi memory for scoring, so where it lands is a guess; it is also the first to be
    evicted under memory pressure. Set requests (a limit alone also works: the request defaults
    to it).""",
    bad=POD_HEAD + """    resources:
      requests: {cpu: 250m}""",
    good=POD_HEAD + """    resources:
      requests: {cpu: 250m, memory: 256Mi}""")

REPLICAS_EXCEED_NODES = rule(
    "S210", "replicas-exceed-nodes", "suspicious", "warning", example_lang="yaml",
    summary="More replicas than nodes (given with --nodes) under required per-node anti-affinity.",
    rationale="""Required pod anti-affinity on kubernetes.io/hostname against the workload's own labels
    allows one replica per node, so with more replicas than nodes the extra replicas stay Pending
    for ever, and a rolling update that needs a surge pod cannot proceed. How many nodes there are
    is not in the manifest: this rule runs only when `policylang lint --nodes N` says. Use
    preferred anti-affinity or a topology spread constraint to spread without this limit.""",
    bad="""
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: web}}
      containers:
      - {name: main, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}""",
    good="""
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: web}}
      containers:
      - {name: main, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}""")


def _quantities(resources, key) -> dict:
    block = resources.get(key) if resources is not None else None
    return dict(block.items()) if block is not None and block.is_map else {}


def _quantity(y):
    try:
        return parse_quantity(y.scalar) if y.scalar is not None else None
    except QuantityError:
        return None


@REQUESTS_ABOVE_LIMITS.on("manifest")
def _above_limits(ctx):
    for c in ctx.containers(init=True):
        resources = c.get("resources")
        requests, limits = _quantities(resources, "requests"), _quantities(resources, "limits")
        for name, request in requests.items():
            if name in limits:
                r, lim = _quantity(request), _quantity(limits[name])
                if r is not None and lim is not None and r > lim:
                    yield REQUESTS_ABOVE_LIMITS.finding(
                        f"container {_name(c)} requests {request.scalar} {name} but is limited to {limits[name].scalar}",
                        request.span, "help: a request must not exceed its limit")


@MISSING_REQUESTS.on("manifest")
def _missing(ctx):
    for c in ctx.containers():
        resources = c.get("resources")
        given = set(_quantities(resources, "requests")) | set(_quantities(resources, "limits"))
        missing = [r for r in ("cpu", "memory") if r not in given]
        if missing:
            where = resources if resources is not None else (c.get("name") or c)
            yield MISSING_REQUESTS.finding(f"container {_name(c)} requests no {' and no '.join(missing)}", where.span,
                                           f"help: set resources.requests.{missing[0]}")


def _name(c) -> str:
    name = c.get("name")
    return f"'{name.scalar}'" if name is not None and name.scalar else "(unnamed)"


def _selects(selector: dict, labels: dict) -> bool:
    """Label selector semantics for matchLabels and matchExpressions; an empty or missing
    selector selects nothing here (as in affinity terms)."""
    if not isinstance(selector, dict) or not selector:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        ok = {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}.get(op)
        if not ok:
            return False
    return True


@REPLICAS_EXCEED_NODES.on("manifest")
def _replicas(ctx):
    nodes = ctx.options.nodes
    replicas = ctx.replicas
    if nodes is None or replicas is None or replicas[0] <= nodes:
        return
    count, field = replicas
    terms = ctx.affinity("podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    for term in (terms if terms is not None and terms.is_seq else []):
        value = term.value if term.is_map else {}
        if value.get("topologyKey") == "kubernetes.io/hostname" and _selects(value.get("labelSelector"), ctx.labels):
            where = field if field is not None else ctx.obj.get("kind")
            yield REPLICAS_EXCEED_NODES.finding(
                f"{count} replicas with one per node (required anti-affinity on kubernetes.io/hostname), "
                f"but only {nodes} nodes: {count - nodes} will stay Pending", where.span,
                "help: lower the replicas, or use preferred anti-affinity or a topologySpreadConstraint")
            return


INVALID_POD_FIELD = rule(
    "S118", "invalid-pod-field", "correctness", "error", example_lang="yaml",
    summary="A pod (or pod template) field the API server refuses: a wrong type, an enum, a range, a label "
            "or quantity syntax.",
    rationale="""The API server decodes a pod strictly and validates every field the scheduler reads:
    `containerPort: "8080"` (a string where an integer belongs), `whenUnsatisfiable: DoNotScheduled`,
    an affinity operator that does not exist, a label value with a space, a negative request. Such a
    manifest is refused by `kubectl apply`, so the workload never gets a pod; the finding gives the
    API server's message. (Tolerations, maxSkew and preferred weights have rules of their own:
    S111, S112, S103, S113.)""",
    bad=POD_HEAD + """    resources: {requests: {cpu: 250m, memory: 256Mi}}
    ports:
    - containerPort: "8080\"""",
    good=POD_HEAD + """    resources: {requests: {cpu: 250m, memory: 256Mi}}
    ports:
    - containerPort: 8080""")

# Reported by the rules named in the rationale.
_COVERED = ("tolerations[", ".maxSkew", ".weight")


@INVALID_POD_FIELD.on("manifest")
def _invalid_pod_field(ctx):
    from ...cluster.load import problems
    from ...cluster.locate import node_at
    from ...yaml_source import YamlNode
    template = ctx.template
    raw = template.value if template is not None and template.is_map else None
    if not isinstance(raw, dict):
        return
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    pod = {"kind": "Pod", "metadata": {**meta, "name": "lint"}, "spec": raw.get("spec") or {}}
    for field, message in problems(pod):
        # The other rules judge those fields' values, not their types.
        if field is None or (any(c in field for c in _COVERED) and not message.startswith("expected")):
            continue
        where = YamlNode(node_at(template.node, field), ctx.path)
        yield INVALID_POD_FIELD.finding(f"{field}: {message}", where.value_span)

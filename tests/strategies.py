"""Hypothesis strategies for policylang's property tests (see tests/test_properties.py).

Three families, each usable on its own:

- **Kubernetes data**: quantities (as text and as ``Quantity``), label sets and selectors,
  taints and tolerations, Nodes and Pods. Objects are drawn as API-shaped dicts, as
  ``kubectl get -o yaml`` prints them, and typed with ``policylang.cluster.load.structure_object``,
  so every property that uses them also exercises loading and the API server's defaults.
- **Clusters**: a :class:`Cluster` of node and pod dicts whose bound pods name existing nodes;
  ``Cluster.state()`` builds a fresh ``ClusterState`` each time it is called.
- **Programs**: ``.sched`` modules drawn as ``policylang.syntax.ast`` trees in the canonical shape the
  parser produces (see :func:`modules`), so that formatting one and parsing the text back must
  give the same tree.

Vocabularies are small on purpose: the same label keys, taint keys, images and host ports
recur across nodes and pods, so selectors match, tolerations tolerate and ports collide often
enough for every property to see both outcomes.
"""

from __future__ import annotations

import copy
import re
from fractions import Fraction
from functools import lru_cache

import attrs
from hypothesis import assume, strategies as st

from policylang.syntax import ast
from policylang.builtins import REGISTRY
from policylang.cluster.load import structure_object
from policylang.api.quantity import Quantity, QuantityError, parse_quantity
from policylang.cluster.state import ClusterState

# ---- strategies built once ------------------------------------------------------------------
#
# Hypothesis validates every new strategy object on its first draw (and works out whether it is
# empty or recursive), which for the small strategies drawn here costs far more than drawing
# from them: built inside a draw, they made most of a property's time. So nothing here builds a
# strategy per draw. Fixed ones are module constants, parametrised ones come from the cached
# constructors below, and a composite that other composites draw from is a plain helper taking
# ``draw`` (``_pod(draw, ...)``), with the public strategy (``pods(...)``) made from it once per
# argument list. The choices drawn, and so the examples and their shrinking, are as before.


@lru_cache(maxsize=None)
def integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    """``st.integers(lo, hi)``, built once."""
    return st.integers(lo, hi)


@lru_cache(maxsize=4096)
def sampled(values: tuple) -> st.SearchStrategy:
    """``st.sampled_from(values)``, built once per tuple of values."""
    return st.sampled_from(values)


@lru_cache(maxsize=4096)
def _composite(helper, *args) -> st.SearchStrategy:
    """``helper(draw, *args)`` as a strategy, one object per argument list."""
    return st.composite(helper)(*args)


def drawn_from(draw, items):
    """One of ``items`` (any objects, hashable or not), drawn as ``st.sampled_from(items)`` draws it."""
    return items[draw(sampled(tuple(range(len(items)))))]

# ---- Kubernetes quantities ---------------------------------------------------------------

BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


@attrs.frozen
class QuantityText:
    """A quantity as written, in parts: ``sign whole[.frac]suffix``. ``exact`` is the value the
    parts denote, computed here with fractions independently of policylang's parser (before the
    API's rounding up to whole nano-units)."""
    sign: str
    whole: str
    frac: str | None
    suffix: str

    @property
    def text(self) -> str:
        return f"{self.sign}{self.whole}{'' if self.frac is None else '.' + self.frac}{self.suffix}"

    @property
    def exact(self) -> Fraction:
        number = Fraction(int(self.whole or "0")) + (Fraction(int(self.frac), 10 ** len(self.frac))
                                                     if self.frac else 0)
        if self.suffix in BINARY_SUFFIXES:
            number *= 1024 ** BINARY_SUFFIXES[self.suffix]
        elif self.suffix in DECIMAL_SUFFIXES:
            number *= Fraction(10) ** DECIMAL_SUFFIXES[self.suffix]
        elif self.suffix:
            number *= Fraction(10) ** int(self.suffix[1:])
        return -number if self.sign == "-" else number


_DIGITS = st.text("0123456789", min_size=1, max_size=6)
_SIGNS = st.sampled_from(["", "+", "-"])
_WHOLES = _DIGITS | st.just("")
_FRACTIONS = st.none() | _DIGITS | st.just("")
_QUANTITY_SUFFIXES = (st.sampled_from(["", *BINARY_SUFFIXES, *DECIMAL_SUFFIXES])
                      | st.builds(lambda e, sign, n: f"{e}{sign}{n}", st.sampled_from("eE"),
                                  st.sampled_from(["", "+", "-"]), st.integers(0, 24)))


@lru_cache(maxsize=None)
@st.composite
def quantity_texts(draw, signed: bool = True) -> QuantityText:
    """Any quantity the API accepts: optional sign, digits with an optional fraction (``1.``,
    ``.5``), and a binary (Ki…Ei), decimal (n…E) or exponent (e3, E-2) suffix, or none."""
    sign = draw(_SIGNS) if signed else ""
    whole = draw(_WHOLES)
    frac = draw(_FRACTIONS)
    if not whole and not frac:
        whole = draw(_DIGITS)
    suffix = draw(_QUANTITY_SUFFIXES)
    text = QuantityText(sign, whole, frac, suffix)
    assume(_fits_int64_milli(text.text))  # resource.Quantity's bound: int64 milli-units
    return text


@lru_cache(maxsize=None)
def quantities(min_value: int = -10**15, max_value: int = 10**15) -> st.SearchStrategy[Quantity]:
    """Quantity objects: any whole number of nano-units (the API's resolution), between the bounds
    (in whole units), in any of the three printing formats."""
    nanos = st.integers(min_value * 10**9, max_value * 10**9)
    scaled = st.builds(lambda n, scale: n * 10**scale, st.integers(-10**6, 10**6), st.integers(0, 24))
    return st.builds(lambda n, fmt: Quantity(Fraction(n, 10**9), fmt),
                     nanos | scaled.filter(lambda n: min_value * 10**9 <= n <= max_value * 10**9),
                     st.sampled_from(["DecimalSI", "BinarySI", "DecimalExponent"]))


@lru_cache(maxsize=None)
def cpu_texts(max_millis: int = 16000) -> st.SearchStrategy[str]:
    """A cpu amount as a manifest writes it: ``250m``, ``2``, ``1.5``."""
    return st.one_of(
        st.integers(0, max_millis).map(lambda m: f"{m}m"),
        st.integers(0, max_millis // 1000).map(str),
        st.integers(0, max_millis // 100).map(lambda d: f"{d // 10}.{d % 10}"),
    )


@lru_cache(maxsize=None)
def memory_texts(max_mi: int = 32768) -> st.SearchStrategy[str]:
    """A memory amount: ``512Mi``, ``4Gi``, or plain bytes."""
    return st.one_of(
        st.integers(0, max_mi).map(lambda m: f"{m}Mi"),
        st.integers(0, max_mi // 1024).map(lambda g: f"{g}Gi"),
        st.integers(0, max_mi * 2**20).map(str),
    )


# ---- labels and selectors --------------------------------------------------------------------

LABEL_KEYS = ["app", "tier", "team", "disktype", "gpu-model", "example.com/pool", "kubernetes.io/arch"]
LABEL_VALUES = ["", "web", "db", "a", "b", "ssd", "hdd", "a100", "amd64", "1", "2", "10"]
ZONES = ["zone-a", "zone-b", "zone-c"]
ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
NAMESPACES = ["default", "shop", "ml"]

# The API's syntax: a qualified name, optionally prefixed by a DNS subdomain.
_NAME_PART = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?", fullmatch=True)
_DNS_PREFIX = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?){0,2}",
                            fullmatch=True)


@lru_cache(maxsize=None)
def label_keys() -> st.SearchStrategy[str]:
    """Valid label keys, mostly from a small shared vocabulary."""
    prefixed = st.builds(lambda p, n: f"{p}/{n}", _DNS_PREFIX, _NAME_PART)
    vocabulary = st.sampled_from(LABEL_KEYS)
    return st.one_of(vocabulary, vocabulary, vocabulary, _NAME_PART, prefixed)


@lru_cache(maxsize=None)
def label_values() -> st.SearchStrategy[str]:
    """Valid label values (empty, or a qualified name part), mostly from the vocabulary."""
    vocabulary = st.sampled_from(LABEL_VALUES)
    return st.one_of(vocabulary, vocabulary, vocabulary, _NAME_PART)


@lru_cache(maxsize=None)
def label_sets(max_size: int = 4) -> st.SearchStrategy[dict]:
    return st.dictionaries(label_keys(), label_values(), max_size=max_size)


_LABEL_VALUE_LISTS = st.lists(label_values(), min_size=1, max_size=3)


@lru_cache(maxsize=None)
@st.composite
def _requirement(draw, operators: tuple) -> dict:
    op = draw(sampled(operators))
    key = draw(label_keys())
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    if op in ("Gt", "Lt"):
        return {"key": key, "operator": op, "values": [str(draw(integers(0, 20)))]}
    return {"key": key, "operator": op, "values": draw(_LABEL_VALUE_LISTS)}


@lru_cache(maxsize=None)
def label_selectors() -> st.SearchStrategy[dict]:
    """A metav1.LabelSelector, as the API prints it (matchLabels and/or matchExpressions)."""
    return st.fixed_dictionaries({}, optional={
        "matchLabels": label_sets(3),
        "matchExpressions": st.lists(_requirement(("In", "NotIn", "Exists", "DoesNotExist")), max_size=2),
    })


@lru_cache(maxsize=None)
def node_selector_terms() -> st.SearchStrategy[dict]:
    """A NodeSelectorTerm: label requirements (with Gt/Lt) and sometimes a metadata.name field
    (with one value, as the API server's validation requires: a preferred term with two fails
    NodeAffinity's PreScore, see tests/conformance/oracle/default_profile.yaml)."""
    fields = st.lists(st.builds(lambda name: {"key": "metadata.name", "operator": "In", "values": [name]},
                                st.sampled_from(["node-0", "node-1", "node-2", "node-9"])), max_size=1)
    return st.fixed_dictionaries({}, optional={
        "matchExpressions": st.lists(_requirement(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")),
                                     max_size=2),
        "matchFields": fields,
    })


# ---- taints and tolerations ---------------------------------------------------------------

TAINT_KEYS = ["dedicated", "gpu", "example.com/maintenance", "node-role.kubernetes.io/control-plane",
              "node.kubernetes.io/unschedulable"]
TAINT_VALUES = ["", "true", "a", "b"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


@lru_cache(maxsize=None)
def taints() -> st.SearchStrategy[dict]:
    """A node taint (key, value, effect) from the shared vocabulary."""
    return st.builds(lambda k, v, e: {"key": k, "value": v, "effect": e} if v else {"key": k, "effect": e},
                     st.sampled_from(TAINT_KEYS) | label_keys(), st.sampled_from(TAINT_VALUES),
                     st.sampled_from(EFFECTS))


_OPERATORS = st.sampled_from(["Equal", "Exists", None])  # None: the API default, Equal
_TOLERATED_KEYS = {True: st.sampled_from(TAINT_KEYS) | st.just(""), False: st.sampled_from(TAINT_KEYS) | st.nothing()}
_TAINT_VALUES = st.sampled_from(TAINT_VALUES)
_TOLERATED_EFFECTS = st.sampled_from(["", *EFFECTS])


@lru_cache(maxsize=None)
@st.composite
def tolerations(draw) -> dict:
    """A toleration: Equal (key and value) or Exists (any value; an empty key matches every
    taint), for one effect or all (empty), with tolerationSeconds sometimes on NoExecute."""
    operator = draw(_OPERATORS)
    key = draw(_TOLERATED_KEYS[operator == "Exists"])
    tol = {"key": key} if key else {}
    if operator is not None:
        tol["operator"] = operator
    if operator != "Exists":
        value = draw(_TAINT_VALUES)
        if value:
            tol["value"] = value
    effect = draw(_TOLERATED_EFFECTS)
    if effect:
        tol["effect"] = effect
    if effect == "NoExecute" and draw(st.booleans()):
        tol["tolerationSeconds"] = draw(integers(0, 3600))
    return tol


# ---- nodes ------------------------------------------------------------------------------------

def maybe(draw, k: int, n: int) -> bool:
    """True k times in n; shrinks to False (the simpler object, without the optional part)."""
    return draw(integers(0, n - 1)) >= n - k


IMAGES = ["nginx:1.27", "redis:7.2", "busybox", "registry.example.com/team/app:v2", "postgres:16"]
EXTENDED = "example.com/gpu"


_TAINT_LISTS = st.lists(taints(), min_size=1, max_size=3, unique_by=lambda t: (t["key"], t["effect"]))
_IMAGE_LISTS = st.lists(st.sampled_from(IMAGES), max_size=3, unique=True)


def nodes(name: str = "node-0") -> st.SearchStrategy[dict]:
    """A Node: allocatable (and capacity) cpu, memory and pods, sometimes ephemeral-storage and
    an extended resource; labels with its zone and hostname; taints; images; unschedulable."""
    return _composite(_node, name)


def _node(draw, name: str) -> dict:
    # Mostly machine-sized, sometimes anything (tiny, zero) so that resources run out.
    allocatable = {
        "cpu": draw(cpu_texts()) if maybe(draw, 1, 4) else draw(sampled(("2", "4", "8", "16"))),
        "memory": draw(memory_texts()) if maybe(draw, 1, 4) else draw(sampled(("4Gi", "8Gi", "16Gi", "32Gi"))),
        "pods": str(draw(integers(0, 6))) if maybe(draw, 1, 4) else draw(sampled(("32", "110"))),
    }
    if maybe(draw, 1, 2):
        allocatable["ephemeral-storage"] = draw(memory_texts(200 * 1024))
    if maybe(draw, 1, 4):
        allocatable[EXTENDED] = str(draw(integers(0, 4)))
    labels = draw(label_sets(3))
    labels[HOSTNAME_KEY] = name
    if not maybe(draw, 1, 5):
        labels[ZONE_KEY] = draw(sampled(tuple(ZONES)))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {}, "status": {"capacity": dict(allocatable), "allocatable": allocatable}}
    if maybe(draw, 1, 3):
        node["spec"]["taints"] = draw(_TAINT_LISTS)
    if maybe(draw, 1, 10):
        node["spec"]["unschedulable"] = True
    images = draw(_IMAGE_LISTS)
    if images:
        node["status"]["images"] = [{"names": [i if ":" in i.rsplit("/", 1)[-1] else f"{i}:latest"],
                                     "sizeBytes": draw(integers(0, 2 * 10**9))} for i in images]
    return node


# ---- pods -------------------------------------------------------------------------------------

def resources(extended: bool = True) -> st.SearchStrategy[dict]:
    """A container's requests and limits (either may be absent; limits alone imply requests)."""
    return _composite(_resources, extended)


def _resources(draw, extended: bool = True) -> dict:
    def amounts():
        out = {}
        if maybe(draw, 3, 4):
            out["cpu"] = draw(cpu_texts(2000))
        if maybe(draw, 3, 4):
            out["memory"] = draw(memory_texts(4096))
        if extended and maybe(draw, 1, 8):
            out[EXTENDED] = str(draw(integers(0, 2)))
        if maybe(draw, 1, 6):
            out["ephemeral-storage"] = draw(memory_texts(20 * 1024))
        return out
    res = {}
    if maybe(draw, 4, 5):
        res["requests"] = amounts()
    if maybe(draw, 1, 4):
        res["limits"] = amounts()
    return res


def containers(name: str, sidecar: bool = False) -> st.SearchStrategy[dict]:
    """A container with an image from the shared list, resources, and sometimes a host port."""
    return _composite(_container, name, sidecar)


def _container(draw, name: str, sidecar: bool = False) -> dict:
    c = {"name": name, "image": draw(sampled(tuple(IMAGES))), "resources": _resources(draw)}
    if maybe(draw, 1, 5):
        port = {"containerPort": 8080, "hostPort": draw(sampled((80, 443, 8080)))}
        if draw(st.booleans()):
            port["protocol"] = draw(sampled(("TCP", "UDP")))
        if maybe(draw, 1, 4):
            port["hostIP"] = draw(sampled(("0.0.0.0", "127.0.0.1", "10.0.0.1")))
        c["ports"] = [port]
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


_TOPOLOGY_KEYS = st.sampled_from([ZONE_KEY, HOSTNAME_KEY])
_NAMESPACE_LISTS = st.lists(st.sampled_from(NAMESPACES), max_size=2)


@lru_cache(maxsize=None)
@st.composite
def pod_affinity_terms(draw) -> dict:
    term = {"labelSelector": draw(label_selectors()), "topologyKey": draw(_TOPOLOGY_KEYS)}
    if maybe(draw, 1, 4):
        term["namespaces"] = draw(_NAMESPACE_LISTS)
    return term


_TOLERATION_LISTS = st.lists(tolerations(), min_size=1, max_size=3)
_REQUIRED_TERMS = st.lists(node_selector_terms(), min_size=1, max_size=2)
_PREFERRED_TERMS = st.lists(
    st.builds(lambda w, t: {"weight": w, "preference": t}, st.integers(1, 100), node_selector_terms()),
    min_size=1, max_size=2)
_REQUIRED_POD_TERMS = st.lists(pod_affinity_terms(), min_size=1, max_size=2)
_PREFERRED_POD_TERMS = st.lists(
    st.builds(lambda w, t: {"weight": w, "podAffinityTerm": t}, st.integers(1, 100), pod_affinity_terms()),
    min_size=1, max_size=2)
_SPREAD_CONSTRAINTS = st.lists(st.builds(
    lambda skew, key, when, sel: {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
                                  "labelSelector": sel},
    st.integers(1, 3), st.sampled_from([ZONE_KEY, HOSTNAME_KEY]),
    st.sampled_from(["ScheduleAnyway", "ScheduleAnyway", "DoNotSchedule"]), label_selectors()),
    # The API server refuses two constraints of one topologyKey and whenUnsatisfiable
    # (pkg/apis/core/validation, validateTopologySpreadConstraints: Duplicate value).
    min_size=1, max_size=2, unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"]))
_BOUND_PHASES = st.sampled_from(["Running"] * 9 + ["Succeeded"])
_NAMESPACES = st.sampled_from(NAMESPACES)


def pods(name: str = "pending", node_names: tuple = (), bound: bool = False,
         affinity: bool = True, namespace: str | None = None) -> st.SearchStrategy[dict]:
    """A Pod: containers, init containers and sidecars, requests/limits, host ports, tolerations,
    nodeSelector, node affinity (required and preferred), priority, labels; with ``affinity``
    also inter-pod (anti-)affinity and topology spread constraints.

    ``bound``: the pod runs on one of ``node_names`` (phase Running, rarely Succeeded);
    otherwise it is pending, and sometimes names a node in ``spec.nodeName`` itself."""
    return _composite(_pod, name, tuple(node_names), bound, affinity, namespace)


def _pod(draw, name: str = "pending", node_names: tuple = (), bound: bool = False,
         affinity: bool = True, namespace: str | None = None) -> dict:
    spec: dict = {"containers": [_container(draw, f"c{i}") for i in range(1 + maybe(draw, 1, 3) + maybe(draw, 1, 6))]}
    if maybe(draw, 1, 3):
        spec["initContainers"] = [_container(draw, f"init{i}", sidecar=draw(st.booleans()))
                                  for i in range(draw(integers(1, 2)))]
    if maybe(draw, 1, 2):
        spec["tolerations"] = draw(_TOLERATION_LISTS)
    if maybe(draw, 1, 6):
        spec["nodeSelector"] = draw(label_sets(2))
    node_affinity = {}
    if maybe(draw, 1, 6):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": draw(_REQUIRED_TERMS)}
    if maybe(draw, 1, 3):
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = draw(_PREFERRED_TERMS)
    aff = {"nodeAffinity": node_affinity} if node_affinity else {}
    if affinity:
        for kind in ("podAffinity", "podAntiAffinity"):
            if maybe(draw, 1, 5):
                aff[kind] = {}
                if maybe(draw, 1, 3):
                    aff[kind]["requiredDuringSchedulingIgnoredDuringExecution"] = draw(_REQUIRED_POD_TERMS)
                else:
                    aff[kind]["preferredDuringSchedulingIgnoredDuringExecution"] = draw(_PREFERRED_POD_TERMS)
        if maybe(draw, 1, 5):
            spec["topologySpreadConstraints"] = draw(_SPREAD_CONSTRAINTS)
    if aff:
        spec["affinity"] = aff
    if maybe(draw, 1, 3):
        spec["priority"] = draw(integers(-10, 1000))
    if maybe(draw, 1, 8):
        spec["overhead"] = {"cpu": draw(cpu_texts(500))}
    status = {"phase": "Pending"}
    if bound:
        spec["nodeName"] = draw(sampled(tuple(node_names)))
        status["phase"] = draw(_BOUND_PHASES)
    elif node_names and maybe(draw, 1, 15):
        spec["nodeName"] = draw(sampled((*node_names, "elsewhere")))
    metadata = {"name": name, "namespace": namespace or draw(_NAMESPACES),
                "labels": draw(label_sets(3))}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


# ---- clusters ---------------------------------------------------------------------------------

def structure(raw: dict):
    """An API dict → the typed object, through the loader (API defaults applied)."""
    return structure_object(copy.deepcopy(raw), "<generated>", validate=False)


@attrs.frozen
class Cluster:
    """Nodes and the pods bound to them, and any other objects (the DRA kinds, Namespaces), as
    API dicts (copy before changing them)."""
    nodes: tuple
    pods: tuple
    others: tuple = ()

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]

    @property
    def raw(self) -> list:
        """Every object, as the dump lists them."""
        return [*self.nodes, *self.pods, *self.others]

    def objects(self) -> list:
        return [structure(o) for o in self.raw]

    def state(self) -> ClusterState:
        return ClusterState.build(self.objects())

    def evolve(self, nodes=None, pods=None) -> "Cluster":
        return Cluster(tuple(self.nodes if nodes is None else nodes), tuple(self.pods if pods is None else pods),
                       self.others)


def _renamed(node: dict, name: str) -> dict:
    node = copy.deepcopy(node)
    node["metadata"]["name"] = name
    node["metadata"]["labels"][HOSTNAME_KEY] = name
    return node


def clusters(min_nodes: int = 1, max_nodes: int = 5, max_pods: int = 6,
             affinity: bool = True) -> st.SearchStrategy[Cluster]:
    """A cluster: nodes with distinct names, and pods bound only to those nodes.

    Half the time nodes come from one or two pools of identical nodes (as node groups do), so
    equal scores, and the tie-breaking between them, are common.
    ``affinity=False`` leaves inter-pod (anti-)affinity and topology spread out of every pod."""
    return _composite(_cluster, min_nodes, max_nodes, max_pods, affinity)


def _cluster(draw, min_nodes: int = 1, max_nodes: int = 5, max_pods: int = 6, affinity: bool = True) -> Cluster:
    count = draw(integers(min_nodes, max_nodes))
    names = [f"node-{i}" for i in range(count)]
    if draw(st.booleans()):
        pools = [_node(draw, "pool") for _ in range(draw(integers(1, 2)))]
        node_dicts = [_renamed(drawn_from(draw, pools), name) for name in names]
    else:
        node_dicts = [_node(draw, name) for name in names]
    pod_dicts = [_pod(draw, f"running-{i}", tuple(names), bound=True, affinity=affinity)
                 for i in range(draw(integers(0, max_pods)))] if names else []
    return Cluster(tuple(node_dicts), tuple(pod_dicts))


# ---- .sched programs as syntax trees ------------------------------------------------------------
#
# Every tree drawn here is one the parser can produce ("canonical"), so parse(fmt(tree)) == tree
# must hold. The shapes the parser never builds are left out, each for the reason given:
#
# - a unary minus applied to a number literal: `-5` is read as the literal -5;
# - an aggregate call with one `x in xs` argument: `any(x in xs)` is read as a comprehension;
# - a list comprehension of the short form without `where`: `[x in xs]` is a one-item list;
# - `by` outside group(...), and group(...) without `by`: both are syntax errors;
# - an empty map written as a record: `{}` is a map;
# - `normalize with` with no expression: `with` is a keyword there.
#
# Two limits of the language itself shape what is drawn (they are reported, not worked around
# in the formatter):
#
# - `prefer weight W COND` puts two expressions side by side, so COND cannot start with a token
#   that would continue W (`(`, `[`, `-`, `not`, `in`, `and`, `or`): `prefer weight 80 not x`
#   does not parse. Weights are drawn as number literals and conditions filtered accordingly;
# - inside `${...}` a string cannot contain the quote that delimits the enclosing string, so an
#   interpolated string holds no interpolated string, and its holes hold no string with a `'`.

EXPR_KEYWORDS = frozenset({"if", "not", "true", "false", "null", "fold"})  # keywords where an expression starts
AGGREGATES = ("any", "all", "count", "sum", "min", "max", "first")
COMMON_NAMES = ["pod", "node", "cluster", "params", "feasible", "score", "scores", "t", "tol", "x", "n", "p",
                "requested", "allocatable", "reasons", "value", "code", "reason", "weight", "in", "where"]
COMMON_FIELDS = ["metadata", "spec", "status", "labels", "name", "namespace", "taints", "tolerations",
                 "nodeSelector", "allocatable", "containers", "resources", "requests", "effect", "key", "if"]

identifiers = (st.sampled_from(COMMON_NAMES)
               | st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
               | st.from_regex(r"[a-z][a-z_]{24,40}", fullmatch=True))  # long: forces line breaking
names = identifiers.filter(lambda s: s not in EXPR_KEYWORDS)
field_names = st.sampled_from(COMMON_FIELDS) | identifiers
profile_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,20}", fullmatch=True)

# Strings: the characters that need escaping, the ones that start holes, non-ASCII text, and
# characters Python counts as line breaks but the grammar does not.
_SPECIAL = "\"'\\${}#\n\t\r\x0b\x0c\x85\u2028 é漢😀"
string_values = st.text(st.sampled_from(_SPECIAL) | st.characters(codec="utf-8", exclude_categories=["Cs"]),
                        max_size=12)
_hole_string_values = st.text(st.sampled_from("\"\\${}#\n\t ab") | st.characters(
    codec="utf-8", exclude_categories=["Cs"], exclude_characters="'"), max_size=8)


def _fits_int64_milli(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _number_literals():
    ints = st.integers(0, 10**12).map(lambda v: ast.Literal(v, "int", str(v)))
    floats = st.builds(lambda a, b: f"{a}.{b}", st.integers(0, 999), _DIGITS).map(
        lambda t: ast.Literal(float(t), "float", t))
    quantity_text = st.builds(lambda whole, frac, suffix: f"{whole}{'.' + frac if frac else ''}{suffix}",
                              st.integers(0, 10**6), st.none() | _DIGITS,
                              st.sampled_from([*BINARY_SUFFIXES, "m", "k", "M", "G", "T", "P", "E"])
                              | st.builds(lambda e, s, n: f"{e}{s}{n}", st.sampled_from("eE"),
                                          st.sampled_from(["", "+", "-"]), st.integers(0, 12)))
    # Within resource.Quantity's bound (int64 milli-units; 1000000Ei is past it).
    quantity = quantity_text.filter(_fits_int64_milli).map(lambda t: ast.Literal(parse_quantity(t), "quantity", t))
    duration = st.builds(lambda n, unit: ast.Literal(n * (3600 if unit == "h" else 1), "duration", f"{n}{unit}"),
                         st.integers(0, 10**6), st.sampled_from("sh"))
    numbers = st.one_of(ints, floats, quantity)
    negative = numbers.map(lambda lit: ast.Literal(-lit.value, lit.kind, "-" + lit.text))
    return st.one_of(numbers, negative, duration)


def _leaves(strings):
    return st.one_of(
        _number_literals(),
        strings.map(lambda s: ast.Literal(s, "string")),   # no text: the formatter must quote it
        st.sampled_from([ast.Literal(True, "bool", "true"), ast.Literal(False, "bool", "false"),
                         ast.Literal(None, "null", "null")]),
        names.map(ast.Name),
    )


def _binds(e) -> bool:
    return isinstance(e, ast.Binary) and e.op == "in" and isinstance(e.left, ast.Name)


def _is_number(e) -> bool:
    return isinstance(e, ast.Literal) and e.kind in ("int", "float", "quantity")


def _negate(e):
    """``-e`` as the parser builds it: a number literal absorbs the minus."""
    return ast.Literal(-e.value, e.kind, "-" + e.text) if _is_number(e) else ast.Unary("-", e)


_COMPREHENSION_KINDS = st.sampled_from(["list", "group", *AGGREGATES])


@lru_cache(maxsize=None)
def _optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


@st.composite
def _comprehension(draw, sub):
    kind = draw(_COMPREHENSION_KINDS)
    element = draw(_optional(sub))
    where = draw(_optional(sub))
    if kind == "list" and element is None and where is None:
        where = draw(sub)
    by = draw(sub) if kind == "group" else None
    return ast.Comprehension(kind, draw(names), draw(sub), element, where, by)


@lru_cache(maxsize=None)
def _pieces(holes, strings) -> st.SearchStrategy[list]:
    return st.lists(strings.filter(bool) | holes, min_size=1, max_size=4)


@st.composite
def _interpolated(draw, holes, strings):
    """A string with at least one ${hole}; text parts non-empty and never adjacent."""
    pieces = draw(_pieces(holes, strings))
    if not any(not isinstance(p, str) for p in pieces):
        pieces.insert(draw(integers(0, len(pieces))), draw(holes))
    parts: list = []
    for p in pieces:
        if isinstance(p, str) and parts and isinstance(parts[-1], str):
            parts[-1] += p
        else:
            parts.append(p)
    return ast.Interpolated(tuple(parts))


def _extend(sub, strings, holes):
    ops = ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "notin", "and", "or", "??"]
    calls = st.builds(lambda f, args: ast.Call(f, tuple(args)),
                      st.sampled_from(sorted(REGISTRY)) | names
                      | st.builds(lambda a, b: f"{a}.{b}", names, field_names),
                      st.lists(sub, max_size=3)).filter(
        lambda c: not (c.func in (*AGGREGATES, "group") and len(c.args) == 1 and _binds(c.args[0])))
    maps = st.one_of(
        st.lists(st.tuples(field_names, sub), min_size=1, max_size=3, unique_by=lambda kv: kv[0]).map(
            lambda kvs: ast.MapExpr(tuple(k for k, _ in kvs), tuple(v for _, v in kvs), record=True)),
        st.lists(st.tuples(strings, sub), max_size=3, unique_by=lambda kv: kv[0]).map(
            lambda kvs: ast.MapExpr(tuple(k for k, _ in kvs), tuple(v for _, v in kvs), record=False)),
    )
    options = [
        st.builds(ast.Field, sub, field_names),
        st.builds(ast.Index, sub, sub),
        calls,
        st.builds(ast.Unary, st.just("not"), sub),
        sub.map(_negate),
        st.builds(ast.Binary, st.sampled_from(ops), sub, sub),
        st.builds(ast.If, sub, sub, sub),
        st.lists(sub, max_size=3).map(lambda items: ast.ListExpr(tuple(items))),
        maps,
        _comprehension(sub),
        st.builds(ast.Fold, names, sub, names, sub, sub).filter(lambda f: f.acc != f.var),
    ]
    if holes is not None:
        options.append(_interpolated(holes, strings))
    return st.one_of(*options)


@lru_cache(maxsize=None)
def expressions(max_leaves: int = 8) -> st.SearchStrategy:
    """Any expression the parser can produce: literals of every kind (negative numbers included),
    names, fields, indexes, calls (builtins, defs, module.def), every operator, if, lists, maps
    and records, comprehensions of every kind and form, folds, interpolated strings."""
    holes = st.recursive(_leaves(_hole_string_values),
                         lambda sub: _extend(sub, _hole_string_values, None), max_leaves=3)
    return st.recursive(_leaves(string_values), lambda sub: _extend(sub, string_values, holes),
                        max_leaves=max_leaves)


@lru_cache(maxsize=None)
def int_constants(max_leaves: int = 5) -> st.SearchStrategy:
    """Well-typed int constant expressions: small literals (0 included) under + - * / %, unary
    minus and if, so that some of them divide by zero."""
    literal = st.integers(0, 3).map(lambda v: ast.Literal(v, "int", str(v)))
    condition = st.sampled_from([ast.Literal(True, "bool", "true"), ast.Literal(False, "bool", "false")])
    return st.recursive(literal, lambda sub: st.one_of(
        st.builds(ast.Binary, st.sampled_from(["+", "-", "*", "/", "%"]), sub, sub),
        sub.map(_negate),
        st.builds(ast.If, condition, sub, sub),
    ), max_leaves=max_leaves)


def _type_refs():
    simple = identifiers.map(ast.TypeRef)
    return st.recursive(simple, lambda sub: st.one_of(
        st.builds(lambda n, args: ast.TypeRef(n, tuple(args)), identifiers, st.lists(sub, min_size=1, max_size=2)),
        st.lists(st.tuples(identifiers, sub), max_size=3).map(lambda fs: ast.RecordTypeRef(tuple(fs))),
    ), max_leaves=4)


_CONTINUES_AN_EXPRESSION = re.compile(r"^(?:[(\[.\-+*/%<>=!?]|(?:not|in|and|or)\b)")


def _prefer_condition_ok(cond) -> bool:
    from policylang.syntax.format import expr as fmt_expr
    return not _CONTINUES_AN_EXPRESSION.match(fmt_expr(cond))


@lru_cache(maxsize=None)
def _statement_lists(e) -> dict:
    """The statement lists of each kind of block, over expressions ``e``."""
    small = expressions(3)
    filters = st.one_of(
        st.builds(ast.Skip, e),
        st.builds(ast.Let, identifiers, e),
        st.builds(ast.Reject, e, e, st.sampled_from(["Unschedulable", "UnschedulableAndUnresolvable"]) | identifiers,
                  st.booleans()),
        st.builds(ast.Restrict, e),
    )
    scores = st.one_of(
        st.builds(ast.Skip, e),
        st.builds(ast.Let, identifiers, e),
        st.builds(ast.Value, e),
        st.builds(ast.Normalize, st.sampled_from(["none", "max", "reverse", "minmax"])
                  | identifiers.filter(lambda s: s != "with")),
        st.builds(lambda x: ast.Normalize("with", x), e),
    )
    tolerate = st.one_of(
        st.builds(lambda k, v, eff, s: ast.Tolerate(k, "Equal", v, eff, s),
                  st.sampled_from(TAINT_KEYS) | identifiers | string_values, small, identifiers, st.none() | small),
        st.builds(lambda k, eff, s: ast.Tolerate(k, "Exists", None, eff, s),
                  st.sampled_from(TAINT_KEYS) | identifiers | string_values, identifiers, st.none() | small),
    )
    rules = st.one_of(
        tolerate,
        st.builds(ast.Require, e),
        st.builds(ast.Prefer, _number_literals().filter(lambda lit: not lit.text.startswith("-")),
                  e.filter(_prefer_condition_ok)),
        st.builds(ast.Spread, string_values, small, identifiers),
    )
    return {"filter": st.lists(filters, max_size=3), "score": st.lists(scores, max_size=3),
            "rule": st.lists(rules, max_size=3), "optional": st.none() | e}


_BLOCK_KINDS = st.sampled_from(["filter", "score", "rule"])


@st.composite
def _blocks(draw, e):
    statements = _statement_lists(e)
    kind = draw(_BLOCK_KINDS)
    if kind == "filter":
        return ast.Filter(draw(identifiers), tuple(draw(statements["filter"])))
    if kind == "score":
        return ast.Score(draw(identifiers), tuple(draw(statements["score"])))
    return ast.Rule(draw(identifiers), draw(statements["optional"]), tuple(draw(statements["rule"])))


@lru_cache(maxsize=None)
def _profile_parts(e) -> tuple:
    use = st.builds(
        lambda ref, is_path, args, weight, without: ast.Use(ref, is_path, tuple(args), weight, tuple(without)),
        st.sampled_from(["TaintToleration", "NodeResourcesFit", "NodeAffinity"]) | identifiers, st.just(False),
        st.lists(st.builds(ast.UseArg, identifiers, e), max_size=2), st.none() | e,
        st.lists(st.sampled_from(["filter", "score", "postfilter"]), max_size=2))
    path_use = st.builds(lambda ref, weight: ast.Use(ref, True, (), weight), string_values, st.none() | e)
    return st.lists(use | path_use, max_size=3), st.none() | e


@st.composite
def _profiles(draw, e):
    uses, optional = _profile_parts(e)
    return ast.Profile(draw(profile_names), tuple(draw(uses)), draw(optional))


@lru_cache(maxsize=None)
def declarations(max_leaves: int = 6) -> st.SearchStrategy:
    """Any top-level declaration: policy, import, param (with every kind of type), def, filter,
    score, rule and profile, each with every statement its block allows."""
    e = expressions(max_leaves)
    return st.one_of(
        st.builds(ast.PolicyDecl, identifiers),
        st.builds(ast.Import, identifiers, st.none() | string_values),
        st.builds(ast.Param, identifiers, _type_refs(), st.none() | e),
        st.builds(lambda n, ps, body: ast.Def(n, tuple(ps), body), identifiers, st.lists(identifiers, max_size=3), e),
        _blocks(e),
        _profiles(e),
    )


@lru_cache(maxsize=None)
def modules(max_decls: int = 4, max_leaves: int = 6) -> st.SearchStrategy[ast.Module]:
    """A whole .sched file as a tree (spans left empty)."""
    return st.lists(declarations(max_leaves), max_size=max_decls).map(
        lambda decls: ast.Module("<generated>", tuple(decls)))


# ---- mutations of real files ----------------------------------------------------------------------

# Tokens of the language, for insertions that reach past the lexer into the parser and checker.
TOKENS = ["(", ")", "[", "]", "{", "}", ",", ":", ".", "=", "-", " / 0", " * ", "??", "not ", " and ", " in ",
          "null", "true", "\"", "'", "${", "#", "\\", "0", "-1", "1e99", "500m", "1Gi", "300s", "\n", "    ",
          "if x then 1 else 2", "[x for x in y]", "any(t in xs)", "policy P\n", "profile p {\n", "use X\n",
          "reject when true reason \"r\"\n", "let a = ", "pod.spec", "node.metadata.labels", "params.",
          "weight 0", "weight -1", "without filter", ": NoSchedule", "- ", "-\n", ": ", "{}", "[]", "~"]


_EDITS = st.sampled_from(["del_char", "dup_char", "replace_char", "insert_token",
                          "del_line", "dup_line", "swap_lines", "replace_line"])
_TOKENS = st.sampled_from(TOKENS)
_REPLACEMENT_CHARACTERS = (st.characters(codec="utf-8", exclude_categories=["Cs"])
                           | st.sampled_from("{}[]()\"':-#\n \t"))


@lru_cache(maxsize=256)
@st.composite
def mutated(draw, text: str, max_edits: int = 4) -> str:
    """``text`` after a few edits: characters or whole lines deleted, duplicated or replaced,
    and language tokens inserted."""
    for _ in range(draw(integers(1, max_edits))):
        lines = text.split("\n")
        op = draw(_EDITS)
        if op.endswith("_char") or op == "insert_token":
            if not text:
                text = draw(_TOKENS)
                continue
            i = draw(integers(0, len(text) - 1))
            if op == "del_char":
                text = text[:i] + text[i + 1:]
            elif op == "dup_char":
                text = text[:i] + text[i] + text[i:]
            elif op == "replace_char":
                text = text[:i] + draw(_REPLACEMENT_CHARACTERS) + text[i + 1:]
            else:
                text = text[:i] + draw(_TOKENS) + text[i:]
        else:
            i = draw(integers(0, len(lines) - 1))
            if op == "del_line":
                del lines[i]
            elif op == "dup_line":
                lines.insert(i, lines[i])
            elif op == "swap_lines":
                j = draw(integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = draw(sampled((*lines, *TOKENS)))
            text = "\n".join(lines)
    return text


# ---- typed policies: filters and scores that check and run ----------------------------------------
#
# Expressions built by type (int, float, bool, string) from what a node and a pod offer, with the
# shapes the executors treat differently: arithmetic that can divide by zero or grow past int64,
# conditions whose right side runs only where the left holds, comprehensions over lists that are
# the same for every node and over lists whose members depend on the node, aggregates, folds and
# per-node lists (taints, pods). Used to check that the executors decide alike on custom policies.

_NODE_INTS = ["len(node.pods)", "len(node.metadata.labels)", "len(node.spec.taints)", "len(node.status.images)",
              "milli(node.status.allocatable[\"cpu\"])", "value(node.status.allocatable[\"memory\"])",
              "milli(requested(node)[\"cpu\"])", "value(requested(node)[\"memory\"])", "len(node.metadata.name)",
              "value(node.status.allocatable[\"pods\"])"]
_POD_INTS = ["len(pod.spec.containers)", "milli(requests(pod)[\"cpu\"])", "params.k", "len(pod.spec.tolerations)"]
_NODE_BOOLS = [f'"{k}" in node.metadata.labels' for k in (ZONE_KEY, "app", "disktype")] + [
    'node.metadata.labels["tier"] == "web"', "node.spec.unschedulable",
    'any(t in node.spec.taints where t.effect == "NoSchedule")',
    "all(t in node.spec.taints where any(tol in pod.spec.tolerations where tolerates(tol, t)))"]
_NODE_STRINGS = ["node.metadata.name", f'node.metadata.labels["{ZONE_KEY}"] ?? "none"',
                 'node.metadata.labels["app"] ?? ""']
_INT_LISTS = ["[1, 2, 3]", "range(4)", "[0, -2, 7, 1]", "[]"]


def typed_expr(ty: str, depth: int = 3, scope: tuple = ()) -> st.SearchStrategy[str]:
    """An expression of type ``ty`` over node, pod and params.k; ``scope`` holds (name, type) of
    the variables bound around it."""
    return _composite(_typed, ty, depth, tuple(scope))


_OPS = {"int": st.sampled_from(["+", "-", "*", "/", "%"]), "float": st.sampled_from(["+", "-", "*", "/"]),
        "string": st.sampled_from(["==", "!="]), "ordered": st.sampled_from(["<", "<=", ">", ">=", "==", "!="])}
_MIN_MAX = st.sampled_from(["min", "max"])
_INT_AGGREGATES = st.sampled_from(["sum", "count", "len", "first", "fold", "max"])
_COMPARED_TYPES = st.sampled_from(["int", "int", "float", "string"])
_AND_OR = st.sampled_from(["and", "or"])
_ANY_ALL = st.sampled_from(["any", "all"])


def _typed(draw, ty: str, depth: int = 3, scope: tuple = ()) -> str:
    names = tuple(n for n, t in scope if t == ty)
    if depth <= 0 or draw(integers(0, 3)) == 0:
        return draw(_typed_leaf(ty, names))

    def sub(t, s=scope):
        return _typed(draw, t, depth - 1, s)

    if ty == "int":
        kind = draw(integers(0, 9))
        if kind <= 2:
            op = draw(_OPS["int"])
            return f"({sub('int')} {op} {sub('int')})"
        if kind == 3:
            return f"(if {sub('bool')} then {sub('int')} else {sub('int')})"
        if kind == 4:
            return f"{draw(_MIN_MAX)}({sub('int')}, {sub('int')})"
        if kind == 5:
            return f"int({sub('float')})"
        var, source = _int_source(draw, depth, scope)
        inner = scope + ((var, "int"),)
        where = _typed(draw, "bool", depth - 1, inner)
        agg = draw(_INT_AGGREGATES)
        if agg == "sum":
            return f"sum({_typed(draw, 'int', depth - 1, inner)} for {var} in {source} where {where})"
        if agg == "count":
            return f"count({var} in {source} where {where})"
        if agg == "len":
            return f"len([{var} in {source} where {where}])"
        if agg == "first":
            return f"(first({var} in {source} where {where}) ?? {sub('int')})"
        if agg == "max":
            return f"(max({_typed(draw, 'int', depth - 1, inner)} for {var} in {source}) ?? 0)"
        acc = f"acc{depth}"
        body = _typed(draw, "int", depth - 1, inner + ((acc, "int"),))
        return f"fold({acc} = {sub('int')} for {var} in {source}: {body})"
    if ty == "float":
        kind = draw(integers(0, 3))
        if kind == 0:
            return f"float({sub('int')})"
        if kind == 1:
            op = draw(_OPS["float"])
            return f"({sub('float')} {op} {sub('float')})"
        if kind == 2:
            return f"sqrt(abs({sub('float')}))"
        return f"(if {sub('bool')} then {sub('float')} else {sub('float')})"
    if ty == "bool":
        kind = draw(integers(0, 5))
        if kind <= 1:
            t = draw(_COMPARED_TYPES)
            op = draw(_OPS["string" if t == "string" else "ordered"])
            return f"({sub(t)} {op} {sub(t)})"
        if kind == 2:
            return f"({sub('bool')} {draw(_AND_OR)} {sub('bool')})"
        if kind == 3:
            return f"not {sub('bool')}"
        var, source = _int_source(draw, depth, scope)
        inner = scope + ((var, "int"),)
        return f"{draw(_ANY_ALL)}({var} in {source} where {_typed(draw, 'bool', depth - 1, inner)})"
    kind = draw(integers(0, 1))
    if kind == 0:
        return f'(string({sub("int")}) + "-" + {sub("string")})'
    return f"(if {sub('bool')} then {sub('string')} else {sub('string')})"


_INT_LIST_TEXTS = st.sampled_from(_INT_LISTS)


def _int_source(draw, depth: int, scope: tuple):
    """A variable name and a list of ints to range it over: the same for every node, or with
    members that depend on the node."""
    var = f"x{depth}"
    kind = draw(integers(0, 2))
    if kind == 0:
        return var, draw(_INT_LIST_TEXTS)
    if kind == 1:
        items = [_typed(draw, "int", depth - 2, scope) for _ in range(draw(integers(1, 3)))]
        return var, f"[{', '.join(items)}]"
    y = f"y{depth}"
    cond = _typed(draw, "bool", depth - 2, scope + ((y, "int"),))
    return var, f"[{y} in {draw(_INT_LIST_TEXTS)} where {cond}]"


@lru_cache(maxsize=None)
def _typed_leaf(ty: str, names: tuple) -> st.SearchStrategy[str]:
    if ty == "int":
        numbers = st.integers(-3, 12).map(str) | st.sampled_from(["2147483648", "1099511627776", "0"])
        options = [numbers, st.sampled_from(_NODE_INTS), st.sampled_from(_NODE_INTS), st.sampled_from(_POD_INTS)]
    elif ty == "float":
        options = [st.sampled_from(["0.5", "1.0", "0.0", "-2.5", "100.0"]),
                   st.sampled_from(_NODE_INTS).map(lambda e: f"float({e})")]
    elif ty == "bool":
        options = [st.sampled_from(_NODE_BOOLS), st.sampled_from(["true", "false"])]
    else:
        options = [st.sampled_from(_NODE_STRINGS), st.sampled_from(['"a"', '"zone-a"', '""'])]
    if names:
        options.append(st.sampled_from(names))
    return st.one_of(*options)


_LET_TYPES = st.sampled_from(["int", "bool", "float"])
_REJECT_CODES = st.sampled_from(["", "\n        code UnschedulableAndUnresolvable"])
# With `with`, the parts that read neither node nor score are evaluated once per loop, on
# first use: an error in a branch not taken (1 / 0 below) must stay unraised.
_NORMALIZATIONS = st.sampled_from([
    "", "    normalize max\n", "    normalize reverse\n", "    normalize minmax\n",
    "    normalize with score * 100 / (max(scores) ?? 1)\n",
    "    normalize with if len(scores) > 0 then (score - (min(scores) ?? 0)) % 101\n"
    "                   else 1 / (len(scores) - len(scores))\n"])
_STDLIB_USES = st.sampled_from([[], ["NodeResourcesFit"], ["TaintToleration", "NodeResourcesBalancedAllocation"]])


@lru_cache(maxsize=None)
@st.composite
def team_policies(draw) -> str:
    """A custom policy (filter with lets and rejects, score with lets, a value and a
    normalisation) and a profile that uses it, with or without stdlib plugins around it."""
    lets, scope = [], ()
    for i in range(draw(integers(0, 2))):
        t = draw(_LET_TYPES)
        lets.append(f"    let v{i} = {_typed(draw, t, 3, scope)}")
        scope += ((f"v{i}", t),)
    rejects = [f"    reject when {_typed(draw, 'bool', 3, scope)}\n"
               f"        reason 'team ${{{_typed(draw, 'int', 2, scope)}}}'"
               + draw(_REJECT_CODES)
               for _ in range(draw(integers(1, 2)))]
    normalize = draw(_NORMALIZATIONS)
    value = _typed(draw, "int", 3, (("s0", "int"),))
    stdlib = draw(_STDLIB_USES)
    uses = "".join(f"    use {name}\n" for name in stdlib)
    return (f"policy Team\n\nparam k: int = {draw(integers(0, 3))}\n\n"
            f"filter team {{\n" + "".join(line + "\n" for line in lets) + "\n".join(rejects) + "\n}\n\n"
            f"score team {{\n    let s0 = {_typed(draw, 'int', 3)}\n    value {value}\n{normalize}}}\n\n"
            f"profile team {{\n    use Team weight {draw(integers(1, 3))}\n{uses}}}\n")


# ---- Dynamic Resource Allocation (resource.k8s.io/v1) ------------------------------------------
#
# A few drivers whose devices all carry the same attributes (model, index, ecc, driverVersion)
# and capacity (memory), so that selectors written against `device.driver`'s own domain never
# meet a missing key; DeviceClasses with one selector each (driver ==, an attribute ==, a
# capacity compareTo, a version comparison) and one class that reads the gpu domain on every
# device, so a CEL runtime error ("no such key") is reached now and then. ResourceSlices are
# per node (spec.nodeName; now and then a pool in two slices, or an incomplete one), and
# sometimes per zone (nodeSelector) or for every node (allNodes).
# Claims: ExactCount 1-3 or All, adminAccess (only in ADMIN_NAMESPACE, which the API server's
# admission requires to carry ADMIN_LABEL), firstAvailable, matchAttribute constraints. Bound
# pods hold allocated claims (allocation picked from their node's free devices, reservedFor
# naming them); pending pods reference claims by name, share them, or use a template whose claim
# the resourceclaim controller has made (pod.status.resourceClaimStatuses and the claim owned by
# the pod). Every pod carries a uid: reservedFor and a claim's owner name pods by uid.

DRA_DRIVERS = ("gpu.example.com", "nic.example.com")
DRA_MODELS = ("a100", "h100", "cx7")
DRA_VERSIONS = ("1.2.0", "1.10.0", "2.0.1")
ADMIN_NAMESPACE = "ml"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"   # pkg/apis/resource: DRAAdminNamespaceLabelKey

# (name, CEL selector or None): one DeviceClass each.
DEVICE_CLASSES = (
    ("gpu", 'device.driver == "gpu.example.com"'),
    ("nic", 'device.driver == "nic.example.com"'),
    ("any-device", None),
    ("a100", 'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"'),
    ("big-memory", 'device.capacity[device.driver].memory.compareTo(quantity("64Gi")) >= 0'),
    ("new-driver", 'device.attributes[device.driver].driverVersion.isGreaterThan(semver("1.5.0"))'),
    ("ecc-gpu", 'device.attributes["gpu.example.com"].ecc'),   # no such key on a nic
)
# A request's own selectors (on top of its class's).
REQUEST_SELECTORS = (
    "device.attributes[device.driver].index < 2",
    "device.attributes[device.driver].ecc",
    'device.attributes[device.driver].model != "h100"',
    'device.capacity[device.driver].memory.compareTo(quantity("40Gi")) <= 0',
)
MATCH_ATTRIBUTES = ("gpu.example.com/model", "gpu.example.com/ecc", "nic.example.com/model")


def _short(driver: str) -> str:
    return driver.split(".")[0]


def devices(driver: str, count: int) -> st.SearchStrategy[list]:
    """``count`` devices of one driver, with every attribute kind (int, bool, string, version)
    and a capacity."""
    return _composite(_devices, driver, count)


def _devices(draw, driver: str, count: int) -> list:
    out = []
    model = draw(sampled(DRA_MODELS))   # mostly one model per slice, as a machine has
    for i in range(count):
        out.append({
            "name": f"{_short(driver)}-{i}",
            "attributes": {
                "model": {"string": draw(sampled(DRA_MODELS)) if maybe(draw, 1, 4) else model},
                "index": {"int": i},
                "ecc": {"bool": draw(st.booleans())},
                "driverVersion": {"version": draw(sampled(DRA_VERSIONS))},
            },
            "capacity": {"memory": {"value": draw(sampled(("16Gi", "40Gi", "80Gi")))}},
        })
    return out


def _slice(name: str, driver: str, pool: str, devs: list, **where) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                     **where, "devices": devs}}


def _claim(name: str, namespace: str, requests: list, constraints: list = (), **meta) -> dict:
    devices_spec = {"requests": requests}
    if constraints:
        devices_spec["constraints"] = list(constraints)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, **meta}, "spec": {"devices": devices_spec}}


def pod_uid(pod: dict) -> str:
    return f"uid-{pod['metadata']['namespace']}-{pod['metadata']['name']}"


def _exact(draw, classes: tuple, admin: bool) -> dict:
    """An ExactDeviceRequest (the part after the name): a class, ExactCount (count 1-3, often
    left to its default of 1) or All, sometimes a selector, and adminAccess where allowed."""
    # Mostly the first class; rarely one that does not exist.
    req = {"deviceClassName": "absent-class" if maybe(draw, 1, 25)
           else draw(sampled((classes[0],) * len(classes) + tuple(classes)))}
    if maybe(draw, 1, 6):
        req["allocationMode"] = "All"
    else:
        if maybe(draw, 1, 4):
            req["allocationMode"] = "ExactCount"
        if maybe(draw, 1, 2):
            req["count"] = draw(sampled((1, 1, 2, 3)))
    if maybe(draw, 1, 6):
        req["selectors"] = [{"cel": {"expression": draw(sampled(REQUEST_SELECTORS))}}]
    if admin and maybe(draw, 1, 5):
        req["adminAccess"] = True
    return req


def device_requests(classes: tuple, admin: bool) -> st.SearchStrategy[tuple[list, list]]:
    """A claim's requests (1-2; each exactly, or firstAvailable with 1-3 subrequests) and
    sometimes a matchAttribute constraint over some or all of them."""
    return _composite(_device_requests, tuple(classes), admin)


def _device_requests(draw, classes: tuple, admin: bool) -> tuple[list, list]:
    requests = []
    for i in range(1 + maybe(draw, 1, 4)):
        if maybe(draw, 1, 3):
            subs = [{"name": f"s{j}", **_exact(draw, classes, admin=False)} for j in range(draw(integers(1, 3)))]
            requests.append({"name": f"r{i}", "firstAvailable": subs})
        else:
            requests.append({"name": f"r{i}", "exactly": _exact(draw, classes, admin)})
    constraints = []
    if maybe(draw, 1, 5):
        constraint = {"matchAttribute": draw(sampled(MATCH_ATTRIBUTES))}
        if len(requests) > 1 and draw(st.booleans()):
            constraint["requests"] = [requests[0]["name"]]
        constraints.append(constraint)
    return requests, constraints


@attrs.frozen
class DraScenario:
    """A cluster with DRA objects (``cluster.others``) and the pending pods that use them."""
    cluster: "Cluster"
    pods: tuple


_OPTIONAL_CLASS_LISTS = st.lists(st.sampled_from([c for c, _ in DEVICE_CLASSES if c not in ("gpu", "any-device")]),
                                 max_size=3, unique=True)
_ONE_POOL_DRIVERS = st.sampled_from(DRA_DRIVERS[:1] * 3 + DRA_DRIVERS[1:])
_CLAIM_KINDS = st.sampled_from(["new"] * 6 + ["shared"] * 3 + ["template"] * 2 + ["fresh", "missing"])


@lru_cache(maxsize=None)
@st.composite
def dra_scenarios(draw, min_pending: int = 1, max_pending: int = 1, max_nodes: int = 4,
                  one_pool_per_node: bool = False, orphans: bool = True, new_fields: bool = False,
                  extended: bool = False) -> DraScenario:
    """Nodes (as :func:`clusters` draws them, without inter-pod terms), DeviceClasses,
    ResourceSlices, the Namespaces (the admin one labelled), bound pods holding allocated
    claims, and pending pods with 1-3 claims each.

    ``one_pool_per_node``: every node reaches at most one pool (its own, of one driver), so the
    order in which the allocator visits pools, which upstream leaves to a Go map, cannot
    matter (see test_oracle_dra.py). ``orphans``: some allocated claims are left by their pod
    (reservedFor empty, as once the pod is gone), which DynamicResources' PostFilter deallocates
    when a pod that shares one cannot be scheduled. ``new_fields`` (for v1.36+, see
    :func:`_new_dra_fields`): device taints and request tolerations, shared counters, devices
    that allow multiple allocations and capacity requests.

    ``extended`` (Kubernetes 1.36 and later, DRAExtendedResource): classes that name an extended
    resource (see :func:`_extended_classes`), nodes whose device plugin lists it, and pending pods
    asking for it (see :func:`_ask_extended`)."""
    base = _cluster(draw, min_nodes=1, max_nodes=max_nodes, max_pods=4, affinity=False)
    plain = []
    for node in base.nodes:
        if maybe(draw, 2, 3):
            # Mostly a plain machine (no taints, room for pods), for DynamicResources to judge.
            node = copy.deepcopy(node)
            node["spec"] = {}
            node["status"]["allocatable"] = {"cpu": "8", "memory": "16Gi", "pods": "110"}
            node["status"]["capacity"] = dict(node["status"]["allocatable"])
        plain.append(node)
    base = base.evolve(nodes=plain)
    names = base.node_names
    # "any-device" too: the allocated claims of bound pods name it.
    classes = ["gpu", "any-device", *draw(_OPTIONAL_CLASS_LISTS)]
    selector_of = dict(DEVICE_CLASSES)
    others: list = [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": ns, "labels": {ADMIN_LABEL: "true"} if ns == ADMIN_NAMESPACE else {}}}
        for ns in NAMESPACES]
    for name in classes:
        spec = {"selectors": [{"cel": {"expression": selector_of[name]}}]} if selector_of[name] else {}
        others.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                       "spec": spec})
    if extended:
        _extended_classes(draw, [o for o in others if o["kind"] == "DeviceClass"])
        base = base.evolve(nodes=[_device_plugin_node(draw, n) for n in base.nodes])

    # Slices: per node and driver; sometimes a zone's (nodeSelector) or everyone's (allNodes).
    free: dict[str, list] = {}      # node → [(driver, pool, device)] not yet allocated
    for node in names:
        free[node] = []
        if one_pool_per_node:
            drivers = [draw(_ONE_POOL_DRIVERS)] if maybe(draw, 3, 4) else []
        else:
            drivers = [d for d in DRA_DRIVERS if (maybe(draw, 3, 4) if d == DRA_DRIVERS[0] else maybe(draw, 1, 3))]
        for driver in drivers:
            pool = f"{node}-{_short(driver)}"
            devs = _devices(draw, driver, draw(integers(1, 4)))
            if not one_pool_per_node and len(devs) > 1 and maybe(draw, 1, 5):
                # A pool in two slices; now and then it says three (one not published yet):
                # an incomplete pool, whose devices are never allocated.
                count = 3 if maybe(draw, 1, 3) else 2
                for part, share in (("a", devs[:1]), ("b", devs[1:])):
                    piece = _slice(f"{pool}-{part}", driver, pool, share, nodeName=node)
                    piece["spec"]["pool"]["resourceSliceCount"] = count
                    others.append(piece)
            else:
                others.append(_slice(pool, driver, pool, devs, nodeName=node))
            free[node] += [(driver, pool, d["name"]) for d in devs]
    if not one_pool_per_node and maybe(draw, 1, 4):
        zone = draw(sampled(tuple(ZONES)))
        others.append(_slice(f"{zone}-nic", DRA_DRIVERS[1], f"{zone}-nic", _devices(draw, DRA_DRIVERS[1], 2),
                             nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
                                 {"key": ZONE_KEY, "operator": "In", "values": [zone]}]}]}))
    fabric: list = []   # [(driver, pool, device)] of the devices every node reaches, not allocated
    if not one_pool_per_node and maybe(draw, 1, 4):
        devs = _devices(draw, DRA_DRIVERS[0], 2)
        others.append(_slice("fabric", DRA_DRIVERS[0], "fabric", devs, allNodes=True))
        fabric = [(DRA_DRIVERS[0], "fabric", d["name"]) for d in devs]

    # Bound pods: some hold a claim allocated from their node's free devices, or from the
    # devices every node reaches (an allocation without a node selector: a pod that shares it
    # may go anywhere).
    bound = []
    for i, pod in enumerate(base.pods):
        pod = copy.deepcopy(pod)
        if maybe(draw, 2, 3):
            pod["metadata"]["namespace"] = "default"   # mostly one namespace, so claims are shared
        pod["metadata"]["uid"] = pod_uid(pod)
        node = pod["spec"]["nodeName"]
        wide = bool(fabric) and maybe(draw, 1, 3)
        source = fabric if wide else free[node]
        if source and pod["status"]["phase"] == "Running" and maybe(draw, 1, 2):
            count = draw(integers(1, min(2, len(source))))
            taken = source[:count]
            del source[:count]
            claim = _claim(f"held-{i}", pod["metadata"]["namespace"],
                           [{"name": "r0", "exactly": {"deviceClassName": "any-device", "count": count}}],
                           finalizers=["resource.kubernetes.io/delete-protection"])
            allocation = {"devices": {"results": [{"request": "r0", "driver": d, "pool": p, "device": dev}
                                                  for d, p, dev in taken]}}
            if not wide:
                allocation["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}
            claim["status"] = {
                "allocation": allocation,
                "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"], "uid": pod_uid(pod)}]}
            others.append(claim)
            if orphans and maybe(draw, 1, 4):
                del claim["status"]["reservedFor"]   # its pod is gone; the allocation stays
            else:
                pod["spec"]["resourceClaims"] = [{"name": "held", "resourceClaimName": claim["metadata"]["name"]}]
        bound.append(pod)

    # Pending pods: each claim new, shared with an earlier pod (or a bound one), from a template
    # (the claim made for the pod already, or not yet), or now and then missing.
    claims = [o for o in others if o["kind"] == "ResourceClaim"]
    pending = []
    for i in range(draw(integers(min_pending, max_pending))):
        pod = _pod(draw, f"pending-{i}", (), affinity=False)
        pod["spec"].pop("nodeName", None)
        if maybe(draw, 2, 3):
            # Mostly a plain pod, so that the earlier filters leave DynamicResources nodes to judge.
            pod["spec"] = {"containers": [{"name": "c0", "image": draw(sampled(tuple(IMAGES))),
                                           "resources": {"requests": {"cpu": "100m"}}}]}
        if maybe(draw, 2, 3):
            pod["metadata"]["namespace"] = "default"
        pod["metadata"]["uid"] = pod_uid(pod)
        ns = pod["metadata"]["namespace"]
        refs = []
        for j in range(1 + maybe(draw, 1, 4) + maybe(draw, 1, 8)):
            rc = f"rc{j}"
            kind = draw(_CLAIM_KINDS)
            ours = [c for c in claims if c["metadata"]["namespace"] == ns
                    and c["metadata"]["name"] not in {r.get("resourceClaimName") for r in refs}
                    and not c["metadata"].get("ownerReferences")]
            if kind == "shared" and ours:
                held = [c for c in ours if "status" in c]
                pick = held if held and draw(st.booleans()) else ours   # half the time one in use
                refs.append({"name": rc, "resourceClaimName": drawn_from(draw, pick)["metadata"]["name"]})
                continue
            if kind == "missing":
                refs.append({"name": rc, "resourceClaimName": f"absent-{i}-{j}"})
                continue
            requests, constraints = _device_requests(draw, tuple(classes), admin=ns == ADMIN_NAMESPACE)
            if kind in ("template", "fresh"):
                template = f"tmpl-{i}-{j}"
                others.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                               "metadata": {"name": template, "namespace": ns},
                               "spec": {"spec": _claim("", ns, requests, constraints)["spec"]}})
            if kind == "fresh":
                # Its claim not made yet: eval and simulate make it first, as the resourceclaim
                # controller would.
                refs.append({"name": rc, "resourceClaimTemplateName": template})
                continue
            if kind == "template":
                made = f"pending-{i}-{rc}-x7k2q"   # the controller's generated name
                claim = _claim(made, ns, requests, constraints,
                               annotations={"resource.kubernetes.io/pod-claim-name": rc},
                               ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                                                 "uid": pod_uid(pod), "controller": True,
                                                 "blockOwnerDeletion": True}])
                refs.append({"name": rc, "resourceClaimTemplateName": template})
                pod["status"].setdefault("resourceClaimStatuses", []).append({"name": rc, "resourceClaimName": made})
            else:
                claim = _claim(f"claim-{i}-{j}", ns, requests, constraints)
                refs.append({"name": rc, "resourceClaimName": claim["metadata"]["name"]})
            others.append(claim)
            claims.append(claim)
        pod["spec"]["resourceClaims"] = refs
        if extended:
            _ask_extended(draw, pod, classes, others)
        pending.append(pod)
    if new_fields:
        others = _new_dra_fields(draw, others)
    return DraScenario(Cluster(base.nodes, tuple(bound), tuple(others)), tuple(pending))


TAINT_KEY = "example.com/health"
_TAINTS = st.sampled_from([{"key": TAINT_KEY, "value": "bad", "effect": "NoSchedule"},
                           {"key": TAINT_KEY, "value": "bad", "effect": "NoExecute"},
                           {"key": TAINT_KEY, "value": "maintenance", "effect": "NoSchedule"},
                           {"key": TAINT_KEY, "value": "bad", "effect": "None"}])
_TOLERATIONS = st.sampled_from([{"key": TAINT_KEY, "operator": "Exists"},
                                {"key": TAINT_KEY, "operator": "Equal", "value": "bad"},
                                {"key": TAINT_KEY, "operator": "Equal", "value": "bad", "effect": "NoSchedule"},
                                {"operator": "Exists", "effect": "NoExecute"}])
# A device shared by allocations: its memory in steps of 8Gi from 8Gi, 8Gi by default.
_SHARED_MEMORY = {"value": "40Gi", "requestPolicy": {"default": "8Gi",
                                                     "validRange": {"min": "8Gi", "step": "8Gi"}}}


def _new_dra_fields(draw, others: list) -> list:
    """The DRA fields of features on by default from v1.36 (DRADeviceTaints,
    DRAPartitionableDevices, DRAConsumableCapacity), on objects dra_scenarios drew: some devices
    tainted (NoSchedule, NoExecute, or None, which does not count), some requests tolerating;
    some node pools partitioned, with a slice of shared counters (memory the devices consume
    40Gi each of) beside the devices' slice; some devices shared (allowMultipleAllocations, a
    memory capacity with a request policy) and some requests asking for memory; now and then a
    distinctAttribute constraint."""
    out = []
    for obj in others:
        obj = copy.deepcopy(obj)
        if obj["kind"] == "ResourceSlice":
            spec = obj["spec"]
            for device in spec["devices"]:
                if maybe(draw, 1, 5):
                    device["taints"] = [draw(_TAINTS)]
                if maybe(draw, 1, 6):
                    device["allowMultipleAllocations"] = True
                    device["capacity"] = {"memory": dict(_SHARED_MEMORY)}
            partition = ("nodeName" in spec and spec["pool"]["resourceSliceCount"] == 1
                         and not any(d.get("allowMultipleAllocations") for d in spec["devices"]) and maybe(draw, 1, 4))
            if partition:
                spec["pool"]["resourceSliceCount"] = 2
                for device in spec["devices"]:
                    device["consumesCounters"] = [{"counterSet": "mem",
                                                   "counters": {"memory": {"value": "40Gi"}}}]
                out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                            "metadata": {"name": f"{obj['metadata']['name']}-counters"},
                            "spec": {"driver": spec["driver"], "nodeName": spec["nodeName"],
                                     "pool": dict(spec["pool"]),
                                     "sharedCounters": [{"name": "mem", "counters": {
                                         "memory": {"value": draw(sampled(("40Gi", "80Gi", "120Gi")))}}}]}})
        elif obj["kind"] in ("ResourceClaim", "ResourceClaimTemplate") and not obj.get("status"):
            spec = obj["spec"]["spec"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]
            for request in spec["devices"]["requests"]:
                for exact in [request["exactly"]] if "exactly" in request else request["firstAvailable"]:
                    if maybe(draw, 1, 3):
                        exact["tolerations"] = [draw(_TOLERATIONS)]
                    if maybe(draw, 1, 4) and exact.get("allocationMode") != "All":
                        exact["capacity"] = {"requests": {"memory": draw(sampled(("8Gi", "12Gi", "16Gi", "48Gi")))}}
            if maybe(draw, 1, 8) and len(spec["devices"]["requests"]) > 1:
                spec["devices"].setdefault("constraints", []).append({"distinctAttribute": "gpu.example.com/index"})
        out.append(obj)
    slices = [o for o in out if o["kind"] == "ResourceSlice" and o["spec"].get("devices")]
    shared = {(o["spec"]["driver"], o["spec"]["pool"]["name"], d["name"]) for o in slices for d in o["spec"]["devices"]
              if d.get("allowMultipleAllocations")}
    for n, claim in enumerate(o for o in out if o["kind"] == "ResourceClaim" and o.get("status")):
        # An allocated claim holding a shared device holds a share of it (a shareID, and the
        # capacity it consumes), or the whole device (no shareID: no other share fits beside it).
        for m, result in enumerate(claim["status"]["allocation"]["devices"]["results"]):
            if (result["driver"], result["pool"], result["device"]) in shared and maybe(draw, 2, 3):
                result["shareID"] = f"00000000-0000-4000-8000-{n:06d}{m:06d}"
                result["consumedCapacity"] = {"memory": draw(sampled(("8Gi", "16Gi", "40Gi")))}
    for i in range(draw(integers(0, 2)) if slices and maybe(draw, 1, 3) else 0):
        # DeviceTaintRules (v1.37 applies them; v1.36 leaves DRADeviceTaintRules off): a device, a
        # pool or a driver's devices, now and then no selector at all (which selects none).
        spec = drawn_from(draw, slices)["spec"]
        selector = drawn_from(draw, [{"driver": spec["driver"], "pool": spec["pool"]["name"],
                                      "device": drawn_from(draw, spec["devices"])["name"]},
                                     {"driver": spec["driver"], "pool": spec["pool"]["name"]},
                                     {"driver": spec["driver"]}, None])
        rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": f"rule-{i}"},
                "spec": {"taint": draw(_TAINTS)}}
        if selector is not None:
            rule["spec"]["deviceSelector"] = selector
        out.append(rule)
    return out


# Extended resources backed by DRA (DRAExtendedResource, on from Kubernetes 1.36): the name a
# class may give (strategies' EXTENDED, which device plugins also list) and a second one.
DRA_EXTENDED = (EXTENDED, "example.com/nic")
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def _extended_classes(draw, classes: list) -> None:
    """Mostly the gpu class names example.com/gpu; now and then another class names it too (the
    newest serves it, the older one added after it loses its implicit name as well) or names
    example.com/nic; creation times from a few seconds."""
    for c in classes:
        if maybe(draw, 1, 2):
            c["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:0{draw(integers(0, 2))}Z"
        if c["metadata"]["name"] == "gpu" and maybe(draw, 3, 4):
            c["spec"]["extendedResourceName"] = DRA_EXTENDED[0]
        elif maybe(draw, 1, 4):
            c["spec"]["extendedResourceName"] = draw(sampled(DRA_EXTENDED))


def _device_plugin_node(draw, node: dict) -> dict:
    """Sometimes a node whose device plugin lists example.com/gpu (none, zero or a few): there
    NodeResourcesFit counts it, elsewhere DRA serves it."""
    if not maybe(draw, 1, 3):
        node = copy.deepcopy(node)
        for key in ("allocatable", "capacity"):
            node["status"].get(key, {}).pop(EXTENDED, None)
        return node
    node = copy.deepcopy(node)
    count = str(draw(sampled((0, 1, 2, 4))))
    for key in ("allocatable", "capacity"):
        node["status"].setdefault(key, {})[EXTENDED] = count
    return node


def _ask_extended(draw, pod: dict, classes: list, others: list) -> None:
    """A pod that asks for 1-3 of example.com/gpu (mostly; or example.com/nic, or a class's implicit
    name) in a container, sometimes in an init container too; half the time without claims of its
    own; now and then with the claim an earlier cycle made for it (its binding failed)."""
    if maybe(draw, 1, 2):
        pod["spec"]["resourceClaims"] = []
        pod.get("status", {}).pop("resourceClaimStatuses", None)

    def ask(container: dict) -> None:
        name = (DEVICE_CLASS_PREFIX + draw(sampled(tuple(classes))) if maybe(draw, 1, 4)
                else draw(sampled(DRA_EXTENDED[:1] * 3 + DRA_EXTENDED[1:])))
        count = str(draw(integers(1, 3)))
        resources = container.setdefault("resources", {})
        resources.setdefault("requests", {})[name] = count
        resources.setdefault("limits", {})[name] = count

    containers = pod["spec"].setdefault("containers", [{"name": "c0", "image": "busybox"}])
    ask(containers[0])
    if maybe(draw, 1, 4):
        init = {"name": "init-gpu", "image": "busybox"}
        if maybe(draw, 1, 3):
            init["restartPolicy"] = "Always"    # a sidecar: long-lived
        ask(init)
        pod["spec"].setdefault("initContainers", []).append(init)
    if maybe(draw, 1, 8):
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        others.append(_claim(f"{name}-extended-resources-x7k2q", ns,
                             [{"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu", "count": 1}}],
                             annotations={"resource.kubernetes.io/extended-resource-claim": "true"},
                             ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod_uid(pod),
                                               "controller": True}]))

"""kube-scheduler's extender protocol (v1) over a profile's team policies: the requests decoded as
Go's encoding/json decodes ``k8s.io/kube-scheduler/extender/v1``'s types, the verbs run on the
cluster state, the results encoded with Go's field names.

Only the team's own policies run here (export.team_plan); the stdlib part runs in kube-scheduler
itself. Scores: the team plugins' weighted sum, divided by the sum of their weights (the
extender's `weight` in the exported configuration) and by MaxNodeScore / MaxExtenderPriority
(100 / 10), rounded half up, so that kube-scheduler's `Score × weight × 10` gives back the
weighted sum to within 5 × weight (docs/deploy/README.md, "Scores").
"""

from __future__ import annotations

from collections import Counter, OrderedDict
import json
import weakref
from typing import Callable

import attrs
import numpy as np

from ..cluster.load import structure_object
from ..api.model import Node, Pod
from ..cluster.state import ClusterState
from ..cost import CostExceeded, DeadlinePassed
from ..diagnostics import InputError
from .export import extender_weight, team_plan
from ..frozen import frozen
from ..run.batch import PolicyErrorInBatch
from ..run.executable import Executable
from ..run.framework import UNRESOLVABLE, PlanRuntimeError, Status, restricted_text
from ..run.phases import base_env, run_prefilter
from ..run.schedule import run_scores
from ..run.vector import by_position

# staging/src/k8s.io/kube-scheduler/extender/v1/types.go
MAX_EXTENDER_PRIORITY = 10
MAX_NODE_SCORE = 100
NOT_IN_STATE = "node(s) not in policylang serve's cluster state"
KEPT_PODS = 64      # decoded pods kept for the requests that follow (Extender._pod)
KEPT_NODE_LISTS = 16    # node lists resolved, kept per state (_NodeIndex.resolve)


class BadRequest(Exception):
    """A request that does not decode, or is not the shape of what it claims to be (HTTP 400, with
    the reason, which names the field, as the JSON body's ``error``)."""


# Each type's fields, and what Go expects in each ("object", "list", "string", "map", "int").
TYPES = {
    "ExtenderArgs": {"Pod": ("object", "v1.Pod"), "Nodes": ("object", "v1.NodeList"),
                     "NodeNames": ("list", "[]string")},
    "ExtenderPreemptionArgs": {"Pod": ("object", "v1.Pod"),
                               "NodeNameToVictims": ("object", "map[string]*v1.Victims"),
                               "NodeNameToMetaVictims": ("object", "map[string]*v1.MetaVictims")},
    "Victims": {"Pods": ("list", "[]*v1.Pod"), "NumPDBViolations": ("int", "int64")},
    "MetaVictims": {"Pods": ("list", "[]*v1.MetaPod"), "NumPDBViolations": ("int", "int64")},
    "MetaPod": {"UID": ("string", "string")},
}
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}
INT64 = range(-2**63, 2**63)


def json_type(value) -> str:
    """The JSON type of a decoded value, as Go's errors and serve's name it."""
    return "null" if value is None else _JSON_TYPES.get(type(value), "value")


def go_struct(raw, type_name: str, path: "str | None" = None) -> dict:
    """The fields of Go struct ``type_name`` in a decoded JSON object, matched as encoding/json
    matches them: the exact name, else a case-insensitive one; a later key overrides an earlier one;
    unknown keys are ignored; null leaves the field unset. A value of the wrong JSON type is Go's
    error, in Go's words, naming the field by its ``path`` in the request (default: the type)."""
    fields = TYPES[type_name]
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        if path is None:
            raise BadRequest(f"json: cannot unmarshal {json_type(raw)} into Go value of type v1.{type_name}")
        raise BadRequest(f"json: cannot unmarshal {json_type(raw)} into Go struct field {path} of type v1.{type_name}")
    folded = {name.casefold(): name for name in fields}
    out = {}
    for key, value in raw.items():
        name = key if key in fields else folded.get(key.casefold())
        if name is None:
            continue
        if value is None:
            out.pop(name, None)
            continue
        want, go_type = fields[name]
        ok = {"object": isinstance(value, dict), "list": isinstance(value, list), "string": isinstance(value, str),
              "int": isinstance(value, int) and not isinstance(value, bool) and value in INT64}[want]
        if not ok:
            what = json_type(value) if want != "int" or not isinstance(value, int) else f"number {value}"
            raise BadRequest(f"json: cannot unmarshal {what} into Go struct field {path or type_name}.{name} "
                             f"of type {go_type}")
        out[name] = value
    return out


def decode_pod(raw, where: str = "Pod") -> Pod:
    """The request's pod at ``where``, typed and checked as a dump's pods are."""
    if not isinstance(raw, dict):
        raise BadRequest(f"{where}: expected a Pod object, got {json_type(raw)}")
    pod_meta(raw, where)
    raw = {"apiVersion": "v1", **raw, "kind": "Pod"}
    try:
        return structure_object(raw, where)
    except InputError as err:
        raise BadRequest(str(err)) from None


def pod_meta(raw: dict, where: str) -> dict:
    """The pod's metadata (an object, or none), whose names are strings when given."""
    meta = raw.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise BadRequest(f"{where}.metadata: expected an ObjectMeta object, got {json_type(meta)}")
    for field in ("name", "generateName", "namespace", "uid"):
        value = meta.get(field)
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"{where}.metadata.{field}: expected a string, got {json_type(value)}")
    return meta


def _elements(raw: list, what: str, path: str):
    """A list's elements, each of which must be a ``what`` object (null is refused: kube-scheduler
    sends none, and a nil pod is no victim)."""
    for i, value in enumerate(raw):
        if not isinstance(value, dict):
            raise BadRequest(f"{path}[{i}]: expected a {what} object, got {json_type(value)}")
        yield i, value


def _decode_node(raw, i: int) -> Node:
    if not isinstance(raw, dict):
        raise BadRequest(f"ExtenderArgs.Nodes.items[{i}]: expected a Node object, got {json_type(raw)}")
    try:
        return structure_object({"apiVersion": "v1", **raw, "kind": "Node"}, "ExtenderArgs.Nodes.items", i)
    except InputError as err:
        raise BadRequest(str(err)) from None


@frozen
class VerbOutcome:
    """What a verb answered (``body``, as Go encodes it) and what it decided, for metrics and the log."""
    body: object
    pod: str
    profile: str
    rejections: dict = attrs.Factory(dict)     # plugin → nodes it rejected
    passed: "int | None" = None
    error: str = ""
    timed_out: bool = False     # the error is the request's deadline

class Extender:
    """The team part of each of the engine's profiles, compiled once, by profile name."""

    def __init__(self, plans: dict, profile_for: "Callable[[Pod], str | None]", executor: str = "vector"):
        """``profile_for``: the profile a pod is for (Engine.profile_for; None: another
        scheduler's pod, which every verb passes through untouched)."""
        self.plans = plans
        self.profile_for = profile_for
        self.team = {name: Executable(team_plan(plan), executor) for name, plan in plans.items()}
        self.weights = {name: extender_weight(plan) for name, plan in plans.items()}
        self._pods: OrderedDict = OrderedDict()

    def _exe(self, pod: Pod) -> "tuple[str, Executable | None]":
        name = self.profile_for(pod)
        return (name, self.team[name]) if name is not None else ("", None)

    @staticmethod
    def _nodes(state: ClusterState, args: dict) -> "Candidates":
        """The candidate nodes: named (nodeCacheCapable) and found in the state, or sent whole."""
        if "NodeNames" in args:
            return named_nodes(state, args["NodeNames"])
        listed = args.get("Nodes") or {}
        items = listed.get("items")
        items = [] if items is None else items
        if not isinstance(items, list):
            raise BadRequest(f"json: cannot unmarshal {json_type(items)} into Go struct field "
                             f"ExtenderArgs.Nodes.items of type []v1.Node")
        nodes = [_decode_node(raw, i) for i, raw in enumerate(items)]
        return Candidates(nodes, [n.metadata.name for n in nodes], None, [], items)

    def _pod(self, raw, where: str) -> Pod:
        """The request's pod, decoded once: kube-scheduler sends the same pod to filter and then to
        prioritize (and again each cycle it stays pending), so the last few decoded are kept and
        reused when the JSON object is equal to the one they came from."""
        if not isinstance(raw, dict):
            return decode_pod(raw, where)
        meta = raw.get("metadata")
        key = (meta.get("namespace"), meta.get("name"), meta.get("uid")) if isinstance(meta, dict) else None
        try:
            kept = self._pods.get(key)
        except TypeError:       # an unhashable name: decode_pod says what is wrong
            return decode_pod(raw, where)
        if kept is not None and kept[0] == raw:
            self._pods.move_to_end(key)
            return kept[1]
        pod = decode_pod(raw, where)
        self._pods[key] = (raw, pod)
        if len(self._pods) > KEPT_PODS:
            self._pods.popitem(last=False)
        return pod

    def _request(self, state: ClusterState, body):
        """ExtenderArgs read: the pod, its candidate nodes, its profile and executable."""
        args = _args(body, "ExtenderArgs")
        pod = self._pod(args["Pod"], "ExtenderArgs.Pod")
        return (pod, self._nodes(state, args), *self._exe(pod))

    def filter(self, state: ClusterState, body) -> VerbOutcome:
        pod, cands, profile, exe = self._request(state, body)
        failed = dict.fromkeys(cands.unknown, NOT_IN_STATE)
        unresolvable: dict = {}
        rejected: dict = {}
        error, timed_out = "", False
        if exe is not None and exe.plan.filter_plugins and cands.nodes:
            try:
                rejected = filter_nodes(exe, _view(state, cands), pod, cands.nodes, cands.names)
            except (PlanRuntimeError, CostExceeded) as err:
                error, timed_out = _failure(err, pod), isinstance(err, DeadlinePassed)
        names = cands.names
        messages: dict = {}     # id(Status) → its message: the nodes a step rejects share one Status
        for i, status in rejected.items():
            text = messages.get(id(status))
            if text is None:
                text = messages[id(status)] = status.message
            (unresolvable if status.code == UNRESOLVABLE else failed)[names[i]] = text
        if error:
            passed = np.zeros(len(names), dtype=bool)
        else:
            passed = np.ones(len(names), dtype=bool)
            passed[list(rejected)] = False
        if cands.raw_items is None:
            passed_names = names if passed.all() else cands.name_array()[passed].tolist()
            result = {"Nodes": None, "NodeNames": passed_names}
        else:
            items = [raw for raw, ok in zip(cands.raw_items, passed.tolist()) if ok]
            result = {"Nodes": {"metadata": {}, "items": items}, "NodeNames": None}
        result.update(FailedNodes=failed, FailedAndUnresolvableNodes=unresolvable, Error=error)
        rejections = Counter(status.plugin or "?" for status in rejected.values())
        return VerbOutcome(result, pod.key, profile, dict(rejections), int(passed.sum()), error, timed_out)

    def prioritize(self, state: ClusterState, body) -> VerbOutcome:
        pod, cands, profile, exe = self._request(state, body)
        totals = None
        if exe is not None and exe.plan.score_plugins and cands.nodes:
            try:
                totals = score_nodes(exe, _view(state, cands), pod, cands.nodes, cands.names)
            except (PlanRuntimeError, CostExceeded) as err:
                # HostPriorityList has no error field: the HTTP error tells kube-scheduler.
                raise PlanFailed.of(err, pod) from None
        scores = extender_scores(totals if totals is not None else np.zeros(len(cands.names), dtype=np.int64),
                                 self.weights.get(profile, 0))
        if cands.raw_items is None:
            body_out = Encoded(_index(state).host_priorities(cands.positions, scores))
        else:
            body_out = [{"Host": h, "Score": s} for h, s in zip(cands.names, scores.tolist())]
        return VerbOutcome(body_out, pod.key, profile)

    def preempt(self, state: ClusterState, body) -> VerbOutcome:
        """Keep the candidates where the pod passes the team filters once their victims are gone
        (the victims themselves unchanged); drop the others."""
        args = _args(body, "ExtenderPreemptionArgs")
        pod = decode_pod(args["Pod"], "ExtenderPreemptionArgs.Pod")
        profile, exe = self._exe(pod)
        by_uid = None
        candidates: dict = {}       # node → (MetaVictims as Go encodes it, the victim pods)
        if "NodeNameToMetaVictims" in args:
            by_uid = {p.metadata.uid: p for p in state.pods if p.metadata.uid}
            for node, raw in args["NodeNameToMetaVictims"].items():
                where = f"ExtenderPreemptionArgs.NodeNameToMetaVictims[{node}]"
                victims = go_struct(raw, "MetaVictims", where)
                uids = [go_struct(m, "MetaPod", f"{where}.Pods[{i}]").get("UID", "")
                        for i, m in _elements(victims.get("Pods", []), "MetaPod", f"{where}.Pods")]
                candidates[node] = ({"Pods": [{"UID": u} for u in uids],
                                     "NumPDBViolations": victims.get("NumPDBViolations", 0)},
                                    [by_uid[u] for u in uids if u in by_uid])
        else:
            for node, raw in (args.get("NodeNameToVictims") or {}).items():
                where = f"ExtenderPreemptionArgs.NodeNameToVictims[{node}]"
                victims = go_struct(raw, "Victims", where)
                pods = [decode_pod(p, f"{where}.Pods[{i}]")
                        for i, p in _elements(victims.get("Pods", []), "Pod", f"{where}.Pods")]
                candidates[node] = ({"Pods": [{"UID": p.metadata.uid} for p in pods],
                                     "NumPDBViolations": victims.get("NumPDBViolations", 0)}, pods)
        kept = {}
        rejections: Counter = Counter()
        for node_name, (meta, victims) in candidates.items():
            node = state.nodes.get(node_name)
            if node is None:
                continue
            if exe is not None and exe.plan.filter_plugins:
                try:
                    with state.trial():
                        for victim in victims:
                            state.drop_pod(victim.key)
                        status = filter_nodes(exe, state, pod, [node], [node_name]).get(0)
                except (PlanRuntimeError, CostExceeded) as err:
                    # ExtenderPreemptionResult has no error field: the HTTP error tells kube-scheduler.
                    raise PlanFailed.of(err, pod) from None
                if status is not None:
                    rejections[status.plugin or "?"] += 1
                    continue
            kept[node_name] = meta
        return VerbOutcome({"NodeNameToMetaVictims": kept}, pod.key, profile, dict(rejections), len(kept))


class PlanFailed(Exception):
    """The policy failed at run time on this pod, or ran past the request's deadline (HTTP 500 or
    503 with the message, never a traceback)."""

    def __init__(self, message: str, deadline: bool = False):
        super().__init__(message)
        self.deadline = deadline

    @classmethod
    def of(cls, err: Exception, pod: "Pod | None" = None) -> "PlanFailed":
        return cls(_failure(err, pod), isinstance(err, DeadlinePassed))


class Encoded(bytes):
    """A body already encoded as JSON."""


def _failure(err: Exception, pod: "Pod | None") -> str:
    """The words for the Error field (or the HTTP error) of a policy that failed on ``pod``."""
    if isinstance(err, CostExceeded) and pod is not None:
        err.pod = err.pod or pod.key
    return str(err)


def _args(body, struct: str) -> dict:
    """The request's ExtenderArgs or ExtenderPreemptionArgs, which must hold the pod."""
    args = go_struct(body, struct)
    if "Pod" not in args:
        raise BadRequest(f"{struct}.Pod is required")
    return args


def extender_scores(totals: np.ndarray, weight: int) -> np.ndarray:
    """Weighted sums of 0..100 scores → 0..MaxExtenderPriority, rounded half up (module docstring)."""
    totals = np.asarray(totals, dtype=np.int64)
    if weight <= 0 or not totals.any():
        return np.zeros(len(totals), dtype=np.int64)
    scale = weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
    return np.clip((2 * totals + scale) // (2 * scale), 0, MAX_EXTENDER_PRIORITY)


@frozen
class Candidates:
    """The nodes a request is about, in its order: named and found in the state (``positions``,
    where each is in the state's node order) or sent whole (``raw_items``, as they came), and the
    names the state does not know."""
    nodes: list
    names: list
    positions: "np.ndarray | None"
    unknown: list
    raw_items: "list | None" = None
    names_kept: "np.ndarray | None" = None

    def name_array(self) -> np.ndarray:
        if self.names_kept is not None:
            return self.names_kept
        return np.fromiter(self.names, dtype=object, count=len(self.names))


class _NodeIndex:
    """What the extender keeps about a state's nodes, for as long as the state lives: the node set
    changes only with a new state (a dump reloaded, a watch's node event), pods move within one."""

    def __init__(self, state: ClusterState):
        self.nodes, self.names = by_position(state)
        self.position = state.node_index
        self.node_list = state.node_list
        self.name_list = self.names.tolist()
        self.all_positions = np.arange(len(self.name_list))
        self._priorities = None
        # Lists met lately (kube-scheduler's node list, in its order; the nodes a pod passed, which
        # prioritize gets next), by length and ends: checking one is a pass of compares, cheaper
        # than finding each name again.
        self._recent: OrderedDict = OrderedDict()

    def resolve(self, state: ClusterState, names) -> Candidates:
        if names == self.name_list:     # every node, in the state's order
            return Candidates(self.node_list, names, self.all_positions, [], names_kept=self.names)
        key = (len(names), names[0], names[-1]) if names and type(names[0]) is str and type(names[-1]) is str else None
        kept = self._recent.get(key)
        if kept is not None and kept[0] == names:
            self._recent.move_to_end(key)
            return kept[1]
        found = self._find(state, names)
        if key is not None:
            self._recent[key] = (found.names if not found.unknown else names, found)
            if len(self._recent) > KEPT_NODE_LISTS:
                self._recent.popitem(last=False)
        return found

    def _find(self, state: ClusterState, names) -> Candidates:
        if not isinstance(names, list):
            raise BadRequest(f"json: cannot unmarshal {json_type(names)} into Go struct field ExtenderArgs.NodeNames "
                             f"of type []string")
        try:
            pos = np.fromiter(map(self.position.__getitem__, names), dtype=np.int64, count=len(names))
            unknown: list = []
        except (KeyError, TypeError):
            if not all(type(n) is str for n in names):
                raise BadRequest("json: cannot unmarshal a non-string into Go struct field ExtenderArgs.NodeNames "
                                 "of type string") from None
            unknown = [n for n in names if n not in self.position]
            names = [n for n in names if n in self.position]
            pos = np.fromiter(map(self.position.__getitem__, names), dtype=np.int64, count=len(names))
        nodes = self.nodes[pos].tolist()
        state.remember_positions(nodes, pos)    # (the executors would look each node up again)
        kept = self.names[pos]      # the state's own strings: what is kept holds no copies
        return Candidates(nodes, kept.tolist(), pos, unknown, names_kept=kept)

    def host_priorities(self, positions: np.ndarray, scores: np.ndarray) -> bytes:
        """The HostPriorityList as JSON: each node's `{"Host":…,"Score":s}` for s in 0..10 is
        encoded once per state, and a request's list is a pick and a join."""
        if self._priorities is None:
            table = np.empty((len(self.name_list), MAX_EXTENDER_PRIORITY + 1), dtype=object)
            for i, name in enumerate(self.name_list):
                host = b'{"Host":' + json.dumps(name).encode() + b',"Score":'
                table[i] = [host + b"%d}" % s for s in range(MAX_EXTENDER_PRIORITY + 1)]
            self._priorities = table
        return b"[" + b",".join(self._priorities[positions, scores].tolist()) + b"]"


_INDEXES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _index(state: ClusterState) -> _NodeIndex:
    index = _INDEXES.get(state)
    if index is None:
        index = _INDEXES[state] = _NodeIndex(state)
    return index


def named_nodes(state: ClusterState, names) -> Candidates:
    """The nodes of a nodeCacheCapable request (NodeNames), found in the state."""
    return _index(state).resolve(state, names)


def _view(state: ClusterState, cands) -> ClusterState:
    """The state a request is decided in: the server's, or with the nodes it sent whole."""
    return state if cands.raw_items is None else _with_nodes(state, cands.nodes)


def _with_nodes(state: ClusterState, nodes: list) -> ClusterState:
    """The state with the request's nodes in place of its own (Nodes sent whole, not cache-capable)."""
    return state.with_nodes(nodes)


def filter_nodes(exe: Executable, state: ClusterState, pod: Pod, nodes: list, names: list) -> dict:
    """The nodes the plan's filters reject, by their index in ``nodes``, with their statuses
    (PreFilter's and Filter's)."""
    pod = state.with_priority(pod)
    try:
        pre = run_prefilter(exe, state, pod, base_env(state, pod))
        if pre.status is not None:
            return dict.fromkeys(range(len(nodes)), pre.status)
        out = {}
        considered, index = nodes, None
        if pre.allowed is not None:
            allowed = pre.allowed
            keep = np.fromiter((n in allowed for n in names), dtype=bool, count=len(names))
            absent = Status(UNRESOLVABLE, (restricted_text(pre.restricted_by),))
            out = dict.fromkeys(np.flatnonzero(~keep).tolist(), absent)
            index = np.flatnonzero(keep)
            considered = [nodes[i] for i in index.tolist()]
        start = 0
        for part, found, passed, _ in exe.backend.filter_in_order(exe, state, pod, pre, considered, None):
            rejected = np.flatnonzero(~passed)
            at = rejected + start if index is None else index[rejected + start]
            out.update(zip(at.tolist(), map(found.__getitem__, rejected.tolist())))
            start += len(part)
        return out
    except PolicyErrorInBatch:
        return filter_nodes(exe.reference(), state, pod, nodes, names)


def score_nodes(exe: Executable, state: ClusterState, pod: Pod, nodes: list,
                names: "list | None" = None) -> "np.ndarray | None":
    """Each node's weighted sum of the plan's normalised scores (None when every score skips the
    pod)."""
    pod = state.with_priority(pod)
    try:
        pre = run_prefilter(exe, state, pod, base_env(state, pod))
        table = run_scores(exe, pre, nodes, names)
    except PolicyErrorInBatch:
        return score_nodes(exe.reference(), state, pod, nodes, names)
    if not table.plugins:
        return None
    return np.asarray(table.totals(), dtype=np.int64)

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

from collections import Counter

import attrs
import numpy as np

from .cluster.load import structure_object
from .cluster.model import Node, Pod
from .cluster.state import ClusterState
from .cost import CostExceeded
from .diagnostics import InputError
from .export import extender_weight, team_plan
from .run.batch import PolicyErrorInBatch
from .run.executable import Executable
from .run.framework import UNRESOLVABLE, PlanRuntimeError, Status, restricted_text
from .run.phases import base_env, run_prefilter
from .run.schedule import run_scores

# staging/src/k8s.io/kube-scheduler/extender/v1/types.go
MAX_EXTENDER_PRIORITY = 10
MAX_NODE_SCORE = 100
NOT_IN_STATE = "node(s) not in policylang serve's cluster state"


class BadRequest(Exception):
    """A request that does not decode (HTTP 400, the reason as the body)."""


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


def go_struct(raw, type_name: str, where: str = "") -> dict:
    """The fields of Go struct ``type_name`` in a decoded JSON object, matched as encoding/json
    matches them: the exact name, else a case-insensitive one; a later key overrides an earlier one;
    unknown keys are ignored; null leaves the field unset. A value of the wrong JSON type is Go's
    error, in Go's words."""
    fields = TYPES[type_name]
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BadRequest(f"json: cannot unmarshal {_JSON_TYPES.get(type(raw), 'value')} into Go value of type "
                         f"v1.{type_name}")
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
              "int": isinstance(value, int) and not isinstance(value, bool)}[want]
        if not ok:
            raise BadRequest(f"json: cannot unmarshal {_JSON_TYPES.get(type(value), 'value')} into Go struct field "
                             f"{type_name}.{where}{name} of type {go_type}")
        out[name] = value
    return out


def decode_pod(raw: dict, where: str = "Pod") -> Pod:
    raw = {"apiVersion": "v1", **raw, "kind": "Pod"}
    try:
        return structure_object(raw, where)
    except InputError as err:
        raise BadRequest(str(err)) from None


def _decode_node(raw, i: int) -> Node:
    if not isinstance(raw, dict):
        raise BadRequest(f"Nodes.items[{i}]: expected a Node object")
    try:
        return structure_object({"apiVersion": "v1", **raw, "kind": "Node"}, "Nodes", i)
    except InputError as err:
        raise BadRequest(str(err)) from None


@attrs.frozen
class Outcome:
    """What a verb answered (``body``, as Go encodes it) and what it decided, for metrics and the log."""
    body: object
    pod: str
    profile: str
    rejections: dict = attrs.Factory(dict)     # plugin → nodes it rejected
    passed: "int | None" = None
    error: str = ""


class Extender:
    """The team part of each profile, compiled once, by profile name."""

    def __init__(self, plans: dict, executor: str = "vector"):
        self.plans = plans
        self.team = {name: Executable(team_plan(plan), executor) for name, plan in plans.items()}
        self.weights = {name: extender_weight(plan) for name, plan in plans.items()}

    def _exe(self, pod: Pod) -> "tuple[str, Executable | None]":
        name = pod.spec.scheduler_name
        if name not in self.team and len(self.team) == 1:
            name = next(iter(self.team))
        return name, self.team.get(name)

    @staticmethod
    def _nodes(state: ClusterState, args: dict) -> tuple:
        """The candidate nodes (known to the state, or given whole), the names not in the state,
        and whether the request named them (nodeCacheCapable) or sent them whole."""
        if "NodeNames" in args:
            names = args["NodeNames"]
            if not set(map(type, names)) <= {str}:
                raise BadRequest("json: cannot unmarshal a non-string into Go struct field ExtenderArgs.NodeNames "
                                 "of type string")
            found = list(map(state.nodes.get, names))
            if all(found):      # (Nodes are always true; `None in` would compare each with ==)
                return found, [], True, None
            return ([n for n in found if n], [n for n, f in zip(names, found) if not f], True, None)
        listed = args.get("Nodes") or {}
        items = listed.get("items") or []
        if not isinstance(items, list):
            raise BadRequest("json: cannot unmarshal into Go struct field NodeList.items of type []v1.Node")
        nodes = [_decode_node(raw, i) for i, raw in enumerate(items)]
        return nodes, [], False, items

    def filter(self, state: ClusterState, body) -> Outcome:
        args = go_struct(body, "ExtenderArgs")
        if "Pod" not in args:
            raise BadRequest("ExtenderArgs.Pod is required")
        pod = decode_pod(args["Pod"])
        nodes, unknown, by_name, raw_items = self._nodes(state, args)
        profile, exe = self._exe(pod)
        failed = {n: NOT_IN_STATE for n in unknown}
        unresolvable: dict = {}
        rejections: Counter = Counter()
        error = ""
        if exe is not None and exe.plan.filter_plugins:
            state = state if by_name else _with_nodes(state, nodes)
            try:
                statuses = filter_nodes(exe, state, pod, nodes)
            except PlanRuntimeError as err:
                statuses, error = {}, str(err)
            for name, status in statuses.items():
                (unresolvable if status.code == UNRESOLVABLE else failed)[name] = status.message
                rejections[status.plugin or "?"] += 1
        rejected = failed.keys() | unresolvable.keys()
        if error:
            passed_names = []
        elif not rejected:
            passed_names = [n.metadata.name for n in nodes]
        else:
            passed_names = [name for n in nodes if (name := n.metadata.name) not in rejected]
        if by_name:
            result = {"Nodes": None, "NodeNames": passed_names}
        else:
            keep = set(passed_names)
            result = {"Nodes": {"metadata": {}, "items": [raw for raw, n in zip(raw_items, nodes)
                                                         if n.metadata.name in keep]}, "NodeNames": None}
        result.update(FailedNodes=failed, FailedAndUnresolvableNodes=unresolvable, Error=error)
        return Outcome(result, pod.key, profile, dict(rejections), len(passed_names), error)

    def prioritize(self, state: ClusterState, body) -> Outcome:
        args = go_struct(body, "ExtenderArgs")
        if "Pod" not in args:
            raise BadRequest("ExtenderArgs.Pod is required")
        pod = decode_pod(args["Pod"])
        nodes, _, by_name, _ = self._nodes(state, args)
        profile, exe = self._exe(pod)
        names = (args["NodeNames"] if by_name and len(nodes) == len(args["NodeNames"])
                 else [n.metadata.name for n in nodes])
        totals: dict = {}
        if exe is not None and exe.plan.score_plugins and nodes:
            state = state if by_name else _with_nodes(state, nodes)
            try:
                totals = score_nodes(exe, state, pod, nodes, names)
            except PlanRuntimeError as err:
                # HostPriorityList has no error field: the HTTP error tells kube-scheduler.
                raise PlanFailed(str(err)) from None
        scores = extender_scores([totals.get(n, 0) for n in names] if totals else [0] * len(names),
                                 self.weights.get(profile, 0))
        body_out = [{"Host": h, "Score": s} for h, s in zip(names, scores)]
        return Outcome(body_out, pod.key, profile)

    def preempt(self, state: ClusterState, body) -> Outcome:
        """Keep the candidates where the pod passes the team filters once their victims are gone
        (the victims themselves unchanged); drop the others."""
        args = go_struct(body, "ExtenderPreemptionArgs")
        if "Pod" not in args:
            raise BadRequest("ExtenderPreemptionArgs.Pod is required")
        pod = decode_pod(args["Pod"])
        profile, exe = self._exe(pod)
        by_uid = None
        candidates: dict = {}       # node → (MetaVictims as Go encodes it, the victim pods)
        if "NodeNameToMetaVictims" in args:
            by_uid = {p.metadata.uid: p for p in state.pods if p.metadata.uid}
            for node, raw in args["NodeNameToMetaVictims"].items():
                victims = go_struct(raw, "MetaVictims", f"NodeNameToMetaVictims[{node}].")
                uids = [go_struct(m, "MetaPod").get("UID", "") for m in victims.get("Pods", [])]
                candidates[node] = ({"Pods": [{"UID": u} for u in uids],
                                     "NumPDBViolations": victims.get("NumPDBViolations", 0)},
                                    [by_uid[u] for u in uids if u in by_uid])
        else:
            for node, raw in (args.get("NodeNameToVictims") or {}).items():
                victims = go_struct(raw, "Victims", f"NodeNameToVictims[{node}].")
                pods = [decode_pod(p, f"NodeNameToVictims[{node}].Pods") for p in victims.get("Pods", [])]
                candidates[node] = ({"Pods": [{"UID": p.metadata.uid} for p in pods],
                                     "NumPDBViolations": victims.get("NumPDBViolations", 0)}, pods)
        kept = {}
        rejections: Counter = Counter()
        for node_name, (meta, victims) in candidates.items():
            node = state.nodes.get(node_name)
            if node is None:
                continue
            if exe is not None and exe.plan.filter_plugins:
                status = filter_nodes(exe, state.without(victims), pod, [node]).get(node_name)
                if status is not None:
                    rejections[status.plugin or "?"] += 1
                    continue
            kept[node_name] = meta
        return Outcome({"NodeNameToMetaVictims": kept}, pod.key, profile, dict(rejections), len(kept))


class PlanFailed(Exception):
    """The policy failed at run time on this pod (HTTP 500 with the message, never a traceback)."""


def extender_scores(totals: list, weight: int) -> list:
    """Weighted sums of 0..100 scores → 0..MaxExtenderPriority, rounded half up (module docstring)."""
    if weight <= 0 or not any(totals):
        return [0] * len(totals)
    scale = weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
    out = (2 * np.asarray(totals, dtype=np.int64) + scale) // (2 * scale)
    return np.clip(out, 0, MAX_EXTENDER_PRIORITY).tolist()


def _with_nodes(state: ClusterState, nodes: list) -> ClusterState:
    """The state with the request's nodes in place of its own (Nodes sent whole, not cache-capable)."""
    return ClusterState.build([*nodes, *(o for o in state.objects() if not isinstance(o, Node))])


def filter_nodes(exe: Executable, state: ClusterState, pod: Pod, nodes: list) -> dict:
    """The nodes the plan's filters reject, with their statuses (PreFilter's and Filter's)."""
    pod = state.with_priority(pod)
    try:
        pre = run_prefilter(exe, state, pod, base_env(state, pod))
        if pre.status is not None:
            return {n.metadata.name: pre.status for n in nodes}
        out = {}
        considered = nodes
        if pre.allowed is not None:
            absent = Status(UNRESOLVABLE, (restricted_text(pre.restricted_by),))
            out = {n.metadata.name: absent for n in nodes if n.metadata.name not in pre.allowed}
            considered = [n for n in nodes if n.metadata.name in pre.allowed]
        for part, found, passed, _ in exe.backend.filter_in_order(exe, state, pod, pre, considered, None):
            for i in (~passed).nonzero()[0].tolist():
                out[part[i].metadata.name] = found[i]
        return out
    except PolicyErrorInBatch:
        return filter_nodes(exe.reference(), state, pod, nodes)
    except CostExceeded as err:
        err.pod = err.pod or pod.key
        raise


def score_nodes(exe: Executable, state: ClusterState, pod: Pod, nodes: list, names: "list | None" = None) -> dict:
    """Each node's weighted sum of the plan's normalised scores ({} when every score skips the pod)."""
    pod = state.with_priority(pod)
    try:
        pre = run_prefilter(exe, state, pod, base_env(state, pod))
        table = run_scores(exe, pre, nodes, names)
    except PolicyErrorInBatch:
        return score_nodes(exe.reference(), state, pod, nodes, names)
    except CostExceeded as err:
        err.pod = err.pod or pod.key
        raise
    if not table.plugins:
        return {}
    return dict(zip(table.names, table.totals().tolist()))

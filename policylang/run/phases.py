"""PreFilter and Filter for one pod and one node, as the reference runs them: the steps both
executors share (the vector executor filters batches of nodes, batch.py, but a node with nominated
pods, preemption's dry run and explain run these).
"""

from __future__ import annotations

import attrs

from .. import plan as P
from ..api.model import Node, Pod
from ..cluster.state import ClusterState
from ..types import CLUSTER_FIELDS
from .framework import UNRESOLVABLE, Status, call, reasons_of, truthy


@attrs.define
class PreFilterOutcome:
    envs: dict                     # plugin name → env after its pod-stage steps
    active: dict                   # plugin name → filters not skipped
    status: "Status | None" = None  # a PreFilter rejection
    allowed: "set | None" = None   # restrict nodes to
    restricted_by: tuple = ()      # plugins that restricted the node set
    reached: set = attrs.Factory(set)


_CLUSTER_LISTS = {name: read for name, (_, read) in CLUSTER_FIELDS.items()}


class ClusterView(dict):
    """`cluster` in a policy: each list made when first read in a cycle (every bound pod of a
    large cluster is a long list that most policies never read)."""

    def __init__(self, state: ClusterState):
        super().__init__()
        self.state = state

    def __missing__(self, name: str):
        value = self[name] = _CLUSTER_LISTS[name](self.state)
        return value

    def get(self, name: str, default=None):
        return self[name] if name in _CLUSTER_LISTS else super().get(name, default)


def base_env(state: ClusterState, pod: Pod) -> dict:
    return {"pod": pod, "cluster": ClusterView(state), "$state": state}


def run_prefilter(exe, state: ClusterState, pod: Pod, base: dict) -> PreFilterOutcome:
    out = PreFilterOutcome(envs={}, active={})
    restricting: list[str] = []
    for plugin in exe.plugins:
        env = {**base, "params": plugin.params}
        out.envs[plugin.name] = env
        if not plugin.filters:
            continue
        out.reached.add(plugin.name)
        active = []
        for f in plugin.filters:
            skipped = False
            for step in f.pod_steps:
                if step.kind == "skip":
                    if truthy(call(step.fn, env, plugin.name, "PreFilter")):
                        skipped = True
                        break
                elif step.kind == "let":
                    env[step.name] = call(step.fn, env, plugin.name, "PreFilter")
                elif step.kind == "restrict":
                    names = call(step.fn, env, plugin.name, "PreFilter")
                    if names is not None:
                        restricting.append(plugin.name)
                        names = set(names)
                        out.allowed = names if out.allowed is None else out.allowed & names
                elif truthy(call(step.fn, env, plugin.name, "PreFilter")):
                    status = Status(step.code, reasons_of(call(step.reason, env, plugin.name, "PreFilter")),
                                    plugin.name, step.origin)
                    out.status = status
                    if status.code == UNRESOLVABLE:
                        out.active[plugin.name] = active
                        return out
                    break
            if not skipped:
                active.append(f)
        out.active[plugin.name] = active
        if out.allowed is not None and not out.allowed:
            plugins = sorted(set(restricting))
            text = (f"node(s) didn't satisfy plugin {plugins[0]}" if len(plugins) == 1 else
                    f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}] simultaneously")
            out.status = Status(UNRESOLVABLE, (text,), "")
            return out
    out.restricted_by = tuple(sorted(set(restricting)))
    return out


def run_filters(exe, pre: PreFilterOutcome, node: Node) -> "Status | None":
    """The first failing plugin's status on this node, or None when the node fits."""
    for plugin in exe.plugins:
        for f in pre.active.get(plugin.name, ()):
            env = pre.envs[plugin.name]
            env["node"] = node
            for step in f.node_steps:
                if step.kind == "let":
                    env[step.name] = call(step.fn, env, plugin.name, "filter")
                elif truthy(call(step.fn, env, plugin.name, "filter")):
                    return Status(step.code, reasons_of(call(step.reason, env, plugin.name, "filter")), plugin.name,
                                  step.origin)
    return None


def filter_lets_on(exe, state: ClusterState, pod: Pod, node_name: str, plugin, needs: str) -> "dict | None":
    """What ``plugin``'s filter let on the chosen node (names without their `#k` suffix), its
    PreFilter and Filters run again there: how a Reserve reads its plugin's decision for the node.
    None where the plan's filter lets no ``needs``, or the plugin takes no part, or the node no
    longer fits."""
    if not any(isinstance(step, P.LetStep) and step.name.split("#")[0] == needs
               for f in plugin.filters for step in f.node_steps):
        return None
    pod = exe.apply_rules(state, state.with_priority(pod))
    pre = run_prefilter(exe, state, pod, base_env(state, pod))
    if pre.status is not None or not pre.active.get(plugin.name) or run_filters(exe, pre, state.nodes[node_name]):
        return None
    return lets_of(pre.envs[plugin.name])


def lets_of(env: dict) -> dict:
    """A plugin's environment by the names its policy gave its lets (without the `#k` the
    compiler adds to keep them unique)."""
    return {key.split("#")[0]: value for key, value in env.items()}


def run_filters_with_nominated(exe, state: ClusterState, pod: Pod, pre: PreFilterOutcome,
                               node: Node) -> "Status | None":
    """RunFilterPluginsWithNominatedPods: the pending pods nominated to this node with a priority
    at least the pod's count as already there (the pod must not take the room they were promised);
    if the node passes with them, it must pass without them too (their pods may never arrive, so
    the pod must not rely on them, e.g. for pod affinity)."""
    if not state.nominated:
        return run_filters(exe, pre, node)
    name = node.metadata.name
    ahead = nominated_ahead(state, pod, name)
    if not ahead:
        return run_filters(exe, pre, node)
    # Placing them changes what PreFilter computed (spread counts, affinity terms), as the
    # framework's AddPod extensions do; so run PreFilter again on a state that has them.
    with state.trial():
        for p in ahead:
            state.put_pod(attrs.evolve(p, spec=attrs.evolve(p.spec, node_name=name)))
        with_them = run_prefilter(exe, state, pod, base_env(state, pod))
        status = with_them.status or run_filters(exe, with_them, state.nodes[name])
    return status if status is not None else run_filters(exe, pre, node)


def nominated_ahead(state: ClusterState, pod: Pod, node_name: str) -> list[Pod]:
    """The pending pods nominated to this node that the pod must leave room for: those of at
    least its priority."""
    priority = pod.spec.priority or 0
    return [p for p in state.nominated_pods_for(node_name) if (p.spec.priority or 0) >= priority and p.key != pod.key]

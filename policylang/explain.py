"""Explain: why a pod is Pending, and the smallest changes that would let it schedule.

For every node, every filter plugin's verdict as if it ran alone (kube-scheduler stops at
the first); the near misses (nodes only one plugin rejects); and counterfactuals — each a
concrete change to the pod or the cluster, checked by running the plan again on the changed
input before it is shown.
"""

from __future__ import annotations

from typing import Callable, Iterator

import attrs

from .cluster.model import Node, Pod, Toleration
from .cluster.quantity import Quantity, ZERO, format_quantity
from .cluster.state import ClusterState
from .decision import SUCCESS, Decision, Status
from .run.schedule import Executable, base_env, run_filters, run_prefilter, schedule

SKIP = "Skip"


@attrs.frozen
class Suggestion:
    change: str
    node: str                 # the node it makes room on
    result: str               # the node the pod then goes to


@attrs.frozen
class Explanation:
    decision: Decision
    filters: dict             # node → plugin → Status (Success / Skip included)
    near_misses: tuple        # (node, Status) of nodes a single plugin rejects, closest first
    suggestions: tuple        # of Suggestion, verified


def filters_alone(exe: Executable, state: ClusterState, pod: Pod) -> dict[str, dict[str, Status]]:
    """node → plugin → that plugin's verdict as if it were the only filter."""
    pre = run_prefilter(exe, state, exe.apply_rules(state, pod), base_env(state, exe.apply_rules(state, pod)))
    out: dict[str, dict[str, Status]] = {name: {} for name in state.nodes}
    for plugin in exe.plugins:
        if not plugin.filters:
            continue
        if not pre.active.get(plugin.name):
            for name in state.nodes:
                out[name][plugin.name] = Status(SKIP, (), plugin.name)
            continue
        alone = attrs.evolve(pre, active={plugin.name: pre.active[plugin.name]})
        for name, node in state.nodes.items():
            if pre.status is not None:
                out[name][plugin.name] = pre.status
                continue
            status = run_filters(exe, alone, node)
            out[name][plugin.name] = status or Status(SUCCESS, (), plugin.name)
    return out


def explain(exe: Executable, state: ClusterState, pod: Pod) -> Explanation:
    decision = schedule(exe, state, pod)
    verdicts = filters_alone(exe, state, pod)
    near = []
    for name, by_plugin in verdicts.items():
        failing = [s for s in by_plugin.values() if s.code not in (SUCCESS, SKIP)]
        if len(failing) == 1:
            near.append((name, failing[0]))
    near.sort(key=lambda ns: (_distance(state, pod, *ns), ns[0]))
    suggestions = [] if decision.selected else list(_suggest(exe, state, pod, decision, near))
    return Explanation(decision, verdicts, tuple(near), tuple(suggestions))


def _distance(state: ClusterState, pod: Pod, node_name: str, status: Status) -> float:
    """How far a near miss is from fitting: the share of a resource request that does not fit,
    0.5 for any other single reason, and one more for what preemption cannot help."""
    from .cluster.resources import pod_requests
    base = 0.0 if status.code == "Unschedulable" else 1.0
    if status.plugin != "NodeResourcesFit":
        return base + 0.5
    node, request, used = state.nodes[node_name], pod_requests(pod), state.requested.get(node_name, {})
    shares = []
    for reason in status.reasons:
        resource = reason.removeprefix("Insufficient ")
        wanted = request.get(resource, ZERO)
        free = node.status.allocatable.get(resource, ZERO) - used.get(resource, ZERO)
        shares.append(float((wanted - free).amount / wanted.amount) if wanted.amount else 1.0)
    return base + max(shares, default=0.5)


# ---- counterfactuals ------------------------------------------------------------------

def _suggest(exe, state, pod, decision, near) -> Iterator[Suggestion]:
    seen = set()
    if decision.nominated_node:
        victims = ", ".join(f"{v.namespace}/{v.name}" for v in decision.victims)
        yield Suggestion(f"{len(decision.victims)} pod(s) would have to be preempted on {decision.nominated_node}: "
                         f"{victims}", decision.nominated_node, decision.nominated_node)
    for node_name, status in near:
        fixer = FIXERS.get(status.plugin)
        if fixer is None:
            continue
        # A fixer proposes changes smallest first; the first that works is the suggestion.
        for change, new_pod, new_state in fixer(state, pod, state.nodes[node_name], status):
            if change in seen:
                break
            result = schedule(exe, new_state, new_pod, preemption=False).selected
            if result is not None:
                seen.add(change)
                yield Suggestion(change, node_name, result)
                break


def _with_node(state: ClusterState, node: Node) -> ClusterState:
    return ClusterState.build([node if isinstance(o, Node) and o.metadata.name == node.metadata.name else o
                               for o in state.objects()])


def _spec(pod: Pod, **changes) -> Pod:
    return attrs.evolve(pod, spec=attrs.evolve(pod.spec, **changes))


def _fix_taints(state, pod, node, status):
    from .builtins import tolerates
    missing = [t for t in node.spec.taints if t.effect in ("NoSchedule", "NoExecute")
               and not any(tolerates(tol, t) for tol in pod.spec.tolerations)]
    if missing:
        added = tuple(Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect) for t in missing)
        text = ", ".join(f"`{t.key}={t.value}:{t.effect}`" if t.value else f"`{t.key}:{t.effect}`" for t in missing)
        yield f"add toleration {text} (for {node.metadata.name})", _spec(pod, tolerations=pod.spec.tolerations + added), state


def _fix_unschedulable(state, pod, node, status):
    uncordoned = attrs.evolve(node, spec=attrs.evolve(node.spec, unschedulable=False))
    yield f"uncordon {node.metadata.name}", pod, _with_node(state, uncordoned)


def _fix_selector(state, pod, node, status):
    labels = dict(node.metadata.labels)
    wanted = {k: v for k, v in pod.spec.node_selector.items() if labels.get(k) != v}
    if wanted:
        text = ", ".join(f"{k}={v}" for k, v in wanted.items())
        relabeled = attrs.evolve(node, metadata=attrs.evolve(node.metadata, labels={**labels, **wanted}))
        yield f"label {node.metadata.name} with {text}", pod, _with_node(state, relabeled)


def _fix_ports(state, pod, node, status):
    def without_host_ports(c):
        return attrs.evolve(c, ports=tuple(attrs.evolve(p, host_port=0) for p in c.ports))
    ports = sorted({p.host_port for c in pod.spec.containers for p in c.ports if p.host_port})
    yield (f"free host port(s) {', '.join(map(str, ports))} on {node.metadata.name}, or drop hostPort from the pod",
           _spec(pod, containers=tuple(without_host_ports(c) for c in pod.spec.containers)), state)


def _fix_resources(state, pod, node, status):
    from .cluster.resources import pod_requests
    alloc, used = node.status.allocatable, state.requested.get(node.metadata.name, {})
    if "Too many pods" in status.reasons:
        more = (alloc.get("pods") or ZERO) + Quantity(1)
        bigger = attrs.evolve(node, status=attrs.evolve(node.status, allocatable={**alloc, "pods": more}))
        yield f"{node.metadata.name} needs 1 more free pod slot", pod, _with_node(state, bigger)
        return
    request, first = pod_requests(pod), pod.spec.containers[0] if pod.spec.containers else None
    lowered, texts = dict(first.resources.requests) if first else {}, []
    for reason in status.reasons:
        resource = reason.removeprefix("Insufficient ")
        free = alloc.get(resource, ZERO) - used.get(resource, ZERO)
        excess = request.get(resource, ZERO) - free
        if first is None or free <= ZERO or lowered.get(resource, ZERO) < excess:
            return  # no request small enough fits here
        lowered[resource] = lowered[resource] - excess
        texts.append(f"{resource} request to ≤ {format_quantity(request[resource] - excess)} "
                     f"({node.metadata.name} has {format_quantity(free)} free)")
    smaller = attrs.evolve(first, resources=attrs.evolve(
        first.resources, requests=lowered, limits={k: v for k, v in first.resources.limits.items() if k not in lowered}))
    yield "lower the " + " and the ".join(texts), _spec(pod, containers=(smaller, *pod.spec.containers[1:])), state


def _fix_spread(state, pod, node, status):
    constraints = pod.spec.topology_spread_constraints
    for skew in range(1, 11):
        relaxed = tuple(attrs.evolve(c, max_skew=c.max_skew + skew) if c.when_unsatisfiable == "DoNotSchedule" else c
                        for c in constraints)
        new_max = max((c.max_skew for c in relaxed if c.when_unsatisfiable == "DoNotSchedule"), default=0)
        yield f"relax maxSkew to {new_max}", _spec(pod, topology_spread_constraints=relaxed), state


FIXERS: dict[str, Callable] = {
    "TaintToleration": _fix_taints,
    "NodeUnschedulable": _fix_unschedulable,
    "NodeAffinity": _fix_selector,
    "NodePorts": _fix_ports,
    "NodeResourcesFit": _fix_resources,
    "PodTopologySpread": _fix_spread,
}

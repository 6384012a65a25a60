"""Capacity: how many more copies of a pod (or of a set of workloads) fit, on which nodes, and
why each node is full — every plugin of the profile applied, as the scheduler would place them;
and the fewest nodes of a template to add so that a pending batch schedules.

Both answers come from simulations on fresh copies of the state (``simulate``), so they are what
`policylang simulate` does with that many pods: N copies all placed, N + 1 not. Copies of pods of
one priority are queued in the order given, so one simulation stopped at the first pod that does
not fit answers exactly; otherwise, and for the nodes a batch needs, the search doubles and then
bisects, which assumes that fewer copies never fit worse than more.
"""

from __future__ import annotations

from typing import Callable, Optional

import attrs

from ..cluster.model import Node, Pod
from ..cluster.state import ClusterState
from ..frozen import frozen
from ..report.decisions import _cores, _gib, _printable
from .simulate import Placement, simulate
from .utilisation import utilisation
from .whatif import fresh_copy

DEFAULT_LIMIT = 1000
MAX_PODS = 100_000          # pods in one trial simulation
CAPACITY_SCHEMA = "policylang/capacity/v1"

ProfileFor = Callable[[Pod], object]


def copies(unit: list[Pod], n: int) -> list[Pod]:
    """n copies of the unit's pods, each named <name>-<k>, pending."""
    out = []
    for k in range(1, n + 1):
        for pod in unit:
            name = f"{pod.metadata.name}-{k}"
            out.append(attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, name=name),
                                    spec=attrs.evolve(pod.spec, node_name="")))
    return out


def _trial(profile_for: ProfileFor, state: ClusterState, pods: list[Pod], added=(),
           until=None) -> tuple[list[Placement], dict]:
    """The placements of simulating the pods, and the utilisation they leave; the state is left as
    it was. Nodes added make a state of their own; without, the pods are placed in a savepoint
    and taken back (cluster/journal.py)."""
    if added:
        objects = state.objects()
        nodes = [o for o in objects if isinstance(o, Node)]
        state = ClusterState.build(nodes + list(added) + [o for o in objects if not isinstance(o, Node)])
    with state.trial():
        placements = simulate(profile_for, state, pods, preemption=False, until=until)
        return placements, utilisation(state)


def _largest(fits: Callable[[int], bool], limit: int) -> int:
    """The largest n in [0, limit] with fits(n), fits(0) taken as true: doubling, then bisection."""
    good, bad = 0, None
    n = 1
    while n <= limit:
        if fits(n):
            good, n = n, n * 2
        else:
            bad = n
            break
    if bad is None:
        if good == limit or fits(limit):
            return limit
        bad = limit
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fits(mid) else (good, mid)
    return good


@frozen
class Headroom:
    unit: tuple[Pod, ...]
    fits: int                               # copies of the unit that fit
    by_node: dict                           # node → pods of those copies placed there
    stopped_by: Optional[Placement]         # the first pod of copy fits + 1 that did not fit
    capped: bool                            # fits reached the limit: there may be room for more
    before: dict                            # utilisation
    after: dict                             # utilisation with the copies placed
    placements: tuple[Placement, ...] = ()  # the placements of the copies that fit


def headroom(profile_for: ProfileFor, state: ClusterState, unit: list[Pod], limit: int = DEFAULT_LIMIT) -> Headroom:
    limit = max(1, min(limit, MAX_PODS // max(len(unit), 1)))   # bounded work: at most MAX_PODS pods a trial
    if _in_input_order(state, unit):
        n, placements, stopped, after = _one_pass(profile_for, state, unit, limit)
    else:
        n, placements, stopped, after = _bisect(profile_for, state, unit, limit)
    by_node: dict[str, int] = {}
    for p in placements:
        by_node[p.node] = by_node.get(p.node, 0) + 1
    return Headroom(tuple(unit), n, dict(sorted(by_node.items())), stopped, n >= limit, utilisation(state),
                    after, tuple(placements))


def _in_input_order(state: ClusterState, unit: list[Pod]) -> bool:
    """Whether the queue keeps copies in the order given (one priority and creation time): then
    simulate(N copies) places exactly the first pods of simulate(N + 1 copies)."""
    return len({(state.with_priority(p).spec.priority, p.metadata.creation_timestamp) for p in unit}) == 1


def _one_pass(profile_for, state, unit, limit):
    """One simulation of up to ``limit`` copies, stopped at the first pod that does not fit: the
    copies before it fit, as simulate would place them."""
    placements, after = _trial(profile_for, state, copies(unit, limit), until=lambda p: not p.node)
    failed = next((i for i, p in enumerate(placements) if not p.node), None)
    if failed is None:
        return limit, placements, None, after
    n = failed // len(unit)
    if n * len(unit) < failed:          # a copy partly placed: the placements of the whole copies only
        kept, after = _trial(profile_for, state, copies(unit, n))
        return n, kept, placements[failed], after
    return n, placements[:failed], placements[failed], after


def _bisect(profile_for, state, unit, limit):
    """Copies queued out of input order (pods of several priorities): doubling and bisection
    over whole simulations of n copies."""
    def all_placed(n: int) -> bool:
        placements, _ = _trial(profile_for, state, copies(unit, n))
        return all(p.node for p in placements)

    n = _largest(all_placed, limit)
    placements, after = _trial(profile_for, state, copies(unit, n))
    stopped = None
    if n < limit:
        more, _ = _trial(profile_for, state, copies(unit, n + 1))
        stopped = next((p for p in more if not p.node), None)
    return n, placements, stopped, after


@frozen
class NodesNeeded:
    template: Node
    count: Optional[int]                    # fewest template nodes; None: even the most tried leaves pods pending
    never: tuple[Placement, ...]            # pods that do not fit even with ``tried`` template nodes
    tried: int
    placements: tuple[Placement, ...]       # the batch with ``count`` (or ``tried``) nodes added
    before: dict
    after: dict


def template_nodes(template: Node, state: ClusterState, n: int) -> list[Node]:
    names, i = [], 0
    while len(names) < n:
        i += 1
        if f"{template.name}-new-{i}" not in state.nodes:
            names.append(f"{template.name}-new-{i}")
    return [fresh_copy(template, name) for name in names]


def nodes_needed(profile_for: ProfileFor, state: ClusterState, pods: list[Pod], template: Node,
                 limit: int = 100) -> NodesNeeded:
    """The fewest copies of ``template`` to add so the batch schedules; with at most ``limit``
    (no more than the batch's size are ever needed for pods that fit an empty template node),
    what still does not fit is reported instead."""
    most = min(limit, max(len(pods), 1))
    at_most, _ = _trial(profile_for, state, pods, template_nodes(template, state, most))
    placeable = sum(1 for p in at_most if p.node)
    never = tuple(p for p in at_most if not p.node)

    def enough(n: int) -> bool:
        placements, _ = _trial(profile_for, state, pods, template_nodes(template, state, n))
        return sum(1 for p in placements if p.node) >= placeable

    # The largest n that is not enough, plus one; 0 when the batch already fits.
    if enough(0):
        count = 0
    else:
        count = _largest(lambda n: not enough(n), most) + 1
        count = min(count, most)
    placements, after = _trial(profile_for, state, pods, template_nodes(template, state, count))
    return NodesNeeded(template, None if never else count, never, most, tuple(placements),
                       utilisation(state), after)


# ---- writers ---------------------------------------------------------------------------------

def _unit_text(unit) -> str:
    """The pods of one copy, by the controller that owns them (a Deployment's ReplicaSet) or by name."""
    counts: dict[str, int] = {}
    for p in unit:
        ref = next((r for r in p.metadata.owner_references if r.controller), None)
        name = f"{ref.kind} {p.metadata.namespace}/{ref.name}" if ref else p.key
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(_printable(k) + (f" ×{c}" if c > 1 else "") for k, c in counts.items())


def _requests(pod: Pod) -> str:
    from ..cluster.resources import pod_requests
    req = pod_requests(pod)
    cpu, mem = req.get("cpu"), req.get("memory")
    return f"cpu {_cores(cpu.milli() if cpu else 0)}, memory {_gib((mem.milli() // 1000) if mem else 0)}"


def _why_full(stopped: Optional[Placement]) -> dict[str, str]:
    if stopped is None or stopped.decision is None:
        return {}
    out = {}
    for n in stopped.decision.nodes:
        if n.failure is not None:
            out[n.name] = f"{n.failure.plugin or 'PreFilter'}: {n.failure.message}"
        elif not n.evaluated:
            out[n.name] = "not evaluated"
    return out


def headroom_text(h: Headroom, nodes: list[str]) -> str:
    what = (_unit_text(h.unit) if len(h.unit) > 1 else f"{_printable(h.unit[0].key)}") + \
        f" ({'; '.join(dict.fromkeys(_requests(p) for p in h.unit))} each)"
    more = f"{h.fits}+ (the limit; raise --max)" if h.capped else str(h.fits)
    lines = [f"Capacity for {'copies of ' if len(h.unit) > 1 else ''}{what}: {more} more fit"
             + (" (each copy is the whole set)" if len(h.unit) > 1 else "")]
    if h.stopped_by is not None:
        lines.append(f"  the next one: {h.stopped_by.message}")
    why = _why_full(h.stopped_by)
    lines += ["", "NODE".ljust(max(map(len, nodes + ["NODE"])) + 2) + "PODS  WHY FULL (for the next one)"]
    for name in nodes:
        reason = why.get(name, "fits one more, but another node scored higher" if h.stopped_by else "")
        lines.append(f"{_printable(name).ljust(max(map(len, nodes + ['NODE'])) + 2)}{str(h.by_node.get(name, 0)).ljust(6)}"
                     f"{_printable(reason)}".rstrip())
    return "\n".join(lines)


def headroom_json(h: Headroom, nodes: list[str]) -> dict:
    why = _why_full(h.stopped_by)
    return {
        "schema": CAPACITY_SCHEMA, "mode": "headroom",
        "unit": [{"namespace": p.metadata.namespace, "name": p.metadata.name} for p in h.unit],
        "fits": h.fits, "capped": h.capped,
        "next_message": h.stopped_by.message if h.stopped_by else None,
        "nodes": [{"name": n, "placed": h.by_node.get(n, 0), "why_full": why.get(n)} for n in nodes],
        "utilisation": {"before": h.before, "after": h.after},
    }


def nodes_needed_text(r: NodesNeeded) -> str:
    head = f"Nodes like {_printable(r.template.name)} to add so the batch schedules: "
    if r.count is None:
        lines = [head + f"none suffices (tried up to {r.tried}); {len(r.never)} pod(s) never fit:"]
        lines += [f"  {_printable(p.pod.key)}: {_printable(p.message or '')}" for p in r.never]
    else:
        lines = [head + str(r.count)]
    placed = [p for p in r.placements if p.node]
    lines += ["", f"With {r.count if r.count is not None else r.tried} added: {len(placed)} of {len(r.placements)} placed"]
    by_node: dict[str, int] = {}
    for p in placed:
        by_node[p.node] = by_node.get(p.node, 0) + 1
    lines += [f"  {_printable(n)}: {c}" for n, c in sorted(by_node.items())]
    return "\n".join(lines)


def nodes_needed_json(r: NodesNeeded) -> dict:
    return {
        "schema": CAPACITY_SCHEMA, "mode": "nodes",
        "template": r.template.name, "nodes_needed": r.count, "tried": r.tried,
        "never_fit": [{"pod": {"namespace": p.pod.metadata.namespace, "name": p.pod.metadata.name},
                       "message": p.message} for p in r.never],
        "placements": [{"pod": {"namespace": p.pod.metadata.namespace, "name": p.pod.metadata.name}, "node": p.node}
                       for p in r.placements],
        "utilisation": {"before": r.before, "after": r.after},
    }

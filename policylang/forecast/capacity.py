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

from ..api.model import Node, Pod
from ..cluster.state import ClusterState
from ..frozen import frozen
from .simulate import Placement, simulate
from .utilisation import utilisation
from .whatif import fresh_copy

DEFAULT_LIMIT = 1000
MAX_PODS = 100_000          # pods in one trial simulation

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
        state = state.with_nodes([*state.nodes_as_arrived(), *added])
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

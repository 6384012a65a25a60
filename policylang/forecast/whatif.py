"""What if: cordon or drain a node, taint it NoExecute, lose a node or a zone, add nodes — and
then let the controllers and the scheduler do what they would.

Events run in order over one state. Each event evicts or loses pods; those a controller owns
(ReplicaSet, StatefulSet, Job, ReplicationController, …) are recreated Pending and scheduled
with the profile, preemption included, together with every pod still pending; bare pods are
lost. DaemonSet pods are never recreated elsewhere: their controller runs one per node.

- ``drain NODE`` is ``kubectl drain NODE --ignore-daemonsets --delete-emptydir-data --force``
  (staging/src/k8s.io/kubectl/pkg/drain): cordon, then evict every pod but DaemonSet-managed
  and mirror pods through the eviction API, which refuses an eviction its PodDisruptionBudget
  does not allow (``budgets.eviction_refusal``). kubectl retries a refused eviction every 5s;
  here each retry is a round, after the pods evicted before it were recreated and scheduled —
  the budget recovers when they run. An eviction still refused once no round evicts anything
  is blocked, listed with its budget.
- ``taint NODE key=value:NoExecute`` is the taint-eviction controller
  (pkg/controller/tainteviction/taint_eviction.go): a pod on the node that does not tolerate
  every NoExecute taint is deleted at once; one that does is deleted after the smallest
  tolerationSeconds of the tolerations used (the first matching each taint,
  GetMatchingTolerations), and stays for good when none of them sets it. It deletes pods
  directly: budgets do not hold it back, and the budgets it breaks are reported.
- ``cordon NODE`` sets spec.unschedulable (and the node lifecycle controller's
  node.kubernetes.io/unschedulable:NoSchedule taint); nothing is evicted.
- ``remove NODE`` / ``remove zone=ZONE``: the nodes are gone with their pods (pod GC), so
  budgets are broken, not consulted.
- ``add N nodes like NODE|FILE``: N copies of a node of the state (or of the Node in FILE),
  uncordoned, without pods or images.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Callable, Optional

import attrs

from . import budgets
from ..cluster.load import load_objects
from ..api.model import Node, Pod, PodStatus, Taint
from ..cluster.state import TERMINAL_PHASES, ClusterState
from ..diagnostics import InputError
from ..frozen import frozen
from ..pending import is_pending
from .simulate import Placement, simulate
from .utilisation import utilisation

ZONE = "topology.kubernetes.io/zone"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"   # corev1.MirrorPodAnnotationKey
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# kubectl drain's warnings (staging/src/k8s.io/kubectl/pkg/drain/filters.go).
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
DRAIN_RETRY_SECONDS = 5          # kubectl drain retries a refused eviction after 5s
MAX_ADDED_NODES = 1000
MAX_ROUNDS = 100                 # scheduling rounds for preemption's victims, drain's retries
MAX_EXPLAINED = 10               # pods left pending that explain looks at (near misses, what would fit)

EVENT_FORMS = ("cordon NODE", "drain NODE", "taint NODE key=value:NoExecute", "remove NODE",
               "remove zone=ZONE", "add N nodes like NODE|FILE")


# ---- events --------------------------------------------------------------------------------

@frozen
class Event:
    text: str
    verb: str                       # cordon, drain, taint, remove, add
    node: str = ""                  # cordon/drain/taint/remove NODE; add: the NODE or FILE to copy
    zone: Optional[str] = None      # remove zone=ZONE
    taint: Optional[Taint] = None
    count: int = 0                  # add N


_TAINT = re.compile(r"^([^=:\s]+)(?:=([^:\s]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$")


def parse_event(text: str) -> Event:
    """One --event, in kubectl's words; a malformed one is an input error listing the forms."""
    words = text.split()
    bad = InputError(f"cannot read event {text!r}; expected one of: {', '.join(EVENT_FORMS)}")
    if not words:
        raise bad
    verb = words[0]
    if verb in ("cordon", "drain") and len(words) == 2:
        return Event(text, verb, node=words[1])
    if verb == "taint" and len(words) == 3:
        m = _TAINT.match(words[2])
        if not m:
            raise InputError(f"cannot read the taint {words[2]!r} of event {text!r}; expected key=value:EFFECT "
                             f"(or key:EFFECT), EFFECT one of NoSchedule, PreferNoSchedule, NoExecute")
        return Event(text, verb, node=words[1], taint=Taint(key=m[1], value=m[2] or "", effect=m[3]))
    if verb == "remove" and len(words) == 2:
        if words[1].startswith("zone="):
            return Event(text, verb, zone=words[1][len("zone="):])
        return Event(text, verb, node=words[1])
    if verb == "add" and len(words) == 5 and words[2] in ("node", "nodes") and words[3] == "like":
        if not words[1].isdigit() or not 0 < int(words[1]) <= MAX_ADDED_NODES:
            raise InputError(f"event {text!r}: the number of nodes to add must be 1 to {MAX_ADDED_NODES}")
        return Event(text, verb, node=words[4], count=int(words[1]))
    raise bad


# ---- what happened -------------------------------------------------------------------------

@frozen
class Move:
    """A pod an event took off its node, and what became of it."""
    pod: Pod
    from_node: Optional[str]        # None: a pod that was pending before the event
    cause: str                      # "evicted", "deleted by the taint manager", "node removed", "preempted"
    fate: str                       # "moved", "pending", "lost", "not recreated", "finished"
    to_node: Optional[str] = None
    at: Optional[int] = None        # seconds after the event (taint eviction and drain retries)
    owner: Optional[str] = None     # Kind/name of its controller
    message: Optional[str] = None   # why it is pending, lost or not recreated

    @property
    def key(self) -> str:
        return self.pod.key


@frozen
class Stay:
    pod: Pod
    node: str
    reason: str


@frozen
class Blocked:
    pod: Pod
    node: str
    pdb: Optional[str]              # namespace/name of the budget that refuses it (None: more than one)
    message: str


@frozen
class EventResult:
    event: Event
    nodes: tuple[str, ...]          # the nodes the event is about (added ones for add)
    moves: tuple[Move, ...] = ()
    stays: tuple[Stay, ...] = ()
    blocked: tuple[Blocked, ...] = ()
    warnings: tuple[str, ...] = ()
    placed: tuple[Placement, ...] = ()   # every scheduling decision the event led to


@frozen
class BudgetReport:
    before: budgets.Budget
    after: budgets.Budget
    blocking: tuple[str, ...]       # pods whose eviction it refused

    @property
    def violated(self) -> bool:
        """Broken by the events: fewer healthy pods than it asks for, where it had enough before."""
        return self.after.violated and not self.before.violated


@frozen
class WhatIfOutcome:
    events: tuple[EventResult, ...]
    pending: tuple[Placement, ...]  # pods left pending at the end (their last decision)
    lost: tuple[Move, ...]
    budgets: tuple[BudgetReport, ...]
    before: dict                    # utilisation (utilisation.py) before the first event
    after: dict
    state: ClusterState             # the state after the last event
    explained: dict = attrs.field(factory=dict)   # pod key → explain's Explanation, for the first pending pods


# ---- the run -------------------------------------------------------------------------------

ProfileFor = Callable[[Pod], object]


def whatif(profile_for: ProfileFor, state: ClusterState, events: list[Event], preemption: bool = True) -> WhatIfOutcome:
    before = utilisation(state)
    budgets_before = {budgets.key(p): budgets.budget(p, state) for p in state.pdbs}
    run = _Run(profile_for, state, preemption)
    results = [run.apply(event) for event in events]
    state = run.state
    blocking: dict[str, list[str]] = {}
    for r in results:
        for b in r.blocked:
            if b.pdb:
                blocking.setdefault(b.pdb, []).append(b.pod.key)
    pending_pods = [p.pod for p in run.pending.values()]
    reports = tuple(BudgetReport(budgets_before[budgets.key(p)], budgets.budget(p, state, pending_pods),
                                 tuple(blocking.get(budgets.key(p), ())))
                    for p in state.pdbs)
    lost = tuple(m for r in results for m in r.moves if m.fate == "lost")
    return WhatIfOutcome(tuple(results), tuple(run.pending.values()), lost, reports, before, utilisation(state), state,
                   _explain(profile_for, state, [p.pod for p in run.pending.values()][:MAX_EXPLAINED]))


def _explain(profile_for: ProfileFor, state: ClusterState, pods: list[Pod]) -> dict:
    """explain's near misses and verified suggestions for pods left pending (those with a profile)."""
    from ..explain import explain

    out = {}
    for pod in pods:
        exe = profile_for(pod)
        if exe is not None and not pod.spec.scheduling_gates:
            out[pod.key] = explain(exe, state, pod)
    return out


class _Run:
    """The state as the events change it, and the pods waiting for the scheduler."""

    def __init__(self, profile_for: ProfileFor, state: ClusterState, preemption: bool):
        self.profile_for, self.state, self.preemption = profile_for, state, preemption
        # Pods waiting to be scheduled, by key, with their last decision (None: not tried yet).
        self.pending: dict[str, Placement] = {}
        for pod in state.pods:
            if is_pending(pod):
                self.pending[pod.key] = Placement(pod, None)

    # -- the events --
    def apply(self, event: Event) -> EventResult:
        return getattr(self, f"_{event.verb}")(event)

    def _cordon(self, event: Event) -> EventResult:
        node = self._node(event.node, event)
        self._replace_nodes({node.name: cordoned(node)})
        moves: list[Move] = []       # preemption's victims, should a pending pod now preempt
        placed = self._schedule(moves)
        return EventResult(event, (node.name,), tuple(self._settled(moves)), placed=tuple(placed))

    def _drain(self, event: Event) -> EventResult:
        node = self._node(event.node, event)
        self._replace_nodes({node.name: cordoned(node)})
        stays, evictable, warnings = drain_filter(self.state.pods_by_node[node.name])
        moves, placed, never = [], [], []
        waiting, refused = evictable, []
        for round_ in range(MAX_ROUNDS):
            current = [budgets.budget(p, self.state, [q.pod for q in self.pending.values()]) for p in self.state.pdbs]
            allowed = {b.key: b.disruptions_allowed for b in current}
            evicted, refused = [], []
            for pod in waiting:
                refusal = budgets.eviction_refusal(pod, [b for b in current if budgets.selects(b.pdb, pod)], allowed)
                (evicted.append(pod) if refusal is None else refused.append((pod, refusal)))
            if not evicted:
                break
            moves += self._take_off(evicted, "evicted", at=round_ * DRAIN_RETRY_SECONDS)
            placed += self._schedule(moves)
            # More than one budget never lets the eviction through: no use retrying it.
            never += [(pod, r) for pod, r in refused if r[0] is None]
            waiting, refused = [pod for pod, (pdb, _) in refused if pdb is not None], []
            if not waiting:
                break
        blocked = [Blocked(pod, node.name, pdb, message) for pod, (pdb, message) in never + refused]
        return EventResult(event, (node.name,), tuple(self._settled(moves)), tuple(stays), tuple(blocked),
                           tuple(warnings), tuple(placed))

    def _taint(self, event: Event) -> EventResult:
        node = self._node(event.node, event)
        taint = event.taint
        kept = tuple(t for t in node.spec.taints if (t.key, t.effect) != (taint.key, taint.effect))
        self._replace_nodes({node.name: attrs.evolve(node, spec=attrs.evolve(node.spec, taints=kept + (taint,)))})
        node = self.state.nodes[node.name]
        stays, timeline = [], {}
        for pod in self.state.pods_by_node[node.name]:
            seconds = eviction_delay(node.spec.taints, pod)
            if seconds is None:
                if taint.effect == "NoExecute":
                    stays.append(Stay(pod, node.name, "tolerates the taint for good (no tolerationSeconds)"))
            else:
                timeline.setdefault(seconds, []).append(pod)
        moves, placed = [], []
        for seconds in sorted(timeline):
            moves += self._take_off(timeline[seconds], "deleted by the taint manager", at=seconds)
            placed += self._schedule(moves)
        if not timeline:
            placed = self._schedule(moves)
        moves = [attrs.evolve(m, message=f"back on {node.name}, whose taint it tolerates for "
                                         f"{eviction_delay(node.spec.taints, m.pod)}s: deleted again then")
                 if m.to_node == node.name and m.fate == "moved" else m for m in self._settled(moves)]
        return EventResult(event, (node.name,), tuple(moves), tuple(stays), placed=tuple(placed))

    def _remove(self, event: Event) -> EventResult:
        if event.zone is not None:
            names = [n.name for n in self.state.nodes.values() if n.metadata.labels.get(ZONE) == event.zone]
            if not names:
                zones = sorted({n.metadata.labels.get(ZONE, "") for n in self.state.nodes.values()} - {""})
                raise InputError(f"event {event.text!r}: no node is in zone {event.zone!r} (label {ZONE}); "
                                 f"zones: {', '.join(zones) or 'none'}")
        else:
            names = [self._node(event.node, event).name]
        gone = [p for name in names for p in self.state.pods_by_node[name]]
        moves = self._take_off(gone, "node removed", at=0)
        self.state = self.state.with_nodes([n for n in self.state.nodes_as_arrived() if n.name not in names],
                                           removed=names)
        placed = self._schedule(moves)
        return EventResult(event, tuple(names), tuple(self._settled(moves)), placed=tuple(placed))

    def _add(self, event: Event) -> EventResult:
        template = self._template(event)
        base = template.name
        taken = set(self.state.nodes)
        names, i = [], 0
        while len(names) < event.count:
            i += 1
            if f"{base}-new-{i}" not in taken:
                names.append(f"{base}-new-{i}")
        added = [fresh_copy(template, name) for name in names]
        self.state = self.state.with_nodes([*self.state.nodes_as_arrived(), *added])
        moves: list[Move] = []
        placed = self._schedule(moves)
        return EventResult(event, tuple(names), tuple(self._settled(moves)), placed=tuple(placed))

    # -- helpers --
    def _node(self, name: str, event: Event) -> Node:
        node = self.state.nodes.get(name)
        if node is None:
            close = difflib.get_close_matches(name, list(self.state.nodes), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise InputError(f"event {event.text!r}: no node {name!r} in the cluster{hint}")
        return node

    def _template(self, event: Event) -> Node:
        if event.node in self.state.nodes:
            return self.state.nodes[event.node]
        if os.path.exists(event.node) or event.node.endswith((".yaml", ".yml", ".json")):
            found = load_objects(event.node, kinds=["Node"])
            if len(found) != 1:
                raise InputError(f"event {event.text!r}: expected one Node, found {len(found)}", path=event.node)
            return found[0]
        return self._node(event.node, event)

    def _replace_nodes(self, changed: dict[str, Node]) -> None:
        """A new state with these nodes changed: what executors keep per node belongs to the old one."""
        self.state = self.state.with_nodes([changed.get(n.name, n) for n in self.state.nodes_as_arrived()])

    def _take_off(self, pods: list[Pod], cause: str, at: int) -> list[Move]:
        """Remove pods from their node; queue the replacements their controllers create."""
        moves = []
        for pod in pods:
            self.state.remove(pod)
            fate, message, owner = fate_of(pod)
            if fate == "pending":
                replacement = recreated(pod)
                self.pending[replacement.key] = Placement(replacement, None)
            moves.append(Move(pod, pod.spec.node_name or None, cause, fate, at=at, owner=owner, message=message))
        return moves

    def _schedule(self, moves: list[Move]) -> list[Placement]:
        """Schedule every pending pod, as the queue retries them after a cluster event; the victims
        of preemption are taken off (and recreated) in turn, until nothing changes."""
        out: list[Placement] = []
        for _ in range(MAX_ROUNDS):
            queue = [p.pod for p in self.pending.values()]
            if not queue:
                break
            on_nodes = {p.key: p for p in self.state.pods if p.spec.node_name}
            placements = simulate(self.profile_for, self.state, queue, preemption=self.preemption)
            out += placements
            victims = []
            for placement in placements:
                if placement.node:
                    self.pending.pop(placement.pod.key, None)
                else:
                    self.pending[placement.pod.key] = placement
                victims += [on_nodes[f"{v.namespace}/{v.name}"] for v in placement.victims
                            if f"{v.namespace}/{v.name}" in on_nodes]
            if not victims:
                break
            for pod in victims:         # simulate removed them from the state already
                fate, message, owner = fate_of(pod)
                if fate == "pending":
                    self.pending[pod.key] = Placement(recreated(pod), None)
                moves.append(Move(pod, pod.spec.node_name, "preempted", fate, owner=owner, message=message))
        return out

    def _settled(self, moves: list[Move]) -> list[Move]:
        """Each move with where its replacement went (or why it waits)."""
        out = []
        bound_to = {p.key: p for p in self.state.bound_pods}
        for m in moves:
            if m.fate != "pending":
                out.append(m)
                continue
            waiting = self.pending.get(m.key)
            if waiting is None:
                bound = bound_to.get(m.key)
                out.append(attrs.evolve(m, fate="moved", to_node=bound.spec.node_name if bound else None))
            else:
                out.append(attrs.evolve(m, message=waiting.message))
        return out


# ---- the rules, one function each ------------------------------------------------------------

def cordoned(node: Node) -> Node:
    """kubectl cordon, and the taint the node lifecycle controller adds for it (TaintNodesByCondition)."""
    taints = node.spec.taints
    if not any(t.key == UNSCHEDULABLE_TAINT and t.effect == "NoSchedule" for t in taints):
        taints = taints + (Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule"),)
    return attrs.evolve(node, spec=attrs.evolve(node.spec, unschedulable=True, taints=taints))


def fresh_copy(template: Node, name: str) -> Node:
    """A new node like the template: its own name and hostname label, schedulable, no images."""
    labels = dict(template.metadata.labels)
    if "kubernetes.io/hostname" in labels:
        labels["kubernetes.io/hostname"] = name
    taints = tuple(t for t in template.spec.taints if t.key != UNSCHEDULABLE_TAINT)
    return attrs.evolve(template, metadata=attrs.evolve(template.metadata, name=name, labels=labels, uid=""),
                        spec=attrs.evolve(template.spec, unschedulable=False, taints=taints),
                        status=attrs.evolve(template.status, images=()))


def drain_filter(pods: list[Pod]) -> tuple[list[Stay], list[Pod], list[str]]:
    """kubectl drain's filters, in its order (makeFilters) with --ignore-daemonsets,
    --delete-emptydir-data and --force: (pods that stay, pods to evict, warnings)."""
    stays, evict = [], []
    warned: dict[str, list[str]] = {}
    for pod in pods:
        finished = pod.status.phase in TERMINAL_PHASES
        ref = budgets.controller_of(pod)
        if ref is not None and ref.kind == "DaemonSet" and not finished:
            stays.append(Stay(pod, pod.spec.node_name, "DaemonSet-managed"))
            warned.setdefault(DAEMONSET_WARNING, []).append(pod.key)
            continue
        if MIRROR_ANNOTATION in pod.metadata.annotations:
            stays.append(Stay(pod, pod.spec.node_name, "mirror pod (a static pod of the kubelet)"))
            continue
        if not finished and ref is None:
            warned.setdefault(UNMANAGED_WARNING, []).append(pod.key)
        evict.append(pod)
    return stays, evict, [f"{message}: {', '.join(keys)}" for message, keys in warned.items()]


def matching_tolerations(taints, tolerations) -> "list | None":
    """GetMatchingTolerations: for each taint the first toleration that tolerates it; None when
    some taint has none."""
    from ..api.selectors import tolerates

    used = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return None
        used.append(match)
    return used


def eviction_delay(taints, pod: Pod) -> "int | None":
    """Seconds until the taint manager deletes the pod (0: at once), or None: it stays for good
    (processPodOnNode and getMinTolerationTime)."""
    no_execute = [t for t in taints if t.effect == "NoExecute"]
    if not no_execute:
        return None
    used = matching_tolerations(no_execute, pod.spec.tolerations)
    if used is None or not used:
        return 0
    seconds = [t.toleration_seconds for t in used if t.toleration_seconds is not None]
    if not seconds:
        return None
    return max(min(seconds), 0)


def fate_of(pod: Pod) -> tuple[str, Optional[str], Optional[str]]:
    """(fate, why, owner) of a pod taken off its node: recreated Pending by its controller,
    finished, a DaemonSet pod (its controller does not recreate it elsewhere), or a bare pod."""
    ref = budgets.controller_of(pod)
    owner = f"{ref.kind}/{ref.name}" if ref is not None else None
    if pod.status.phase in TERMINAL_PHASES:
        return "finished", f"{pod.status.phase}: nothing recreates it", owner
    if MIRROR_ANNOTATION in pod.metadata.annotations:
        return "not recreated", "a mirror pod: its kubelet runs the static pod on its own node only", None
    if ref is None:
        return "lost", "a bare pod (no controller): nothing recreates it", None
    if ref.kind == "DaemonSet":
        return "not recreated", "DaemonSet-managed: its controller runs it on its own node only", owner
    return "pending", None, owner


def recreated(pod: Pod) -> Pod:
    """The pod its controller makes again: the same spec, unbound, Pending. (A ReplicaSet's
    replacement has a new name; keeping the name lets the output follow the pod.)"""
    return attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, deletion_timestamp=None),
                        spec=attrs.evolve(pod.spec, node_name=""), status=PodStatus())

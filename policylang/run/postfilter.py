"""DefaultPreemption's PostFilter: what kube-scheduler tries when no node fits, as upstream's
defaultpreemption plugin and framework/preemption Evaluator do it (v1.35); the plugin's
companion (plugins/default_preemption.py) calls it. Preemption's dry run re-runs the plan's own PreFilter and Filter on
the cluster without the would-be victims, so custom policies are honoured.

Where upstream is random or parallel, this is one deterministic instance of it: potential
nodes are dry-run one at a time in name order from offset 0 (or a seeded random offset), and
ties between equally good nodes go to the smallest node name.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..api.model import Pod, PodDisruptionBudget
from ..cluster.state import ClusterState
from .decision import Victim
from ..frozen import frozen
from .framework import (ERROR, UNRESOLVABLE, UNSCHEDULABLE, PlanRuntimeError, PostFilterOutcome, Status,
                        fit_error_text, restricted_text)
from .phases import base_env, run_filters_with_nominated, run_prefilter

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NO_CANDIDATE = "no candidate node for preemption"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."

# DefaultPreemptionArgs' defaults (pkg/scheduler/apis/config/v1/defaults.go).
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100


@frozen
class Candidate:
    """A node where the pod fits once `victims` (most important first) are gone."""
    node: str
    victims: tuple
    pdb_violations: int = 0


# ---- Evaluator.Preempt ----------------------------------------------------------------------

def preempt(exe, state: ClusterState, pod: Pod, statuses: dict, *, rng=None, offset: "int | None" = None,
            args: "dict | None" = None) -> PostFilterOutcome:
    """DefaultPreemption.PostFilter: nominate the best node where evicting lower-priority pods
    lets the pod fit, or say why there is none. `statuses` is the filter pass's node → Status;
    a node missing from it counts as UnschedulableAndUnresolvable, as upstream's NodeToStatus."""
    nominated = pod.status.nominated_node_name
    nominated_status = (statuses.get(nominated) or Status(UNRESOLVABLE)) if nominated else None
    eligible, why = pod_eligible_to_preempt_others(state, pod, nominated_status)
    if not eligible:
        return PostFilterOutcome(f"preemption: {why}")
    candidates, dry_run, errors = find_candidates(exe, state, pod, statuses, rng=rng, offset=offset, args=args)
    if not candidates:
        if errors:
            return PostFilterOutcome(f"preemption: {aggregate_errors(errors)}", error=True)
        text = fit_error_text(len(state.nodes), dry_run, Status(UNRESOLVABLE, (NOT_HELPFUL,)), None)
        return PostFilterOutcome(f"preemption: {text}")
    best = select_candidate(candidates)
    if best is None:
        return PostFilterOutcome(f"preemption: {NO_CANDIDATE}")
    # v1.37's Preempt says what it found (preemption.go), DefaultPreemption.PostFilter prefixes it
    # with "preemption: " as any of its messages, and the scheduling failure's message carries it
    # after the FitError (types.go FitError.Error); up to v1.36 success had no message.
    found = (f"preemption: found a potential placement for pod on node {best.node}, preempting {len(best.victims)} victims"
             if exe.plan.target.minor >= 37 else "")
    return PostFilterOutcome(found, best.node, tuple(Victim(v.metadata.namespace, v.metadata.name) for v in best.victims))


def find_candidates(exe, state: ClusterState, pod: Pod, statuses: dict, *, rng=None, offset: "int | None" = None,
                    args: "dict | None" = None) -> tuple:
    """findCandidates: the dry run over the nodes where removing pods might help, those that
    failed with plain Unschedulable (not UnschedulableAndUnresolvable)."""
    potential = [name for name in state.nodes
                 if (statuses.get(name) or Status(UNRESOLVABLE)).code == UNSCHEDULABLE]
    if not potential:
        return [], {}, []
    args = args or {}
    wanted = num_candidates(len(potential), args.get("minCandidateNodesPercentage", MIN_CANDIDATE_NODES_PERCENTAGE),
                            args.get("minCandidateNodesAbsolute", MIN_CANDIDATE_NODES_ABSOLUTE))
    if offset is None:
        offset = rng.randrange(len(potential)) if rng is not None else 0
    return dry_run_preemption(exe, state, pod, potential, state.pdbs, offset, wanted)


def num_candidates(num_nodes: int, percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE,
                   absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE) -> int:
    """calculateNumCandidates: how many candidates the dry run looks for before it stops."""
    n = num_nodes * percentage // 100
    return min(max(n, absolute), num_nodes)


def aggregate_errors(errors: list[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): distinct messages, bracketed when several."""
    distinct = list(dict.fromkeys(errors))
    return distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"


# ---- PodEligibleToPreemptOthers ------------------------------------------------------------------

def pod_eligible_to_preempt_others(state: ClusterState, pod: Pod, nominated_status: "Status | None") -> tuple:
    """(eligible, why not). A pod that already preempted on its nominated node waits while
    its victims terminate, rather than preempting more; unless that node can no longer take it
    at all (UnschedulableAndUnresolvable). `nominated_status` None is Success."""
    if pod.spec.preemption_policy == "Never":
        return False, NEVER
    node = pod.status.nominated_node_name
    if node:
        if nominated_status is not None and nominated_status.code == UNRESOLVABLE:
            return True, ""
        for p in state.pods_by_node.get(node, ()):
            if preemption_allowed(p, pod) and terminating_by_preemption(p):
                return False, TERMINATING
    return True, ""


def preemption_allowed(victim: Pod, preemptor: Pod) -> bool:
    """isPreemptionAllowed with the default IsEligiblePod: strictly lower priority."""
    return (victim.spec.priority or 0) < (preemptor.spec.priority or 0)


def terminating_by_preemption(p: Pod) -> bool:
    """Being deleted, and its first DisruptionTarget condition says the scheduler preempted it."""
    if p.metadata.deletion_timestamp is None:
        return False
    for c in p.status.conditions:
        if c.type == "DisruptionTarget":
            return c.status == "True" and c.reason == "PreemptionByScheduler"
    return False


# ---- DryRunPreemption ------------------------------------------------------------------------------

def dry_run_preemption(exe, state: ClusterState, pod: Pod, potential: list[str], pdbs: list, offset: int,
                       wanted: int) -> tuple:
    """(candidates, node → Status of the nodes that are no candidate, error messages).

    Nodes are tried from `offset` round the list until `wanted` candidates are found, at least
    one of them violating no PodDisruptionBudget; candidates that violate none come first."""
    clean: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[str, Status] = {}
    errors: list[str] = []
    for i in range(len(potential)):
        name = potential[(offset + i) % len(potential)]
        try:
            victims, violations, status = select_victims_on_node(exe, state, pod, name, pdbs)
        except PlanRuntimeError as err:
            victims, violations, status = [], 0, Status(ERROR, (str(err),))
        if status is None and victims:
            found = clean if violations == 0 else violating
            # Each list holds at most `wanted` (upstream's fixed-size candidateList).
            if len(found) < wanted:
                found.append(Candidate(name, tuple(victims), violations))
            if clean and len(clean) + len(violating) >= wanted:
                break
            continue
        if status is None:
            status = Status(ERROR, (f'expected at least one victim pod on node "{name}"',))
        if status.code == ERROR:
            errors.append(status.message)
        statuses[name] = status
    return clean + violating, statuses, errors


def select_victims_on_node(exe, state: ClusterState, pod: Pod, node: str, pdbs: list) -> tuple:
    """(victims most important first, how many of them violate a PDB, None) or ([], 0, Status).

    Every lower-priority pod is removed; if the pod still does not fit, the node is no
    candidate and the filter's own Status says why. Otherwise pods are given back one by one,
    most important first and those whose eviction would violate a PDB before the others; a
    pod that cannot be given back is a victim."""
    potential = [p for p in state.pods_by_node.get(node, ()) if preemption_allowed(p, pod)]
    if not potential:
        return [], 0, Status(UNRESOLVABLE, (NO_VICTIMS,))
    status = _fits_without(exe, state, pod, node, potential)
    if status is not None:
        return [], 0, status
    potential.sort(key=importance)
    violating, clean = filter_pods_with_pdb_violation(potential, pdbs, stop_at_violation=exe.plan.target.minor >= 37)
    removed = list(potential)
    victims: list[Pod] = []

    def reprieve(p: Pod) -> bool:
        removed.remove(p)
        if _fits_without(exe, state, pod, node, removed) is None:
            return True
        removed.append(p)
        victims.append(p)
        return False

    num_violating = 0
    for p in violating:
        if not reprieve(p):
            num_violating += 1
    for p in clean:
        reprieve(p)
    if violating and clean:
        # Victims came out in two runs; put them back in importance order.
        victims.sort(key=importance)
    return victims, num_violating, None


def _fits_without(exe, state: ClusterState, pod: Pod, node: str, removed: list[Pod]) -> "Status | None":
    """The node's Status for the pod with these pods gone (None: it fits). PreFilter runs again
    on the smaller cluster, which is what upstream's RemovePod extensions make of its state; the
    pods come back when it is known (a savepoint, not a copy of the state)."""
    with state.trial():
        for p in removed:
            state.drop_pod(p.key)
        pre = run_prefilter(exe, state, pod, base_env(state, pod))
        if pre.status is not None:
            return pre.status
        if pre.allowed is not None and node not in pre.allowed:
            return Status(UNRESOLVABLE, (restricted_text(pre.restricted_by),))
        return run_filters_with_nominated(exe, state, pod, pre, state.nodes[node])


def filter_pods_with_pdb_violation(pods: list[Pod], pdbs: list[PodDisruptionBudget],
                                   stop_at_violation: bool = False) -> tuple:
    """(violating, not violating), each in the given order. Every PDB that selects a pod (same
    namespace, non-empty selector, the pod not already in its disruptedPods) spends one of its
    status.disruptionsAllowed; a pod that takes one below zero would violate it.

    ``stop_at_violation`` is v1.37's: the PDBs are walked in order and the first one a pod takes
    below zero ends the walk, so the PDBs after it that also select the pod keep their budget for
    the pods after it (preemption/util.go FilterVictimsWithPDBViolation's podIsViolating returns
    there); up to v1.36 every PDB that selects the pod spends one (defaultpreemption's
    filterPodsWithPDBViolation)."""
    from ..api.selectors import selector_matches

    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating, clean = [], []
    for p in pods:
        violated = False
        # A pod without labels matches no PDB.
        for i, pdb in enumerate(pdbs if p.metadata.labels else ()):
            selector = pdb.spec.selector
            if pdb.metadata.namespace != p.metadata.namespace or selector is None:
                continue
            # An empty selector matches nothing here (upstream skips selector.Empty()).
            if not selector.match_labels and not selector.match_expressions:
                continue
            if not selector_matches(selector, p.metadata.labels):
                continue
            # Its eviction was already processed by the API server: not a new disruption.
            if p.metadata.name in pdb.status.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
                if stop_at_violation:
                    break
        (violating if violated else clean).append(p)
    return violating, clean


# ---- importance and start times ------------------------------------------------------------------

# A pod that has not started counts as starting now (GetPodStartTime), after every recorded time.
_NOW = datetime.max.replace(tzinfo=timezone.utc)


def start_time(p: Pod) -> datetime:
    return _timestamp(p.status.start_time)


def _timestamp(text: "str | None") -> datetime:
    if not text:
        return _NOW
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return _NOW
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def importance(p: Pod) -> tuple:
    """Sort key for util.MoreImportantPod: higher priority first, then the earlier start. Pods
    equal in both are in no particular order upstream: SelectVictimsOnNode sort.Slices them in
    the order the scheduler's cache received them, which a dump does not record, and two pods
    without status.startTime compare by two time.Now() reads (GetPodStartTime,
    pkg/scheduler/util/utils.go). Here namespace and name decide, so that the input's order
    does not (tests/test_oracle.py, PREEMPTION_TIE_TRIES, asks the oracle in several orders)."""
    return (-(p.spec.priority or 0), start_time(p), p.metadata.namespace, p.metadata.name)


def earliest_start_of_highest(victims) -> datetime:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    top = max(v.spec.priority or 0 for v in victims)
    return min(start_time(v) for v in victims if (v.spec.priority or 0) == top)


# ---- SelectCandidate / pickOneNodeForPreemption --------------------------------------------------

def select_candidate(candidates: list[Candidate]) -> "Candidate | None":
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    return pick_one_node_for_preemption(candidates)


# Each criterion scores a candidate (higher is better); the next one only breaks ties.
_CRITERIA = (
    # Fewest PodDisruptionBudget violations.
    lambda c: -c.pdb_violations,
    # The lowest highest victim priority (victims are most important first).
    lambda c: -(c.victims[0].spec.priority or 0),
    # The smallest sum of priorities, each shifted by MaxInt32+1 so that it is positive: more
    # victims of a negative priority must not look cheaper than fewer.
    lambda c: -sum((v.spec.priority or 0) + 2**31 for v in c.victims),
    # The fewest victims.
    lambda c: -len(c.victims),
    # The latest start among the highest-priority victims: they have run for the least time.
    lambda c: earliest_start_of_highest(c.victims),
)


def pick_one_node_for_preemption(candidates: list[Candidate]) -> Candidate:
    """pickOneNodeForPreemption with the default score functions; a tie after all of them goes
    to the smallest node name (upstream: the first of a map's random order)."""
    pool = sorted(candidates, key=lambda c: c.node)
    for score in _CRITERIA:
        best = max(score(c) for c in pool)
        pool = [c for c in pool if score(c) == best]
        if len(pool) == 1:
            break
    return pool[0]

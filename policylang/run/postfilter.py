"""PostFilter: what kube-scheduler tries when no node fits.

DynamicResources (deallocating claims: nothing to do for pods without claims) and
DefaultPreemption. Preemption's dry run re-runs the plan's own PreFilter and Filter on the
cluster without the would-be victims, so custom policies are honoured.
"""

from __future__ import annotations

import attrs

from ..cluster.model import Pod
from ..cluster.state import ClusterState
from ..decision import UNRESOLVABLE, UNSCHEDULABLE, Status, Victim

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


@attrs.frozen
class PostFilterOutcome:
    message: str = ""
    nominated: "str | None" = None
    victims: tuple = ()


def run_postfilter(exe, state: ClusterState, pod: Pod, pre, statuses: dict, *, enabled: bool = True) -> PostFilterOutcome:
    reasons: list[str] = []
    for plugin in exe.plugins:
        if not plugin.postfilter:
            continue
        if plugin.name == "DynamicResources":
            if plugin.name not in pre.reached:
                # Its PreFilter never ran (an earlier PreFilter rejected the pod), so it has no state.
                return PostFilterOutcome("not found")
            reasons.append("no new claims to deallocate")
        elif plugin.name == "DefaultPreemption" and enabled:
            outcome = preempt(exe, state, pod, statuses)
            if outcome.nominated is not None:
                return outcome
            reasons.append(outcome.message)
    return PostFilterOutcome(", ".join(reasons))


def preempt(exe, state: ClusterState, pod: Pod, statuses: dict) -> PostFilterOutcome:
    """DefaultPreemption: find nodes where evicting lower-priority pods lets the pod fit."""
    from .schedule import fit_error_text

    if pod.spec.preemption_policy == "Never":
        return PostFilterOutcome("preemption: not eligible due to preemptionPolicy=Never.")
    priority = pod.spec.priority or 0
    potential = [name for name in state.nodes if statuses.get(name) is not None
                 and statuses[name].code == UNSCHEDULABLE]
    dry_run: dict[str, Status] = {}
    candidates = []
    for name in potential:
        victims = [p for p in state.pods_by_node[name] if (p.spec.priority or 0) < priority]
        if not victims:
            dry_run[name] = Status(UNRESOLVABLE, (NO_VICTIMS,), "DefaultPreemption")
            continue
        status, kept_out = _select_victims(exe, state, pod, name, victims)
        if status is not None:
            dry_run[name] = status
        else:
            candidates.append((name, kept_out))
    if not candidates:
        text = fit_error_text(len(state.nodes), dry_run, Status(UNRESOLVABLE, (NOT_HELPFUL,)), None)
        return PostFilterOutcome(f"preemption: {text}")
    name, victims = pick_one_node(candidates)
    return PostFilterOutcome("", name, tuple(Victim(v.metadata.namespace, v.metadata.name) for v in victims))


def _fits_without(exe, state: ClusterState, pod: Pod, node_name: str, removed: list[Pod]):
    from .schedule import base_env, run_filters, run_prefilter

    trial = state.without(removed)
    pre = run_prefilter(exe, trial, pod, base_env(trial, pod))
    if pre.status is not None:
        return pre.status
    if pre.allowed is not None and node_name not in pre.allowed:
        return Status(UNRESOLVABLE, ("node(s) didn't satisfy plugin(s)",))
    return run_filters(exe, pre, trial.nodes[node_name])


def _select_victims(exe, state, pod, node_name, victims):
    """Remove every lower-priority pod; if the pod then fits, give back as many as possible,
    most important first (higher priority, then earlier start)."""
    status = _fits_without(exe, state, pod, node_name, victims)
    if status is not None:
        return status, []
    ordered = sorted(victims, key=more_important_first)
    evicted = list(ordered)
    for v in ordered:
        attempt = [p for p in evicted if p is not v]
        if _fits_without(exe, state, pod, node_name, attempt) is None:
            evicted = attempt
    return None, evicted


# A pod without a start time counts as started now, after every recorded time.
_NOW = "~"


def start_time(p: Pod) -> str:
    return p.status.start_time or _NOW


def more_important_first(p: Pod):
    """util.MoreImportantPod: higher priority, then earlier start."""
    return (-(p.spec.priority or 0), start_time(p))


def pick_one_node(candidates: list) -> tuple:
    """pickOneNodeForPreemption, after PDB violations (not modelled yet): the lowest highest
    victim priority, the lowest sum of priorities, the fewest victims, then the latest
    earliest start among the highest-priority victims; then the first by name."""
    def highest(victims):
        return max(v.spec.priority or 0 for v in victims)

    def earliest_of_highest(victims):
        top = highest(victims)
        return min(start_time(v) for v in victims if (v.spec.priority or 0) == top)

    pool = sorted(candidates, key=lambda c: c[0])
    for measure in (lambda vs: highest(vs), lambda vs: sum((v.spec.priority or 0) + 2**31 for v in vs), len):
        best = min(measure(vs) for _, vs in pool)
        pool = [c for c in pool if measure(c[1]) == best]
    latest = max(earliest_of_highest(vs) for _, vs in pool)
    return next(c for c in pool if earliest_of_highest(c[1]) == latest)

"""Which pods eval and explain answer for: the dump's pending pods, or those --pod names; and the
pods kube-scheduler would not attempt (already bound, finished, or held by scheduling gates)."""

from __future__ import annotations

import difflib
import os
from typing import Optional

import attrs

from .api.model import Pod
from .cluster.state import TERMINAL_PHASES, ClusterState
from .diagnostics import InputError
from .frozen import frozen

# What the API server sets on a gated pod (pkg/registry/core/pod/strategy.go,
# applySchedulingGatedCondition) and kube-scheduler's PreEnqueue status for it
# (pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go).
GATED_REASON = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def gates_of(pod: Pod) -> tuple[str, ...]:
    return tuple(g.name for g in pod.spec.scheduling_gates)


def pre_enqueue_message(pod: Pod) -> str:
    """SchedulingGates' PreEnqueue status, as Go's %v prints the gates."""
    return f"waiting for scheduling gates: [{' '.join(gates_of(pod))}]"


def is_pending(pod: Pod) -> bool:
    """What kube-scheduler's queue holds: unbound, not finished, not being deleted."""
    return (not pod.spec.node_name and pod.status.phase not in TERMINAL_PHASES
            and not pod.metadata.deletion_timestamp)


@frozen
class Held:
    """A pod eval/explain does not schedule: already bound, finished, gated, or for a scheduler
    none of the profiles is (kube-scheduler leaves such a pod to that scheduler)."""
    pod: Pod
    bound_to: Optional[str] = None
    phase: Optional[str] = None             # Succeeded or Failed
    gates: tuple[str, ...] = ()
    other_scheduler: Optional[str] = None   # its spec.schedulerName, which no profile has
    profiles: tuple[str, ...] = ()          # with other_scheduler: the profiles there are
    ungated: object = None                  # explain: the Explanation of the pod without its gates

    @property
    def key(self) -> str:
        return self.pod.key

    @property
    def pod_key(self) -> str:
        return self.pod.key

    def to_json(self) -> dict:
        """One result of `eval -o json`, in a decision's shape."""
        out: dict = {
            "pod": {"namespace": self.pod.namespace, "name": self.pod.name},
            "profile": None,
            "selected": None,
            "feasible": [],
            "fit_error": None,
            "message": None,
            "nodes": [],
        }
        if self.bound_to:
            out["bound_to"] = self.bound_to
        if self.phase:
            out["phase"] = self.phase
        if self.other_scheduler:
            out["left_to_scheduler"] = self.other_scheduler
        if self.gates:
            out["message"] = GATED_MESSAGE
            out["gated"] = {"gates": list(self.gates),
                            "condition": {"type": "PodScheduled", "status": "False", "reason": GATED_REASON,
                                          "message": GATED_MESSAGE}}
            if self.ungated is not None:
                d = self.ungated.decision
                out["gated"]["without_gates"] = {"selected": d.selected, "message": d.message}
        return out


@frozen
class PodToDecide:
    """A pod to answer for, and whether it is one of the state's own (``from_dump``: then a
    bound or finished pod is reported as such, not scheduled again)."""
    pod: Pod
    from_dump: bool


def targets(pod_args: Optional[list[str]], namespace: str, state: ClusterState, clusters: list[str],
            replicas: Optional[int] = None) -> list[PodToDecide]:
    """The pods to answer for: every pending pod of the dump without --pod; otherwise each --pod,
    a file or directory (or - for standard input) when one exists there, its pods and the pods its
    workloads would make (``expand_into``), else NAMESPACE/NAME (or NAME in ``namespace``) picked
    out of the dump."""
    if not pod_args:
        found = [PodToDecide(p, True) for p in state.pods if is_pending(p)]
        if not found:
            raise InputError("no pending pod in the dump (unbound, not Succeeded or Failed, not being deleted); "
                             "give --pod FILE or --pod NAMESPACE/NAME", path=", ".join(clusters))
        return found
    out = []
    for arg in pod_args:
        if arg == "-" or os.path.exists(arg) or arg.endswith((".yaml", ".yml", ".json")):
            out += [PodToDecide(p, False) for p in expand_into(state, [arg], replicas)]
        else:
            out.append(PodToDecide(_by_name(arg, namespace, state, clusters), True))
    return out


def expand_into(state: ClusterState, paths: list[str], replicas: Optional[int] = None) -> list[Pod]:
    """The pods in ``paths`` and those their workloads would make (``replicas`` each, or their own
    count), whose controllers join ``state`` (topology spreading and preemption read them)."""
    from .cluster.workloads import read_pods_and_workloads

    pods = []
    for path in paths:
        found, owners = read_pods_and_workloads(path, replicas, state)
        pods += found
        state.add_workloads(owners)
    if not pods:
        raise InputError("no Pod or workload found", path=", ".join(paths))
    return pods


def _by_name(arg: str, namespace: str, state: ClusterState, clusters: list[str]) -> Pod:
    key = arg if "/" in arg else f"{namespace}/{arg}"
    by_key = {p.key: p for p in state.pods}
    if key in by_key:
        return by_key[key]
    close = difflib.get_close_matches(key, list(by_key), n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise InputError(f"no pod {key} in the dump (and no such file){hint}", path=", ".join(clusters))


def held(target: PodToDecide, as_pending: bool) -> "Held | Pod":
    """The Held report for a pod not to be scheduled, else the pod to schedule (a bound pod of
    the dump taken off its node when ``as_pending``)."""
    pod = target.pod
    if target.from_dump and pod.status.phase in TERMINAL_PHASES and not as_pending:
        return Held(pod, phase=pod.status.phase)
    if target.from_dump and pod.spec.node_name:
        if not as_pending:
            return Held(pod, bound_to=pod.spec.node_name)
        pod = attrs.evolve(pod, spec=attrs.evolve(pod.spec, node_name=""),
                           status=attrs.evolve(pod.status, phase="Pending"))
    if pod.spec.scheduling_gates:
        return Held(pod, gates=gates_of(pod))
    return pod


def ungated(pod: Pod) -> Pod:
    return attrs.evolve(pod, spec=attrs.evolve(pod.spec, scheduling_gates=()))

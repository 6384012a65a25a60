"""Engine: the one way in to deciding. It owns the compiled profiles, one cluster state, the
executors and their caches, the cost budget, and the Kubernetes version and feature gates decided
as; the command line, serve, the language server, `mcp` and Python callers all drive it.

    from policylang import Engine
    engine = Engine(cluster="dump.yaml")
    decision = engine.evaluate("pod.yaml")          # or a dict as kubectl prints it, or a Pod
    with engine.fork() as trial:                    # a transaction over the state
        trial.bind("pod.yaml", decision.selected)
        trial.evaluate(other)                       # sees the binding
    # leaving the block reverts it; trial.commit() keeps it

Reading (evaluate, explain) never changes the state: each runs in a savepoint of its own
(cluster/journal.py) and puts back what it did (the claims a pod's templates make, the pod taken
off its node to be asked about again). Writing (bind, add/delete a pod or node, taint, cordon,
simulate) changes it; in a fork, until the fork is reverted.
"""

from __future__ import annotations

import contextlib
import os
import random
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

from .cost import Budget, using
from .diagnostics import InputError

if TYPE_CHECKING:
    from .api.model import Node, Pod
    from .cluster.state import ClusterState
    from .run.decision import Decision
    from .explain import Explanation
    from .forecast.capacity import Headroom, NodesNeeded
    from .forecast.simulate import Placement
    from .forecast.whatif import WhatIfOutcome
    from .pending import Held, PodToDecide
    from .plan import Plan
    from .run.executable import Executable
    from .target import Target

#: What the verbs take as a pod: a Pod, a dict as kubectl prints one, a file holding exactly one
#: pod, or a pod of the state by ``NAMESPACE/NAME`` (or ``NAME`` in the engine's namespace).
PodLike = Union["Pod", Mapping[str, Any], str, os.PathLike]
#: What evaluate answers: a Decision, or Held for a pod not to be scheduled (already bound,
#: finished, gated, or another scheduler's).
Result = Union["Decision", "Held"]

EXECUTORS = ("auto", "vector", "reference")


class Engine:
    """Compiled profiles over one cluster state. Every argument has the meaning of the command
    line's option of the same name; errors are InputError (a bad file, a bad option) and
    PolicyError (a policy that does not check), with the texts the CLI prints."""

    def __init__(self, cluster: "str | os.PathLike | Sequence[str | os.PathLike] | None" = None, *,
                 profile: Optional[str] = None, config: Optional[str] = None,
                 kubernetes_version: Optional[str] = None, feature_gates: Optional[str] = None,
                 kubeconfig: Optional[str] = None, context: Optional[str] = None, in_cluster: bool = False,
                 namespace: Optional[str] = None, state: "ClusterState | None" = None, executor: str = "auto",
                 max_cost: Optional[int] = None, max_total_cost: Optional[int] = None,
                 only_namespace: Optional[str] = None, progress=None,
                 plans: "Mapping[str, Plan] | None" = None, target: "Target | None" = None) -> None:
        from .profiles import load_plans
        from .target import make_target

        if config is not None and profile is not None:
            raise InputError("give --profile or --config, not both")
        if executor not in EXECUTORS:
            raise InputError(f"executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
        # ``target``: the version and gates made already (target.make_target), instead of the two options.
        self.target: Target = target if target is not None else make_target(kubernetes_version, feature_gates)
        # ``plans``: profiles compiled already (the language server's, of the text being edited),
        # as one profile named on its own.
        self.plans: dict[str, Plan] = dict(plans) if plans is not None else load_plans(profile, config,
                                                                                        target=self.target)
        # A profile named on its own schedules every pod; profiles from a configuration or the
        # stdlib's file schedule the pods whose schedulerName they are, as kube-scheduler's do.
        self.every_pod = (profile is not None or plans is not None) and len(self.plans) == 1
        self.executor = executor
        self.budget = Budget(max_cost, max_total_cost)
        self._executables: dict[tuple[str, str], Executable] = {}
        self.sources: list[str] = []       # what the state was read from, for messages
        self.warnings: list[str] = []      # what reading it could not do (a kind a live cluster did not list)
        self.namespace = namespace or "default"
        if state is None:
            state, self.sources, read_namespace, self.warnings = read_state(
                cluster, kubeconfig=kubeconfig, context=context, in_cluster=in_cluster,
                only_namespace=only_namespace, progress=progress)
            self.namespace = namespace or read_namespace
        self._state = state

    # ---- what decides a pod ----
    @property
    def state(self) -> "ClusterState":
        """The cluster state decided in (a fork's, inside a fork)."""
        return self._state

    @state.setter
    def state(self, state: "ClusterState") -> None:
        """Decide in another state from now on (a dump reloaded, a watched cluster's latest)."""
        self._state = state

    def profile_for(self, pod: "Pod") -> Optional[str]:
        """The profile that schedules the pod, as kube-scheduler picks it: the one its
        spec.schedulerName names (or the only one, when one profile was named); None for another
        scheduler's pod, which is left alone."""
        if self.every_pod:
            return next(iter(self.plans))
        name = pod.spec.scheduler_name
        return name if name in self.plans else None

    def executable(self, pod: "Pod", pods: int = 1) -> "Executable | None":
        """The executable of the pod's profile (None: another scheduler's pod); ``pods``: how many
        pods the run decides, which "auto" weighs against the nodes to pick the executor."""
        from .run.executable import Executable, auto_executor

        name = self.profile_for(pod)
        if name is None:
            return None
        kind = auto_executor(len(self._state.nodes), pods) if self.executor == "auto" else self.executor
        exe = self._executables.get((name, kind))
        if exe is None:
            exe = self._executables[(name, kind)] = Executable(self.plans[name], kind)
        return exe

    def _own(self, pod: "Pod", pods: int) -> "Executable":
        """The executable of a pod that _asked let through (one of the engine's profiles' pods)."""
        exe = self.executable(pod, pods)
        if exe is None:
            raise InputError(f"pod {pod.key}: no profile schedules it (schedulerName {pod.spec.scheduler_name!r})")
        return exe

    def chooser(self, pods: int = 1):
        """``executable`` as a function of the pod alone, for the forecasting verbs."""
        return lambda pod: self.executable(pod, pods)

    # ---- reading: nothing changes ----
    def pods(self, sources: Optional[Sequence[str]] = None, *, replicas: Optional[int] = None) -> list["PodToDecide"]:
        """The pods that sources name (files, directories, NAMESPACE/NAME of the state), the pods
        their workloads would make, or every pending pod of the state when there are none."""
        from .pending import targets

        with using(self.budget):
            return targets(list(sources) if sources else None, self.namespace, self._state, self.sources, replicas)

    def evaluate(self, pod: "PodLike | PodToDecide", *, preemption: bool = True,
                 percentage_of_nodes_to_score: Optional[int] = None,
                 seed: "int | random.Random | None" = None, as_pending: bool = False, pods: int = 1) -> Result:
        """Where the pod would go, and why not elsewhere: one cycle of the pod's profile. ``seed``
        breaks ties between equally scored nodes at random (default: the smallest name; a
        random.Random is drawn from as it is, so that several calls share one sequence);
        ``as_pending`` asks it of a pod of the state already bound."""
        from .pending import Held
        from .run.schedule import Sampling, schedule

        asked = self._asked(pod, as_pending)
        if isinstance(asked, Held):
            return asked
        rng = _generator(seed)
        sampling = Sampling(percentage_of_nodes_to_score) if percentage_of_nodes_to_score is not None else None
        with using(self.budget), self._asking(asked) as target:
            return schedule(self._own(target, pods), self._state, target, rng=rng, preemption=preemption,
                            sampling=sampling)

    def explain(self, pod: "PodLike | PodToDecide", *, preemption: bool = True, infrastructure: bool = False,
                fix_tries: Optional[int] = None, as_pending: bool = False, pods: int = 1) -> "Explanation | Held":
        """Why the pod is Pending: every failing filter, its near misses, and what would fit
        (``fix_tries``: how many near misses to try fixes on; None: every one)."""
        import attrs

        from .explain import explain
        from .pending import Held, ungated

        asked = self._asked(pod, as_pending)
        with using(self.budget):
            if isinstance(asked, Held):
                if asked.gates and self.profile_for(asked.pod) is not None:   # what removing the gates would do
                    with self._asking(ungated(asked.pod)) as free:
                        return attrs.evolve(asked, ungated=explain(
                            self._own(free, pods), self._state, free, preemption=preemption,
                            infrastructure=infrastructure, fix_tries=fix_tries))
                return asked
            with self._asking(asked) as target:
                return explain(self._own(target, pods), self._state, target, preemption=preemption,
                               infrastructure=infrastructure, fix_tries=fix_tries)

    def whatif(self, events: Sequence[str], *, preemption: bool = True) -> "WhatIfOutcome":
        """What these events (``cordon NODE``, ``drain NODE``, ``taint NODE K=V:EFFECT``,
        ``remove NODE``, ``remove-zone ZONE``, ``add N like NODE``; whatif's grammar) do to the
        pods, in order: who moves, who is lost, which budgets block a drain."""
        from .cluster.state import ClusterState
        from .forecast.whatif import Event, parse_event, whatif

        parsed = [e if isinstance(e, Event) else parse_event(e) for e in events]
        # Events that change nodes make states of their own; the outcome keeps the last one, so
        # the events run on a copy of the state, never on the engine's.
        copy = ClusterState.build(self._state.objects())
        with using(self.budget):
            return whatif(self.chooser(len(copy.pods)), copy, parsed, preemption=preemption)

    def capacity(self, *pods: "PodLike | PodToDecide", limit: Optional[int] = None) -> "Headroom":
        """How many more copies of the pod (of the pods together, when several: one copy is all of
        them) fit, one after another, and where."""
        from .forecast.capacity import DEFAULT_LIMIT, headroom

        unit = [self._one_pod(p).pod for p in pods]
        limit = limit or DEFAULT_LIMIT
        with using(self.budget):
            return headroom(self.chooser(limit * len(unit)), self._state, unit, limit=limit)

    def nodes_needed(self, template: "Node", pods: Optional[Sequence["Pod"]] = None, *,
                     limit: int = 100) -> "NodesNeeded":
        """The fewest copies of the template node to add so that the pods (default: the state's
        pending pods, taken off the state) all schedule."""
        from .forecast.capacity import nodes_needed
        from .pending import is_pending

        with using(self.budget):
            if pods is not None:
                return nodes_needed(self.chooser(len(pods)), self._state, list(pods), template, limit=limit)
            waiting = [p for p in self._state.pods if is_pending(p)]
            if not waiting:
                raise InputError("no pending pod in the cluster; give the pods", path=", ".join(self.sources))
            with self._state.trial() as state:
                for pod in waiting:
                    state.drop_pod(pod.key)
                return nodes_needed(self.chooser(len(waiting)), state, waiting, template, limit=limit)

    def _asked(self, pod: "PodLike | PodToDecide", as_pending: bool) -> "Pod | Held":
        """The pod to schedule, or why it is not scheduled (pending.held's reasons, or a
        schedulerName no profile has)."""
        from .pending import Held, PodToDecide, held

        target = pod if isinstance(pod, PodToDecide) else self._one_pod(pod)
        asked = held(target, as_pending)
        if isinstance(asked, Held) or self.profile_for(asked) is not None:
            return asked
        return Held(asked, other_scheduler=asked.spec.scheduler_name, profiles=tuple(sorted(self.plans)))

    @contextlib.contextmanager
    def _asking(self, pod: "Pod") -> Iterator["Pod"]:
        """A savepoint in which the pod is asked about: its template claims made (as the
        resourceclaim controller makes them before kube-scheduler sees it) and its own copy in
        the state, if any, taken away (it would count against itself)."""
        from .cluster.resourceclaims import instantiate

        with self._state.trial() as state:
            state.drop_pod(pod.key)
            yield instantiate(state, pod) if pod.spec.resource_claims else pod

    def _one_pod(self, pod: "PodLike | PodToDecide") -> "PodToDecide":
        from .api.model import Pod
        from .pending import PodToDecide

        if isinstance(pod, PodToDecide):
            return pod
        if isinstance(pod, Pod):
            return PodToDecide(pod, from_dump=False)
        if isinstance(pod, Mapping):
            from .cluster.load import structure_object
            if pod.get("kind", "Pod") != "Pod":
                raise InputError(f"expected a Pod, got kind {pod.get('kind')!r}")
            return PodToDecide(structure_object({"apiVersion": "v1", "kind": "Pod", **pod}, "<pod>", 0), False)
        found = self.pods([os.fspath(pod)])
        if len(found) != 1:
            raise InputError(f"expected one pod, found {len(found)}", path=os.fspath(pod))
        return found[0]

    # ---- writing: the state changes ----
    def simulate(self, pods: "Iterable[PodLike] | None" = None, *, preemption: bool = True,
                 percentage_of_nodes_to_score: Optional[int] = None, seed: "int | random.Random | None" = None,
                 progress=None, into: Optional[list] = None) -> list["Placement"]:
        """Schedule the pods one after another in queue order (priority, then arrival), binding
        each into the state, preempting where the profile does (default: the state's pending
        pods). Use a fork to try it without keeping it."""
        from .forecast.simulate import simulate

        found = [p.pod for p in self.pods()] if pods is None else [self._one_pod(p).pod for p in pods]
        rng = _generator(seed)
        with using(self.budget):
            return simulate(self.chooser(len(found)), self._state, found, preemption=preemption, rng=rng,
                            progress=progress, into=into, percentage=percentage_of_nodes_to_score)

    def bind(self, pod: "PodLike", node: str) -> None:
        """The pod bound to the node, as the scheduler's binding leaves it."""
        target = self._one_pod(pod).pod
        self._node(node)
        self._state.drop_pod(target.key)    # from wherever it was: pending, nominated or bound
        self._state.bind(self._state.with_priority(target), node)

    def add_pod(self, pod: "PodLike") -> None:
        """A pod created (or changed): bound, nominated or pending, as its spec and status say."""
        self._state.put_pod(self._one_pod(pod).pod)

    def delete_pod(self, key: str) -> None:
        """The pod NAMESPACE/NAME deleted."""
        if "/" not in key:
            key = f"{self.namespace}/{key}"
        if self._state.pod(key) is None:
            raise InputError(f"no pod {key} in the cluster")
        self._state.drop_pod(key)

    def add_node(self, node: "Node | Mapping[str, Any]") -> None:
        """A node joins the cluster (a Node, or a dict as kubectl prints one)."""
        from .api.model import Node

        if isinstance(node, Mapping):
            from .cluster.load import structure_object
            node = structure_object({"apiVersion": "v1", "kind": "Node", **node}, "<node>", 0)
        if not isinstance(node, Node):
            raise InputError(f"expected a Node, got {type(node).__name__}")
        name = node.metadata.name
        self._state = self._state.with_nodes([*[n for n in self._state.nodes_as_arrived() if n.metadata.name != name],
                                              node])

    def remove_node(self, name: str) -> None:
        """The node leaves the cluster; its pods with it."""
        self._node(name)
        self._state = self._state.with_nodes([n for n in self._state.nodes_as_arrived() if n.metadata.name != name],
                                             removed=(name,))

    def taint(self, name: str, key: str, value: str = "", effect: str = "NoSchedule") -> None:
        """``kubectl taint node NAME KEY=VALUE:EFFECT``."""
        import attrs

        from .api.model import Taint

        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise InputError(f"taint effect {effect!r}: expected NoSchedule, PreferNoSchedule or NoExecute")
        node = self._node(name)
        taints = (*[t for t in node.spec.taints if (t.key, t.effect) != (key, effect)],
                  Taint(key=key, value=value, effect=effect))
        self._changed(attrs.evolve(node, spec=attrs.evolve(node.spec, taints=taints)))

    def cordon(self, name: str) -> None:
        """``kubectl cordon NAME``: unschedulable, as the NodeUnschedulable filter reads it."""
        from .forecast.whatif import cordoned

        self._changed(cordoned(self._node(name)))

    def _node(self, name: str) -> "Node":
        node = self._state.nodes.get(name)
        if node is None:
            raise InputError(f"no node {name} in the cluster")
        return node

    def _changed(self, node: "Node") -> None:
        """The node of that name replaced by this one, where it stands."""
        name = node.metadata.name
        self._state = self._state.with_nodes([node if n.metadata.name == name else n
                                              for n in self._state.nodes_as_arrived()])

    # ---- transactions ----
    def fork(self) -> "Fork":
        """A transaction over the state: what is done through it is undone when it is reverted
        (or its ``with`` block ends without ``commit``)."""
        return Fork(self)


class Fork(Engine):
    """An Engine over its parent's state in a savepoint: the same verbs, and commit or revert.
    Pods bound, added or deleted are journaled; a node change moves the fork onto a state of its
    own (the parent's is then only rolled back of the pod changes before it)."""

    def __init__(self, parent: Engine) -> None:
        self.__dict__.update(parent.__dict__)
        self._parent = parent
        self._base = parent._state
        self._savepoint = self._base.savepoint()
        self._open = True

    def commit(self) -> None:
        """Keep what the fork did: its parent's state is now the fork's."""
        self._close()
        self._base.release(self._savepoint)
        self._parent._state = self._state

    def revert(self) -> None:
        """Undo what the fork did; the parent's state is as it was when the fork began."""
        self._close()
        self._base.rollback(self._savepoint)

    def _close(self) -> None:
        if not self._open:
            raise InputError("this fork was already committed or reverted")
        self._open = False

    def __enter__(self) -> "Fork":
        return self

    def __exit__(self, *exc) -> None:
        if self._open:
            self.revert()


def read_state(cluster: "str | os.PathLike | Sequence[str | os.PathLike] | None" = None, *,
               kubeconfig: Optional[str] = None, context: Optional[str] = None, in_cluster: bool = False,
               only_namespace: Optional[str] = None,
               progress=None) -> "tuple[ClusterState, list[str], str, list[str]]":
    """The state of dump files, or of a live cluster read once; what it was read from (for
    messages); the namespace a bare pod name is in (the context's, for a live cluster); and the
    warnings of a live read (kinds it could not list).
    ``only_namespace``: the only namespace whose pending pods a live read takes;
    ``progress(kind, number, total, count)`` is told of each kind a live read lists."""
    from .cluster.load import load_cluster

    live = bool(kubeconfig or context is not None or in_cluster)
    if cluster is not None and live:
        raise InputError("give --cluster or a live cluster (--kubeconfig, --context, --in-cluster), not both")
    if cluster is not None:
        paths = [os.fspath(p) for p in ([cluster] if isinstance(cluster, (str, os.PathLike)) else cluster)]
        return load_cluster(paths), paths, "default", []
    if not live:
        raise InputError("give --cluster PATH, or read a live cluster with --kubeconfig PATH, --context NAME "
                         "or --in-cluster")
    from .cluster.live import ClusterSource, load_live
    state, namespace, read = load_live(ClusterSource(kubeconfig, context or None, in_cluster),
                                       namespace=only_namespace, progress=progress)
    return state, [read.host], namespace, list(read.warnings)


def _generator(seed: "int | random.Random | None") -> "random.Random | None":
    return seed if isinstance(seed, random.Random) or seed is None else random.Random(seed)

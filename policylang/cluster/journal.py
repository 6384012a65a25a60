"""Savepoints over a ClusterState: what changed since one, so that rolling back puts the state as
it was, its indexes included, without building it again.

A database keeps an undo log for the same reason: a transaction that is mostly reads and a few
writes should cost the writes, not a copy of the table. Preemption tries each candidate node
with some pods gone, nominated pods are tried as if placed, and `Engine.fork()` lets a caller
bind and evaluate and then revert: each is a handful of pods leaving or arriving over a state of
thousands, so the journal records those and nothing else.

What is recorded, per savepoint (the innermost open one; a released savepoint's records join its
parent's):
- each pod key's value and place in the pod order before its first change (or that it was
  absent): a pod put back comes back at its place, not last;
- the same for the nominated pods;
- each node's pod list before its first change;
- every pod that arrived on a node or left one, in order: rolling back tells every index the
  opposite, newest first, so the indexes' own bookkeeping is undone by their own hooks;
- the object maps that storage and DRA assumptions write into (PVs, PVCs, ResourceClaims) and
  the workloads, copied whole before their first change: they are small next to the pods.

Node versions are never rolled back: a rollback bumps the version of every node it touches, so
that whatever an executor keeps per node version is recomputed, never mistaken for current.
"""

from __future__ import annotations

ABSENT = object()   # a key that was not there before the change
_OBJECT_MAPS = ("persistent_volumes", "claims", "resource_claims", "workloads")


class Journal:
    __slots__ = ("pods", "nominated", "nominated_order", "lists", "moves", "objects")

    def __init__(self) -> None:
        self.pods: dict = {}                # key -> (the pod before the first change, or ABSENT; its serial)
        self.nominated: dict = {}
        self.nominated_order: "list | None" = None
        self.lists: dict = {}               # node -> its pod list before the first change
        self.moves: list = []               # (arrived, pod, node), oldest first
        self.objects: "dict | None" = None  # attribute -> a copy before the first change

    # ---- noted by the state before each change ----
    def pod(self, state, key: str) -> None:
        if key not in self.pods:
            self.pods[key] = (state._pods.get(key, ABSENT), state._serial.get(key))

    def nominee(self, state, key: str) -> None:
        if key not in self.nominated:
            if self.nominated_order is None:
                self.nominated_order = list(state.nominated)
            self.nominated[key] = state.nominated.get(key, ABSENT)

    def node(self, state, node: str, arrived: bool, pod) -> None:
        if node not in self.lists:
            self.lists[node] = list(state.pods_by_node[node])
        self.moves.append((arrived, pod, node))

    def object_maps(self, state) -> None:
        if self.objects is None:
            self.objects = {name: _copy(getattr(state, name)) for name in _OBJECT_MAPS}

    # ---- a savepoint released into its parent, or rolled back ----
    def absorb(self, inner: "Journal") -> None:
        """The records of a savepoint opened and released inside this one: the first value of
        each thing stays the oldest."""
        for mine, theirs in ((self.pods, inner.pods), (self.nominated, inner.nominated), (self.lists, inner.lists)):
            for key, value in theirs.items():
                mine.setdefault(key, value)
        if self.nominated_order is None:
            self.nominated_order = inner.nominated_order
        if self.objects is None:
            self.objects = inner.objects
        self.moves += inner.moves

    def undo(self, state) -> None:
        hooks = state._hooks
        for arrived, pod, node in reversed(self.moves):
            for index in hooks:
                (index.leave if arrived else index.arrive)(pod, node)
        for node, pods in self.lists.items():
            state.pods_by_node[node] = pods
            state._bump(state.node_index[node])
        for key, (pod, serial) in self.pods.items():
            if pod is ABSENT:
                state._pop(key)
            elif state._serial.get(key) != serial or state._pods.get(key) is not pod:
                state._pods[key] = pod
                state._serial[key] = serial
                state._disordered = True
        state.nominated = _restored(state.nominated, self.nominated, self.nominated_order)
        if self.objects is not None:
            for name, value in self.objects.items():
                setattr(state, name, value)
            state.objects_changed()


def _copy(value):
    return list(value) if isinstance(value, list) else dict(value)


def _restored(current: dict, before: dict, order: "list | None") -> dict:
    if not before:
        return current
    for key, value in before.items():
        if value is ABSENT:
            current.pop(key, None)
        else:
            current[key] = value
    if order is None or list(current) == order:
        return current
    return {key: current[key] for key in order}

"""What running a plan decides for one pod: per node, the filter outcome and the scores;
overall, the selected node and kube-scheduler's message when nothing fits."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from ..frozen import frozen

# Status and its codes are the framework's (run/framework.py); here for what reads decisions.
from .framework import ERROR, SUCCESS, UNRESOLVABLE, UNSCHEDULABLE, Status, reasons_of  # noqa: F401


class PluginScore(NamedTuple):
    # A tuple rather than an attrs class: one is made per node and plugin, thousands per pod.
    raw: int
    normalized: int
    weight: int

    @property
    def weighted(self) -> int:
        return self.normalized * self.weight


class NodeResult(NamedTuple):
    # A tuple rather than an attrs class, as PluginScore: one is made per node.
    name: str
    failure: "Status | None" = None
    scores: "dict[str, PluginScore] | None" = None   # feasible nodes only; plugin → score
    evaluated: bool = True    # False: node sampling stopped before this node was looked at

    @property
    def feasible(self) -> bool:
        return self.failure is None and self.evaluated

    @property
    def total(self) -> "int | None":
        if self.scores is None:
            return None
        return sum(s.weighted for s in self.scores.values())


class LazyNodes(Sequence):
    """A Decision's node results, built on first use: a simulation reads the selected node and
    the message of each decision, not the thousands of per-node results behind them."""
    __slots__ = ("_make", "_nodes")

    def __init__(self, make: Callable[[], Iterable[NodeResult]]):
        self._make, self._nodes = make, None

    def _all(self) -> tuple:
        if self._nodes is None:
            self._nodes, self._make = tuple(self._make()), None
        return self._nodes

    def __getitem__(self, i):
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other) -> bool:
        return self._all() == (other._all() if isinstance(other, LazyNodes) else other)

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


@frozen
class Victim:
    namespace: str
    name: str


@frozen
class Decision:
    pod_namespace: str
    pod_name: str
    profile: str
    nodes: "tuple | LazyNodes"        # of NodeResult, sorted by node name
    selected: "str | None" = None
    fit_error: "str | None" = None    # FitError text (without PostFilter's part)
    message: "str | None" = None      # the PodScheduled condition's message
    nominated_node: "str | None" = None
    victims: tuple = ()
    deallocated: tuple = ()           # (namespace, name) of claims a PostFilter deallocated

    @property
    def feasible(self) -> tuple:
        return tuple(n.name for n in self.nodes if n.feasible)

    @property
    def pod_key(self) -> str:
        return f"{self.pod_namespace}/{self.pod_name}"

    def to_json(self) -> dict:
        """One result of `eval -o json` (schema policylang/eval/v1)."""
        nodes = [{
            "name": n.name,
            "feasible": n.feasible,
            "failure": None if n.failure is None else {
                "plugin": n.failure.plugin, "code": n.failure.code, "reasons": list(n.failure.reasons)},
            "scores": None if n.scores is None else {
                plugin: {"raw": s.raw, "normalized": s.normalized, "weight": s.weight, "weighted": s.weighted}
                for plugin, s in n.scores.items()},
            "total": n.total,
            "evaluated": n.evaluated,
        } for n in self.nodes]
        out = {
            "pod": {"namespace": self.pod_namespace, "name": self.pod_name},
            "profile": self.profile,
            "selected": self.selected,
            "feasible": sorted(self.feasible),
            "fit_error": self.fit_error,
            "message": self.message,
            "nodes": nodes,
        }
        if self.nominated_node is not None:
            out["nominated_node"] = self.nominated_node
            out["victims"] = [{"namespace": v.namespace, "name": v.name} for v in self.victims]
        return out

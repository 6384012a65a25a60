"""Per node, how many bound pods a label selector selects (count_matching), terminating pods
left out: kept for the selectors asked about (at most MAX_COUNTED_SELECTORS, the least
recently asked forgotten first) and updated as pods arrive and leave."""

from __future__ import annotations

from collections import Counter, OrderedDict
from itertools import repeat

import numpy as np

from ...api.selectors import narrowing, selector_key, selector_matches


class SelectorCounts:
    MAX_COUNTED_SELECTORS = 256   # each is checked against every pod that arrives or leaves

    def __init__(self, state) -> None:
        self.node_index = state.node_index
        self.labels = state.indexes["labels"]
        # Bound pods that count: key → node; per label, how many on each node (by name and by
        # node position, for counts by position without a look-up per node name).
        self._counted_on: dict[str, str] = {}
        self._label_nodes: dict[tuple, Counter] = {}
        self._label_positions: dict[tuple, Counter] = {}
        # count_matching's answers (selector, counts by node), by selector key; their keys by
        # label (see _counted_by).
        self._counts: OrderedDict = OrderedDict()
        self._counted_by_label: dict[tuple, set] = {}
        self._counted_other: set = set()
        self._count_arrays: dict = {}   # selector key → (count_matching's map, its counts by node position)
        # What the last arrival or departure changed: (selector key, the map before, after), for
        # the indexes derived from these counts (DomainCounts); and who to tell of a forgotten key.
        self.changes: list[tuple] = []
        self.forgetting: list = []

    def arrive(self, pod, node: str) -> None:
        if pod.metadata.deletion_timestamp is None:
            ns, key = pod.metadata.namespace, pod.key
            self._counted_on[key] = node
            position = self.node_index.get(node)
            for k, v in pod.metadata.labels.items():
                self._label_nodes.setdefault((ns, k, v), Counter())[node] += 1
                if position is not None:
                    self._label_positions.setdefault((ns, k, v), Counter())[position] += 1
        self._recount(pod, node, 1)

    def leave(self, pod, node: str) -> None:
        ns = pod.metadata.namespace
        counted_on = self._counted_on.pop(pod.key, None)
        if counted_on is not None:
            position = self.node_index.get(counted_on)
            for k, v in pod.metadata.labels.items():
                _uncount(self._label_nodes[(ns, k, v)], counted_on)
                if position is not None:
                    _uncount(self._label_positions[(ns, k, v)], position)
        self._recount(pod, node, -1)

    def _recount(self, pod, node: str, change: int) -> None:
        self.changes = []
        if pod.metadata.deletion_timestamp is not None:
            return
        namespaces = (None, pod.metadata.namespace)
        labels = pod.metadata.labels
        changed = [key for ns in namespaces for k, v in labels.items()
                   for key in self._counted_by_label.get((ns, k, v), ())]
        changed += [key for key in self._counted_other
                    if key[0] in namespaces and selector_matches(self._counts[key][0], labels)]
        for key in changed:
            selector, before = self._counts[key]
            counts = dict(before)
            left = counts.get(node, 0) + change
            if left:
                counts[node] = left
            else:
                counts.pop(node, None)
            self._counts[key] = (selector, counts)
            kept = self._count_arrays.get(key)
            if kept is not None and kept[0] is before:
                per_node = kept[1].copy()
                per_node[self.node_index[node]] = left
                self._count_arrays[key] = (counts, per_node)
            self.changes.append((key, before, counts))

    def count_matching(self, namespace: "str | None", selector) -> dict[str, int]:
        """Node name → how many bound pods of the namespace (None: of every namespace) the
        selector selects, terminating pods left out. A changed answer is a new map: callers may
        keep the one they got."""
        if selector is None:
            return {}
        key = selector_key(namespace, selector)
        hit = self._counts.get(key)
        if hit is not None:
            self._counts.move_to_end(key)
            return hit[1]
        labels, exact = narrowing(selector)
        counts: Counter = Counter()
        for ns in [namespace] if namespace is not None else list(self.labels.pods_by_namespace):
            if exact and len(labels) == 1:     # one label's pods: counted per node as they come and go
                counts.update(self._label_nodes.get((ns, *labels[0]), {}))
            else:
                counts.update(map(self._counted_on.get, self.labels.selected(ns, selector)[0]))
        counts.pop(None, None)      # terminating pods
        counts = dict(counts)
        self._counts[key] = (selector, counts)
        self._counted_by(namespace, selector).add(key)
        if len(self._counts) > self.MAX_COUNTED_SELECTORS:
            forgotten, (forgotten_selector, _) = self._counts.popitem(last=False)
            self._count_arrays.pop(forgotten, None)
            self._counted_by(forgotten[0], forgotten_selector).discard(forgotten)
            for tell in self.forgetting:
                tell(forgotten)
        return counts

    def _counted_by(self, namespace: "str | None", selector) -> set:
        """Where count_matching's selectors are found when a pod comes or goes: a one-label
        selector under its label (such pods are the ones it selects), any other among the rest."""
        labels, exact = narrowing(selector)
        if exact and len(labels) == 1:
            return self._counted_by_label.setdefault((namespace, *labels[0]), set())
        return self._counted_other

    def count_matching_by_position(self, namespace: "str | None", selector) -> np.ndarray:
        """count_matching as an array in the state's node order."""
        counts = self.count_matching(namespace, selector)
        key = selector_key(namespace, selector) if selector is not None else None
        hit = self._count_arrays.get(key)
        if hit is not None and hit[0] is counts:    # kept up to date by _recount
            return hit[1]
        labels, exact = narrowing(selector) if selector is not None else ([], False)
        per_node = np.zeros(len(self.node_index), dtype=np.int64)
        if exact and len(labels) == 1:      # counted per position as pods come and go
            for ns in [namespace] if namespace is not None else list(self.labels.pods_by_namespace):
                pool = self._label_positions.get((ns, *labels[0]), {})
                per_node[np.fromiter(pool.keys(), dtype=np.int64, count=len(pool))] += \
                    np.fromiter(pool.values(), dtype=np.int64, count=len(pool))
        else:
            at = np.fromiter(map(self.node_index.get, counts, repeat(-1)), dtype=np.int64, count=len(counts))
            on = at >= 0
            per_node[at[on]] = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))[on]
        if key is not None:
            self._count_arrays[key] = (counts, per_node)
        return per_node


def _uncount(counter: Counter, key) -> None:
    counter[key] -= 1
    if not counter[key]:
        del counter[key]

"""The bound pods' pod (anti-)affinity terms by kind, grouped by distinct term with the node of
each pod holding it (placed_terms), and per group the labels its selector requires, so that
placed_terms_for offers a pod only the groups that may select it. InterPodAffinity matches an
incoming pod once per distinct term instead of once per pod holding it."""

from __future__ import annotations

from ...api import model
from ...api.selectors import label_selector_error, narrowing, selector_sig
from .affinity import has_affinity

PLACED_TERM_KINDS = ("requiredAffinity", "requiredAntiAffinity", "preferredAffinity", "preferredAntiAffinity")


class PlacedTerms:
    def __init__(self, state) -> None:
        self.nodes = state.nodes
        self._placed: dict[str, dict] = {kind: {} for kind in PLACED_TERM_KINDS}
        self._lists: dict[str, list] = {}    # per kind, placed_terms' answer until one of its groups changes
        # Per kind and group, the labels its selector requires (None: it selects nothing).
        self._requires: dict[str, dict] = {kind: {} for kind in PLACED_TERM_KINDS}

    def arrive(self, pod, node: str) -> None:
        if has_affinity(pod):
            self._place(pod, self.nodes[node], 1)

    def leave(self, pod, node: str) -> None:
        if has_affinity(pod):
            self._place(pod, self.nodes[node], -1)

    def placed_terms(self, kind: str) -> list[dict]:
        """The pod (anti-)affinity terms of this kind (PLACED_TERM_KINDS) of the bound pods, one
        group per distinct term and namespace of the pods holding it: {selector, namespaces,
        namespaceSelector, ownNamespace, topologyKey, weight, nodes}, with the namespaces as the term
        lists them (what an empty list means is InterPodAffinity's to say), weight 0 for required terms, and the node of each pod holding it
        (once per term held). A pod's list with a term whose selectors do not parse is left
        out whole, as the scheduler's cache does. Kept up to date as pods are bound or removed;
        a changed answer is a new list."""
        found = self._lists.get(kind)
        if found is None:
            found = self._lists[kind] = list(self._placed[kind].values())
        return found

    def placed_terms_for(self, kind: str, labels: "dict[str, str] | None") -> list[dict]:
        """placed_terms of this kind that may select a pod with these labels: those whose label
        selector requires (by matchLabels or a one-value In) no label the pod lacks or holds
        with another value; the others select it not. In placed_terms' order."""
        labels = labels or {}
        requires = self._requires[kind]
        return [g for key, g in self._placed[kind].items()
                if requires[key] is not None and all(labels.get(k) == v for k, v in requires[key])]

    def _place(self, pod: model.Pod, node: model.Node, change: int) -> None:
        for kind, terms in affinity_terms(pod).items():
            groups = self._placed[kind]
            for term, weight in terms:
                own = pod.metadata.namespace
                key = (selector_sig(term.label_selector), term.namespaces, selector_sig(term.namespace_selector),
                       term.topology_key, weight, own)
                group = groups.get(key)
                nodes = list(group["nodes"]) if group is not None else []
                if change > 0:
                    nodes.append(node)
                else:
                    nodes.remove(node)
                if nodes:   # a new record: answers given before stay as they were
                    groups[key] = {"selector": term.label_selector, "namespaces": list(term.namespaces),
                                   "namespaceSelector": term.namespace_selector, "ownNamespace": own,
                                   "topologyKey": term.topology_key, "weight": weight, "nodes": nodes}
                    if key not in self._requires[kind]:
                        self._requires[kind][key] = None if term.label_selector is None \
                            else tuple(narrowing(term.label_selector)[0])
                else:
                    del groups[key]
                    del self._requires[kind][key]
                self._lists.pop(kind, None)


def affinity_terms(pod: model.Pod) -> "dict[str, list[tuple[model.PodAffinityTerm, int]]]":
    """The pod's (term, weight) lists by kind, those whose selectors all parse (NewPodInfo)."""
    a = pod.spec.affinity
    affinity = a.pod_affinity or model.PodAffinity()
    anti = a.pod_anti_affinity or model.PodAffinity()
    lists = {
        "requiredAffinity": [(t, 0) for t in affinity.required_during_scheduling_ignored_during_execution],
        "requiredAntiAffinity": [(t, 0) for t in anti.required_during_scheduling_ignored_during_execution],
        "preferredAffinity": [(w.pod_affinity_term, w.weight)
                              for w in affinity.preferred_during_scheduling_ignored_during_execution],
        "preferredAntiAffinity": [(w.pod_affinity_term, w.weight)
                                  for w in anti.preferred_during_scheduling_ignored_during_execution],
    }
    return {kind: terms for kind, terms in lists.items()
            if not any(label_selector_error(t.label_selector) is not None
                       or label_selector_error(t.namespace_selector) is not None for t, _ in terms)}


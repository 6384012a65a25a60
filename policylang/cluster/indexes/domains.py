"""count_matching's counts summed per topology domain (the values of one node label), over
the nodes having some labels (count_by_domain, kept per selector and updated with its counts)
or over given nodes (count_by_domain_on); and the domains some nodes are in (domains_of).
Which nodes count for a constraint is the caller's to say (PodTopologySpread's policy): the
index only sums."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ...api.selectors import selector_key


class DomainCounts:
    def __init__(self, state) -> None:
        self.state = state
        self.counts = state.indexes["counts"]
        self.counts.forgetting.append(self._forget)
        # count_by_domain's answers per selector key and (key, keys), with the count_matching
        # map each was made from (updated with it).
        self._domain_counts: dict = {}
        self._codes: dict = {}      # label key → (its domain's code per node position, the domains)
        self._having: dict = {}     # (key, keys) → _domains_at over the nodes having every label of keys

    def arrive(self, pod, node: str) -> None:
        self._recount(node, 1)

    def leave(self, pod, node: str) -> None:
        self._recount(node, -1)

    def _recount(self, node: str, change: int) -> None:
        for key, before, counts in self.counts.changes:
            derived = self._domain_counts.get(key, {})
            for domain_key, (made_from, by_domain) in derived.items():
                if made_from is not before:
                    continue
                label, keys = domain_key
                labels = self.state.nodes[node].metadata.labels
                if all(k in labels for k in keys):
                    domain = labels.get(label, "")
                    by_domain = {**by_domain, domain: by_domain[domain] + change}
                derived[domain_key] = (counts, by_domain)

    def _forget(self, key) -> None:
        self._domain_counts.pop(key, None)

    def count_by_domain(self, namespace: "str | None", selector, key: str, keys: "Iterable[str]") -> dict[str, int]:
        """Domain (value of node label ``key``, "" for a node without it) → how many pods
        count_matching counts on the nodes having every label of ``keys``; each such node's
        domain is present, 0 when it holds none. A changed answer is a new map."""
        keys = tuple(sorted(set(keys)))
        domains, at, pos, present = self._domains_having(key, keys)
        if selector is None:
            return dict.fromkeys(map(domains.__getitem__, present), 0)
        counts = self.counts.count_matching(namespace, selector)
        derived = self._domain_counts.setdefault(selector_key(namespace, selector), {})
        hit = derived.get((key, keys))
        if hit is not None and hit[0] is counts:     # kept up to date by _recount
            return hit[1]
        totals = np.bincount(at, weights=self.counts.count_matching_by_position(namespace, selector)[pos],
                             minlength=len(domains))
        by_domain = _by_domain(domains, present, totals)
        derived[(key, keys)] = (counts, by_domain)
        return by_domain

    def _domains_having(self, key: str, keys: tuple) -> tuple:
        """_domains_at over the nodes having every label of ``keys``, and their positions."""
        if (key, keys) not in self._having:
            pos = np.array([i for i, n in enumerate(self.state.nodes.values())
                            if all(k in n.metadata.labels for k in keys)], dtype=np.int64)
            domains, at, present = self._domains_at(key, pos)
            self._having[(key, keys)] = (domains, at, pos, present)
        return self._having[(key, keys)]

    def count_by_domain_on(self, namespace: "str | None", selector, key: str, nodes: list) -> dict[str, int]:
        """count_by_domain over the given nodes: domain → how many pods count_matching counts on
        them, each node's domain present (in the order the nodes first have it)."""
        pos = self.state.positions(nodes)
        if pos is None:     # not the state's own nodes (or a null among them, left out)
            counts = self.counts.count_matching(namespace, selector)
            out: dict = {}
            for n in filter(None, nodes):
                domain = n.metadata.labels.get(key, "")
                out[domain] = out.get(domain, 0) + counts.get(n.metadata.name, 0)
            return out
        domains, at, present = self._domains_at(key, pos)
        totals = np.bincount(at, weights=self.counts.count_matching_by_position(namespace, selector)[pos],
                             minlength=len(domains))
        return _by_domain(domains, present, totals)

    def domains_of(self, key: str, nodes: list) -> list[str]:
        """The values of node label ``key`` ("" for a node without it) the nodes have, each once,
        in the order the nodes first have them."""
        pos = self.state.positions(nodes)
        if pos is None:
            return list(dict.fromkeys(n.metadata.labels.get(key, "") for n in filter(None, nodes)))
        domains, _, present = self._domains_at(key, pos)
        return [domains[i] for i in present]

    def _domains_at(self, key: str, pos: np.ndarray) -> "tuple[list[str], np.ndarray, list[int]]":
        """The label's values (its domains, "" for none); per node at ``pos``, which it has;
        and those present, in the order the nodes first have them."""
        if key not in self._codes:
            index: dict = {}
            codes = [index.setdefault(n.metadata.labels.get(key, ""), len(index)) for n in self.state.nodes.values()]
            self._codes[key] = (np.array(codes, dtype=np.int64), list(index))
        codes, domains = self._codes[key]
        at = codes[pos]
        present, first = np.unique(at, return_index=True)
        return domains, at, present[np.argsort(first)].tolist()


def _by_domain(domains: list, present: list, totals: np.ndarray) -> dict[str, int]:
    """Each present domain's total (a hostname key has one per node: thousands), in order."""
    return dict(zip(map(domains.__getitem__, present), totals[present].astype(np.int64).tolist()))

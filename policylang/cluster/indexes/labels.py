"""The bound pods by namespace and by (namespace, label key, label value): the pools a label
selector's pods are found in (pods_matching), terminating pods included."""

from __future__ import annotations

from ...api.selectors import narrowing, selector_key, selector_matches


class LabelPools:
    def __init__(self, state) -> None:
        self.pools: dict[tuple, dict] = {}              # (namespace, key, value) → pods by key
        self.pods_by_namespace: dict[str, dict] = {}    # namespace → pods by key
        self._matching: dict = {}   # pods_matching's answers until a pod arrives or leaves

    def arrive(self, pod, node: str) -> None:
        ns, key = pod.metadata.namespace, pod.key
        self.pods_by_namespace.setdefault(ns, {})[key] = pod
        for k, v in pod.metadata.labels.items():
            self.pools.setdefault((ns, k, v), {})[key] = pod
        self._matching.clear()

    def leave(self, pod, node: str) -> None:
        ns, key = pod.metadata.namespace, pod.key
        self.pods_by_namespace.get(ns, {}).pop(key, None)
        for k, v in pod.metadata.labels.items():
            self.pools.get((ns, k, v), {}).pop(key, None)
        self._matching.clear()

    def pods_matching(self, namespace: "str | None", selector) -> list:
        """The bound pods of a namespace (None: of every namespace) that a label selector selects
        (a None selector selects none)."""
        if selector is None:
            return []
        if namespace is None:
            return [p for ns in sorted(self.pods_by_namespace) for p in self.pods_matching(ns, selector)]
        return self.selected(namespace, selector)[1]

    def selected(self, namespace: str, selector) -> tuple[dict, list]:
        """pods_matching's pods of one namespace: by key, and as the list it answers."""
        key = selector_key(namespace, selector)
        found = self._matching.get(key)
        if found is not None:
            return found
        labels, exact = narrowing(selector)
        # From the label pools: the smallest pool, kept where every other pool has the pod.
        pools = sorted((self.pools.get((namespace, *label), {}) for label in labels), key=len)
        if len(pools) == 1:
            found = dict(pools[0])
        elif pools:
            found = {k: p for k, p in pools[0].items() if all(k in other for other in pools[1:])}
        else:
            found = dict(self.pods_by_namespace.get(namespace, {}))
        if not exact:
            found = {k: p for k, p in found.items() if selector_matches(selector, p.metadata.labels)}
        found = self._matching[key] = (found, list(found.values()))
        return found

"""NodeAffinity's explain fixer: label the node as the pod's nodeSelector asks."""

from __future__ import annotations

import attrs

from .edits import with_node


def fix(state, pod, node, status):
    labels = dict(node.metadata.labels)
    wanted = {k: v for k, v in pod.spec.node_selector.items() if labels.get(k) != v}
    if wanted:
        text = ", ".join(f"{k}={v}" for k, v in wanted.items())
        relabeled = attrs.evolve(node, metadata=attrs.evolve(node.metadata, labels={**labels, **wanted}))
        yield f"label {node.metadata.name} with {text}", pod, with_node(state, relabeled)

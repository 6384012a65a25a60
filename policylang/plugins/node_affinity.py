"""NodeAffinity's explain fixer: label the node as the pod's nodeSelector asks."""

from __future__ import annotations

import attrs

from .edits import Change, with_node

# Labels the kubelet and the cloud provider set from what a node is: relabeling a node with
# another's hostname, zone or OS is not a fix (k8s.io/api core/v1 well_known_labels.go).
WELL_KNOWN_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
})


def fix(state, pod, node, status):
    labels = dict(node.metadata.labels)
    wanted = {k: v for k, v in pod.spec.node_selector.items() if labels.get(k) != v}
    if wanted:
        text = ", ".join(f"{k}={v}" for k, v in wanted.items())
        relabeled = attrs.evolve(node, metadata=attrs.evolve(node.metadata, labels={**labels, **wanted}))
        yield Change(f"label {node.metadata.name} with {text}", pod, with_node(state, relabeled),
                     infrastructure=any(k in WELL_KNOWN_LABELS for k in wanted))

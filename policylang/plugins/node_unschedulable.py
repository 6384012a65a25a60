"""NodeUnschedulable's explain fixer: uncordon the node."""

from __future__ import annotations

import attrs

from .edits import with_node


def fix(state, pod, node, status):
    uncordoned = attrs.evolve(node, spec=attrs.evolve(node.spec, unschedulable=False))
    yield f"uncordon {node.metadata.name}", pod, with_node(state, uncordoned)

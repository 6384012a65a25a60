"""NodeUnschedulable's explain fixer: uncordon the node."""

from __future__ import annotations

import attrs

from .edits import Change, with_node


def fix(state, pod, node, status):
    uncordoned = attrs.evolve(node, spec=attrs.evolve(node.spec, unschedulable=False))
    yield Change(f"uncordon {node.metadata.name}", pod, with_node(state, uncordoned), infrastructure=True)

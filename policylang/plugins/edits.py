"""Changes to a pod or a cluster that explain's fixers propose (each plugin's ``fix``)."""

from __future__ import annotations

import attrs

from ..cluster.model import Node, Pod
from ..cluster.state import ClusterState


def with_node(state: ClusterState, node: Node) -> ClusterState:
    """The state with this node in place of the one of its name."""
    return ClusterState.build([node if isinstance(o, Node) and o.metadata.name == node.metadata.name else o
                               for o in state.objects()])


def with_spec(pod: Pod, **changes) -> Pod:
    return attrs.evolve(pod, spec=attrs.evolve(pod.spec, **changes))

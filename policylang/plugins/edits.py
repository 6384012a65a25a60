"""Changes to a pod or a cluster that explain's fixers propose (each plugin's ``fix``)."""

from __future__ import annotations

import attrs

from ..api.model import Node, Pod
from ..cluster.state import ClusterState
from ..frozen import frozen


@frozen
class Change:
    """One change a fixer proposes, and the inputs with it made. ``infrastructure`` marks a change
    to the cluster's own machinery (uncordoning a node, tolerating a control-plane or node-lifecycle
    taint): explain holds those back unless asked, since they are rarely what a user should do."""
    text: str
    pod: Pod
    state: ClusterState
    infrastructure: bool = False


def with_node(state: ClusterState, node: Node) -> ClusterState:
    """The state with this node in place of the one of its name."""
    return state.with_nodes([node if n.metadata.name == node.metadata.name else n for n in state.nodes_as_arrived()])


def with_spec(pod: Pod, **changes) -> Pod:
    return attrs.evolve(pod, spec=attrs.evolve(pod.spec, **changes))


def with_objects(state: ClusterState, objects: list) -> ClusterState:
    """The state with these objects in place of those of their kind, namespace and name (a claim
    asking for fewer devices), the others as they are."""
    def key(o):
        return (getattr(o, "kind", ""), o.metadata.namespace, o.metadata.name)
    replaced = {key(o): o for o in objects}
    return ClusterState.build([o if isinstance(o, Pod) else replaced.get(key(o), o) for o in state.objects()])

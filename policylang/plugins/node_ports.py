"""NodePorts' explain fixer: free the host ports, or drop them from the pod."""

from __future__ import annotations

import attrs

from .edits import Change, with_spec


def fix(state, pod, node, status):
    def without_host_ports(c):
        return attrs.evolve(c, ports=tuple(attrs.evolve(p, host_port=0) for p in c.ports))
    ports = sorted({p.host_port for c in pod.spec.containers for p in c.ports if p.host_port})
    yield Change(f"free host port(s) {', '.join(map(str, ports))} on {node.metadata.name}, or drop hostPort from the pod",
                 with_spec(pod, containers=tuple(without_host_ports(c) for c in pod.spec.containers)), state)

"""What a state's pods ask of its nodes: requested / allocatable per node and per zone, the
before and after of simulate, diff, whatif and capacity (their text, JSON and HTML reports)."""

from __future__ import annotations

GPU = "nvidia.com/gpu"


def _milli(q) -> int:
    return 0 if q is None else q.milli()


def utilisation(state) -> dict:
    """Requested / allocatable of cpu (millicores), memory (bytes), pods and GPUs, per node and zone."""
    nodes, zones = {}, {}
    for name, node in state.nodes.items():
        alloc, used = node.status.allocatable, state.requested.get(name, {})
        row = {
            "cpu": {"requested": _milli(used.get("cpu")), "allocatable": _milli(alloc.get("cpu"))},
            "memory": {"requested": _milli(used.get("memory")) // 1000, "allocatable": _milli(alloc.get("memory")) // 1000},
            "pods": {"requested": len(state.pods_by_node.get(name, ())), "allocatable": _milli(alloc.get("pods")) // 1000},
            "gpu": {"requested": _milli(used.get(GPU)) // 1000, "allocatable": _milli(alloc.get(GPU)) // 1000},
        }
        nodes[name] = row
        zone = node.metadata.labels.get("topology.kubernetes.io/zone", "")
        z = zones.setdefault(zone, {k: {"requested": 0, "allocatable": 0} for k in row})
        for k, v in row.items():
            z[k]["requested"] += v["requested"]
            z[k]["allocatable"] += v["allocatable"]
    return {"nodes": nodes, "zones": zones}

"""capacity's answers for people and machines: text, and policylang/capacity/v1 (headroom, or
nodes to add)."""

from __future__ import annotations

from typing import Optional

from ..api.model import Pod
from ..forecast.capacity import Headroom, NodesNeeded
from ..forecast.simulate import Placement
from .decisions import _cores, _gib, _printable

CAPACITY_SCHEMA = "policylang/capacity/v1"


def _unit_text(unit) -> str:
    """The pods of one copy, by the controller that owns them (a Deployment's ReplicaSet) or by name."""
    counts: dict[str, int] = {}
    for p in unit:
        ref = next((r for r in p.metadata.owner_references if r.controller), None)
        name = f"{ref.kind} {p.metadata.namespace}/{ref.name}" if ref else p.key
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(_printable(k) + (f" ×{c}" if c > 1 else "") for k, c in counts.items())


def _requests(pod: Pod) -> str:
    from ..api.requests import pod_requests
    req = pod_requests(pod)
    cpu, mem = req.get("cpu"), req.get("memory")
    return f"cpu {_cores(cpu.milli() if cpu else 0)}, memory {_gib((mem.milli() // 1000) if mem else 0)}"


def _why_full(stopped: Optional[Placement]) -> dict[str, str]:
    if stopped is None or stopped.decision is None:
        return {}
    out = {}
    for n in stopped.decision.nodes:
        if n.failure is not None:
            out[n.name] = f"{n.failure.plugin or 'PreFilter'}: {n.failure.message}"
        elif not n.evaluated:
            out[n.name] = "not evaluated"
    return out


def headroom_text(h: Headroom, nodes: list[str]) -> str:
    what = (_unit_text(h.unit) if len(h.unit) > 1 else f"{_printable(h.unit[0].key)}") + \
        f" ({'; '.join(dict.fromkeys(_requests(p) for p in h.unit))} each)"
    more = f"{h.fits}+ (the limit; raise --max)" if h.capped else str(h.fits)
    lines = [f"Capacity for {'copies of ' if len(h.unit) > 1 else ''}{what}: {more} more fit"
             + (" (each copy is the whole set)" if len(h.unit) > 1 else "")]
    if h.stopped_by is not None:
        lines.append(f"  the next one: {h.stopped_by.message}")
    why = _why_full(h.stopped_by)
    lines += ["", "NODE".ljust(max(map(len, nodes + ["NODE"])) + 2) + "PODS  WHY FULL (for the next one)"]
    for name in nodes:
        reason = why.get(name, "fits one more, but another node scored higher" if h.stopped_by else "")
        lines.append(f"{_printable(name).ljust(max(map(len, nodes + ['NODE'])) + 2)}{str(h.by_node.get(name, 0)).ljust(6)}"
                     f"{_printable(reason)}".rstrip())
    return "\n".join(lines)


def headroom_json(h: Headroom, nodes: list[str]) -> dict:
    why = _why_full(h.stopped_by)
    return {
        "schema": CAPACITY_SCHEMA, "mode": "headroom",
        "unit": [{"namespace": p.metadata.namespace, "name": p.metadata.name} for p in h.unit],
        "fits": h.fits, "capped": h.capped,
        "next_message": h.stopped_by.message if h.stopped_by else None,
        "nodes": [{"name": n, "placed": h.by_node.get(n, 0), "why_full": why.get(n)} for n in nodes],
        "utilisation": {"before": h.before, "after": h.after},
    }


def nodes_needed_text(r: NodesNeeded) -> str:
    head = f"Nodes like {_printable(r.template.name)} to add so the batch schedules: "
    if r.count is None:
        lines = [head + f"none suffices (tried up to {r.tried}); {len(r.never)} pod(s) never fit:"]
        lines += [f"  {_printable(p.pod.key)}: {_printable(p.message or '')}" for p in r.never]
    else:
        lines = [head + str(r.count)]
    placed = [p for p in r.placements if p.node]
    lines += ["", f"With {r.count if r.count is not None else r.tried} added: {len(placed)} of {len(r.placements)} placed"]
    by_node: dict[str, int] = {}
    for p in placed:
        by_node[p.node] = by_node.get(p.node, 0) + 1
    lines += [f"  {_printable(n)}: {c}" for n, c in sorted(by_node.items())]
    return "\n".join(lines)


def nodes_needed_json(r: NodesNeeded) -> dict:
    return {
        "schema": CAPACITY_SCHEMA, "mode": "nodes",
        "template": r.template.name, "nodes_needed": r.count, "tried": r.tried,
        "never_fit": [{"pod": {"namespace": p.pod.metadata.namespace, "name": p.pod.metadata.name},
                       "message": p.message} for p in r.never],
        "placements": [{"pod": {"namespace": p.pod.metadata.namespace, "name": p.pod.metadata.name}, "node": p.node}
                       for p in r.placements],
        "utilisation": {"before": r.before, "after": r.after},
    }

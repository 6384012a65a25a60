"""diff: what a policy change does to a batch of pods — the same simulation under two
profiles, and every pod whose placement or schedulability differs, with the plugin scores
that made the difference."""

from __future__ import annotations

import json

from ..frozen import frozen
from .simulate import Placement


@frozen
class Change:
    pod: str
    a: Placement
    b: Placement


def changes(a: list[Placement], b: list[Placement]) -> list[Change]:
    by_key = {p.pod.key: p for p in b}
    return [Change(p.pod.key, p, by_key[p.pod.key]) for p in a
            if p.pod.key in by_key and p.node != by_key[p.pod.key].node]


def _scores(placement: Placement, nodes: list[str]) -> dict:
    """Each node's weighted score per plugin in this decision (None if it was not feasible)."""
    out = {}
    decision = placement.decision
    for n in (decision.nodes if decision else ()):
        if n.name in nodes:
            out[n.name] = None if n.scores is None else {p: s.weighted for p, s in n.scores.items()}
    return out


def diff_json(name_a: str, name_b: str, found: list[Change], summary_a: dict, summary_b: dict) -> str:
    doc = {
        "schema": "policylang/diff/v1",
        "a": name_a, "b": name_b,
        "changes": [{
            "pod": {"namespace": c.a.pod.metadata.namespace, "name": c.a.pod.metadata.name},
            "a": {"node": c.a.node, "message": c.a.message},
            "b": {"node": c.b.node, "message": c.b.message},
            "scores": {"a": _scores(c.a, [n for n in (c.a.node, c.b.node) if n]),
                       "b": _scores(c.b, [n for n in (c.a.node, c.b.node) if n])},
        } for c in found],
        "summary": {"a": summary_a, "b": summary_b},
    }
    return json.dumps(doc, indent=2)


def diff_text(name_a: str, name_b: str, found: list[Change], summary_a: dict, summary_b: dict,
              usage_a: dict, usage_b: dict) -> str:
    lines = [f"A = {name_a}", f"B = {name_b}", ""]
    if not found:
        lines.append("No pod is placed differently.")
    for c in found:
        lines.append(f"{c.pod}: A → {c.a.node or 'unschedulable'}, B → {c.b.node or 'unschedulable'}")
        nodes = [n for n in (c.a.node, c.b.node) if n]
        for side, placement in (("A", c.a), ("B", c.b)):
            if placement.node is None:
                lines.append(f"  {side}: {placement.message}")
                continue
            for node, scores in _scores(placement, nodes).items():
                if scores is None:
                    lines.append(f"  {side}: {node} not feasible")
                else:
                    parts = ", ".join(f"{p} {v}" for p, v in scores.items())
                    lines.append(f"  {side}: {node} total {sum(scores.values())} ({parts})")
    lines += ["", "SUMMARY         A      B"]
    for key in ("scheduled", "unschedulable", "preempted"):
        lines.append(f"{key.ljust(14)}  {str(summary_a[key]).rjust(5)}  {str(summary_b[key]).rjust(5)}")
    lines += ["", "ZONE          CPU A      CPU B      MEMORY A   MEMORY B"]
    for zone in sorted(set(usage_a["zones"]) | set(usage_b["zones"])):
        za, zb = usage_a["zones"].get(zone), usage_b["zones"].get(zone)
        cells = [_pct(za, "cpu"), _pct(zb, "cpu"), _pct(za, "memory"), _pct(zb, "memory")]
        lines.append(f"{(zone or '(none)').ljust(12)}  " + "  ".join(c.ljust(9) for c in cells).rstrip())
    return "\n".join(lines)


def _pct(row, key) -> str:
    if not row or not row[key]["allocatable"]:
        return "-"
    return f"{100 * row[key]['requested'] // row[key]['allocatable']}%"

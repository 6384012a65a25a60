"""Report: Decisions → text for people, JSON for machines (schema policylang/eval/v1)."""

from __future__ import annotations

import json
from typing import Iterable

from .decision import Decision

EVAL_SCHEMA = "policylang/eval/v1"


# ---- JSON ------------------------------------------------------------------------

def decision_json(d: Decision) -> dict:
    nodes = []
    for n in d.nodes:
        nodes.append({
            "name": n.name,
            "feasible": n.feasible,
            "failure": None if n.failure is None else {
                "plugin": n.failure.plugin, "code": n.failure.code, "reasons": list(n.failure.reasons)},
            "scores": None if n.scores is None else {
                plugin: {"raw": s.raw, "normalized": s.normalized, "weight": s.weight, "weighted": s.weighted}
                for plugin, s in n.scores.items()},
            "total": n.total,
        })
    out = {
        "pod": {"namespace": d.pod_namespace, "name": d.pod_name},
        "profile": d.profile,
        "selected": d.selected,
        "feasible": sorted(d.feasible),
        "fit_error": d.fit_error,
        "message": d.message,
        "nodes": nodes,
    }
    if d.nominated_node is not None:
        out["nominated_node"] = d.nominated_node
        out["victims"] = [{"namespace": v.namespace, "name": v.name} for v in d.victims]
    return out


def eval_json(decisions: Iterable[Decision]) -> str:
    return json.dumps({"schema": EVAL_SCHEMA, "results": [decision_json(d) for d in decisions]}, indent=2)


# ---- text ------------------------------------------------------------------------

class Style:
    def __init__(self, color: bool):
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def good(self, text):
        return self._wrap("32", text)

    def bad(self, text):
        return self._wrap("31", text)

    def bold(self, text):
        return self._wrap("1", text)

    def dim(self, text):
        return self._wrap("2", text)


def decision_text(d: Decision, style: Style) -> str:
    head = f"Pod {d.pod_namespace}/{d.pod_name}"
    if d.selected:
        lines = [f"{style.bold(head)}: scheduled to {style.good(d.selected)} (profile {d.profile})"]
    else:
        lines = [f"{style.bold(head)}: {style.bad('unschedulable')} (profile {d.profile})"]
        if d.message:
            lines.append(f"  {d.message}")
        if d.nominated_node:
            victims = ", ".join(f"{v.namespace}/{v.name}" for v in d.victims)
            lines.append(f"  preemption: nominated {d.nominated_node}, evicting {victims}")
    if not d.nodes:
        return "\n".join(lines)
    plugins: list[str] = []
    for n in d.nodes:
        for p in (n.scores or {}):
            if p not in plugins:
                plugins.append(p)
    header = ["NODE", "RESULT", "TOTAL"] + plugins
    rows = []
    order = sorted(d.nodes, key=lambda n: (not n.feasible, -(n.total or 0), n.name))
    for n in order:
        if n.feasible:
            result = "selected" if n.name == d.selected else "feasible"
            cells = [n.name, result, str(n.total)]
            for p in plugins:
                s = (n.scores or {}).get(p)
                cells.append("" if s is None else (f"{s.weighted} ({s.normalized}×{s.weight})" if s.weight != 1
                                                   else str(s.weighted)))
        else:
            f = n.failure
            cells = [n.name, f"{f.plugin or 'PreFilter'}: {f.message}", ""] + [""] * len(plugins)
        rows.append(cells)
    lines.append("")
    lines.extend(_table(header, rows, style, selected=d.selected))
    return "\n".join(lines)


def _table(header: list[str], rows: list[list[str]], style: Style, selected) -> list[str]:
    # A rejected node's reason can be long: it overflows its column instead of widening all.
    widths = [len(h) for h in header]
    for r in rows:
        for i, cell in enumerate(r):
            if not (i == 1 and r[2] == ""):
                widths[i] = max(widths[i], len(cell))
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for r in rows:
        if r[2] == "":
            out.append(f"{r[0].ljust(widths[0])}  {style.bad('✗ ' + r[1])}")
        else:
            line = "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
            out.append(style.good(line) if r[0] == selected else line)
    return out


def eval_text(decisions: Iterable[Decision], style: Style) -> str:
    return "\n\n".join(decision_text(d, style) for d in decisions)

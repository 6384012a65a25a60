"""Report: Decisions → text for people, JSON for machines (schema policylang/eval/v1)."""

from __future__ import annotations

import json
from typing import Iterable

from ..run.decision import Decision
from ..forecast.utilisation import utilisation

EVAL_SCHEMA = "policylang/eval/v1"


# ---- JSON ------------------------------------------------------------------------

def _is_held(r) -> bool:
    from ..pending import Held
    return isinstance(r, Held)


def kubernetes_json(target=None) -> dict:
    """Which Kubernetes decided: the version, and the feature gates set on the command line."""
    from ..target import DEFAULT
    return (DEFAULT if target is None else target).json()


def eval_json(decisions: Iterable, target=None) -> str:
    """eval -o json: Decisions and Helds (pods not scheduled), in order."""
    return json.dumps({"schema": EVAL_SCHEMA, "kubernetes": kubernetes_json(target),
                       "results": [d.to_json() for d in decisions]}, indent=2)


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


NOT_EVALUATED = "not evaluated"


def _printable(text: str) -> str:
    """Control characters escaped (as Python writes them), so no input can drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


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
        elif n.failure is None:  # not looked at: the nominated node fit first, or node sampling stopped
            cells = [n.name, NOT_EVALUATED, ""] + [""] * len(plugins)
        else:
            f = n.failure
            cells = [n.name, f"{f.plugin or 'PreFilter'}: {f.message}", ""] + [""] * len(plugins)
        rows.append(cells)
    lines.append("")
    lines.extend(_table(header, rows, style, selected=d.selected))
    return "\n".join(lines)


def _table(header: list[str], rows: list[list[str]], style: Style, selected) -> list[str]:
    # A rejected node's reason can be long: it overflows its column instead of widening all.
    header = [_printable(h) for h in header]
    rows = [[c if c is NOT_EVALUATED else _printable(c) for c in r] for r in rows]
    widths = [len(h) for h in header]
    for r in rows:
        for i, cell in enumerate(r):
            if not (i == 1 and r[2] == ""):
                widths[i] = max(widths[i], len(cell))
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for r in rows:
        if r[1] is NOT_EVALUATED:
            out.append(f"{r[0].ljust(widths[0])}  {style.dim('- ' + r[1])}")
        elif r[2] == "":
            out.append(f"{r[0].ljust(widths[0])}  {style.bad('✗ ' + r[1])}")
        else:
            line = "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
            out.append(style.good(line) if r[0] == selected else line)
    return out


def held_text(h, style: Style) -> str:
    from ..pending import GATED_MESSAGE, GATED_REASON, pre_enqueue_message

    head = style.bold(_printable(f"Pod {h.pod.key}"))
    if h.bound_to:
        return f"{head}: already bound to {_printable(h.bound_to)}"
    if h.phase:
        return f"{head}: {h.phase}, not scheduled again"
    if h.other_scheduler:
        return (f"{head}: left to scheduler {_printable(h.other_scheduler)} (its schedulerName; no profile of that "
                f"name here: {_printable(', '.join(h.profiles))})")
    lines = [f"{head}: {style.bad('gated')} by scheduling gates {_printable(', '.join(h.gates))}",
             f"  PodScheduled=False, reason {GATED_REASON}: {GATED_MESSAGE}",
             f"  kube-scheduler does not attempt it (PreEnqueue, SchedulingGates: {_printable(pre_enqueue_message(h.pod))})"]
    if h.ungated is not None:
        d = h.ungated.decision
        if d.selected:
            lines.append(f"  Without its gates it would schedule to {style.good(d.selected)} (profile {d.profile})")
        else:
            lines.append(f"  Without its gates it would still be unschedulable (profile {d.profile})"
                         + (f": {d.message}" if d.message else ""))
    return "\n".join(lines)


def eval_text(decisions: Iterable[Decision], style: Style) -> str:
    return "\n\n".join(held_text(d, style) if _is_held(d) else decision_text(d, style) for d in decisions)


# ---- simulate --------------------------------------------------------------------

SIMULATE_SCHEMA = "policylang/simulate/v1"


def simulate_summary(placements) -> dict:
    return {
        "pods": len(placements),
        "scheduled": sum(1 for p in placements if p.node),
        "unschedulable": sum(1 for p in placements if p.decision is not None and not p.node),
        "skipped": sum(1 for p in placements if p.decision is None and not p.gates),
        "gated": sum(1 for p in placements if p.gates),
        "preempted": sum(len(p.victims) for p in placements),
    }


def simulate_json(placements, state, target=None) -> str:
    doc = {
        "schema": SIMULATE_SCHEMA,
        "kubernetes": kubernetes_json(target),
        "placements": [{
            "pod": {"namespace": p.pod.metadata.namespace, "name": p.pod.metadata.name},
            "node": p.node,
            "message": p.message,
            "nominated_node": p.nominated_node,
            "victims": [{"namespace": v.namespace, "name": v.name} for v in p.victims],
        } for p in placements],
        "summary": {**simulate_summary(placements), "utilisation": utilisation(state)},
    }
    return json.dumps(doc, indent=2)


def _ratio(r: dict, show=str) -> str:
    if not r["allocatable"]:
        return "-" if not r["requested"] else f"{show(r['requested'])}/0"
    pct = 100 * r["requested"] // r["allocatable"]
    return f"{show(r['requested'])}/{show(r['allocatable'])} ({pct}%)"


def _cores(milli: int) -> str:
    return f"{milli / 1000:g}"


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f}Gi".replace(".0Gi", "Gi")


def simulate_text(placements, state, style: Style) -> str:
    s = simulate_summary(placements)
    lines = [style.bold(f"Simulated {s['pods']} pods on {len(state.nodes)} nodes: {s['scheduled']} scheduled, "
                        f"{s['unschedulable']} unschedulable, {s['preempted']} preempted"
                        + (f", {s['gated']} gated" if s["gated"] else "")
                        + (f", {s['skipped']} left to other schedulers" if s["skipped"] else "")), ""]
    rows = []
    for p in placements:
        note = p.message or ""
        if p.victims:
            note = "preempted " + ", ".join(f"{v.namespace}/{v.name}" for v in p.victims) + (f"; {note}" if note else "")
        rows.append([f"{p.pod.metadata.namespace}/{p.pod.metadata.name}", p.node or "-", note])
    width = [max(len(r[i]) for r in rows + [["POD", "NODE", ""]]) for i in range(2)]
    lines.append(f"{'POD'.ljust(width[0])}  {'NODE'.ljust(width[1])}  NOTE")
    for pod, node, note in rows:
        line = f"{pod.ljust(width[0])}  {node.ljust(width[1])}  {note}".rstrip()
        lines.append(style.bad(line) if node == "-" else line)
    usage = utilisation(state)
    for title, table in (("NODE", usage["nodes"]), ("ZONE", usage["zones"])):
        lines.append("")
        body = [[name or "(none)", _ratio(r["cpu"], _cores), _ratio(r["memory"], _gib), _ratio(r["pods"]),
                 _ratio(r["gpu"])] for name, r in sorted(table.items())]
        head = [title, "CPU", "MEMORY", "PODS", "GPU"]
        widths = [max(len(x[i]) for x in body + [head]) for i in range(5)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)


# ---- explain ---------------------------------------------------------------------

EXPLAIN_SCHEMA = "policylang/explain/v1"


def explain_json(explanations, target=None) -> str:
    results = []
    for e in explanations:
        if _is_held(e):
            results.append({**e.to_json(), "causes": [], "near_misses": [], "suggestions": [], "withheld": []})
            continue
        doc = e.decision.to_json()
        for n in doc["nodes"]:
            n["filters"] = {plugin: {"code": s.code, "reasons": list(s.reasons)}
                            for plugin, s in e.filters.get(n["name"], {}).items()}
        doc["causes"] = [{"plugin": c.plugin, "reason": c.reason, "nodes": list(c.nodes), "detail": c.detail}
                         for c in e.causes]
        doc["near_misses"] = [{"node": name, "plugin": s.plugin, "code": s.code, "reasons": list(s.reasons)}
                              for name, s in e.near_misses]
        doc["suggestions"] = [_suggestion_json(s) for s in e.suggestions]
        doc["withheld"] = [_suggestion_json(s) for s in e.withheld]
        results.append(doc)
    return json.dumps({"schema": EXPLAIN_SCHEMA, "kubernetes": kubernetes_json(target), "results": results},
                      indent=2)


def _suggestion_json(s) -> dict:
    return {"change": s.change, "node": s.nodes[0], "nodes": list(s.nodes), "schedules_on": s.result,
            "verified": True, "infrastructure": s.infrastructure}


# What the text shows of long lists unless --all: enough to act on, and a count of the rest, so
# that a pod on 2,000 nodes reads in a screen or two. Up to GROUP_ABOVE nodes, each has its row.
SHOWN = 5
GROUP_ABOVE = 20


def explain_text(explanations, style: Style, *, every: bool = False) -> str:
    """``every``: one row per node, and every near miss and suggestion (explain --all)."""
    shown = None if every else SHOWN
    out = []
    for e in explanations:
        if _is_held(e):
            out.append(held_text(e, style))
            continue
        d = e.decision
        lines = [decision_text(d, style).split("\n\n")[0]]
        grouped = not every and len(e.filters) > GROUP_ABOVE
        if not d.selected and e.causes:
            lines += ["", "Causes (each filter as if it ran alone; a node may fail several):"]
            for c in e.causes:
                lines.append(f"  {_count(len(c.nodes), 'node')}: {c.plugin}: {c.reason}"
                             + (f" — {c.detail}" if c.detail else ""))
                if grouped:  # else the table below names every node
                    lines.append("    " + style.dim(_some(c.nodes, shown)))
        lines += ["", *_node_table(e.filters, style, grouped=grouped)]
        if not d.selected:
            lines.append("")
            if e.near_misses:
                lines.append("Near misses (one filter away):")
                width = max([len(name) for name, _ in e.near_misses] + [10]) + 2
                lines += [f"  {name.ljust(width)}{s.plugin}: {s.message}" for name, s in _first(e.near_misses, shown)]
                lines += _more(len(e.near_misses), shown)
            else:
                lines.append("No near misses: every node fails more than one filter.")
            if e.suggestions:
                lines.append("What would make it fit (each checked by running the plan again):")
                lines += [f"  - {s.change} → schedules on {s.result}"
                          + (f" (makes room on {len(s.nodes)} nodes: {_some(s.nodes, 3)})" if len(s.nodes) > 1 else "")
                          for s in _first(e.suggestions, shown)]
                lines += _more(len(e.suggestions), shown)
            elif e.withheld:
                lines.append("Only a change to the cluster's own machinery would make it fit (uncordoning a node, or "
                             "tolerating a control-plane or node-lifecycle taint); --suggest-infrastructure shows it.")
            else:
                lines.append("No single change found that makes it fit.")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _node_table(filters: dict, style: Style, *, grouped: bool) -> list[str]:
    """Every node's failing filters; with ``grouped``, nodes that fail alike share a row."""
    failing = {name: _failing(filters[name]) for name in sorted(filters)}
    rows: dict[str, list[str]] = {}
    for name, texts in failing.items():
        rows.setdefault("; ".join(texts) if grouped else name, []).append(name)
    order = sorted(rows.values(), key=lambda names: (len(failing[names[0]]), names[0]))
    labels = [names[0] if len(names) == 1 else _count(len(names), "node") for names in order]
    width = max([len(label) for label in labels] + [10]) + 2
    lines = ["NODE".ljust(width) + "FAILING FILTERS (each as if it ran alone)"]
    for label, names in zip(labels, order):
        texts = failing[names[0]]
        lines.append(label.ljust(width) + (style.bad("; ".join(texts)) if texts else style.good("fits")))
        if len(names) > 1:
            lines.append("  " + style.dim(_some(names, SHOWN)))
    return lines


def _failing(by_plugin: dict) -> list[str]:
    """"Plugin: message" of each plugin that rejects the node, in the profile's order."""
    return [f"{p}: {s.message}" for p, s in by_plugin.items() if s.code not in ("Success", "Skip")]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _first(items, shown: "int | None"):
    return items if shown is None else items[:shown]


def _more(total: int, shown: "int | None") -> list[str]:
    return [] if shown is None or total <= shown else [f"  … and {total - shown} more (--all shows every one)"]


def _some(names, shown: "int | None") -> str:
    listed = ", ".join(_first(names, shown))
    return listed if shown is None or len(names) <= shown else f"{listed} … and {len(names) - shown} more"

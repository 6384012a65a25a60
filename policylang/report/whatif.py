"""A WhatIfOutcome → text for people and JSON for machines (schema policylang/whatif/v1,
policylang/report/schemas/whatif.v1.json)."""

from __future__ import annotations

import json

from .decisions import Style, _cores, _gib, _printable
from ..forecast.whatif import WhatIfOutcome

WHATIF_SCHEMA = "policylang/whatif/v1"


def verdict(outcome: WhatIfOutcome) -> list[str]:
    """What stops the answer from being "yes": pods left pending, bare pods lost, evictions
    blocked, budgets broken. Empty: every pod that had to move found a place."""
    out = []
    if outcome.pending:
        out.append(f"{len(outcome.pending)} pod(s) cannot be placed")
    if outcome.lost:
        out.append(f"{len(outcome.lost)} bare pod(s) lost")
    blocked = sum(len(r.blocked) for r in outcome.events)
    if blocked:
        out.append(f"{blocked} eviction(s) blocked by a PodDisruptionBudget")
    broken = [b for b in outcome.budgets if b.violated]
    if broken:
        out.append(f"{len(broken)} PodDisruptionBudget(s) violated")
    return out


def _pod(pod) -> dict:
    return {"namespace": pod.metadata.namespace, "name": pod.metadata.name}


def _explained(e) -> dict:
    if e is None:
        return {"near_misses": None, "suggestions": None}
    return {"near_misses": [{"node": name, "plugin": st.plugin, "reasons": list(st.reasons)} for name, st in e.near_misses],
            "suggestions": [{"change": s.change, "schedules_on": s.result} for s in e.suggestions]}


def whatif_json(outcome: WhatIfOutcome) -> str:
    doc = {
        "schema": WHATIF_SCHEMA,
        "ok": not verdict(outcome),
        "events": [{
            "event": r.event.text,
            "kind": r.event.verb,
            "nodes": list(r.nodes),
            "moves": [{"pod": _pod(m.pod), "from": m.from_node, "to": m.to_node, "cause": m.cause, "fate": m.fate,
                       "at_seconds": m.at, "owner": m.owner, "message": m.message} for m in r.moves],
            "stays": [{"pod": _pod(s.pod), "node": s.node, "reason": s.reason} for s in r.stays],
            "blocked": [{"pod": _pod(b.pod), "node": b.node, "pdb": b.pdb, "message": b.message} for b in r.blocked],
            "warnings": list(r.warnings),
            "placed": [{"pod": _pod(p.pod), "node": p.node,
                        "victims": [{"namespace": v.namespace, "name": v.name} for v in p.victims]}
                       for p in r.placed if p.node],
        } for r in outcome.events],
        "unschedulable": [{"pod": _pod(p.pod), "message": p.message, **_explained(outcome.explained.get(p.pod.key))}
                          for p in outcome.pending],
        "lost": [_pod(m.pod) for m in outcome.lost],
        "pdbs": [{"pdb": b.after.key, "desired_healthy": b.after.desired_healthy, "expected": b.after.expected,
                  "healthy_before": b.before.current_healthy, "healthy_after": b.after.current_healthy,
                  "violated": b.violated, "blocking": list(b.blocking)} for b in outcome.budgets],
        "utilisation": {"before": outcome.before, "after": outcome.after},
        "verdict": verdict(outcome),
    }
    return json.dumps(doc, indent=2)


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]


def _when(seconds) -> str:
    return "" if seconds is None else f"t+{seconds}s"


def _note(m) -> str:
    if m.fate == "moved":
        return f"recreated by {m.owner}" + (f"; {m.message}" if m.message else "")
    if m.fate == "pending":
        return f"recreated by {m.owner}, unschedulable"
    return f"{m.fate}: {m.message}"


def whatif_text(outcome: WhatIfOutcome, style: Style) -> str:
    problems = verdict(outcome)
    answer = ("Yes: every pod that had to move found a place, and no PodDisruptionBudget is violated."
              if not problems else "No: " + ", ".join(problems) + ".")
    lines = [style.bold("What if: " + "; ".join(_printable(r.event.text) for r in outcome.events)),
             style.good(answer) if not problems else style.bad(answer)]
    for i, r in enumerate(outcome.events, 1):
        lines += ["", style.bold(f"{i}. {_printable(r.event.text)}") + f" ({_printable(', '.join(r.nodes))})"]
        lines += [f"   warning: {_printable(w)}" for w in r.warnings]
        timed = any(m.at for m in r.moves) or r.event.verb == "taint"
        rows = [["POD", "FROM", "TO"] + (["WHEN"] if timed else []) + ["NOTE"]]
        for m in r.moves:
            rows.append([_printable(m.key), m.from_node or "-", m.to_node or "-"] + ([_when(m.at)] if timed else [])
                        + [_printable(_note(m))])
        for s in r.stays:
            rows.append([_printable(s.pod.key), s.node, s.node] + (["never"] if timed else []) + [f"stays: {s.reason}"])
        for b in r.blocked:
            rows.append([_printable(b.pod.key), b.node, b.node] + ([""] if timed else [])
                        + [f"eviction blocked by PDB {b.pdb or '(several)'}: {b.message}"])
        moved_keys = {m.key for m in r.moves}
        for p in r.placed:
            if p.node and p.pod.key not in moved_keys:
                rows.append([_printable(p.pod.key), "(pending)", p.node] + ([""] if timed else [])
                            + ["was pending, now scheduled"])
        if len(rows) == 1:
            lines.append("   no pod moves")
        else:
            lines += ["   " + line.rstrip() for line in _columns(rows)]
    if outcome.pending:
        lines += ["", style.bad(f"Cannot be placed ({len(outcome.pending)}), by cause:")]
        by_message: dict[str, list[str]] = {}
        for p in outcome.pending:
            by_message.setdefault(p.message or "not attempted", []).append(p.pod.key)
        for message, keys in by_message.items():
            lines.append(f"  {_printable(', '.join(keys))}:")
            lines.append(f"    {_printable(message)}")
            for key in keys:
                e = outcome.explained.get(key)
                if e is None:
                    continue
                if e.near_misses:
                    near: dict[str, list[str]] = {}
                    for name, st in e.near_misses:
                        near.setdefault(f"{st.plugin}: {st.message}", []).append(name)
                    lines += [f"    {_printable(key)} is one filter away on {_printable(', '.join(names))} ({_printable(why)})"
                              for why, names in near.items()]
                lines += [f"    {_printable(key)} would fit if: {_printable(s.change)} → schedules on {_printable(s.result)}"
                          for s in e.suggestions]
    if outcome.budgets:
        lines += ["", "PODDISRUPTIONBUDGET  WANTS HEALTHY  HEALTHY BEFORE  AFTER  STATUS"]
        for b in outcome.budgets:
            status = ("VIOLATED" if b.violated else "blocks " + ", ".join(b.blocking) if b.blocking
                      else "ok" if not b.after.violated else "already below")
            line = (f"{_printable(b.after.key).ljust(19)}  {str(b.after.desired_healthy).ljust(13)}  "
                    f"{str(b.before.current_healthy).ljust(14)}  {str(b.after.current_healthy).ljust(5)}  {status}")
            lines.append(style.bad(line) if b.violated else line)
    rows = [["ZONE", "CPU BEFORE → AFTER", "MEMORY BEFORE → AFTER", "PODS BEFORE → AFTER"]]
    for zone in sorted(set(outcome.before["zones"]) | set(outcome.after["zones"])):
        a, b = outcome.before["zones"].get(zone), outcome.after["zones"].get(zone)
        rows.append([_printable(zone or "(none)"), f"{_use(a, 'cpu', _cores)} → {_use(b, 'cpu', _cores)}",
                     f"{_use(a, 'memory', _gib)} → {_use(b, 'memory', _gib)}",
                     f"{_use(a, 'pods', str)} → {_use(b, 'pods', str)}"])
    lines += [""] + [line.rstrip() for line in _columns(rows)]
    return "\n".join(lines)


def _use(row, key, show) -> str:
    if not row:
        return "gone"
    r = row[key]
    if not r["allocatable"]:
        return "-"
    return f"{show(r['requested'])}/{show(r['allocatable'])} {100 * r['requested'] // r['allocatable']}%"

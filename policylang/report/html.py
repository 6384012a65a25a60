"""--report FILE.html: one self-contained page per run of simulate, diff, whatif or capacity,
with Vega-Lite charts (built with altair, which validates every spec against Vega-Lite's
schema) and the Vega/Vega-Lite/vega-embed JavaScript inlined from vl-convert-python's bundle:
no network is needed to open it. The bundle (about 0.9 MB) takes vl-convert a few seconds to
build, so it is kept in ${XDG_CACHE_HOME:-~/.cache}/policylang/ by vl-convert's version.

Charts: utilisation per node and per zone (cpu, memory, pods, GPUs) before and after; where pods
went; the histogram of unschedulable reasons; preemption victims; the score breakdown of the
chosen nodes; for diff, imbalance, fragmentation and the pending count of both sides.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import statistics
from pathlib import Path

RESOURCES = ("cpu", "memory", "pods", "gpu")
MAX_SCORED_PODS = 60        # the score breakdown shows the first pods only: one bar each


# ---- the bundle ------------------------------------------------------------------------------

@functools.cache
def _bundle() -> str:
    import altair
    import vl_convert

    # The Vega-Lite that altair's specs are written for ("v6.4.1" → vl-convert's "v6_4").
    version = "v" + "_".join(altair.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "policylang"
    path = cache / f"vega-embed-{vl_convert.__version__}-{version}.js"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text = vl_convert.javascript_bundle(vl_version=version)
    try:
        from ..write import write_atomic
        cache.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except Exception:   # noqa: BLE001 - a cache that cannot be written only costs time
        pass
    return text


# The characters of markup, written as JSON's escapes wherever a JSON text is inlined in a <script>
# element: the HTML parser sees no "</script" to close the element early, no "<!--" to open an
# escaped section in which a "<script>" would keep the real "</script>" from closing it (the
# page's charts and the rest of its body swallowed), and no "&" (which XHTML, and any parser
# that reads the page as XML, would decode in a script's text). JSON outside
# strings has none of the three, so each is inside a string, where the escape reads back the same.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def _json_in_script(value) -> str:
    """JSON inlined in a <script> element: `<`, `>` and `&` as \\u003c, \\u003e and \\u0026 (and
    every other character past ASCII as its escape too), so no string in it is markup."""
    return json.dumps(value, ensure_ascii=True).translate(_SCRIPT_SAFE)


def _code_in_script(text: str) -> str:
    """JavaScript inlined in a <script> element: only "</script" would close it (the bundle has none;
    a rewrite keeps it so), and rewriting every "</" would change its regular expressions."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE)


# ---- the page --------------------------------------------------------------------------------

class Page:
    """Sections in order: a heading, then a paragraph, a table or a chart (an altair chart)."""

    def __init__(self, title: str):
        self.title = title
        self.parts: list[tuple[str, object]] = []

    def heading(self, text: str) -> None:
        self.parts.append(("h2", text))

    def para(self, text: str, cls: str = "") -> None:
        self.parts.append(("p", (text, cls)))

    def table(self, header: list[str], rows: list[list]) -> None:
        self.parts.append(("table", (header, rows)))

    def chart(self, chart) -> None:
        self.parts.append(("chart", chart.to_dict()))

    def render(self) -> str:
        body, scripts = [], []
        for kind, value in self.parts:
            if kind == "h2":
                body.append(f"<h2>{html.escape(value)}</h2>")
            elif kind == "p":
                text, cls = value
                body.append(f'<p class="{cls}">{html.escape(text)}</p>')
            elif kind == "table":
                header, rows = value
                head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
                cells = "".join("<tr>" + "".join(f"<td>{html.escape('' if c is None else str(c))}</td>" for c in r)
                                + "</tr>" for r in rows)
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")
            else:
                div = f"chart{len(scripts)}"
                body.append(f'<div class="chart" id="{div}"></div>')
                scripts.append(f"vegaEmbed('#{div}', {_json_in_script(value)}, "
                               "{actions: false, renderer: 'svg'}).catch(console.error);")
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(self.title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }}
h1 {{ font-size: 1.5em; }} h2 {{ font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }} .bad {{ color: #b00020; font-weight: bold; }} .good {{ color: #1b7f3b; font-weight: bold; }}
.chart {{ margin: 0.5em 0; }}
</style>
<script>{_code_in_script(_bundle())}</script>
</head>
<body>
<h1>{html.escape(self.title)}</h1>
{chr(10).join(body)}
<script>
{chr(10).join(scripts)}
</script>
</body>
</html>
"""


# ---- charts ----------------------------------------------------------------------------------

def _alt():
    import altair as alt
    return alt


def _percent_rows(usage: dict, level: str, when: str) -> list[dict]:
    rows = []
    for name, row in usage[level].items():
        for resource in RESOURCES:
            r = row[resource]
            if r["allocatable"]:
                rows.append({"name": name or "(none)", "resource": resource, "when": when,
                             "percent": round(100 * r["requested"] / r["allocatable"], 1),
                             "used": r["requested"], "allocatable": r["allocatable"]})
    return rows


MAX_CHART_NODES = 60        # per-node bars beyond this are unreadable: the nodes that changed most


def _most_changed(rows: list[dict], limit: int) -> list[dict]:
    """The rows of the ``limit`` names whose use differs most between the sides (then the busiest)."""
    by_name: dict[str, list[float]] = {}
    for r in rows:
        by_name.setdefault(r["name"], []).append(r["percent"])
    rank = sorted(by_name, key=lambda n: (-(max(by_name[n]) - min(by_name[n])), -max(by_name[n]), n))
    keep = set(rank[:limit])
    return [r for r in rows if r["name"] in keep]


def utilisation_chart(sides: list[tuple[str, dict]], level: str, title: str):
    """Requested / allocatable per node or zone, one panel per resource, a bar per side."""
    alt = _alt()
    rows = [row for when, usage in sides for row in _percent_rows(usage, level, when)]
    if len({r["name"] for r in rows}) > MAX_CHART_NODES:
        rows = _most_changed(rows, MAX_CHART_NODES)
        title = f"{title}: the {MAX_CHART_NODES} that changed most"
    names = {r["name"] for r in rows}
    order = [when for when, _ in sides]
    return (alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("name:N", title=None, sort=None),
        xOffset=alt.XOffset("when:N", sort=order),
        # Up to 100%, or past it where a dump's node is overcommitted.
        y=alt.Y("percent:Q", title="requested / allocatable (%)",
                scale=alt.Scale(domain=[0, max([100] + [r["percent"] for r in rows])])),
        color=alt.Color("when:N", sort=order, title=None),
        tooltip=["name:N", "resource:N", "when:N", "percent:Q", "used:Q", "allocatable:Q"],
    ).properties(width=max(120, (28 if len(names) <= 12 else 12) * len(names)), height=160)
        .facet(facet=alt.Facet("resource:N", title=None, sort=list(RESOURCES)),
               columns=4 if len(names) <= 12 else 1, title=title))


def count_chart(rows: list[dict], y: str, color: str, title: str, y_title: str):
    """Horizontal bars counting rows by ``y``, stacked by ``color``."""
    alt = _alt()
    return alt.Chart(alt.Data(values=rows), title=title).mark_bar().encode(
        y=alt.Y(f"{y}:N", title=y_title, sort="-x", axis=alt.Axis(labelLimit=500)),
        x=alt.X("count():Q", title="pods"),
        color=alt.Color(f"{color}:N", title=color),
        tooltip=[f"{y}:N", f"{color}:N", "count():Q"],
    ).properties(width=520)


def scores_chart(placements) -> "object | None":
    """The weighted score of each plugin on the node each pod was placed on."""
    alt = _alt()
    rows = []
    for p in [p for p in placements if p.node and p.decision is not None][:MAX_SCORED_PODS]:
        chosen = next((n for n in p.decision.nodes if n.name == p.node), None)
        for plugin, s in ((chosen.scores or {}) if chosen else {}).items():
            rows.append({"pod": f"{p.pod.key} → {p.node}", "plugin": plugin, "score": s.weighted})
    if not rows:
        return None
    return alt.Chart(alt.Data(values=rows), title="Score breakdown of the chosen nodes (weighted)").mark_bar().encode(
        y=alt.Y("pod:N", title=None, sort=None, axis=alt.Axis(labelLimit=500)),
        x=alt.X("sum(score):Q", title="weighted score"),
        color=alt.Color("plugin:N"),
        tooltip=["pod:N", "plugin:N", "score:Q"],
    ).properties(width=520)


def reason_rows(placements) -> list[dict]:
    """Every (unschedulable pod, node) pair's rejecting plugin and reason."""
    rows = []
    for p in placements:
        if p.node or p.decision is None:
            continue
        for n in p.decision.nodes:
            if n.failure is not None:
                for reason in n.failure.reasons or ("",):
                    rows.append({"reason": f"{n.failure.plugin or 'PreFilter'}: {reason}", "pod": p.pod.key})
    return rows


def _unschedulable(page: Page, placements) -> None:
    page.heading("Why pods are unschedulable")
    rows = reason_rows(placements)
    if rows:
        page.chart(count_chart(rows, "reason", "pod", "Unschedulable reasons (pod × node)", "reason"))
        page.table(["pod", "message"], [[p.pod.key, p.message] for p in placements if not p.node and p.decision])
    else:
        page.para("Every pod was placed.", "good")


def _victims(page: Page, placements) -> None:
    page.heading("Preemption victims")
    rows = [{"victim": f"{v.namespace}/{v.name}", "preemptor": p.pod.key, "node": p.nominated_node or p.node}
            for p in placements for v in p.victims]
    if rows:
        page.chart(count_chart(rows, "preemptor", "node", "Victims per preempting pod", "preempting pod"))
        page.table(["victim", "preempted by", "on node"], [[r["victim"], r["preemptor"], r["node"]] for r in rows])
    else:
        page.para("No pod was preempted.")


def _utilisation(page: Page, sides) -> None:
    page.heading("Utilisation")
    page.chart(utilisation_chart(sides, "zones", "per zone"))
    page.chart(utilisation_chart(sides, "nodes", "per node"))


def _scores(page: Page, placements) -> None:
    chart = scores_chart(placements)
    if chart is not None:
        page.heading("Score breakdown")
        page.chart(chart)


def _where(page: Page, rows: list[dict], title: str) -> None:
    page.heading("Where pods went")
    if rows:
        page.chart(count_chart(rows, "to", "from", title, "node"))
    else:
        page.para("No pod moved.")


# ---- one page per verb -----------------------------------------------------------------------

def simulate_page(placements, before: dict, after: dict) -> str:
    from .decisions import simulate_summary

    s = simulate_summary(placements)
    page = Page("policylang simulate")
    page.para(f"{s['pods']} pods: {s['scheduled']} scheduled, {s['unschedulable']} unschedulable, "
              f"{s['preempted']} preempted, {s['gated']} gated.", "bad" if s["unschedulable"] else "good")
    _utilisation(page, [("before", before), ("after", after)])
    _where(page, [{"to": p.node or "(unschedulable)", "from": p.pod.metadata.namespace} for p in placements],
           "Pods per node, by namespace")
    _unschedulable(page, placements)
    _victims(page, placements)
    _scores(page, placements)
    return page.render()


def whatif_page(outcome) -> str:
    from .whatif import verdict

    problems = verdict(outcome)
    events = "; ".join(r.event.text for r in outcome.events)
    page = Page(f"policylang whatif: {events}")
    page.para("Yes: every pod that had to move found a place, and no PodDisruptionBudget is violated."
              if not problems else "No: " + ", ".join(problems) + ".", "bad" if problems else "good")
    moves = [m for r in outcome.events for m in r.moves]
    _where(page, [{"to": m.to_node or f"({m.fate})", "from": m.from_node or "(pending)"} for m in moves],
           "Evicted and lost pods, by where they went (colour: where they were)")
    page.table(["event", "pod", "from", "to", "when", "fate", "note"],
               [[r.event.text, m.key, m.from_node, m.to_node, "" if m.at is None else f"t+{m.at}s", m.fate,
                 m.message or (f"recreated by {m.owner}" if m.owner else "")] for r in outcome.events for m in r.moves]
               + [[r.event.text, s.pod.key, s.node, s.node, "never", "stays", s.reason]
                  for r in outcome.events for s in r.stays]
               + [[r.event.text, b.pod.key, b.node, b.node, "", "blocked", b.message]
                  for r in outcome.events for b in r.blocked])
    if outcome.budgets:
        page.heading("PodDisruptionBudgets")
        page.table(["budget", "wants healthy", "healthy before", "healthy after", "violated", "blocking"],
                   [[b.after.key, b.after.desired_healthy, b.before.current_healthy, b.after.current_healthy,
                     "yes" if b.violated else "no", ", ".join(b.blocking)] for b in outcome.budgets])
    placed = [p for r in outcome.events for p in r.placed]
    _utilisation(page, [("before", outcome.before), ("after", outcome.after)])
    _unschedulable(page, list(outcome.pending))
    _victims(page, placed)
    _scores(page, placed)
    return page.render()


def headroom_page(h) -> str:
    page = Page(f"policylang capacity: {', '.join(dict.fromkeys(p.key for p in h.unit))}")
    page.para(f"{h.fits}{'+' if h.capped else ''} more copies fit."
              + (f" The next one: {h.stopped_by.message}" if h.stopped_by else ""), "good" if h.fits else "bad")
    _where(page, [{"to": p.node, "from": p.pod.metadata.namespace} for p in h.placements],
           "Where the copies that fit go")
    _utilisation(page, [("now", h.before), (f"with {h.fits} more", h.after)])
    if h.stopped_by is not None:
        _unschedulable(page, [h.stopped_by])
    _scores(page, h.placements)
    return page.render()


def nodes_needed_page(r) -> str:
    page = Page(f"policylang capacity: nodes like {r.template.name}")
    page.para(f"Add {r.count} node(s) like {r.template.name}." if r.count is not None else
              f"No number of nodes like {r.template.name} (up to {r.tried}) lets every pod schedule.",
              "good" if r.count is not None else "bad")
    _where(page, [{"to": p.node or "(unschedulable)", "from": p.pod.metadata.namespace} for p in r.placements],
           "Where the batch goes")
    _utilisation(page, [("now", r.before), ("with the nodes added", r.after)])
    _unschedulable(page, list(r.placements))
    _scores(page, r.placements)
    return page.render()


# ---- diff: the metrics people compare configurations by ----------------------------------------

def imbalance(usage: dict, resource: str) -> float:
    """The spread of utilisation: the population standard deviation of requested / allocatable
    (%) over the nodes that have the resource."""
    shares = [100 * r[resource]["requested"] / r[resource]["allocatable"]
              for r in usage["nodes"].values() if r[resource]["allocatable"]]
    return round(statistics.pstdev(shares), 2) if len(shares) > 1 else 0.0


def largest_free(usage: dict, resource: str) -> int:
    """Fragmentation: the largest request of one resource that still fits on some node."""
    return max((max(r[resource]["allocatable"] - r[resource]["requested"], 0) for r in usage["nodes"].values()),
               default=0)


def diff_metrics(placements, usage: dict) -> dict:
    return {
        "imbalance_cpu_pct": imbalance(usage, "cpu"),
        "imbalance_memory_pct": imbalance(usage, "memory"),
        "largest_free_cpu_cores": largest_free(usage, "cpu") / 1000,
        "largest_free_memory_gib": round(largest_free(usage, "memory") / 2**30, 2),
        "pending": sum(1 for p in placements if not p.node),
    }


METRIC_TITLES = {
    "imbalance_cpu_pct": "imbalance: std dev of node cpu use (%)",
    "imbalance_memory_pct": "imbalance: std dev of node memory use (%)",
    "largest_free_cpu_cores": "fragmentation: largest cpu request that fits (cores)",
    "largest_free_memory_gib": "fragmentation: largest memory request that fits (GiB)",
    "pending": "pending pods",
}


def diff_page(name_a: str, name_b: str, a, b, usage_a: dict, usage_b: dict, found) -> str:
    alt = _alt()
    page = Page(f"policylang diff: {name_a} vs {name_b}")
    page.para(f"A = {name_a}; B = {name_b}. {len(found)} pod(s) placed differently.")
    metrics = {"A": diff_metrics(a, usage_a), "B": diff_metrics(b, usage_b)}
    page.heading("Imbalance, fragmentation, pending")
    rows = [{"metric": METRIC_TITLES[k], "side": side, "value": v} for side, m in metrics.items() for k, v in m.items()]
    page.chart(alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("side:N", title=None), y=alt.Y("value:Q", title=None), color=alt.Color("side:N", title=None),
        tooltip=["metric:N", "side:N", "value:Q"],
    ).properties(width=90, height=140).facet(facet=alt.Facet("metric:N", title=None, sort=list(METRIC_TITLES.values())),
                                             columns=5).resolve_scale(y="independent"))
    page.table(["metric", "A", "B"], [[METRIC_TITLES[k], metrics["A"][k], metrics["B"][k]] for k in METRIC_TITLES])
    page.heading("Pods placed differently")
    if found:
        page.table(["pod", "A", "B"], [[c.pod, c.a.node or "unschedulable", c.b.node or "unschedulable"]
                                       for c in found])
    else:
        page.para("No pod is placed differently.")
    _utilisation(page, [("A", usage_a), ("B", usage_b)])
    _where(page, [{"to": p.node or "(unschedulable)", "from": side} for side, ps in (("A", a), ("B", b)) for p in ps],
           "Pods per node under A and B")
    _unschedulable(page, [p for p in b if not p.node] + [p for p in a if not p.node])
    _victims(page, list(a) + list(b))
    return page.render()

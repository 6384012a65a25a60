"""--report FILE.html: one self-contained page per verb (no resource loaded from anywhere), its
sections and metrics, and the page opened in headless Chromium: every chart drawn, a screenshot
taken, no console message. Without Chromium that test skips with a one-line reason (CI sets
POLICYLANG_REQUIRE_CHROMIUM=1 and installs Debian's chromium). `pytest --update-golden` also
copies the screenshot to docs/report-whatif.png, which the README shows."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from policylang.cli import main
from policylang.report.html import Page, imbalance, largest_free

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = ROOT / "docs" / "report-whatif.png"

VERBS = {
    "simulate": ["simulate", "--cluster", "examples/cluster.yaml", "--pods", "examples/pods/"],
    "diff": ["diff", "--policy", "default-scheduler", "--policy", "examples/policies/team.sched",
             "--cluster", "examples/cluster.yaml", "--pods", "examples/pods/"],
    "whatif": ["whatif", "--cluster", "examples/zones.yaml", "--event", "remove zone=eu-west-1a"],
    "capacity": ["capacity", "--cluster", "examples/zones.yaml", "--pod", "examples/pods/web.yaml"],
}
SECTIONS = {
    "simulate": ["Utilisation", "Where pods went", "Why pods are unschedulable", "Preemption victims",
                 "Score breakdown"],
    "diff": ["Imbalance, fragmentation, pending", "Pods placed differently", "Utilisation", "Where pods went"],
    "whatif": ["Where pods went", "PodDisruptionBudgets", "Utilisation", "Why pods are unschedulable"],
    "capacity": ["Where pods went", "Utilisation", "Why pods are unschedulable", "Score breakdown"],
}


def _report(tmp_path, capsys, verb) -> str:
    out = tmp_path / f"{verb}.html"
    code = main([*VERBS[verb], "--report", str(out)])
    capsys.readouterr()
    assert code in (0, 1)
    return out.read_text()


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("verb", list(VERBS))
def test_report_is_one_self_contained_page(tmp_path, capsys, at_root, verb):
    page = _report(tmp_path, capsys, verb)
    # Nothing is fetched: no element loads a resource, and the charts' code is inline.
    assert re.findall(r"<script\b[^>]*>", page) == ["<script>", "<script>"]
    markup = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert not re.search(r"<(link|img|iframe|object|embed|source)\b|\b(src|href)=|@import|url\(", markup, re.I)
    assert "vegaEmbed(" in page
    for heading in SECTIONS[verb]:
        assert f"<h2>{heading}</h2>" in page, heading


def test_names_in_the_page_are_escaped():
    """Pod and node names are the cluster's: in text, tables and chart data none can end a
    script element or add one."""
    import altair as alt

    page = Page("</script><script>alert(1)</script>")
    page.table(["pod"], [["<img src=x onerror=alert(1)>"]])
    page.chart(alt.Chart(alt.Data(values=[{"x": "</script><script>alert(2)</script>"}])).mark_bar().encode(x="x:N"))
    out = page.render()
    assert "<img src=x" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "<h1>&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;</h1>" in out
    assert out.lower().count("</script") == 2          # the bundle's and the charts' own; none in the data


def test_diff_metrics():
    usage = {"nodes": {
        "a": {"cpu": {"requested": 1000, "allocatable": 4000}, "memory": {"requested": 0, "allocatable": 2**30}},
        "b": {"cpu": {"requested": 3000, "allocatable": 4000}, "memory": {"requested": 2**29, "allocatable": 2**30}},
    }}
    assert imbalance(usage, "cpu") == 25.0          # 25% and 75%: a standard deviation of 25
    assert largest_free(usage, "cpu") == 3000       # the largest cpu request that fits: node a's 3 cores
    assert largest_free(usage, "memory") == 2**30


# ---- headless Chromium ----------------------------------------------------------------------

def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    reason = "chromium is not installed (apt-get install chromium): the report is not opened in a browser"
    if os.environ.get("POLICYLANG_REQUIRE_CHROMIUM"):
        pytest.fail(f"POLICYLANG_REQUIRE_CHROMIUM is set, but {reason}")
    pytest.skip(reason)


def _headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000", *args],
        capture_output=True, text=True, timeout=180)


def _console(stderr: str) -> list[str]:
    """The page's console messages, as Chromium logs them (":CONSOLE"): the page writes none
    unless something failed (a script error, a chart that could not be drawn)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_report_opens_in_headless_chromium(tmp_path, capsys, at_root, request):
    browser = _chromium()
    page = tmp_path / "whatif.html"
    page.write_text(_report(tmp_path, capsys, "whatif"))
    charts = page.read_text().count('class="chart"')
    dom = _headless(browser, tmp_path / "profile-dom", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console(dom.stderr) == []
    # Every chart was drawn: vega-embed puts an <svg> in each chart's element.
    assert charts >= 5 and dom.stdout.count('class="marks"') >= charts
    shot = tmp_path / "whatif.png"
    run = _headless(browser, tmp_path / "profile-shot", "--window-size=1280,2300", f"--screenshot={shot}",
                    page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert _console(run.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, 2300)
    assert len(data) > 50_000, "the screenshot is almost empty"
    if request.config.getoption("--update-golden"):
        SCREENSHOT.write_bytes(data)


# ---- names that look like markup, in every field a report shows (issue 46) -------------------------

# `<!--<script>` in a script's text opens an escaped section in which `<script>` keeps the real
# `</script>` from closing the element: the rest of the page became script and no chart drew.
EVIL = ("<!--<script>", "</script><script>alert(1)</script>", "&amp;")
A, B, C = EVIL
json_str = json.dumps       # a YAML string: JSON's is one

HOSTILE_CLUSTER = f"""\
apiVersion: v1
kind: Node
metadata: {{name: {json_str(A)}, labels: {{topology.kubernetes.io/zone: z1}}}}
status: {{allocatable: {{cpu: "2", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: {json_str(B)}, labels: {{topology.kubernetes.io/zone: z2, evil: "yes"}}}}
status: {{allocatable: {{cpu: "2", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: {json_str(C)}, labels: {{topology.kubernetes.io/zone: z1}}}}
status: {{allocatable: {{cpu: "1", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {json_str(B)}, namespace: {json_str(A)}}}
spec: {{nodeName: {json_str(A)}, priority: 0, containers: [{{name: c, resources: {{requests: {{cpu: 1500m}}}}}}]}}
status: {{phase: Running}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {json_str(C)}, namespace: {json_str(A)}}}
spec: {{minAvailable: 1, selector: {{matchLabels: {{}}}}}}
"""

HOSTILE_PODS = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {json_str(A)}, namespace: {json_str(C)}}}
spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 300m}}}}}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {json_str(C)}, namespace: {json_str(B)}}}
spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 1900m}}}}}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: big, namespace: {json_str(C)}}}
spec: {{priority: 1000, containers: [{{name: c, resources: {{requests: {{cpu: 1800m}}}}}}]}}
"""

# A policy whose reason (every message that names it) is markup too.
HOSTILE_POLICY = f"""\
policy Hostile

filter no_evil {{
    reject when node.metadata.labels["evil"] != null
        reason {json_str(" ".join(EVIL))}
}}

profile hostile {{
    use NodeUnschedulable
    use NodeResourcesFit weight 1
    use Hostile
    use DefaultPreemption
}}
"""


def _hostile_argv(tmp_path, verb: str) -> list[str]:
    (tmp_path / "cluster.yaml").write_text(HOSTILE_CLUSTER)
    (tmp_path / "pods.yaml").write_text(HOSTILE_PODS)
    (tmp_path / "unit.yaml").write_text(HOSTILE_PODS.split("---\n")[0])
    (tmp_path / "hostile.sched").write_text(HOSTILE_POLICY)
    cluster, pods, policy = (str(tmp_path / n) for n in ("cluster.yaml", "pods.yaml", "hostile.sched"))
    return {
        "simulate": ["simulate", "--cluster", cluster, "--pods", pods, "--profile", policy],
        "capacity": ["capacity", "--cluster", cluster, "--pod", str(tmp_path / "unit.yaml"), "--profile", policy],
        "whatif": ["whatif", "--cluster", cluster, "--event", f"drain {A}", "--profile", policy],
        "diff": ["diff", "--policy", "default-scheduler", "--policy", policy, "--cluster", cluster, "--pods", pods],
    }[verb]


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# Where each verb's page shows the names: chart data (pod keys ns/name, node names, namespaces,
# reasons) and the page's text (its title, paragraphs and tables).
SHOWN = {
    "simulate": {"json": [A, B, C, f"{B}/{C}", f"{A}/{B}", f"Hostile: {' '.join(EVIL)}"],
                 "text": [f"{B}/{C}", f"{A}/{B}", A]},
    "capacity": {"json": [A, C, f"Hostile: {' '.join(EVIL)}"], "text": [f"{C}/{A}", " ".join(EVIL)]},
    "whatif": {"json": [A, B, C], "text": [f"drain {A}", f"{A}/{B}", f"{A}/{C}"]},
    "diff": {"json": [A, B, C, f"Hostile: {' '.join(EVIL)}"], "text": [f"{A}/{B}", f"{B}/{C}", " ".join(EVIL)]},
}


@pytest.mark.parametrize("verb", list(SHOWN))
def test_markup_in_names_and_messages_leaves_the_page_whole(tmp_path, capsys, verb):
    import html5lib

    from policylang.report.html import _bundle, _code_in_script

    out = tmp_path / f"{verb}.html"
    code = main([*_hostile_argv(tmp_path, verb), "--report", str(out)])
    assert code in (0, 1), capsys.readouterr().err
    page = out.read_text()
    for raw in ("<", ">", "&"):   # none of the three is left in any chart's JSON
        assert raw not in page[page.rindex("<script>") + len("<script>"):page.rindex("</script>")]
    # Parsed as a browser parses it (html5lib: the WHATWG tokenizer and tree builder).
    doc = html5lib.parse(page, namespaceHTMLElements=False)
    scripts = doc.findall(".//script")
    assert len(scripts) == 2, [s.text[:80] for s in scripts]
    head, body = doc.find("head"), doc.find("body")
    # The bundle, whole, in <head>; the charts' script, whole, last in <body>.
    assert list(head.iter("script")) == [scripts[0]] and scripts[0].text == _code_in_script(_bundle())
    assert list(body)[-1] is scripts[1]
    assert {c.tag for c in body} <= {"h1", "h2", "p", "table", "div", "script"}
    divs = [d.get("id") for d in body.findall("div") if d.get("class") == "chart"]
    text, specs, pos = scripts[1].text.strip(), [], 0
    decoder = json.JSONDecoder()
    for div in divs:
        call = f"vegaEmbed('#{div}', "
        assert text.startswith(call, pos), text[pos:pos + 80]
        spec, pos = decoder.raw_decode(text, pos + len(call))
        tail = ", {actions: false, renderer: 'svg'}).catch(console.error);"
        assert text.startswith(tail, pos)
        pos = len(text) - len(text[pos + len(tail):].lstrip())
        specs.append(spec)
    assert pos == len(text) and len(specs) >= 3
    # The names, verbatim, in the charts' data and in the page's text.
    strings = "\n".join(s for spec in specs for s in _strings(spec))
    for name in SHOWN[verb]["json"]:
        assert name in strings, (name, strings)
    shown = "\n".join("".join(e.itertext()) for e in body if e.tag != "script")
    for name in SHOWN[verb]["text"]:
        assert name in shown, (name, shown)
    title = doc.find("head/title").text
    assert doc.find("body/h1").text == title

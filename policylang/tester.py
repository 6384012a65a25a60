"""policylang test: policy unit tests written in YAML beside the policies, like `opa test`.

A test file (``*_test.yaml``)::

    profile: ./team.sched            # a .sched with a profile, a stdlib profile name, or omitted
    cluster: ../cluster.yaml         # file(s) or directory, or inline {items: [...]}
    tests:
      - name: web pods stay off GPU nodes
        pod: ../pods/web.yaml        # a file, or the Pod inline
        expect:
          selected: worker-c1        # or null for unschedulable
          feasible: [worker-a1, worker-b1, worker-c1]
          rejected: {gpu-a1: {plugin: GpuIsolation, reason: "node(s) are reserved for GPU workloads"}}
          scores: {worker-c1: {NodeResourcesFit: {min: 50, max: 100}}}
          message: "0/7 nodes are available: ..."
          message_contains: "Insufficient cpu"

Paths are relative to the test file.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from .profiles import load_plans
from .cluster.load import load_cluster, load_objects, structure_object
from .cluster.state import ClusterState
from .decision import Decision
from .diagnostics import InputError
from .frozen import frozen
from .inputs import read_text, yaml_document
from .program import confined, policy_roots
from .run.schedule import Executable, schedule

EXPECT_KEYS = {"selected", "feasible", "rejected", "scores", "message", "message_contains"}


@frozen
class CaseOutcome:
    file: str
    name: str
    failures: tuple = ()       # of (what, expected, actual)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures


@attrs.define
class Coverage:
    """Which reject statements fired and which score plugins ran, across all tests."""
    rejects: dict = attrs.Factory(dict)        # origin span → ever fired
    scores: dict = attrs.Factory(dict)         # plugin → ever scored a node

    def add_plan(self, exe: Executable) -> None:
        from . import plan as P
        for plugin in exe.plan.plugins:
            for f in plugin.filters:
                for step in f.pod_steps + f.node_steps:
                    if isinstance(step, P.RejectStep):
                        self.rejects.setdefault(step.origin, False)
            if plugin.score is not None:
                self.scores.setdefault(plugin.name, False)

    def add_decision(self, d: Decision) -> None:
        for n in d.nodes:
            if n.failure is not None and n.failure.origin is not None:
                self.rejects[n.failure.origin] = True
            for plugin in (n.scores or {}):
                self.scores[plugin] = True


def discover(paths: list[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(p.rglob("*_test.yaml")) + sorted(p.rglob("*_test.yml"))
        elif p.exists():
            out.append(p)
        else:
            raise InputError("no such file or directory", path=str(p))
    return out


def run_file(path: Path, coverage: Coverage | None = None, target=None) -> list[CaseOutcome]:
    """The file's tests, decided as ``target`` (--kubernetes-version, --feature-gates), or as the
    file's own ``kubernetes: {version, featureGates}`` when it names one."""
    from .cluster.validation.core import admitted_as

    doc = _load_yaml(path)
    _validate(doc, str(path))
    target = _target(doc.get("kubernetes"), str(path)) or target
    base = path.parent
    profile = doc.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise InputError(f"expected a .sched file or a stdlib profile name, got {profile!r}", path=str(path),
                         field="profile")
    if isinstance(profile, str) and (profile.endswith(".sched") or "/" in profile):
        if not confined(base / profile, policy_roots(base)):
            raise InputError(f"{profile!r} is outside the test file's directory and the stdlib "
                             f"(allow another directory with --allow-root)", path=str(path), field="profile")
        profile = str((base / profile).resolve())
    plans = load_plans(profile, base=base, target=target)
    exe = Executable(next(iter(plans.values())))
    if coverage is not None:
        coverage.add_plan(exe)
    with admitted_as(target):
        return _run_tests(doc, exe, base, path, coverage)


def _run_tests(doc: dict, exe, base: Path, path: Path, coverage) -> list[CaseOutcome]:
    import time

    state = _cluster(doc.get("cluster"), base, path)
    outcomes = []
    for i, case in enumerate(doc.get("tests") or []):
        where = f"tests[{i}]"
        if not isinstance(case, dict) or "pod" not in case or "expect" not in case:
            raise InputError("each test needs a pod and an expect", path=str(path), field=where)
        unknown = set(case["expect"]) - EXPECT_KEYS
        if unknown:
            raise InputError(f"unknown expectation(s) {sorted(unknown)}; known: {sorted(EXPECT_KEYS)}",
                             path=str(path), field=f"{where}.expect")
        started = time.perf_counter()
        pod = _pod(case["pod"], base, path, where)
        decision = schedule(exe, state, pod)
        if coverage is not None:
            coverage.add_decision(decision)
        outcomes.append(CaseOutcome(str(path), case.get("name", where), tuple(_compare(case["expect"], decision)),
                                time.perf_counter() - started))
    return outcomes


def _target(spec, path: str):
    """A test file's ``kubernetes:`` (target.py), or None."""
    from .target import make_target

    if spec is None:
        return None
    if not isinstance(spec, dict) or set(spec) - {"version", "featureGates"}:
        raise InputError("expected {version: \"1.34\"|\"1.35\", featureGates: {NAME: true|false}}", path=path,
                         field="kubernetes")
    gates = spec.get("featureGates") or {}
    if not isinstance(gates, dict) or not all(isinstance(k, str) and isinstance(v, bool) for k, v in gates.items()):
        raise InputError("expected a mapping of gate names to true or false", path=path, field="kubernetes.featureGates")
    version = spec.get("version")
    if version is not None and not isinstance(version, str):
        raise InputError(f"expected a version as a string (\"1.34\"), got {version!r}", path=path,
                         field="kubernetes.version")
    try:
        return make_target(version, ",".join(f"{k}={str(v).lower()}" for k, v in gates.items()))
    except InputError as err:
        raise InputError(err.message, path=path, field="kubernetes") from None


def _validate(doc: dict, path: str) -> None:
    """The shape of a test file, checked before anything runs, so a malformed one is an input
    error naming the field rather than a crash half-way."""
    def need(ok: bool, field: str, what: str, value) -> None:
        if not ok:
            raise InputError(f"expected {what}, got {type(value).__name__}", path=path, field=field)

    def strings(value) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    cluster = doc.get("cluster")
    if cluster is not None:
        need(isinstance(cluster, str) or strings(cluster)
             or (isinstance(cluster, dict) and isinstance(cluster.get("items") or [], list)
                 and all(isinstance(o, dict) for o in cluster.get("items") or [])),
             "cluster", "a path, a list of paths, or {items: [objects]}", cluster)
    tests = doc.get("tests") or []
    need(isinstance(tests, list), "tests", "a list of tests", tests)
    for i, case in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(case, dict):
            continue  # reported with the test, below
        if "name" in case:
            need(isinstance(case["name"], str), f"{where}.name", "a string", case["name"])
        if "pod" in case:
            need(isinstance(case["pod"], (str, dict)), f"{where}.pod", "a path or a Pod", case["pod"])
        expect = case.get("expect")
        if expect is None:
            continue
        need(isinstance(expect, dict), f"{where}.expect", "a mapping of expectations", expect)
        at = f"{where}.expect"
        if "selected" in expect:
            need(expect["selected"] is None or isinstance(expect["selected"], str), f"{at}.selected",
                 "a node name or null", expect["selected"])
        if "feasible" in expect:
            need(strings(expect["feasible"]), f"{at}.feasible", "a list of node names", expect["feasible"])
        for key in ("message", "message_contains"):
            if key in expect:
                need(isinstance(expect[key], str) or (key == "message" and expect[key] is None), f"{at}.{key}",
                     "a string", expect[key])
        rejected = expect.get("rejected") or {}
        need(isinstance(rejected, dict), f"{at}.rejected", "a mapping of node → {plugin, reason}", rejected)
        for node, want in rejected.items():
            need(isinstance(want, dict) and set(want) <= {"plugin", "reason"}
                 and all(isinstance(v, str) for v in want.values()),
                 f"{at}.rejected[{node}]", "{plugin: NAME, reason: TEXT}", want)
        scores = expect.get("scores") or {}
        need(isinstance(scores, dict), f"{at}.scores", "a mapping of node → plugin → {min, max}", scores)
        for node, plugins in scores.items():
            need(isinstance(plugins, dict), f"{at}.scores[{node}]", "a mapping of plugin → {min, max}", plugins)
            for plugin, bounds in plugins.items():
                need(isinstance(bounds, dict) and set(bounds) <= {"min", "max"}
                     and all(isinstance(v, int) and not isinstance(v, bool) for v in bounds.values()),
                     f"{at}.scores[{node}][{plugin}]", "{min: N, max: N}", bounds)


def _load_yaml(path: Path) -> dict:
    doc = yaml_document(read_text(path), str(path))
    if not isinstance(doc, dict):
        raise InputError("expected a mapping with `tests`", path=str(path))
    return doc


def _cluster(spec, base: Path, path: Path) -> ClusterState:
    if spec is None:
        raise InputError("a test file needs a `cluster`", path=str(path), field="cluster")
    if isinstance(spec, dict):
        return ClusterState.build([structure_object(o, str(path), i) for i, o in enumerate(spec.get("items") or [])])
    paths = spec if isinstance(spec, list) else [spec]
    return load_cluster([base / p for p in paths])


def _pod(spec, base: Path, path: Path, where: str):
    if isinstance(spec, str):
        pods = load_objects(base / spec, kinds=["Pod"])
        if len(pods) != 1:
            raise InputError(f"expected one Pod in {spec}, found {len(pods)}", path=str(path), field=f"{where}.pod")
        return pods[0]
    return structure_object({"kind": "Pod", **spec}, str(path))


def _compare(expect: dict, d: Decision):
    if "selected" in expect and expect["selected"] != d.selected:
        yield ("selected", expect["selected"], d.selected)
    if "feasible" in expect and sorted(expect["feasible"]) != sorted(d.feasible):
        yield ("feasible", sorted(expect["feasible"]), sorted(d.feasible))
    nodes = {n.name: n for n in d.nodes}
    for name, want in (expect.get("rejected") or {}).items():
        n = nodes.get(name)
        got = None if n is None or n.failure is None else {"plugin": n.failure.plugin,
                                                            "reason": n.failure.message}
        if got is None or any(got[k] != v for k, v in want.items()):
            yield (f"rejected[{name}]", want, got)
    for name, plugins in (expect.get("scores") or {}).items():
        n = nodes.get(name)
        for plugin, bounds in plugins.items():
            got = (n.scores or {}).get(plugin) if n is not None else None
            value = got.normalized if got is not None else None
            lo, hi = bounds.get("min", 0), bounds.get("max", 100)
            if value is None or not lo <= value <= hi:
                yield (f"scores[{name}][{plugin}]", f"{lo}..{hi}", value)
    if "message" in expect and expect["message"] != d.message:
        yield ("message", expect["message"], d.message)
    if "message_contains" in expect and expect["message_contains"] not in (d.message or ""):
        yield ("message_contains", expect["message_contains"], d.message)


def junit(outcomes: list[CaseOutcome]) -> str:
    from xml.sax.saxutils import escape as _escape, quoteattr as _quoteattr

    def escape(text: str) -> str:
        return _escape(_xml_chars(text))

    def quoteattr(text: str) -> str:
        return _quoteattr(_xml_chars(text))

    failures = sum(1 for o in outcomes if not o.passed)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuite name="policylang" tests="{len(outcomes)}" failures="{failures}">']
    for o in outcomes:
        lines.append(f'  <testcase classname={quoteattr(o.file)} name={quoteattr(o.name)} time="{o.seconds:.4f}">')
        if not o.passed:
            text = "\n".join(f"{what}: expected {exp!r}, got {got!r}" for what, exp, got in o.failures)
            lines.append(f'    <failure message={quoteattr(o.failures[0][0])}>{escape(text)}</failure>')
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines)


def _xml_chars(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold (most controls, lone surrogates,
    U+FFFE/U+FFFF) written as Python escapes."""
    def allowed(c: str) -> bool:
        o = ord(c)
        return (o in (0x9, 0xA, 0xD) or 0x20 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF)
    return "".join(c if allowed(c) else ascii(c)[1:-1] for c in str(text))

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

Paths are relative to the test file. ``kubernetes: {version: "1.34", featureGates: {NAME: true}}``
decides the file's tests as that target. An inline Pod needs no ``kind`` (it is one, or an
error); an inline cluster's objects each name theirs, a kind a cluster file may hold.

The file is checked against this format (``check``) before anything runs: an unknown field (with
the close spelling), a test without its pod or expect, a value of the wrong type. Then every
object it writes inline is built as the API server would build it. Every problem found is reported
at once, each at its line and column in the test file (or, for a bad field of a file it names, in
that file), and the command exits 2.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import attrs

from .profiles import load_plans
from .cluster.load import KINDS, cluster_object, load_cluster, load_objects, structure_object
from .cluster.locate import node_at
from .cluster.state import ClusterState
from .run.decision import Decision
from .diagnostics import InputError, InputErrors
from .frozen import frozen
from .inputs import read_text
from .program import confined, policy_roots
from .run.schedule import Executable, schedule
from .yaml_source import YamlNode, document

EXPECT_KEYS = {"selected", "feasible", "rejected", "scores", "message", "message_contains"}
TOP_KEYS = ("profile", "cluster", "tests", "kubernetes")
CASE_KEYS = ("name", "pod", "expect")


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
    file's own ``kubernetes: {version, featureGates}`` when it names one. The file is checked
    against the format (``check``) before anything is read or run: every problem is reported at
    once, each with its line and column."""
    from .cluster.validation.core import admitted_as

    doc = read_test_file(path)
    target = _target(doc.get("kubernetes"), str(path)) or target
    base = path.parent
    profile = _profile(doc.get("profile"), base, str(path))
    try:
        plans = load_plans(profile, base=base, target=target)
    except InputError as err:
        raise _referring(err, doc.get("profile") or doc, "profile") from None
    exe = Executable(next(iter(plans.values())))
    if coverage is not None:
        coverage.add_plan(exe)
    with admitted_as(target):
        state, pods = _inputs(doc, base, str(path))
        return _run_tests(doc, exe, state, pods, path, coverage)


def read_test_file(path: Path) -> YamlNode:
    """The test file, checked against the format: an InputErrors with every problem otherwise."""
    name = str(path)
    doc = document(name, read_text(path))
    if doc is None or not doc.is_map:
        got = "an empty file" if doc is None else _type_of(doc)
        line, column = (1, 1) if doc is None else (doc.value_span.line, doc.value_span.column)
        raise InputError(f"expected a mapping with `cluster` and `tests`, got {got}", path=name, line=line,
                         column=column)
    problems = check(doc)
    if problems:
        raise InputErrors(problems)
    return doc


# ---- the format ------------------------------------------------------------------------------

def _type_of(node: YamlNode) -> str:
    """A YAML value as an error names it: its type, and a scalar's value."""
    from .api.errors import go_value
    if node.is_map:
        return "a mapping"
    if node.is_seq:
        return "a list"
    value = node.scalar
    if value is None:
        return "null"
    kind = {bool: "boolean", int: "number", float: "number", str: "string"}.get(type(value), type(value).__name__)
    text = go_value(value) if isinstance(value, (bool, int, float, str)) else str(value)
    return f"{kind} {text if len(text) <= 40 else text[:40] + '…'}"


def _is_null(node: YamlNode) -> bool:
    return node.node.tag == "tag:yaml.org,2002:null"


def _is_str(node: YamlNode) -> bool:
    return not node.is_map and not node.is_seq and isinstance(node.scalar, str)


def _is_int(node: YamlNode) -> bool:
    value = node.scalar if not node.is_map and not node.is_seq else None
    return isinstance(value, int) and not isinstance(value, bool)


class _Problems(list):
    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def at(self, node: YamlNode, field: str | None, message: str, key: bool = False) -> None:
        span = node.span if key else node.value_span
        self.append(InputError(message, path=self.path, field=field, line=span.line, column=span.column))

    def expect(self, ok: bool, node: YamlNode, field: str, what: str) -> bool:
        if not ok:
            self.at(node, field, f"expected {what}, got {_type_of(node)}")
        return ok

    def keys(self, node: YamlNode, field: str | None, known=None, what: str = "") -> None:
        """Keys that are not strings (`1:`, `null:`); with ``known``, unknown keys too, each with
        the closest known one when there is one."""
        for k, v in node.node.value:
            key = YamlNode(k, node.path)
            if not _is_str(key):
                self.at(key, field, f"expected a name as the key, got {_type_of(key)}")
            elif known is not None and k.value not in known:
                close = difflib.get_close_matches(k.value, list(known), n=1, cutoff=0.6)
                hint = f' (did you mean "{close[0]}"?)' if close else f"; {what} has {', '.join(known)}"
                self.at(YamlNode(v, node.path, k), _join(field, k.value), f'unknown field "{k.value}"{hint}',
                        key=True)


def _join(field: str | None, key: str) -> str:
    return f"{field}.{key}" if field else key


def check(doc: YamlNode) -> list[InputError]:
    """Every problem of a test file's shape (the README's "policylang test"), in file order:
    unknown fields, missing ones, values of the wrong type."""
    p = _Problems(doc.path)
    p.keys(doc, None, TOP_KEYS, "a test file")
    profile = doc.get("profile")
    if profile is not None and not _is_null(profile):
        p.expect(_is_str(profile), profile, "profile", "a .sched file or a stdlib profile name")
    cluster = doc.get("cluster")
    if cluster is None or _is_null(cluster):
        p.at(doc if cluster is None else cluster, "cluster", "a test file needs a `cluster`: a path, a list of "
             "paths, or {items: [objects]}", key=cluster is not None)
    else:
        _check_cluster(p, cluster)
    kubernetes = doc.get("kubernetes")
    if kubernetes is not None and not _is_null(kubernetes):
        _check_kubernetes(p, kubernetes)
    tests = doc.get("tests")
    if tests is not None and not _is_null(tests) and p.expect(tests.is_seq, tests, "tests", "a list of tests"):
        for i, case in enumerate(tests):
            _check_case(p, case, f"tests[{i}]")
    return sorted(p, key=lambda e: (e.line or 0, e.column or 0))


def _check_cluster(p: _Problems, cluster: YamlNode) -> None:
    what = "a path, a list of paths, or {items: [objects]}"
    if cluster.is_seq:
        for i, entry in enumerate(cluster):
            p.expect(_is_str(entry) and entry.scalar != "", entry, f"cluster[{i}]", "a path")
    elif cluster.is_map:
        p.keys(cluster, "cluster", ("items",), "an inline cluster")
        items = cluster.get("items")
        if items is None or _is_null(items) or not p.expect(items.is_seq, items, "cluster.items",
                                                             "a list of objects"):
            return
        for i, item in enumerate(items):
            field = f"cluster.items[{i}]"
            if not p.expect(item.is_map, item, field, "an object (a mapping with a kind)"):
                continue
            kind = item.get("kind")
            if kind is None or _is_null(kind):
                p.at(item, f"{field}.kind", f"an object needs a kind: one of {', '.join(sorted(KINDS))}")
            elif kind.scalar not in KINDS or not _is_str(kind):
                p.at(kind, f"{field}.kind", f"expected a kind a cluster holds ({', '.join(sorted(KINDS))}), "
                     f"got {_type_of(kind)}")
    else:
        p.expect(_is_str(cluster) and cluster.scalar != "", cluster, "cluster", what)


def _check_kubernetes(p: _Problems, spec: YamlNode) -> None:
    from .target import VERSIONS
    versions = "|".join(f'"{v}"' for v in VERSIONS)
    if not p.expect(spec.is_map, spec, "kubernetes", f"a mapping {{version: {versions}, featureGates: {{NAME: "
                                                      "true|false}}"):
        return
    p.keys(spec, "kubernetes", ("version", "featureGates"), "kubernetes")
    version = spec.get("version")
    if version is not None and not _is_null(version):
        p.expect(_is_str(version), version, "kubernetes.version", 'a version as a string ("1.34")')
    gates = spec.get("featureGates")
    if gates is not None and not _is_null(gates) and p.expect(
            gates.is_map, gates, "kubernetes.featureGates", "a mapping of gate names to true or false"):
        p.keys(gates, "kubernetes.featureGates")
        for name, value in gates.items():
            p.expect(isinstance(value.scalar, bool), value, f"kubernetes.featureGates.{name}", "true or false")


def _check_case(p: _Problems, case: YamlNode, where: str) -> None:
    if not p.expect(case.is_map, case, where, "a test: a mapping with a name, a pod and an expect"):
        return
    p.keys(case, where, CASE_KEYS, "a test")
    name = case.get("name")
    if name is not None:
        p.expect(_is_str(name), name, f"{where}.name", "a string")
    pod = case.get("pod")
    if pod is None:
        p.at(case, f"{where}.pod", "a test needs a pod: a file, or the Pod inline")
    elif pod.is_map:
        kind = pod.get("kind")
        if kind is not None and not _is_null(kind) and kind.scalar != "Pod":
            p.at(kind, f"{where}.pod.kind", f"expected kind Pod (a test places one Pod), got {_type_of(kind)}")
        version = pod.get("apiVersion")
        if version is not None and not _is_null(version) and version.scalar != "v1":
            p.at(version, f"{where}.pod.apiVersion", f"expected apiVersion v1, got {_type_of(version)}")
    else:
        p.expect(_is_str(pod) and pod.scalar != "", pod, f"{where}.pod", "a path or a Pod")
    expect = case.get("expect")
    if expect is None:
        p.at(case, f"{where}.expect", f"a test needs an expect: a mapping of {', '.join(sorted(EXPECT_KEYS))}")
    elif p.expect(expect.is_map, expect, f"{where}.expect",
                  f"a mapping of expectations ({', '.join(sorted(EXPECT_KEYS))})"):
        _check_expect(p, expect, f"{where}.expect")


def _check_expect(p: _Problems, expect: YamlNode, at: str) -> None:
    p.keys(expect, at, sorted(EXPECT_KEYS), "expect")
    selected = expect.get("selected")
    if selected is not None:
        p.expect(_is_null(selected) or _is_str(selected), selected, f"{at}.selected", "a node name or null")
    feasible = expect.get("feasible")
    if feasible is not None and p.expect(feasible.is_seq, feasible, f"{at}.feasible", "a list of node names"):
        for i, name in enumerate(feasible):
            p.expect(_is_str(name), name, f"{at}.feasible[{i}]", "a node name")
    message = expect.get("message")
    if message is not None:
        p.expect(_is_null(message) or _is_str(message), message, f"{at}.message", "a string or null")
    contains = expect.get("message_contains")
    if contains is not None:
        p.expect(_is_str(contains), contains, f"{at}.message_contains", "a string")
    rejected = expect.get("rejected")
    if rejected is not None and not _is_null(rejected) and p.expect(
            rejected.is_map, rejected, f"{at}.rejected", "a mapping of node → {plugin, reason}"):
        p.keys(rejected, f"{at}.rejected")     # any name is a node's: only the keys' type
        for node, want in rejected.items():
            field = f"{at}.rejected[{node}]"
            if not p.expect(want.is_map or _is_null(want), want, field, "{plugin: NAME, reason: TEXT}"):
                continue
            p.keys(want, field, ("plugin", "reason"), "a rejection")
            for key, value in want.items():
                p.expect(_is_str(value), value, f"{field}.{key}", "a string")
    scores = expect.get("scores")
    if scores is not None and not _is_null(scores) and p.expect(
            scores.is_map, scores, f"{at}.scores", "a mapping of node → plugin → {min, max}"):
        p.keys(scores, f"{at}.scores")
        for node, plugins in scores.items():
            field = f"{at}.scores[{node}]"
            if not p.expect(plugins.is_map, plugins, field, "a mapping of plugin → {min, max}"):
                continue
            p.keys(plugins, field)
            for plugin, bounds in plugins.items():
                _check_bounds(p, bounds, f"{field}[{plugin}]")


def _check_bounds(p: _Problems, bounds: YamlNode, field: str) -> None:
    if not p.expect(bounds.is_map or _is_null(bounds), bounds, field, "{min: N, max: N}"):
        return
    p.keys(bounds, field, ("min", "max"), "a score's bounds")
    values = {}
    for key, value in bounds.items():
        if key in ("min", "max") and p.expect(_is_int(value), value, f"{field}.{key}", "an integer from 0 to 100"):
            if not 0 <= value.scalar <= 100:
                p.at(value, f"{field}.{key}", f"expected an integer from 0 to 100 (a normalized score), got "
                     f"{value.scalar}")
            values[key] = value
    if "min" in values and "max" in values and values["min"].scalar > values["max"].scalar:
        p.at(values["min"], f"{field}.min", f"min {values['min'].scalar} is above max {values['max'].scalar}")


# ---- reading what the file names ---------------------------------------------------------------

def _located(err: InputError, node: YamlNode, field_prefix: str, path: str) -> InputError:
    """An error about an object written inline in the test file (its field relative to the
    object), at the field's line and column in the test file."""
    target = node_at(node.node, err.field)
    mark = target.start_mark
    field = f"{field_prefix}.{err.field}" if err.field else field_prefix
    return InputError(err.message, path=path, obj=err.obj, field=field, line=mark.line + 1, column=mark.column + 1)


def _referring(err: InputError, node: YamlNode, field: str) -> InputError:
    """An error reading a file the test file names: kept when it has its own line and column (a
    bad field in that file), else at the reference in the test file (no such file, say)."""
    if err.line is not None or isinstance(err, InputErrors):
        return err
    span = node.value_span
    return InputError(str(err), path=node.path, field=field, line=span.line, column=span.column)


def _profile(spec: YamlNode | None, base: Path, path: str) -> str | None:
    if spec is None or _is_null(spec):
        return None
    profile = spec.scalar
    if profile.endswith(".sched") or "/" in profile:
        if not confined(base / profile, policy_roots(base)):
            span = spec.value_span
            raise InputError(f"{profile!r} is outside the test file's directory and the stdlib "
                             f"(allow another directory with --allow-root)", path=path, field="profile",
                             line=span.line, column=span.column)
        profile = str((base / profile).resolve())
    return profile


def _target(spec: YamlNode | None, path: str):
    """A test file's ``kubernetes:`` (target.py), or None."""
    from .target import make_target

    if spec is None or _is_null(spec):
        return None
    version = spec.get("version")
    gates = spec.get("featureGates")
    gate_values = gates.value if gates is not None and not _is_null(gates) else {}
    try:
        return make_target(version.scalar if version is not None else None,
                           ",".join(f"{k}={str(v).lower()}" for k, v in gate_values.items()))
    except InputError as err:
        at = gates if gates is not None and "gate" in err.message else version if version is not None else spec
        field = "kubernetes.featureGates" if at is gates else "kubernetes.version" if at is version else "kubernetes"
        span = at.value_span
        raise InputError(err.message, path=path, field=field, line=span.line, column=span.column) from None


def _inputs(doc: YamlNode, base: Path, path: str) -> tuple[ClusterState, list]:
    """The cluster and every test's pod, built before any test runs: every inline object the API
    server would refuse is reported at once, each at its line and column."""
    errors: list[InputError] = []
    state = _cluster(doc.get("cluster"), base, path, errors)
    pods = []
    tests = doc.get("tests")
    for i, case in enumerate(tests if tests is not None and tests.is_seq else []):
        try:
            pods.append(_pod(case.get("pod"), base, path, f"tests[{i}].pod"))
        except InputError as err:
            errors.append(err)
            pods.append(None)
    if errors:
        raise InputErrors([e for err in errors for e in err.all()])
    return state, pods


def _cluster(spec: YamlNode, base: Path, path: str, errors: list) -> ClusterState | None:
    if spec.is_map:
        objects, seen = [], {}
        items = spec.get("items")
        for i, item in enumerate(items if items is not None and items.is_seq else []):
            field = f"cluster.items[{i}]"
            try:
                obj = cluster_object(item.value, path, i)
            except InputError as err:
                errors.append(_located(err, item, field, path))
                continue
            meta = obj.metadata
            key = (item.get("kind").scalar, meta.namespace or "", meta.name)
            if key in seen:
                span = item.value_span
                errors.append(InputError(f"the same object as cluster.items[{seen[key]}]: give each object once",
                                         path=path, field=field, line=span.line, column=span.column))
                continue
            seen[key] = i
            objects.append(obj)
        return ClusterState.build(objects)
    entries = list(spec) if spec.is_seq else [spec]
    try:
        return load_cluster([base / e.scalar for e in entries])
    except InputError as err:
        named = next((e for e in entries if err.path == str(base / e.scalar)), spec)
        errors.append(_referring(err, named, "cluster"))
        return None


def _pod(spec: YamlNode, base: Path, path: str, field: str):
    if _is_str(spec):
        try:
            pods = load_objects(base / spec.scalar, kinds=["Pod"])
        except InputError as err:
            raise _referring(err, spec, field) from None
        if len(pods) != 1:
            span = spec.value_span
            raise InputError(f"expected one Pod in {spec.scalar}, found {len(pods)}", path=path, field=field,
                             line=span.line, column=span.column)
        return pods[0]
    try:
        return structure_object({**spec.value, "kind": "Pod"}, path)
    except InputError as err:
        raise _located(err, spec, field, path) from None


def _run_tests(doc: YamlNode, exe, state: ClusterState, pods: list, path: Path, coverage) -> list[CaseOutcome]:
    import time

    outcomes = []
    tests = doc.get("tests")
    for i, (case, pod) in enumerate(zip(tests if tests is not None and tests.is_seq else [], pods)):
        started = time.perf_counter()
        expect = case.get("expect").value
        decision = schedule(exe, state, pod)
        if coverage is not None:
            coverage.add_decision(decision)
        name = case.get("name")
        outcomes.append(CaseOutcome(str(path), name.scalar if name is not None else f"tests[{i}]",
                                    tuple(_compare(expect, decision)), time.perf_counter() - started))
    return outcomes


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

"""Table-driven conformance cases per plugin, transcribed from upstream's unit tests.

Each YAML file here holds the cases of one plugin; each case names the upstream test
function and case it comes from. A case runs the plugin alone (a one-plugin profile,
with the case's args), the way upstream's unit tests call one plugin's PreFilter,
Filter, PreScore, Score and NormalizeScore directly:

- ``filter``: node → null (passes), {code, reasons} (this plugin rejects it) or {error} (the
  plugin fails with an Error status: scheduling stops with that error text);
- ``prefilter``: {code, reasons} when PreFilter rejects the pod, {error} when it fails with an
  Error status; ``skip_filter: true``
  when PreFilter skips the plugin; ``prefilter_nodes``: the sorted node names of the
  PreFilterResult (null: all nodes);
- ``scores``: node → normalized score, every given node treated as feasible;
  ``skip_score: true`` when PreScore skips the plugin;
- ``postfilter``: the plugin's PostFilter message when PreFilter rejects the pod or no node
  of ``filter`` passes (a mapping of version to message where they differ).

A file or a case may name the Kubernetes it is for (``kubernetes: "1.37"``, with
``feature_gates: "A=true"`` or ``{A: true}``): the profile is compiled for that target (the
default target otherwise), for the tables of the versions whose tests they transcribe; a file's
list, ``["1.36", "1.37"]``, runs its cases for each.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from policylang import check, compile_profile, load_program
from policylang.cluster.load import structure_object
from policylang.cluster.state import ClusterState
from policylang.syntax.literal import to_literal
from policylang.run import batch
from policylang.target import DEFAULT, make_target
from policylang.run.schedule import (EXECUTORS, Executable, PlanRuntimeError, base_env, run_filters, run_postfilter,
                                     run_prefilter, run_scores)

HERE = Path(__file__).parent


def _cases():
    for path in sorted(HERE.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        versions = doc.get("kubernetes")
        for case in doc["cases"]:
            if isinstance(versions, list):   # the same cases for each of these versions
                for version in versions:
                    yield pytest.param({**doc, "kubernetes": version}, case, id=f"{path.stem} {version}: {case['name']}")
            else:
                yield pytest.param(doc, case, id=f"{path.stem}: {case['name']}")


def _executable(plugin: str, args: dict, tmp_path: Path, executor: str, target=DEFAULT) -> Executable:
    arg_text = f" {to_literal(args)}" if args else ""
    source = tmp_path / "profile.sched"
    source.write_text(f"profile conformance {{\n    use {plugin}{arg_text}\n}}\n")
    return Executable(compile_profile(check(load_program(source)), target=target), executor)


def _target(doc: dict, case: dict):
    """The Kubernetes a case decides as: its (or its file's) ``kubernetes`` and ``feature_gates``."""
    gates = case.get("feature_gates", doc.get("feature_gates"))
    if isinstance(gates, dict):
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())
    return make_target(case.get("kubernetes", doc.get("kubernetes")), gates)


def _object(kind: str, raw: dict, i: int):
    return structure_object({"kind": kind, **raw}, "<case>", i, validate=False)


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("doc, case", list(_cases()))
def test_case(doc, case, executor, tmp_path):
    args = {**doc.get("args", {}), **case.get("args", {})}
    exe = _executable(doc["plugin"], args, tmp_path, executor, _target(doc, case))
    objects = [_object("Node", n, i) for i, n in enumerate(case.get("nodes", []))]
    objects += [_object("Pod", p, i) for i, p in enumerate(case.get("pods", []))]
    objects += [structure_object(o, "<case>", i, validate=False) for i, o in enumerate(_flat(case.get("objects", [])))]
    state = ClusterState.build(objects)
    pod = state.with_priority(_object("Pod", case.get("pod", {}), 0))
    plugin = doc["plugin"]
    try:
        pre = run_prefilter(exe, state, pod, base_env(state, pod))
    except PlanRuntimeError as err:
        assert case.get("prefilter") == {"error": _error_text(err)}
        return

    if "prefilter" in case:
        expected = case["prefilter"]
        assert "error" not in expected, "expected PreFilter to fail with an error"
        assert pre.status is not None, "expected PreFilter to reject the pod"
        assert (pre.status.code, list(pre.status.reasons)) == (expected["code"], expected["reasons"])
        _check_postfilter(exe, state, pod, pre, {}, case)
        return
    assert pre.status is None, f"PreFilter rejected the pod: {pre.status}"
    if "skip_filter" in case:
        assert (not pre.active.get(plugin)) == case["skip_filter"]
    if "prefilter_nodes" in case:
        assert (None if pre.allowed is None else sorted(pre.allowed)) == case["prefilter_nodes"]
    statuses = {}
    if "filter" in case:
        in_batch = _filter_batch(exe, pre, [state.nodes[name] for name in case["filter"]])
        for name, expected in case["filter"].items():
            try:
                status = in_batch[name] if in_batch is not None else run_filters(exe, pre, state.nodes[name])
            except PlanRuntimeError as err:
                got = {"error": _error_text(err)}
            else:
                got = None if status is None else {"code": status.code, "reasons": list(status.reasons)}
                statuses[name] = status
            assert got == expected, f"node {name}"
    if "postfilter" in case:
        assert statuses and all(s is not None for s in statuses.values()), "PostFilter runs when no node passes"
        _check_postfilter(exe, state, pod, pre, statuses, case)
    if "scores" in case or "skip_score" in case:
        nodes = [state.nodes[n] for n in case.get("scores") or state.nodes]
        scores = run_scores(exe, pre, nodes).by_node()
        if case.get("skip_score"):
            assert all(plugin not in s for s in scores.values()), "expected PreScore to skip the plugin"
        else:
            got = {name: s[plugin].normalized for name, s in scores.items()}
            assert got == case["scores"]


def _check_postfilter(exe: Executable, state, pod, pre, statuses: dict, case: dict) -> None:
    if "postfilter" in case:
        expected = case["postfilter"]
        if isinstance(expected, dict):      # by version
            expected = expected[exe.plan.target.version]
        assert run_postfilter(exe, state, pod, pre, statuses, enabled=False).message == expected


def _filter_batch(exe: Executable, pre, nodes: list) -> "dict | None":
    """The vector executor's statuses for these nodes, filtered as one batch; None for the
    reference executor, or when a policy error hands the nodes to the reference."""
    if exe.executor != "vector":
        return None
    try:
        return {n.metadata.name: status for n, status in zip(nodes, batch.filter_batch(exe, pre, nodes))}
    except batch.PolicyErrorInBatch:
        return None


def _error_text(err: PlanRuntimeError) -> str:
    """The plugin's error, without the framework's `running PreFilter plugin "<name>": ` words."""
    return err.detail or str(err).split(": ", 1)[1]


def _flat(objects: list) -> list:
    """`objects` may hold lists of objects (YAML anchors of fixture lists): they are spliced in."""
    return [o for item in objects for o in (_flat(item) if isinstance(item, list) else [item])]

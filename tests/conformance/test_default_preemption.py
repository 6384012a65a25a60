"""DefaultPreemption conformance: upstream's preemption test tables, transcribed as facts.

Cases live in ``preemption/default_preemption.yaml``; each names its upstream test and case.
A case's profile is its ``plugins`` (stdlib plugins by name; the test doubles upstream
registers, such as FalseFilter, are the small policies under the file's ``policies:``), the
way upstream's tests build a framework from a few registered plugins. Nodes are given as
objects, or as upstream's harness makes them: ``node_names`` with ``capacity`` (plus 32 pods,
as st.MakeNode().Capacity does) and, with ``label_nodes``, a name "node-a/zone1" becomes node
node-a labelled hostname=node-a, zone=zone1 (region as a third part).

Kinds of case, by the upstream test they come from:

- ``post_filter`` (TestPostFilter): DefaultPreemption's PostFilter given the filter pass's
  node statuses (``statuses``: node → code; a node not listed is UnschedulableAndUnresolvable);
  expect the nominated node (null: none) and the status message ("" on success).
- ``dry_run`` (TestDryRunPreemption): DryRunPreemption over every node in name order, one
  scheduling cycle per pod in ``preemptors``, from ``offsets`` (upstream's seeded random
  offsets, as its comments give them; 0 when not given), with ``args``; expect per cycle the
  candidates by node name, each with its victims by name and its PDB violations.
- ``select_best`` (TestSelectBestCandidate): the dry run, then SelectCandidate; expect one of
  the listed nodes.
- ``eligible`` (TestPodEligibleToPreemptOthers): PodEligibleToPreemptOthers with the nominated
  node's status (null: Success).
- ``preempt`` (TestPreempt): Evaluator.Preempt with every node Unschedulable; expect the
  nominated node and the set of victims.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from policylang import check, compile_profile, load_program
from policylang.cluster.load import structure_object
from policylang.cluster.state import ClusterState
from policylang.run.decision import UNRESOLVABLE, UNSCHEDULABLE, Status
from policylang.program import snake_case
from policylang.target import make_target
from policylang.run.postfilter import (dry_run_preemption, num_candidates, pod_eligible_to_preempt_others, preempt,
                                       select_candidate)
from policylang.run.schedule import Executable

HERE = Path(__file__).parent / "preemption"
LABEL_KEYS = ("hostname", "zone", "region")


def _cases():
    for path in sorted(HERE.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for case in doc["cases"]:
            yield pytest.param(doc, case, id=f"{case['test']}: {case['name']}")


def _executable(doc: dict, plugins: list[str], tmp_path: Path) -> Executable:
    uses = []
    for name in plugins:
        if name in doc.get("policies", {}):
            file = f"{snake_case(name)}.sched"
            (tmp_path / file).write_text(f"policy {name}\n\n{doc['policies'][name]}")
            uses.append(f'    use "./{file}"')
        else:
            uses.append(f"    use {name}")
    profile = tmp_path / "profile.sched"
    profile.write_text("profile conformance {\n" + "\n".join(uses) + "\n}\n")
    # The tables are v1.35.4's default_preemption_test.go: decided as 1.35 (v1.37 words a
    # successful preemption's message otherwise, tests/conformance/test_default_profile.py).
    return Executable(compile_profile(check(load_program(profile)), target=make_target("1.35")))


def _nodes(case: dict) -> list[dict]:
    if "nodes" in case:
        return case["nodes"]
    capacity = {"pods": "32", **(case.get("capacity") or {})}
    out = []
    for name in case["node_names"]:
        parts = name.split("/")
        labels = dict(zip(LABEL_KEYS, parts)) if case.get("label_nodes") else {}
        out.append({"metadata": {"name": parts[0], "labels": labels},
                    "status": {"capacity": capacity, "allocatable": capacity}})
    return out


def _state(case: dict) -> ClusterState:
    objects = [structure_object({"kind": "Node", **n}, "<case>", i, validate=False) for i, n in enumerate(_nodes(case))]
    objects += [structure_object({"kind": "Pod", **p}, "<case>", i, validate=False) for i, p in enumerate(case.get("pods", []))]
    objects += [structure_object({"kind": "PodDisruptionBudget", **p}, "<case>", i)
                for i, p in enumerate(case.get("pdbs", []))]
    return ClusterState.build(objects)


def _pod(state: ClusterState, raw: dict):
    return state.with_priority(structure_object({"kind": "Pod", **raw}, "<case>", 0, validate=False))


def _status(raw) -> "Status | None":
    if raw is None:
        return None
    if isinstance(raw, str):
        return Status(raw)
    return Status(raw["code"], tuple(raw.get("reasons", ())))


def _candidates(found) -> list[dict]:
    return [{"node": c.node, "victims": sorted(v.metadata.name for v in c.victims), "pdb_violations": c.pdb_violations}
            for c in sorted(found, key=lambda c: c.node)]


@pytest.mark.parametrize("doc, case", list(_cases()))
def test_case(doc, case, tmp_path):
    state = _state(case)
    kind = case["kind"]
    if kind == "eligible":
        pod = _pod(state, case["pod"])
        got, _ = pod_eligible_to_preempt_others(state, pod, _status(case.get("nominated_status")))
        assert got == case["expect"]
        return

    exe = _executable(doc, case["plugins"], tmp_path)
    if kind in ("post_filter", "preempt"):
        pod = _pod(state, case["pod"])
        if kind == "post_filter":
            listed = {name: _status(code) for name, code in case["statuses"].items()}
            statuses = {name: listed.get(name, Status(UNRESOLVABLE)) for name in state.nodes}
        else:
            statuses = {name: Status(UNSCHEDULABLE) for name in state.nodes}
        outcome = preempt(exe, state, pod, statuses)
        expect = case["expect"]
        assert outcome.nominated == expect["nominated"]
        if "message" in expect:
            assert outcome.message == expect["message"]
        if "victims" in expect:
            assert sorted(v.name for v in outcome.victims) == sorted(expect["victims"])
        return

    nodes = list(state.nodes)
    args = case.get("args", {})
    wanted = num_candidates(len(nodes), args.get("minCandidateNodesPercentage", 10),
                            args.get("minCandidateNodesAbsolute", 100))
    if kind == "dry_run":
        offsets = case.get("offsets") or [0] * len(case["preemptors"])
        for cycle, (raw, offset) in enumerate(zip(case["preemptors"], offsets)):
            found, _, _ = dry_run_preemption(exe, state, _pod(state, raw), nodes, state.pdbs, offset, wanted)
            assert _candidates(found) == case["expect"][cycle], f"cycle {cycle}"
    elif kind == "select_best":
        found, _, _ = dry_run_preemption(exe, state, _pod(state, case["pod"]), nodes, state.pdbs, 0, wanted)
        best = select_candidate(found)
        assert best is not None and best.node in case["expect"]
    else:
        raise AssertionError(f"unknown kind {kind}")

"""Cases the differential tests (tests/test_oracle.py) found where policylang and
kube-scheduler's framework disagreed, each fixed in policylang and pinned in
oracle/default_profile.yaml with the oracle's output as its expectation; and, in
oracle/v1_34.yaml, those found against v1.34.4's framework (a case's ``kubernetes: "1.34"``:
decided by the default profile compiled for that version, checked against the v1.34 oracle; a
case's ``feature_gates`` are set on both sides); oracle/v1_36_v1_37.yaml holds the v1.36 and v1.37
differences of the plugins other than DynamicResources, each checked against its version's oracle.

Each case is a whole scenario (objects, the pod, whether preemption runs, the percentage of
nodes to score when the case samples nodes) decided by the default profile; ``expect`` holds
the parts of :func:`kube_oracle.comparable` that disagreed, as
the oracle printed them. When the oracle is available, the expectations are also checked
against it, so that a pinned expectation cannot drift from upstream's answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kube_oracle import comparable
from policylang import Executable, load_plans, schedule
from policylang.cluster.load import structure_object
from policylang.cluster.resourceclaims import instantiate
from policylang.cluster.state import ClusterState
from policylang.run.schedule import Sampling
from policylang.target import make_target

# A case that names no version was recorded against v1.35.4's framework, and is decided as 1.35.
RECORDED_AT = "1.35"
CASES = (Path(__file__).parent / "oracle" / "default_profile.yaml", Path(__file__).parent / "oracle" / "v1_34.yaml",
         Path(__file__).parent / "oracle" / "v1_36_v1_37.yaml")


def _cases():
    for path in CASES:
        for case in yaml.safe_load(path.read_text())["cases"]:
            yield pytest.param(case, id=case["name"])


def _policylang(case) -> dict:
    objects = [structure_object(json.loads(json.dumps(o)), "<case>", validate=False) for o in case["objects"]]
    pod = structure_object(json.loads(json.dumps(case["pod"])), "<case>", validate=False)
    exe = Executable(load_plans(target=make_target(case.get("kubernetes", RECORDED_AT), _gates(case)))["default-scheduler"])
    sampling = Sampling(case["percentage"]) if "percentage" in case else None
    state = ClusterState.build(objects)
    d = schedule(exe, state, instantiate(state, pod), preemption=case.get("preemption", True), sampling=sampling)
    return comparable(json.loads(json.dumps(d.to_json())))


def _gates(case) -> str:
    """A case's ``feature_gates`` as --feature-gates spells them."""
    return ",".join(f"{k}={str(v).lower()}" for k, v in (case.get("feature_gates") or {}).items())


def _subset(full: dict, expect: dict) -> dict:
    out = {}
    for key, want in expect.items():
        if key == "nodes":
            out[key] = {name: full["nodes"].get(name) for name in want}
        else:
            out[key] = full.get(key)
    return out


def _normal(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("case", list(_cases()))
def test_policylang_decides_as_the_oracle_did(case):
    assert _normal(_subset(_policylang(case), case["expect"])) == _normal(case["expect"])


@pytest.mark.parametrize("case", list(_cases()))
def test_expectation_is_the_oracles(oracles, case):
    oracle = oracles(case.get("kubernetes", RECORDED_AT))
    (result,) = oracle.run(case["objects"], [case["pod"]], preemption=case.get("preemption", True),
                           percentage=case.get("percentage"), feature_gates=case.get("feature_gates"))["results"]
    assert _normal(_subset(comparable(result), case["expect"])) == _normal(case["expect"])

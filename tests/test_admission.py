"""The webhook's JSONPatch, applied to the pod as the API server applies it (jsonpatch, RFC 6902),
gives exactly the pod `simulate` schedules: Executable.apply_rules on the same pod."""

from __future__ import annotations

import base64
import copy
import json

from hypothesis import given, settings, strategies as st
import jsonpatch
import pytest

from policylang.serve.admission import Admission
from policylang.cluster.state import ClusterState
from policylang.engine import Engine
from policylang.serve.extender import BadRequest
from strategies import pods, structure

RULES = """policy Rules

rule spot when pod.metadata.labels["tier"] == "batch" {
    tolerate "example.com/spot" exists : NoSchedule
    tolerate "example.com/reclaim" exists : NoExecute for 1h
}

rule zones when len(pod.spec.containers) > 1 {
    spread by "topology.kubernetes.io/zone" max_skew 1 when_unsatisfiable DoNotSchedule
}

rule everyone {
    spread by "kubernetes.io/hostname" max_skew 2 when_unsatisfiable ScheduleAnyway
}
"""
PROFILE = "profile ruled {\n    use NodeName\n    use PodTopologySpread weight 2\n    use TaintToleration weight 3\n" \
          "    use \"./rules.sched\"\n}\n"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rules")
    (tmp / "rules.sched").write_text(RULES)
    (tmp / "profile.sched").write_text(PROFILE)
    return Engine(state=ClusterState(), profile=str(tmp / "profile.sched"), executor="vector")


def _review(obj: dict) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
                        "namespace": obj["metadata"]["namespace"], "object": obj}}


@settings(max_examples=60, deadline=None)
@given(raw=pods(), tier=st.sampled_from(["batch", "web", None]))
def test_the_patch_applied_is_the_rules_mutation(engine, raw, tier):
    raw = copy.deepcopy(raw)
    raw["spec"]["schedulerName"] = "ruled"
    if tier is not None:
        raw["metadata"]["labels"]["tier"] = tier
    state = ClusterState()
    review, ops = Admission(engine).review(state, _review(raw))
    response = review["response"]
    patched = raw
    if ops:
        assert response["patchType"] == "JSONPatch"
        patched = jsonpatch.apply_patch(raw, json.loads(base64.b64decode(response["patch"])))
    assert structure(patched) == engine.executable(structure(raw)).apply_rules(state, structure(raw))


def test_a_review_that_is_not_one_is_a_bad_request(engine):
    with pytest.raises(BadRequest, match="AdmissionReview"):
        Admission(engine).review(ClusterState(), {"kind": "Pod"})

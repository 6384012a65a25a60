"""The DRA objects tests/strategies.py draws (``dra_scenarios``) are ones kube-apiserver v1.37.2
accepts: DeviceClasses, ResourceSlices, ResourceClaims with their status (allocation and
reservedFor, written through the status subresource, as the scheduler writes it),
ResourceClaimTemplates, and pods' resourceClaims and status.resourceClaimStatuses. So the
differential tests (test_oracle_dra.py) compare policylang and upstream on what a cluster can
hold, not on objects the API server would refuse.

The pods are sent with only their claims beside one plain container: the rest of them comes
from ``pods()``, whose objects are the other tests' business.
"""

from __future__ import annotations

import copy
import json
import urllib.error

import pytest
from hypothesis import HealthCheck, given, settings

import strategies as S
from kube_apiserver import collection, path_of

pytestmark = pytest.mark.xdist_group("apiserver")   # one API server, in one worker


@pytest.fixture(scope="module")
def namespaces(apiserver):
    for ns in S.NAMESPACES:
        labels = {S.ADMIN_LABEL: "true"} if ns == S.ADMIN_NAMESPACE else {}
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        try:
            apiserver.create(obj)
        except urllib.error.HTTPError as err:
            if err.code != 409:
                raise
            apiserver.patch(obj, {"metadata": {"labels": labels}})
    return apiserver


def _plain(pod: dict) -> dict:
    """The pod's claims, its claim statuses and its node, beside one plain container."""
    out = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {k: pod["metadata"][k] for k in ("name", "namespace")},
           "spec": {"containers": [{"name": "c", "image": "busybox"}],
                    **{k: pod["spec"][k] for k in ("resourceClaims", "nodeName") if k in pod["spec"]}}}
    if pod["status"].get("resourceClaimStatuses"):
        out["status"] = {"resourceClaimStatuses": pod["status"]["resourceClaimStatuses"]}
    return out


def _refused(server, method: str, path: str, body: dict) -> "str | None":
    try:
        server.request(method, path, body)
    except urllib.error.HTTPError as err:
        return f"{body['kind']} {body['metadata']['name']}: {json.loads(err.read()).get('message')}"
    return None


@given(S.dra_scenarios(max_pending=3))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_dra_object_drawn_is_accepted(namespaces, scenario):
    server = namespaces
    refused = []
    objects = [o for o in scenario.cluster.others if o["kind"] != "Namespace"]
    objects += [_plain(p) for p in (*scenario.cluster.pods, *scenario.pods) if "resourceClaims" in p["spec"]]
    for obj in objects:
        obj = copy.deepcopy(obj)
        status = obj.pop("status", None)
        if status is None:
            refused.append(_refused(server, "POST", collection(obj) + "?dryRun=All", obj))
            continue
        # A status is written through its subresource: the object is made, its status written
        # (dry run), and the object deleted. Finalizers would hold the deletion.
        finalizers = obj["metadata"].pop("finalizers", None)
        made = _refused(server, "POST", collection(obj), obj)
        if made:
            refused.append(made)
            continue
        current = server.request("GET", path_of(obj))
        current["status"] = status
        if finalizers:
            current["metadata"]["finalizers"] = finalizers
        refused.append(_refused(server, "PUT", path_of(obj) + "/status?dryRun=All", current))
        server.request("DELETE", path_of(obj) + "?gracePeriodSeconds=0")
    assert [r for r in refused if r] == []

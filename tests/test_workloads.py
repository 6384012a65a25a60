"""Workloads become the pods their controllers would make, the same way for every verb that
places pods (eval, explain, simulate, diff): names, claims, and a DaemonSet's pods per node."""

import json
from pathlib import Path

from policylang import load_cluster
from policylang.cli import main
from policylang.cluster.workloads import read_pods_and_workloads

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"

STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: pg:16, resources: {requests: {cpu: 250m}}}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""

DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: agent:1, resources: {requests: {cpu: 50m}}}]
"""

CRONJOB = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: batch}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      parallelism: 2
      template:
        spec:
          restartPolicy: Never
          containers: [{name: run, image: run:1, resources: {requests: {cpu: 100m}}}]
"""


def test_a_statefulset_makes_ordinal_pods_with_their_claims(tmp_path):
    (tmp_path / "sts.yaml").write_text(STATEFULSET)
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    pods, owners = read_pods_and_workloads(tmp_path / "sts.yaml", None, state)
    assert [p.name for p in pods] == ["db-0", "db-1"]
    # pkg/controller/statefulset/stateful_set_utils.go: <template>-<set>-<ordinal>.
    assert [v.persistent_volume_claim.claim_name for p in pods for v in p.spec.volumes] == ["data-db-0", "data-db-1"]
    assert {("shop", "data-db-0"), ("shop", "data-db-1")} <= set(state.claims)
    assert [(o.kind, o.metadata.name) for o in owners] == [("StatefulSet", "db")]


def test_a_daemonset_makes_a_pod_for_each_node_its_controller_targets(tmp_path):
    (tmp_path / "ds.yaml").write_text(DAEMONSET)
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    pods, _ = read_pods_and_workloads(tmp_path / "ds.yaml", None, state)
    # Not on cp-1 nor on the gpu nodes (NoSchedule taints it does not tolerate); on the cordoned
    # worker-c2, since daemon pods tolerate node.kubernetes.io/unschedulable.
    tainted = {n.name for n in state.nodes.values()
               if any(t.key != "node.kubernetes.io/unschedulable" and t.effect in ("NoSchedule", "NoExecute")
                      for t in n.spec.taints)}
    assert {p.name.removeprefix("agent-") for p in pods} == set(state.nodes) - tainted
    pod = pods[0]
    [term] = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert [(f.key, f.operator, f.values) for f in term.match_fields] == [("metadata.name", "In", (pod.name[6:],))]
    assert {(t.key, t.effect) for t in pod.spec.tolerations} >= {("node.kubernetes.io/not-ready", "NoExecute"),
                                                                 ("node.kubernetes.io/unschedulable", "NoSchedule")}


def test_daemonset_pods_go_to_their_own_nodes(tmp_path, capsys):
    (tmp_path / "ds.yaml").write_text(DAEMONSET)
    code = main(["eval", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(tmp_path / "ds.yaml"), "-o", "json"])
    results = json.loads(capsys.readouterr().out)["results"]
    assert code == 0 and all(r["selected"] == r["pod"]["name"].removeprefix("agent-") for r in results)


def test_a_cronjob_makes_its_jobs_pods(tmp_path):
    (tmp_path / "cron.yaml").write_text(CRONJOB)
    pods, owners = read_pods_and_workloads(tmp_path / "cron.yaml", None, load_cluster([EXAMPLES / "cluster.yaml"]))
    assert [p.name for p in pods] == ["nightly-00000", "nightly-00001"] and owners == []


def test_eval_explain_and_diff_take_workloads_and_replicas(tmp_path, capsys):
    (tmp_path / "sts.yaml").write_text(STATEFULSET)
    (tmp_path / "job.yaml").write_text(CRONJOB)
    cluster, sts = str(EXAMPLES / "cluster.yaml"), str(tmp_path / "sts.yaml")
    for verb in ("eval", "explain"):
        code = main([verb, "--cluster", cluster, "--pod", sts, "--replicas", "3", "-o", "json"])
        results = json.loads(capsys.readouterr().out)["results"]
        assert [r["pod"]["name"] for r in results] == ["db-0", "db-1", "db-2"]
        # The example cluster has no StorageClass: the new claims bind at once, and nothing binds them.
        assert code == 1 and results[0]["fit_error"].startswith("0/7 nodes are available: pod has unbound immediate")
    code = main(["diff", "--policy", "default-scheduler", "--config", str(ROOT / "tests" / "fixtures" / "workloads"
                                                                          / "most-allocated.yaml"),
                 "--cluster", cluster, "--pods", str(tmp_path / "job.yaml"), "--replicas", "3", "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["summary"]["a"]["scheduled"] == doc["summary"]["b"]["scheduled"] == 3
    assert doc["b"].endswith("most-allocated.yaml")


def test_a_billion_replicas_is_refused_before_any_pod_is_made(tmp_path, capsys):
    (tmp_path / "sts.yaml").write_text(STATEFULSET.replace("replicas: 2", "replicas: 1000000000"))
    code = main(["simulate", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pods", str(tmp_path / "sts.yaml")])
    assert code == 2
    assert "StatefulSet shop/db: 1000000000 replicas would make more than the 100000 pods" in capsys.readouterr().err


# ---- an error in a workload names the line and column of its template's field (issue 46) ---------

import io  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402


def _at(text: str, token: str, after: str = "") -> str:
    """LINE:COL (1-based) of ``token`` in ``text``, the first one after ``after``."""
    offset = text.index(token, text.index(after) if after else 0)
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        resources: {requests: {cpu: 100m}}
"""


def _refused(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err and "Traceback" not in err, err
    return err.strip().splitlines()[0].removeprefix("error: ")


@pytest.mark.parametrize("text, token, after, message", [
    (DEPLOYMENT.replace("cpu: 100m", "cpu: lots"), "lots", "", "Deployment shop/web: field "
     "spec.template.spec.containers[0].resources.requests['cpu']: quantities must match"),
    (DEPLOYMENT.replace("{app: web}}\n  template", "{app: 5}}\n  template"), "5", "selector",
     "Deployment shop/web: field spec.selector.matchLabels['app']: expected a string, got number 5"),
    (DEPLOYMENT.replace("labels: {app: web}", "labels: [web]"), "[web]", "",
     "Deployment shop/web: field spec.template.metadata.labels: expected a mapping, got list"),
    (DEPLOYMENT.replace("replicas: 2", "replicas: many"), "many", "",
     "Deployment shop/web: field spec.replicas: expected a non-negative integer, got 'many'"),
    (DEPLOYMENT.split("  template:")[0], "replicas", "",   # at the spec that lacks it
     "Deployment shop/web: field spec.template: a workload needs a pod template"),
    (STATEFULSET.replace("storage: 1Gi", "storage: huge"), "huge", "",
     "StatefulSet shop/db: field spec.volumeClaimTemplates[0].spec.resources.requests['storage']: quantities"),
    (CRONJOB.replace("image: run:1", "image: 7"), "7", "image",
     "CronJob batch/nightly: field spec.jobTemplate.spec.template.spec.containers[0].image: expected a string, "
     "got number 7"),
    (DAEMONSET.replace("    spec:\n      containers", "    spec:\n      tolerations: [5]\n      containers"), "5",
     "tolerations", "DaemonSet kube-system/agent: field spec.template.spec.tolerations[0]: expected an object"),
])
def test_an_error_in_a_workload_is_located_in_its_template(tmp_path, capsys, text, token, after, message):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    line = _refused(capsys, ["eval", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(f)])
    assert line.startswith(f"{f}:{_at(text, token, after)}: {message}"), line


def test_a_workload_is_located_in_a_multi_document_file_in_json_and_from_standard_input(tmp_path, capsys,
                                                                                        monkeypatch):
    import yaml
    bad = DEPLOYMENT.replace("cpu: 100m", "cpu: lots")
    field = "Deployment shop/web: field spec.template.spec.containers[0].resources.requests['cpu']"
    cluster = str(EXAMPLES / "cluster.yaml")
    multi = (EXAMPLES / "pods" / "web.yaml").read_text() + "---\n" + bad
    (tmp_path / "multi.yaml").write_text(multi)
    line = _refused(capsys, ["simulate", "--cluster", cluster, "--pods", str(tmp_path / "multi.yaml")])
    assert line.startswith(f"{tmp_path / 'multi.yaml'}:{_at(multi, 'lots')}: {field}"), line
    as_json = json.dumps(yaml.safe_load(bad), indent=2)
    (tmp_path / "w.json").write_text(as_json)
    line = _refused(capsys, ["simulate", "--cluster", cluster, "--pods", str(tmp_path / "w.json")])
    quoted = '"lots"'
    assert line.startswith(f"{tmp_path / 'w.json'}:{_at(as_json, quoted)}: {field}"), line
    for text in (multi, as_json):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        line = _refused(capsys, ["eval", "--cluster", cluster, "--pod", "-"])
        assert line.startswith(f"<stdin>:{_at(text, quoted if text is as_json else 'lots')}: {field}"), line


def test_capacity_pods_expanded_from_workloads_are_located(tmp_path, capsys):
    text = DEPLOYMENT.replace("cpu: 100m", "cpu: lots")
    (tmp_path / "w.yaml").write_text(text)
    line = _refused(capsys, ["capacity", "--cluster", str(EXAMPLES / "cluster.yaml"), "--node-template",
                             str(ROOT / "examples" / "whatif" / "node-template.yaml"), "--pods", str(tmp_path / "w.yaml")])
    assert line.startswith(f"{tmp_path / 'w.yaml'}:{_at(text, 'lots')}: Deployment shop/web"), line


ZOOKEEPER = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: zk, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: zk}}
  template:
    metadata: {labels: {app: zk}}
    spec: {containers: [{name: zk, image: zookeeper, resources: {requests: {cpu: 100m}}}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


def _storage_class(name: str, default: bool, created: str) -> dict:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "annotations": annotations, "creationTimestamp": created},
            "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"}


def test_a_statefulsets_claims_get_the_default_storage_class(tmp_path, capsys):
    """DefaultStorageClass admission: the zookeeper StatefulSet of the Kubernetes docs names no
    class; its claims get the cluster's default (the newest of several), so the pod schedules
    with a claim to provision, not "unbound immediate PersistentVolumeClaims"."""
    from policylang import Engine

    (tmp_path / "sts.yaml").write_text(ZOOKEEPER)
    classes = [_storage_class("old-default", True, "2024-01-01T00:00:00Z"),
               _storage_class("gp3", True, "2025-06-01T00:00:00Z"), _storage_class("slow", False, "2026-01-01T00:00:00Z")]
    (tmp_path / "classes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": classes}))
    engine = Engine(cluster=[EXAMPLES / "cluster.yaml", tmp_path / "classes.json"])
    (target,) = engine.pods([str(tmp_path / "sts.yaml")])
    assert engine.state.claims[("default", "data-zk-0")].spec.storage_class_name == "gp3"
    assert engine.evaluate(target).selected is not None

    without = Engine(cluster=EXAMPLES / "cluster.yaml")
    (target,) = without.pods([str(tmp_path / "sts.yaml")])
    assert without.state.claims[("default", "data-zk-0")].spec.storage_class_name is None
    assert "unbound immediate PersistentVolumeClaims" in without.evaluate(target).message

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

"""explain: every filter's verdict per node, near misses, and suggestions that were checked."""

import json
from pathlib import Path

from policylang import Executable, load_cluster, load_objects, load_plans, schedule
from policylang.cli import main
from policylang.explain import explain

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"


def test_explain_text_on_the_examples(capsys, golden):
    main(["explain", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pods")])
    golden(Path(__file__).parent / "fixtures" / "explain" / "examples.txt", capsys.readouterr().out)


def test_every_filter_is_reported_for_every_node(capsys):
    main(["explain", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pods" / "too-big.yaml"),
          "-o", "json"])
    [result] = json.loads(capsys.readouterr().out)["results"]
    cp = next(n for n in result["nodes"] if n["name"] == "cp-1")
    # kube-scheduler stops at TaintToleration; explain also shows NodeResourcesFit's verdict.
    assert cp["failure"]["plugin"] == "TaintToleration"
    assert cp["filters"]["TaintToleration"]["code"] == "UnschedulableAndUnresolvable"
    assert cp["filters"]["NodeResourcesFit"]["reasons"] == ["Insufficient cpu", "Insufficient memory"]
    assert cp["filters"]["NodePorts"]["code"] == "Skip"
    assert result["near_misses"][0]["node"] == "worker-c1"  # the least cpu short


def test_each_suggestion_really_makes_the_pod_fit():
    exe = Executable(load_plans()["default-scheduler"])
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    for pod in load_objects(EXAMPLES / "pods"):
        e = explain(exe, state, pod)
        if e.decision.selected:
            assert e.suggestions == ()
            continue
        assert e.suggestions, f"no suggestion for {pod.key}"
        for s in e.suggestions:
            assert s.result in state.nodes


def test_scheduling_a_pod_does_not_depend_on_explaining_it():
    exe = Executable(load_plans()["default-scheduler"])
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    pod = load_objects(EXAMPLES / "pods" / "ingress.yaml")[0]
    before = schedule(exe, state, pod)
    explain(exe, state, pod)
    assert schedule(exe, state, pod) == before


CP_ONLY = """
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: cp-1}
  containers: [{name: c, image: c:1, resources: {requests: {cpu: 100m}}}]
"""


def test_a_control_plane_toleration_is_only_suggested_when_asked(tmp_path, capsys):
    (tmp_path / "pod.yaml").write_text(CP_ONLY)
    args = ["explain", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(tmp_path / "pod.yaml")]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "toleration" not in out.split("Near misses")[1]
    assert "Only a change to the cluster's own machinery would make it fit" in out
    assert main(args + ["--suggest-infrastructure"]) == 1
    out = capsys.readouterr().out
    assert "add toleration `node-role.kubernetes.io/control-plane:NoSchedule` → schedules on cp-1" in out
    main(args + ["-o", "json"])
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["suggestions"] == [] and result["withheld"][0]["infrastructure"] is True


def _many_nodes(count: int) -> dict:
    """A cluster of ``count`` workers in three sizes, every seventh tainted, every eleventh cordoned."""
    nodes = []
    for i in range(count):
        cpu = ("2", "4", "3500m")[i % 3]
        memory = "4Gi" if i % 5 == 0 else "8Gi"
        spec = {}
        if i % 7 == 0:
            spec["taints"] = [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
        if i % 11 == 0:
            spec["unschedulable"] = True
        nodes.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": f"node-{i:03d}", "labels": {"kubernetes.io/hostname": f"node-{i:03d}"}},
                      "spec": spec,
                      "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                                 "capacity": {"cpu": cpu, "memory": memory, "pods": "110"}}})
    return {"apiVersion": "v1", "kind": "List", "items": nodes}


BIG = """
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec:
  containers: [{name: c, image: c:1, resources: {requests: {cpu: "6", memory: 5833945088}}}]
"""


def test_explain_on_many_nodes_groups_them_and_fits_a_screen(tmp_path, capsys, golden):
    (tmp_path / "cluster.json").write_text(json.dumps(_many_nodes(300)))
    (tmp_path / "pod.yaml").write_text(BIG)
    args = ["explain", "--cluster", str(tmp_path / "cluster.json"), "--pod", str(tmp_path / "pod.yaml")]
    assert main(args) == 1
    out = capsys.readouterr().out
    golden(Path(__file__).parent / "fixtures" / "explain" / "many-nodes.txt", out)
    assert len(out.splitlines()) < 50     # a screen, not one line per node
    # Quantities as a person writes them, never the byte count.
    assert "5833945088" not in out and "needs 6, the most free is 4 on node-001" in out
    assert "Insufficient memory — needs 5.5Gi, the most free is 4Gi on node-000" in out
    assert main(args + ["--all"]) == 1
    assert len(capsys.readouterr().out.splitlines()) > 300     # every node its row


def test_a_prefilter_rejection_is_blamed_on_its_plugin_alone(tmp_path, capsys):
    """VolumeBinding's PreFilter refuses a pod whose claim is unbound in an Immediate class: every
    node gets that plugin's status (the framework's NodeToStatus), and the filters whose PreFilter
    ran before it are shown as they decide alone, not with VolumeBinding's reason."""
    nodes = [{"kind": "Node", "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for n in ("n1", "n2")]
    storage = [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
                "provisioner": "example.com/csi", "volumeBindingMode": "Immediate"},
               {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
                "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}]
    pod = {"kind": "Pod", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "postgres", "resources": {"requests": {"cpu": "1"}}}],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}
    (tmp_path / "c.json").write_text(json.dumps({"kind": "List", "items": [*nodes, *storage]}))
    (tmp_path / "p.json").write_text(json.dumps(pod))
    assert main(["explain", "--cluster", str(tmp_path / "c.json"), "--pod", str(tmp_path / "p.json")]) == 1
    out = capsys.readouterr().out
    assert "2 nodes: VolumeBinding: pod has unbound immediate PersistentVolumeClaims" in out
    assert "NodeName: pod has unbound" not in out and "NodeResourcesFit: pod has unbound" not in out

"""End to end: the real kube-scheduler (v1.37.2, kube/build.sh) and the real API server
(tests/kube_apiserver.py) running the configuration `policylang export` wrote, with
`policylang serve --kubeconfig` as its extender. Pods created through the API are bound where
`policylang eval` predicted, and where the team policy (GPU isolation) wants them: a pod without
GPUs lands on the smaller CPU node although the GPU nodes are fuller (MostAllocated would pick
one of them without the extender), a GPU pod on the a100.

Without the binaries this skips with a one-line reason (POLICYLANG_REQUIRE_APISERVER=1 fails).
A second test serves HTTPS (a CA and a certificate for 127.0.0.1 made with openssl) and registers
the exported MutatingWebhookConfiguration: a spread rule reaches the pods through the webhook, and
the second of two web pods is kept off the first one's node, as `eval` (which applies the rule
itself) predicts."""

from __future__ import annotations

import json
from pathlib import Path
import shutil
import subprocess
import time

import pytest
import yaml

from policylang.cli import main
from serve_process import Serve, certificates

pytestmark = pytest.mark.xdist_group("apiserver")   # one API server, in one worker
pytest.importorskip("starlette")
ROOT = Path(__file__).parent.parent
BIND_TIMEOUT = 90


def node(name: str, cpu: str, labels: "dict | None" = None, gpus: int = 0) -> dict:
    # Memory in step with cpu: NodeResourcesBalancedAllocation then sees every node alike, and
    # MostAllocated (the team profile's) prefers the smallest node that fits.
    resources = {"cpu": cpu, "memory": f"{cpu}Gi", "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": []},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, gpus: int = 0) -> dict:
    requests = {"cpu": "1", "memory": "1Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "team-scheduler",
                     "containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"requests": requests, "limits": requests}}]}}


NODES = [node("gpu-a", "2", {"gpu-model": "a100"}, gpus=1), node("gpu-b", "2", {"gpu-model": "t4"}, gpus=1),
         node("cpu-small", "4"), node("cpu-big", "16")]
PODS = [(pod("web"), "cpu-small"), (pod("train", gpus=1), "gpu-a")]


def _create_node(server, obj: dict) -> None:
    server.create(obj)
    # TaintNodesByCondition taints a new node not-ready until a kubelet reports; none will.
    server.patch(obj, {"spec": {"taints": []}})


def _start_scheduler(bin_dir: Path, config: Path, workdir: Path) -> subprocess.Popen:
    log = open(workdir / "kube-scheduler.log", "wb")
    return subprocess.Popen([str(bin_dir / "kube-scheduler"), f"--config={config}", "--secure-port=0", "--v=2"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _bound_to(server, name: str) -> "str | None":
    deadline = time.monotonic() + BIND_TIMEOUT
    while time.monotonic() < deadline:
        got = server.request("GET", f"/api/v1/namespaces/default/pods/{name}")
        if got["spec"].get("nodeName"):
            return got["spec"]["nodeName"]
        time.sleep(0.25)
    return None


def _predicted(kubeconfig: Path, profile: Path, pod_file: Path, capsys) -> str:
    capsys.readouterr()
    code = main(["eval", "--kubeconfig", str(kubeconfig), "--profile", str(profile), "--pod", str(pod_file),
                 "-o", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    (result,) = json.loads(out)["results"]
    return result["selected"]


def test_kube_scheduler_with_serve_as_extender_binds_as_eval_predicts(apiserver, tmp_path, capsys):
    from kube_apiserver import ADMIN_TOKEN, binaries

    bin_dir = binaries()
    apiserver.clear()
    for n in NODES:
        _create_node(apiserver, n)
    for name in ("team.sched", "gpu_isolation.sched"):
        shutil.copy(ROOT / "examples/policies" / name, tmp_path / name)
    profile = tmp_path / "team.sched"
    serve = Serve(["--profile", str(profile), "--kubeconfig", str(apiserver.kubeconfig),
                   "--decision-log", str(tmp_path / "decisions.jsonl")], tmp_path)
    scheduler = None
    try:
        config = tmp_path / "scheduler.yaml"
        admin = apiserver.write_kubeconfig("policylang-admin", ADMIN_TOKEN)
        assert main(["export", str(profile), "-o", str(config), "--url", serve.url,
                     "--scheduler-kubeconfig", str(admin)]) == 0
        doc = yaml.safe_load(config.read_text())
        doc["leaderElection"] = {"leaderElect": False}
        config.write_text(yaml.safe_dump(doc))
        scheduler = _start_scheduler(bin_dir, config, tmp_path)
        for obj, expected in PODS:
            pod_file = tmp_path / f"{obj['metadata']['name']}.yaml"
            pod_file.write_text(yaml.safe_dump(obj))
            predicted = _predicted(apiserver.kubeconfig, profile, pod_file, capsys)
            assert predicted == expected
            apiserver.create(obj)
            bound = _bound_to(apiserver, obj["metadata"]["name"])
            assert bound == predicted, (f"kube-scheduler bound {obj['metadata']['name']} to {bound}:\n"
                                        f"{(tmp_path / 'kube-scheduler.log').read_text()[-4000:]}\n{serve.log()}")
        decisions = [json.loads(line) for line in (tmp_path / "decisions.jsonl").read_text().splitlines()]
        assert {d["verb"] for d in decisions} >= {"filter", "prioritize"}
        assert any(d["verb"] == "filter" and d["pod"] == "default/web" and d["rejections"] == {"GpuIsolation": 2}
                   for d in decisions)
    finally:
        if scheduler is not None:
            scheduler.terminate()
            scheduler.wait(timeout=20)
        serve.stop()


SPREAD_RULE = """policy SpreadWeb

rule spread_web when pod.metadata.labels["app"] == "web" {
    spread by "kubernetes.io/hostname" max_skew 1 when_unsatisfiable DoNotSchedule
}
"""


WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def _webhook_active(server) -> bool:
    probe = pod("probe")
    probe["metadata"]["labels"] = {"app": "web"}
    created = server.request("POST", "/api/v1/namespaces/default/pods?dryRun=All", probe)
    return bool(created["spec"].get("topologySpreadConstraints"))


def test_a_spread_rule_applied_by_the_webhook_spreads_pods_as_eval_predicts(apiserver, tmp_path, capsys):
    from kube_apiserver import ADMIN_TOKEN, binaries

    bin_dir = binaries()
    apiserver.clear()
    for n in NODES:
        _create_node(apiserver, n)
    shutil.copy(ROOT / "examples/policies/gpu_isolation.sched", tmp_path / "gpu_isolation.sched")
    (tmp_path / "spread_web.sched").write_text(SPREAD_RULE)
    profile = tmp_path / "team.sched"
    profile.write_text((ROOT / "examples/policies/team.sched").read_text().replace(
        "    use DefaultPreemption\n",
        "    use PodTopologySpread weight 2\n    use \"./spread_web.sched\"\n    use DefaultPreemption\n"))
    cert, key, ca = certificates(tmp_path)
    serve = Serve(["--profile", str(profile), "--kubeconfig", str(apiserver.kubeconfig), "--tls-cert", str(cert),
                   "--tls-key", str(key)], tmp_path, ca=ca)
    scheduler, registered = None, False
    try:
        config, hook = tmp_path / "scheduler.yaml", tmp_path / "webhook.yaml"
        admin = apiserver.write_kubeconfig("policylang-admin", ADMIN_TOKEN)
        assert main(["export", str(profile), "-o", str(config), "--webhook-output", str(hook), "--url", serve.url,
                     "--ca-bundle", str(ca), "--scheduler-kubeconfig", str(admin)]) == 0
        apiserver.request("POST", WEBHOOKS, yaml.safe_load(hook.read_text()))
        registered = True
        deadline = time.monotonic() + 30
        while not _webhook_active(apiserver):
            assert time.monotonic() < deadline, f"the webhook never answered:\n{serve.log()}"
            time.sleep(0.5)
        doc = yaml.safe_load(config.read_text())
        doc["leaderElection"] = {"leaderElect": False}
        config.write_text(yaml.safe_dump(doc))
        scheduler = _start_scheduler(bin_dir, config, tmp_path)
        for name, expected in (("web-1", "cpu-small"), ("web-2", "cpu-big")):
            obj = pod(name)
            obj["metadata"]["labels"] = {"app": "web"}
            pod_file = tmp_path / f"{name}.yaml"
            pod_file.write_text(yaml.safe_dump(obj))
            predicted = _predicted(apiserver.kubeconfig, profile, pod_file, capsys)
            assert predicted == expected
            created = apiserver.create(obj)
            assert created["spec"]["topologySpreadConstraints"] == [{
                "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}}]
            bound = _bound_to(apiserver, name)
            assert bound == predicted, (f"kube-scheduler bound {name} to {bound}:\n"
                                        f"{(tmp_path / 'kube-scheduler.log').read_text()[-4000:]}\n{serve.log()}")
    finally:
        if registered:
            apiserver.request("DELETE", f"{WEBHOOKS}/policylang-rules")
        if scheduler is not None:
            scheduler.terminate()
            scheduler.wait(timeout=20)
        serve.stop()

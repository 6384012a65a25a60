"""A seeded cluster generator for benchmarks: N nodes in zones with hostnames, instance
types, taints, GPU nodes and mixed capacities; M running pods with requests, labels and
owners, some with affinity and topology spread; and a batch of pending pods mixing plain
pods, node affinity, topology spread, inter-pod anti-affinity and tolerations.

    python bench/generate.py --nodes 500 --pods-per-node 10 --pending 1000 --out /tmp/c500
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
TYPES = [("m6i.large", "2", "8Gi"), ("m6i.xlarge", "4", "16Gi"), ("m6i.2xlarge", "8", "32Gi"),
         ("r6i.2xlarge", "8", "64Gi"), ("c6i.4xlarge", "16", "32Gi")]
APPS = [f"app-{i}" for i in range(40)]


def node(i: int, rng: random.Random) -> dict:
    name = f"node-{i:05d}"
    zone = ZONES[i % len(ZONES)]
    itype, cpu, mem = rng.choice(TYPES)
    alloc = {"cpu": cpu, "memory": mem, "pods": "110", "ephemeral-storage": "100Gi"}
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
              "topology.kubernetes.io/region": "us-east-1", "node.kubernetes.io/instance-type": itype}
    spec = {}
    if i % 50 == 7:
        alloc["nvidia.com/gpu"] = "4"
        labels["gpu"] = "true"
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    elif i % 97 == 3:
        spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    images = [{"names": [f"registry.example.com/{a}:v1"], "sizeBytes": rng.randint(20, 900) * 2**20}
              for a in rng.sample(APPS, 3)]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"capacity": alloc, "allocatable": alloc, "images": images}}


def pod(name: str, rng: random.Random, node_name: str | None, kind: str) -> dict:
    app = rng.choice(APPS)
    spec = {"containers": [{"name": "main", "image": f"registry.example.com/{app}:v1",
                            "resources": {"requests": {"cpu": f"{rng.choice([50, 100, 200, 250, 500])}m",
                                                       "memory": f"{rng.choice([64, 128, 256, 512])}Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if kind == "affinity":
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ZONES[:2]}]}]}}}
    elif kind == "spread":
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": app}}}]
    elif kind == "anti":
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": app}}}]}}
    elif kind == "toleration":
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
    meta = {"name": name, "namespace": "default", "labels": {"app": app},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-rs", "uid": app,
                                 "controller": True}]}
    out = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if node_name:
        out["status"] = {"phase": "Running"}
    return out


def generate(nodes: int, pods_per_node: int, pending: int, seed: int = 1):
    rng = random.Random(seed)
    node_objs = [node(i, rng) for i in range(nodes)]
    running = []
    for i in range(nodes * pods_per_node):
        n = node_objs[rng.randrange(nodes)]["metadata"]["name"]
        kind = rng.choices(["plain", "spread", "anti"], [90, 7, 3])[0]
        running.append(pod(f"run-{i:06d}", rng, n, kind))
    replicasets = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": f"{a}-rs", "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"app": a}}}} for a in APPS]
    kinds = rng.choices(["plain", "affinity", "spread", "anti", "toleration"], [50, 15, 25, 5, 5], k=pending)
    pending_pods = [pod(f"pending-{i:05d}", rng, None, k) for i, k in enumerate(kinds)]
    return {"kind": "List", "items": node_objs + running + replicasets}, {"kind": "List", "items": pending_pods}


def kubectl_yaml(obj) -> str:
    """``obj`` as YAML the way kubectl prints it: no anchors or aliases (PyYAML's dumper would
    alias a node's capacity to its allocatable, the same dict here)."""
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
        def ignore_aliases(self, data):
            return True
    return yaml.dump(obj, Dumper=Dumper)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cluster, pending = generate(a.nodes, a.pods_per_node, a.pending, a.seed)
    (out / "cluster.json").write_text(json.dumps(cluster))
    (out / "pending.json").write_text(json.dumps(pending))


if __name__ == "__main__":
    main()

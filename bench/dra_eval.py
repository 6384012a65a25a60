"""`eval` of a pod with a DRA claim, next to a plain pod (issue 23):
`python bench/dra_eval.py [--nodes 500] [--gpus 8] [--pods 20] [--executor vector]`.

The cluster: --nodes nodes (16 cpu, 64Gi), each publishing one ResourceSlice of --gpus GPUs
(driver gpu.example.com; a quarter of the nodes have the smaller a10 model with 24Gi, the others
h100 with 80Gi), the DeviceClass `gpu`, and a ResourceClaimTemplate asking for 2 GPUs with a
selector on memory and model. Each measured pod is decided by the default profile (every
plugin, DynamicResources' Filter asking the allocator about each node, upstream's adaptive node
sampling), from a loaded state, as `policylang eval` decides it: the pod with the claim after
the resourceclaim controller has made its claim, and a plain pod with the same cpu request.
The first pod of each kind is shown apart (it fills the caches: the slice index, the selectors'
verdicts, the allocator's answers per node, the node cache); the figure is the median of the
others (pods from the same template, whose claims the index answers again per node), in CPU
time (time.process_time), which this shared machine's other sessions disturb less than wall
time.
Target: 20 ms per pod at 500 nodes x 8 GPUs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policylang import load_plans  # noqa: E402
from policylang.cluster import resourceclaims  # noqa: E402
from policylang.cluster.load import structure_object  # noqa: E402
from policylang.cluster.state import ClusterState  # noqa: E402
from policylang.run.schedule import Executable, Sampling, collector_paused, schedule  # noqa: E402

DRIVER = "gpu.example.com"
SELECTOR = (f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0 && '
            f'device.attributes["{DRIVER}"].model == "h100"')


def objects(nodes: int, gpus: int) -> list:
    out = []
    for i in range(nodes):
        name = f"node-{i:04d}"
        small = i % 4 == 0
        out.append({"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}})
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpu"},
                    "spec": {"driver": DRIVER, "nodeName": name,
                             "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                             "devices": [{"name": f"gpu-{g}",
                                          "attributes": {"model": {"string": "a10" if small else "h100"},
                                                         "index": {"int": g}},
                                          "capacity": {"memory": {"value": "24Gi" if small else "80Gi"}}}
                                         for g in range(gpus)]}})
    out.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "two-gpus", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                    "deviceClassName": "gpu", "count": 2, "selectors": [{"cel": {"expression": SELECTOR}}]}}]}}}})
    return [structure_object(o, "<bench>", i) for i, o in enumerate(out)]


def pod(n: int, claims: bool):
    raw = {"kind": "Pod", "metadata": {"name": f"{'gpu' if claims else 'plain'}-{n}", "namespace": "default",
                                       "uid": f"uid-{n}"},
           "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "2"}}}]}}
    if claims:
        raw["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}]
    return structure_object(raw, "<bench>")


def measure(exe, state, pods: int, claims: bool) -> list[float]:
    times = []
    with collector_paused():
        for n in range(pods + 1):
            p = pod(n, claims)
            if claims:
                p = resourceclaims.instantiate(state, p)
            start = time.process_time()
            decision = schedule(exe, state, p, sampling=Sampling())
            times.append((time.process_time() - start) * 1000)
            assert decision.selected is not None, decision.message
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--executor", choices=("vector", "reference"), default="vector")
    args = parser.parse_args()
    state = ClusterState.build(objects(args.nodes, args.gpus))
    exe = Executable(load_plans()["default-scheduler"], args.executor)
    plain = measure(exe, state, args.pods, claims=False)
    dra = measure(exe, state, args.pods, claims=True)
    print(f"{args.nodes} nodes x {args.gpus} GPUs, {args.executor} executor, median of {args.pods} pods (CPU ms)")
    print(f"{'pod':<28} {'first pod':>10} {'eval ms/pod':>12} {'p90':>8}")
    for name, times in (("plain (2 cpu)", plain), ("2 GPUs (memory, model)", dra)):
        warm = times[1:]
        p90 = sorted(warm)[int(0.9 * (len(warm) - 1))]
        print(f"{name:<28} {times[0]:>10.1f} {statistics.median(warm):>12.1f} {p90:>8.1f}")
    print(f"ratio DRA / plain: {statistics.median(dra[1:]) / statistics.median(plain[1:]):.1f}")


if __name__ == "__main__":
    main()

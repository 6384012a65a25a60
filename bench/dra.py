"""The DRA allocator over a GPU cluster (issue 23): `python bench/dra.py [--nodes 500] [--gpus 8] [--pods 20]`.

Every node publishes one ResourceSlice of --gpus GPUs (driver gpu.example.com, attributes
model and index, capacity memory; a quarter of the nodes have the smaller model). Each pod
claims 2 GPUs of class `gpu` with a selector on memory and model, and the allocator
(policylang/dra/structured.py) is asked about every node, as the DynamicResources Filter asks
it: the figure is the time for all nodes, per pod. The first pod pays for the slice index and
for evaluating the selectors once per kind of device ("cold"); later pods find them kept. Nodes
whose pools look alike to the search (the same kinds of devices in the same order, the same
ones in use) share one search per pod. Rows: the first pod; pods whose claims all differ; pods
of one template placed one after another (each takes two GPUs of the first node that fits).

Beside it, in the same run (this machine is shared and noisy), a naive reference: a plain
Python loop over the same devices with the selector written as Python, no index, no CEL; the
ratio is allocator / naive. Times are CPU time (time.process_time): on this shared machine wall
time mostly measures the other sessions. The target is 20 ms per pod at 500 nodes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policylang.cluster.load import structure_object  # noqa: E402
from policylang.api.quantity import parse_quantity  # noqa: E402

DRIVER = "gpu.example.com"
SELECTOR = (f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0 && '
            f'device.attributes["{DRIVER}"].model == "h100"')


def cluster(nodes: int, gpus: int):
    made = [structure_object({"kind": "Node", "metadata": {"name": f"node-{i:04d}"}}, "<bench>")
            for i in range(nodes)]
    slices = []
    for i in range(nodes):
        small = i % 4 == 0
        slices.append(structure_object({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"node-{i:04d}-gpu"},
            "spec": {"driver": DRIVER, "nodeName": f"node-{i:04d}",
                     "pool": {"name": f"node-{i:04d}", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{g}",
                                  "attributes": {"model": {"string": "a10" if small else "h100"}, "index": {"int": g}},
                                  "capacity": {"memory": {"value": "24Gi" if small else "80Gi"}}}
                                 for g in range(gpus)]}}, "<bench>"))
    gpu_class = structure_object({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}, "<bench>")
    return made, slices, {"gpu": gpu_class}


def claim(n: int, request: str = "gpus"):
    return structure_object({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": f"pod-{n}-gpus"},
        "spec": {"devices": {"requests": [{"name": request, "exactly": {
            "deviceClassName": "gpu", "count": 2, "selectors": [{"cel": {"expression": SELECTOR}}]}}]}}},
        "<bench>")


def naive(nodes, slices, allocated) -> int:
    """The same question without the allocator: the slices grouped by node, then per node the
    first two free devices that the class and the selector (as Python) accept."""
    fits = 0
    wanted = parse_quantity("40Gi")
    by_node: dict = {}
    for s in slices:
        by_node.setdefault(s.spec.node_name, []).append(s)
    for node in nodes:
        chosen = []
        for s in by_node.get(node.metadata.name, ()):
            for d in s.spec.devices:
                if (s.spec.driver, s.spec.pool.name, d.name) in allocated:
                    continue
                if s.spec.driver == DRIVER and d.capacity["memory"].value >= wanted \
                        and d.attributes["model"].string == "h100":
                    chosen.append(d.name)
                    if len(chosen) == 2:
                        break
        fits += len(chosen) == 2
    return fits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--pods", type=int, default=20)
    args = ap.parse_args()
    try:
        import policylang.dra.cel  # noqa: F401
    except ModuleNotFoundError:
        # Before dra-cel's branch lands: the tests' stand-in, which evaluates this selector.
        sys.path.insert(0, str(ROOT / "tests"))
        from dra_cel_double import install
        install()
        print("note: policylang/dra/cel.py is missing; CEL is the tests' stand-in (tests/dra_cel_double.py)")
    from policylang.dra import cel
    from policylang.dra.structured import DeviceID, allocate
    from policylang.run.schedule import collector_paused

    nodes, slices, classes = cluster(args.nodes, args.gpus)
    # CEL's parser is built before the clock starts (policylang's cache holds it after the first
    # run): the first pod pays for the index and the selectors, not for Lark's tables.
    cel.compile_selector("true")

    def run(pods: int, make_claim, place: bool) -> tuple[list, list]:
        """Each pod's claim asked of every node; with ``place``, the pod then takes the devices
        of the first node that fits (as simulate binds it), so that node changes for the next."""
        allocated: set = set()
        times, naive_times = [], []
        for n in range(pods):
            claims = [make_claim(n)]
            held = frozenset(allocated)
            with collector_paused():    # as simulate and eval run a cycle
                start = time.process_time()
                results = [allocate(node, claims, classes=classes, slices=slices, allocated=held) for node in nodes]
                times.append(time.process_time() - start)
            start = time.process_time()
            naive_fits = naive(nodes, slices, {(d.driver, d.pool, d.device) for d in allocated})
            naive_times.append(time.process_time() - start)
            assert naive_fits == sum(r is not None for r in results), (naive_fits, results)
            if place:
                chosen = next((r for r in results if r is not None), None)
                if chosen is not None:
                    allocated.update(DeviceID(d.driver, d.pool, d.device) for d in chosen[0].devices.results)
        return times, naive_times

    # First: every pod's claim of its own shape (its request named after the pod), so no
    # outcome is kept from one pod for the next: the search runs on every node.
    distinct, naive_distinct = run(args.pods, lambda n: claim(n, request=f"gpus-{n}"), place=False)
    # Then pods of one template placed one after another: each finds the outcome of the nodes
    # whose devices did not change kept from the pod before.
    template, naive_template = run(args.pods, lambda n: claim(n), place=True)
    ref = statistics.median(naive_distinct + naive_template)
    rows = [("allocate, first pod (cold)", distinct[0]),
            ("allocate, claims differ", statistics.median(distinct[1:] or distinct)),
            ("allocate, one template", statistics.median(template[1:] or template)),
            ("naive loop", ref)]
    print(f"DRA allocator: {args.nodes} nodes x {args.gpus} GPUs (ResourceSlices), a claim of 2 GPUs "
          f"with a selector on memory and model; medians of {args.pods} pods")
    print(f"{'':28}{'CPU ms/pod':>12}{'vs naive':>10}")
    for label, t in rows:
        print(f"{label:28}{t * 1000:>12.1f}{t / ref:>10.2f}")
    worst = max(rows[1][1], rows[2][1])
    print(f"target: <= 20 ms per pod at 500 nodes (after the first): {'met' if worst <= 0.020 else 'NOT met'}")


if __name__ == "__main__":
    main()

"""Transactions over the cluster state (Engine.fork, ClusterState savepoints), measured:
`python bench/transactions.py [--against REV] [--nodes 5000] [--cycles 1000]`.

1. fork–bind–revert on a large state: the time of one cycle without the evaluation, and with it,
   and the memory a thousand cycles leave behind (tracemalloc, after a warm-up).
2. Against an earlier commit (``--against``, loaded beside this checkout as bench/compare.py
   does), in one process, taking turns: a preemption-heavy batch (every node full of low-priority
   pods, each pending pod must preempt: every candidate's dry run was a rebuilt state before
   savepoints) and pods decided while others are nominated (each nominated node was a rebuilt
   state). Ratios below 1: this checkout takes less time.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import earlier, simulate_of  # noqa: E402
from generate import generate  # noqa: E402

import policylang  # noqa: E402
from policylang import Engine  # noqa: E402


def fork_cycles(nodes: int, cycles: int) -> dict:
    """Per cycle: fork, bind one pod, revert (and the same with one evaluation inside); the pods
    are Pod objects, as a caller holding them passes them (a dict is structured first)."""
    cluster, pending = generate(nodes, 10, 50)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps(cluster))
        engine = Engine(cluster=str(path), executor="vector")
    from policylang.cluster.load import structure_object
    pods = [structure_object(p, "pending", i) for i, p in enumerate(pending["items"])]
    names = list(engine.state.nodes)

    def cycle(i: int, evaluate: bool) -> None:
        with engine.fork() as fork:
            fork.bind(pods[i % len(pods)], names[i % len(names)])
            if evaluate:
                fork.evaluate(pods[(i + 1) % len(pods)])

    for i in range(100):                       # warm-up: caches, the plan's compiled forms
        cycle(i, True)
    gc.collect()
    tracemalloc.start()
    traced = [tracemalloc.get_traced_memory()[0]]
    t = time.perf_counter()
    for half in range(2):
        for i in range(half * cycles // 2, (half + 1) * cycles // 2):
            cycle(i, True)
        gc.collect()
        traced.append(tracemalloc.get_traced_memory()[0])
    with_eval = (time.perf_counter() - t) / cycles
    tracemalloc.stop()
    t = time.perf_counter()
    for i in range(cycles):
        cycle(i, False)
    alone = (time.perf_counter() - t) / cycles
    return {"nodes": nodes, "pods": len(engine.state.pods), "cycles": cycles, "fork_bind_revert_ms": alone * 1000,
            "with_evaluate_ms": with_eval * 1000, "first_half_kib": (traced[1] - traced[0]) / 1024,
            "second_half_kib": (traced[2] - traced[1]) / 1024}


def _full_cluster(nodes: int) -> tuple[dict, dict]:
    """Nodes of 4 cpu, each full with four 1-cpu pods of priority 0; pending pods of priority 1000
    asking 2 cpu: each must preempt two pods somewhere."""
    items, pending = [], []
    for i in range(nodes):
        name = f"node-{i:04d}"
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"z{i % 3}"}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}})
        for j in range(4):
            items.append(_pod(f"low-{i}-{j}", 0, "1", node=name))
    for i in range(10):
        pending.append(_pod(f"high-{i}", 1000, "2"))
    return {"kind": "List", "items": items}, {"kind": "List", "items": pending}


def _nominated_cluster(nodes: int) -> tuple[dict, dict]:
    """Half the nodes have a pending pod of priority 1000 nominated to them; the pods decided
    are of priority 0, so every nominated node is tried with its nominee placed."""
    items, pending = [], []
    for i in range(nodes):
        name = f"node-{i:04d}"
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name}}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
        items.append(_pod(f"run-{i}", 0, "1", node=name))
        if i % 2 == 0:
            nominee = _pod(f"nominee-{i}", 1000, "2")
            nominee["status"] = {"phase": "Pending", "nominatedNodeName": name}
            items.append(nominee)
    for i in range(40):
        pending.append(_pod(f"plain-{i}", 0, "500m"))
    return {"kind": "List", "items": items}, {"kind": "List", "items": pending}


def _pod(name: str, priority: int, cpu: str, node: "str | None" = None) -> dict:
    spec = {"priority": priority, "containers": [{"name": "c", "image": "app",
                                                 "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                           "labels": {"app": name.split("-")[0]}},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def against(rev: str, nodes: int) -> dict:
    """Seconds of each version on the two workloads, taking turns (three rounds each)."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        versions = {"this": policylang, rev: earlier(rev, directory)}
        out = {}
        for workload, make in (("preemption", _full_cluster), ("nominated", _nominated_cluster)):
            cluster, pending = make(nodes)
            (directory / f"{workload}.json").write_text(json.dumps(cluster))
            (directory / f"{workload}-pending.json").write_text(json.dumps(pending))
            spent = dict.fromkeys(versions, 0.0)
            for round_ in range(3):
                for name in (list(versions) if round_ % 2 == 0 else list(versions)[::-1]):
                    mod = versions[name]
                    state = mod.load_cluster([directory / f"{workload}.json"])
                    pods = mod.load_objects(directory / f"{workload}-pending.json")
                    exe = mod.Executable(mod.load_plans()["default-scheduler"], "vector")
                    simulate = simulate_of(mod)
                    t = time.process_time()
                    if workload == "preemption":
                        simulate({"default-scheduler": exe}, state, pods)
                    else:
                        for pod in pods:
                            mod.schedule(exe, state, pod)
                    spent[name] += time.process_time() - t
            out[workload] = spent
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--against", metavar="REV", help="an earlier commit to compare preemption and nominated pods with")
    ap.add_argument("--against-nodes", type=int, default=300)
    a = ap.parse_args()
    r = fork_cycles(a.nodes, a.cycles)
    print(f"fork-bind-revert on {r['nodes']:,} nodes, {r['pods']:,} pods, {r['cycles']:,} cycles:")
    print(f"  one cycle alone          {r['fork_bind_revert_ms']:8.3f} ms")
    print(f"  one cycle with evaluate  {r['with_evaluate_ms']:8.3f} ms")
    print(f"  memory, first half       {r['first_half_kib']:+8.1f} KiB (tracemalloc, after a 100-cycle warm-up:")
    print(f"  memory, second half      {r['second_half_kib']:+8.1f} KiB  the executors' caches fill to their bound)")
    if a.against:
        print(f"\n{a.against_nodes} nodes, this checkout against {a.against} (process time, 3 rounds each):")
        print(f"{'workload':>12} {'this s':>8} {a.against + ' s':>14} {'this/' + a.against:>18}")
        for workload, spent in against(a.against, a.against_nodes).items():
            print(f"{workload:>12} {spent['this']:8.2f} {spent[a.against]:14.2f} "
                  f"{spent['this'] / spent[a.against]:17.3f}x time")


if __name__ == "__main__":
    main()

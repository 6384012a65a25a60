"""Benchmarks: `make bench` (or `python bench/run.py [--sizes 500,5000] [--pending N]`).

Prints a table and writes bench/results/latest.json. Every figure is also given as a ratio
against references measured in the same run, because this machine is shared and noisy:
a deliberately naive plain-Python loop over the nodes for the default profile's core
(taints, node affinity, resource fit, LeastAllocated), measured on the same pods.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate  # noqa: E402

from policylang import Executable, load_cluster, load_objects, load_plans, schedule  # noqa: E402
from policylang.simulate import simulate  # noqa: E402


def naive_default(state, pod) -> str | None:
    """The reference: a direct Python loop over the nodes, no policy language: untolerated
    taints, required node affinity, cpu and memory fit, LeastAllocated."""
    from policylang.builtins import node_selector_matches, tolerates
    from policylang.cluster.resources import pod_requests

    req = pod_requests(pod)
    wanted = {"cpu": req["cpu"].milli() if "cpu" in req else 0,
              "memory": req["memory"].value() if "memory" in req else 0}
    best, best_score = None, -1
    for node in state.nodes.values():
        if any(t.effect in ("NoSchedule", "NoExecute") and not any(tolerates(x, t) for x in pod.spec.tolerations)
               for t in node.spec.taints):
            continue
        affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
        required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
        if not node_selector_matches(required, node):
            continue
        alloc, used = node.status.allocatable, state.requested[node.metadata.name]
        free = {"cpu": alloc["cpu"].milli() - (used["cpu"].milli() if "cpu" in used else 0),
                "memory": alloc["memory"].value() - (used["memory"].value() if "memory" in used else 0)}
        if any(wanted[r] > free[r] for r in wanted):
            continue
        cpu_total, mem_total = max(alloc["cpu"].milli(), 1), max(alloc["memory"].value(), 1)
        score = ((free["cpu"] - wanted["cpu"]) * 100 // cpu_total
                 + (free["memory"] - wanted["memory"]) * 100 // mem_total) // 2
        if score > best_score:
            best, best_score = node.metadata.name, score
    return best


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def bench_size(nodes: int, per_node: int, pending: int, simulate_pods: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cluster, pods = generate(nodes, per_node, pending)
        (Path(tmp) / "cluster.json").write_text(json.dumps(cluster))
        (Path(tmp) / "pending.json").write_text(json.dumps(pods))
        import yaml
        (Path(tmp) / "cluster.yaml").write_text(yaml.safe_dump(cluster))
        tracemalloc.start()
        state, load_json = timed(load_cluster, [Path(tmp) / "cluster.json"])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        _, load_yaml = timed(load_cluster, [Path(tmp) / "cluster.yaml"])
        pending_pods = load_objects(Path(tmp) / "pending.json")
    exe = Executable(load_plans()["default-scheduler"])
    evals, naive = [], []
    for pod in pending_pods:
        _, t = timed(schedule, exe, state, pod)
        evals.append(t)
        _, t = timed(naive_default, state, pod)
        naive.append(t)
    fresh = load_cluster_copy(state)
    placements, sim = timed(lambda: simulate({"default-scheduler": exe}, fresh, pending_pods[:simulate_pods]))
    median, naive_median = statistics.median(evals), statistics.median(naive)
    return {
        "nodes": nodes, "running_pods": nodes * per_node,
        "load_json_s": load_json, "load_yaml_s": load_yaml, "state_peak_mib": peak / 2**20,
        "eval_median_ms": median * 1000, "eval_p95_ms": sorted(evals)[int(len(evals) * 0.95) - 1] * 1000,
        "naive_median_ms": naive_median * 1000, "eval_vs_naive": median / naive_median,
        "simulate_pods": len(placements), "simulate_pods_per_s": len(placements) / sim,
    }


def load_cluster_copy(state):
    from policylang.cluster.state import ClusterState
    return ClusterState.build([*state.nodes.values(), *state.pods, *state.workloads, *state.services])


def compile_time() -> float:
    _, t = timed(load_plans)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,5000", help="node counts (15000 is the large one)")
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--pending", type=int, default=20, help="pods evaluated one by one per size")
    ap.add_argument("--simulate", type=int, default=20, help="pods scheduled in the simulate run")
    a = ap.parse_args()
    results = {"compile_stdlib_s": compile_time(), "sizes": []}
    for n in map(int, a.sizes.split(",")):
        results["sizes"].append(bench_size(n, a.pods_per_node, a.pending, a.simulate))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2))
    print(f"compile the stdlib default profile: {results['compile_stdlib_s'] * 1000:.0f} ms")
    head = ["nodes", "pods", "load json s", "load yaml s", "state MiB", "eval ms (p50)", "eval ms (p95)",
            "naive ms (p50)", "eval/naive", "simulate pods/s"]
    rows = [[str(r["nodes"]), str(r["running_pods"]), f"{r['load_json_s']:.2f}", f"{r['load_yaml_s']:.2f}",
             f"{r['state_peak_mib']:.0f}", f"{r['eval_median_ms']:.1f}", f"{r['eval_p95_ms']:.1f}",
             f"{r['naive_median_ms']:.1f}", f"{r['eval_vs_naive']:.1f}x", f"{r['simulate_pods_per_s']:.1f}"]
            for r in results["sizes"]]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()

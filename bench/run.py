"""Benchmarks: `make bench` (or `python bench/run.py [--sizes 500,5000] [--pending N]`).

Prints a table and writes bench/results/latest.json. Every figure is also given as a ratio
against references measured in the same run, because this machine is shared and noisy: the
reference interpreter (node by node) on the same pods, and a deliberately naive plain-Python
loop over the nodes for the default profile's core (taints, node affinity, resource fit,
LeastAllocated).

When Go is on PATH, the oracle (kube-scheduler's own framework, oracle/) is built with
oracle/build.sh, as tests/kube_oracle.py builds it, and its bench mode simulates the same pending
pods on the same generated cluster, every node scored and with adaptive sampling; policylang's
simulate pods/s is printed as a ratio of the framework's. The framework runs at parallelism 1
(deterministic), where kube-scheduler defaults to 16 workers. Without Go (or with --no-oracle)
those columns are left out with a one-line note.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate, kubectl_yaml  # noqa: E402

from policylang import Executable, load_cluster, load_objects, load_plans, schedule  # noqa: E402
from policylang.run.schedule import collector_paused  # noqa: E402
from policylang.forecast.simulate import simulate  # noqa: E402


def naive_default(state, pod) -> str | None:
    """The reference: a direct Python loop over the nodes, no policy language: untolerated
    taints, required node affinity, cpu and memory fit, LeastAllocated."""
    from policylang.api.selectors import node_selector_matches, tolerates
    from policylang.api.requests import pod_requests

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


def eval_times(exe, state, pods) -> list[float]:
    """Seconds per pod of `eval` (the state already loaded; the first pod warms the caches up
    and is measured too)."""
    with collector_paused():     # as `policylang eval` runs
        return [timed(schedule, exe, state, pod)[1] for pod in pods]


def simulate_rate(directory: Path, pods: int, percentage: "int | None") -> float:
    """Pods per second of `simulate`, as `policylang simulate` runs it: in a process of its own
    that loads the JSON dump, then schedules the first ``pods`` pending pods (the node cache
    starts empty and fills as it goes)."""
    out = subprocess.run([sys.executable, __file__, "--simulate-in", str(directory), str(pods), str(percentage)],
                         check=True, capture_output=True, text=True).stdout
    return float(out)


def simulate_here(directory: Path, pods: int, percentage: "int | None") -> float:
    state = load_cluster([directory / "cluster.json"])
    pending = load_objects(directory / "pending.json")[:pods]
    exe = Executable(load_plans()["default-scheduler"], "vector")
    placements, seconds = timed(lambda: simulate({"default-scheduler": exe}, state, pending, percentage=percentage))
    return len(placements) / seconds


ORACLE_BUILD = Path(__file__).resolve().parent.parent / "oracle" / "build.sh"


def oracle_binary() -> "tuple[str | None, str]":
    """The oracle's binary, built (or reused) by oracle/build.sh, or None and why not."""
    if shutil.which("go") is None:
        return None, "go is not on PATH"
    done = subprocess.run([str(ORACLE_BUILD)], capture_output=True, text=True)
    if done.returncode != 0:
        return None, "oracle/build.sh failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return done.stdout.strip().splitlines()[-1], ""


def framework_rate(binary: str, directory: Path, pods: int, percentage: int) -> dict:
    """The oracle's bench mode on the same cluster and the first ``pods`` pending pods that
    `simulate_here` schedules: the framework's simulate loop timed alone (not the load)."""
    subset = directory / f"pending-{pods}.json"
    if not subset.exists():
        items = json.loads((directory / "pending.json").read_text())["items"][:pods]
        subset.write_text(json.dumps({"kind": "List", "items": items}))
    out = subprocess.run([binary, "--bench", "--cluster", str(directory / "cluster.json"), "--pod", str(subset),
                          "--percentage-of-nodes-to-score", str(percentage)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def p50(xs):
    return statistics.median(xs)


def p95(xs):
    return sorted(xs)[max(0, int(len(xs) * 0.95) - 1)]


def bench_size(nodes: int, per_node: int, pending: int, simulate_pods: int, reference: bool,
               oracle: "str | None" = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cluster, pods = generate(nodes, per_node, max(pending, simulate_pods))
        (directory / "cluster.json").write_text(json.dumps(cluster))
        (directory / "pending.json").write_text(json.dumps(pods))
        (directory / "cluster.yaml").write_text(kubectl_yaml(cluster))
        del cluster
        out = {"nodes": nodes, "running_pods": nodes * per_node, "simulate_pods": simulate_pods,
               "simulate_pods_per_s": simulate_rate(directory, simulate_pods, 100),
               "simulate_adaptive_pods_per_s": simulate_rate(directory, simulate_pods, None)}
        if oracle:
            every, adaptive = (framework_rate(oracle, directory, simulate_pods, pct) for pct in (100, 0))
            out.update({
                "framework_pods_per_s": every["pods_per_s"], "framework_scheduled": every["scheduled"],
                "framework_adaptive_pods_per_s": adaptive["pods_per_s"],
                "framework_adaptive_scheduled": adaptive["scheduled"],
                "simulate_vs_framework": out["simulate_pods_per_s"] / every["pods_per_s"],
                "adaptive_vs_framework": out["simulate_adaptive_pods_per_s"] / adaptive["pods_per_s"],
            })
        _, load_yaml = timed(load_cluster, [directory / "cluster.yaml"])
        state, load_json = timed(load_cluster, [directory / "cluster.json"])
        # Memory on its own run: tracing allocations slows loading several times over.
        del state
        tracemalloc.start()
        state = load_cluster([directory / "cluster.json"])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        pending_pods = load_objects(directory / "pending.json")
    plan = load_plans()["default-scheduler"]
    vector, ref = Executable(plan, "vector"), Executable(plan, "reference")
    evals = eval_times(vector, state, pending_pods[:pending])
    naive = [timed(naive_default, state, pod)[1] for pod in pending_pods[:pending]]
    out.update({
        "load_json_s": load_json, "load_yaml_s": load_yaml, "state_peak_mib": peak / 2**20,
        "eval_median_ms": p50(evals) * 1000, "eval_p95_ms": p95(evals) * 1000,
        "naive_median_ms": p50(naive) * 1000, "eval_vs_naive": p50(evals) / p50(naive),
    })
    if reference:
        refs = eval_times(ref, state, pending_pods[:pending])
        out["reference_eval_median_ms"] = p50(refs) * 1000
        out["reference_vs_vector"] = p50(refs) / p50(evals)
    return out


def compile_time() -> float:
    _, t = timed(load_plans)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,5000", help="node counts (15000 is the large one)")
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--pending", type=int, default=20, help="pods evaluated one by one per size")
    ap.add_argument("--simulate", type=int, default=1000, help="pods scheduled in each simulate run")
    ap.add_argument("--reference-up-to", type=int, default=5000,
                    help="also time the reference interpreter's eval up to this many nodes")
    ap.add_argument("--no-oracle", action="store_true",
                    help="do not time kube-scheduler's framework (the oracle) side by side")
    ap.add_argument("--simulate-in", nargs=3, metavar=("DIR", "PODS", "PERCENTAGE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.simulate_in:
        directory, pods, percentage = a.simulate_in
        print(simulate_here(Path(directory), int(pods), None if percentage == "None" else int(percentage)))
        return
    oracle, why = (None, "--no-oracle") if a.no_oracle else oracle_binary()
    results = {"compile_stdlib_s": compile_time(), "sizes": [],
               "framework": "kube-scheduler's framework (oracle --bench), parallelism 1" if oracle else None}
    for n in map(int, a.sizes.split(",")):
        results["sizes"].append(bench_size(n, a.pods_per_node, a.pending, a.simulate, n <= a.reference_up_to,
                                           oracle))
        print(json.dumps(results["sizes"][-1]), file=sys.stderr, flush=True)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2))
    print(f"compile the stdlib default profile: {results['compile_stdlib_s'] * 1000:.0f} ms")
    if oracle:
        print("framework: kube-scheduler's own (oracle --bench) on the same pods, parallelism 1 (kube-scheduler: 16); "
              "x/framework = policylang's pods/s over the framework's")
    else:
        print(f"framework columns left out: the oracle is unavailable ({why})")
    head = ["nodes", "pods", "load json s", "load yaml s", "state MiB", "eval ms p50", "eval ms p95",
            "reference ms p50", "reference/vector", "naive ms p50", "eval/naive", "simulate pods/s",
            "adaptive pods/s"]
    if oracle:
        head += ["framework pods/s", "simulate/framework", "framework adaptive pods/s", "adaptive/framework"]
    rows = [[str(r["nodes"]), str(r["running_pods"]), f"{r['load_json_s']:.2f}", f"{r['load_yaml_s']:.2f}",
             f"{r['state_peak_mib']:.0f}", f"{r['eval_median_ms']:.1f}", f"{r['eval_p95_ms']:.1f}",
             f"{r['reference_eval_median_ms']:.1f}" if "reference_eval_median_ms" in r else "-",
             f"{r['reference_vs_vector']:.1f}x" if "reference_vs_vector" in r else "-",
             f"{r['naive_median_ms']:.1f}", f"{r['eval_vs_naive']:.1f}x", f"{r['simulate_pods_per_s']:.1f}",
             f"{r['simulate_adaptive_pods_per_s']:.1f}"]
            + ([f"{r['framework_pods_per_s']:.1f}", f"{r['simulate_vs_framework']:.2f}x",
                f"{r['framework_adaptive_pods_per_s']:.1f}", f"{r['adaptive_vs_framework']:.2f}x"] if oracle else [])
            for r in results["sizes"]]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()

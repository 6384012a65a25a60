"""Load on `policylang serve` over loopback: 8 concurrent clients, each sending one pod's filter and
then prioritize (on the nodes the filter passed), nodeCacheCapable (node names, the state held by
serve), on generated clusters of 500 and 5,000 nodes (bench/generate.py, 10 running pods a node),
the team profile of examples/policies (the default plugins and GPU isolation; only GPU isolation
runs in serve). Bounded: at most --pairs filter+prioritize pairs per client and --seconds per size.
Then memory across 1,000 policy reloads (tracemalloc, in-process).

    .venv/bin/python bench/serve.py                 # both sizes, about 2 minutes
    .venv/bin/python bench/serve.py --sizes 500 --pairs 20 --reloads 100
"""

from __future__ import annotations

import argparse
import http.client
import json
from pathlib import Path
import shutil
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
import time
import tracemalloc

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from generate import generate  # noqa: E402
from serve_process import Serve  # noqa: E402

CLIENTS = 8
PROFILE = (ROOT / "examples/policies/team.sched").read_text().replace(
    'use "./gpu_isolation.sched" weight 2', 'use "./gpu_isolation.sched" {gpuLabel: "gpu"} weight 2')


def _policy(tmp: Path) -> Path:
    shutil.copy(ROOT / "examples/policies/gpu_isolation.sched", tmp / "gpu_isolation.sched")
    (tmp / "team.sched").write_text(PROFILE)
    return tmp / "team.sched"


def _pct(values: list, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


def _client(port: int, pods: list, names: list, pairs: int, until: float, out: dict) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(pairs):
        if time.monotonic() > until:
            break
        pod = pods[i % len(pods)]
        started = time.perf_counter()
        try:
            conn.request("POST", "/filter", json.dumps({"Pod": pod, "NodeNames": names}),
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            body = resp.read()
            t1 = time.perf_counter()
            if resp.status != 200:
                out["failed"] += 1
                continue
            passed = json.loads(body)["NodeNames"]
            conn.request("POST", "/prioritize", json.dumps({"Pod": pod, "NodeNames": passed}),
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            t2 = time.perf_counter()
            if resp.status != 200:
                out["failed"] += 1
                continue
        except OSError:
            out["failed"] += 1
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        out["filter"].append(t1 - started)
        out["prioritize"].append(t2 - t1)
        out["pair"].append(t2 - started)
    return out


def _client_process(args) -> dict:
    port, pods, names, pairs, seconds = args
    return _client(port, pods, names, pairs, time.monotonic() + seconds, _empty())


def _empty() -> dict:
    return {"failed": 0, "filter": [], "prioritize": [], "pair": []}


def load(size: int, pairs: int, seconds: float) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cluster, pending = generate(size, 10, 200, seed=7)
        (tmp / "cluster.json").write_text(json.dumps(cluster))
        names = [n["metadata"]["name"] for n in cluster["items"] if n["kind"] == "Node"]
        pods = [{**p, "spec": {**p["spec"], "schedulerName": "team-scheduler"}} for p in pending["items"]]
        server = Serve(["--profile", str(_policy(tmp)), "--cluster", str(tmp / "cluster.json"),
                        "--reload-interval", "0"], tmp, timeout=300)
        try:
            # One pair first, outside the figures: the executors' per-node caches fill on it.
            _client(server.port, pods[:1], names, 1, time.monotonic() + 60, _empty())
            # Each client a process of its own: threads of one Python process would queue on its
            # GIL and measure the client, not the server.
            with ProcessPoolExecutor(CLIENTS) as pool:
                list(pool.map(_client_process, [(server.port, pods[:1], names, 0, 1)] * CLIENTS))   # started
                started = time.perf_counter()
                results = list(pool.map(_client_process, [(server.port, pods[i::CLIENTS], names, pairs, seconds)
                                                          for i in range(CLIENTS)]))
            wall = time.perf_counter() - started
        finally:
            server.stop()
    rows = []
    failed = sum(r["failed"] for r in results)
    for what in ("filter", "prioritize", "pair"):
        times = [x for r in results for x in r[what]]
        requests = len(times) * (2 if what == "pair" else 1)
        rows.append({"nodes": size, "what": "filter+prioritize" if what == "pair" else what, "count": len(times),
                     "failed": failed, "p50_ms": _pct(times, 0.5), "p99_ms": _pct(times, 0.99),
                     "per_s": requests / wall})
    return rows


def reloads(count: int) -> dict:
    """tracemalloc's traced memory after the first tenth of ``count`` reloads and after all."""
    from policylang.serve import Options, Policy

    with tempfile.TemporaryDirectory() as tmp:
        options = Options(profile=str(_policy(Path(tmp))))
        policy = Policy.load(options)
        tracemalloc.start()
        marks = {}
        started = time.perf_counter()
        for i in range(1, count + 1):
            policy = Policy.load(options)
            if i in (count // 10, count):
                marks[i] = tracemalloc.get_traced_memory()[0]
        took = time.perf_counter() - started
        tracemalloc.stop()
        del policy
    first, last = marks[count // 10], marks[count]
    return {"reloads": count, "after_first_tenth_mib": first / 2**20, "after_all_mib": last / 2**20,
            "growth_kib": (last - first) / 1024, "ms_per_reload": took / count * 1000}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 5000])
    ap.add_argument("--pairs", type=int, default=40, help="filter+prioritize pairs per client, at most")
    ap.add_argument("--seconds", type=float, default=30, help="time per size, at most")
    ap.add_argument("--reloads", type=int, default=1000)
    a = ap.parse_args()
    print(f"{CLIENTS} clients, loopback, nodeCacheCapable (NodeNames), team profile (GPU isolation in serve)")
    print(f"{'nodes':>6}  {'request':<18} {'count':>6} {'failed':>6} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8}")
    for size in a.sizes:
        for row in load(size, a.pairs, a.seconds):
            print(f"{row['nodes']:>6}  {row['what']:<18} {row['count']:>6} {row['failed']:>6} "
                  f"{row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f} {row['per_s']:>8.1f}", flush=True)
    if a.reloads:
        r = reloads(a.reloads)
        print(f"memory across {r['reloads']} policy reloads: {r['after_first_tenth_mib']:.1f} MiB after "
              f"{r['reloads'] // 10}, {r['after_all_mib']:.1f} MiB after {r['reloads']} "
              f"({r['growth_kib']:+.0f} KiB); {r['ms_per_reload']:.0f} ms a reload")
    return 0


if __name__ == "__main__":
    sys.exit(main())

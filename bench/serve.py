"""Load on `policylang serve` over loopback: 8 concurrent clients, each sending one pod's filter and
then prioritize (on the nodes the filter passed), nodeCacheCapable (node names, the state held by
serve), on generated clusters of 500 and 5,000 nodes (bench/generate.py, 10 running pods a node),
the team profile of examples/policies (the default plugins and GPU isolation; only GPU isolation
runs in serve). Bounded: at most --pairs filter+prioritize pairs per client and --seconds per size.
Then resident memory across 1,000 reloads of a changed policy, in-process, each followed by a
filter and a prioritize (--reloads, --reload-nodes).

    .venv/bin/python bench/serve.py                 # both sizes, 1 and 8 clients, 1,000 reloads
    .venv/bin/python bench/serve.py --sizes 500 --clients 8 --pairs 20 --reloads 100
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
from pathlib import Path
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
import time

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from generate import generate  # noqa: E402
from serve_process import Serve  # noqa: E402

try:
    import orjson
    _dumps, _loads = orjson.dumps, orjson.loads
except ImportError:
    _dumps, _loads = (lambda o: json.dumps(o).encode()), json.loads

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
    """Each request is timed from its first byte sent to its last byte read: the client's own
    encoding and decoding (kube-scheduler's, in Go) are left out, and done with orjson where it
    is installed, so that on a shared machine the clients take less of the server's CPU."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    for i in range(pairs):
        if time.monotonic() > until:
            break
        pod = pods[i % len(pods)]
        request = _dumps({"Pod": pod, "NodeNames": names})
        try:
            started = time.perf_counter()
            conn.request("POST", "/filter", request, headers)
            resp = conn.getresponse()
            body = resp.read()
            took = time.perf_counter() - started
            if resp.status != 200:
                out["failed"] += 1
                continue
            request = _dumps({"Pod": pod, "NodeNames": _loads(body)["NodeNames"]})
            started = time.perf_counter()
            conn.request("POST", "/prioritize", request, headers)
            resp = conn.getresponse()
            body = resp.read()
            took2 = time.perf_counter() - started
            if resp.status != 200 or not isinstance(_loads(body), list):
                out["failed"] += 1
                continue
        except OSError:
            out["failed"] += 1
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        out["filter"].append(took)
        out["prioritize"].append(took2)
        out["pair"].append(took + took2)
    return out


def _client_process(args) -> dict:
    port, pods, names, pairs, seconds = args
    return _client(port, pods, names, pairs, time.monotonic() + seconds, _empty())


def _empty() -> dict:
    return {"failed": 0, "filter": [], "prioritize": [], "pair": []}


def load(size: int, pairs: int, seconds: float, clients: int = CLIENTS) -> list[dict]:
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
            with ProcessPoolExecutor(clients) as pool:
                list(pool.map(_client_process, [(server.port, pods[:1], names, 0, 1)] * clients))   # started
                started = time.perf_counter()
                results = list(pool.map(_client_process, [(server.port, pods[i::clients], names, pairs, seconds)
                                                          for i in range(clients)]))
            wall = time.perf_counter() - started
        finally:
            server.stop()
    rows = []
    failed = sum(r["failed"] for r in results)
    for what in ("filter", "prioritize", "pair"):
        times = [x for r in results for x in r[what]]
        requests = len(times) * (2 if what == "pair" else 1)
        rows.append({"nodes": size, "clients": clients, "what": "filter+prioritize" if what == "pair" else what,
                     "count": len(times), "failed": failed, "p50_ms": _pct(times, 0.5), "p99_ms": _pct(times, 0.99),
                     "per_s": requests / wall})
    return rows


RELOADED = """policy GpuIsolation

param gpuLabel: string = "gpu-model"

def wants_gpu(p) = any(c in p.spec.containers where "nvidia.com/gpu" in c.resources.requests)

filter reserve_gpu_nodes {{
    reject when node.metadata.labels[params.gpuLabel] != null and not wants_gpu(pod) and len(node.metadata.name) < {i} + 99
        reason "node(s) are reserved for GPU workloads ({i})"
}}

score prefer_new_gpus {{
    value if node.metadata.labels[params.gpuLabel] in ["a100", "h{i}"] then 100
          else count(t in node.spec.taints where t.key != "k{i}")
}}
"""


def _resident() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def reloads(count: int, size: int) -> dict:
    """A server (in this process) on a generated cluster of ``size`` nodes whose team policy
    changes ``count`` times: each round the policy is rewritten, reloaded as the reload loop does
    (checked, compiled), and a pod filtered and prioritized on every node. Resident memory after
    the first tenth of the rounds and after all, and the state's node cache entries."""
    from policylang.run.vector import NodeCache
    from policylang.serve.server import Options, Server

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cluster, pending = generate(size, 10, 1, seed=7)
        (tmp / "cluster.json").write_text(json.dumps(cluster))
        (tmp / "team.sched").write_text(PROFILE)
        policy = tmp / "gpu_isolation.sched"

        def change(i: int) -> None:
            policy.write_text(RELOADED.format(i=i))
            os.utime(policy, ns=(10**18 + i * 10**9,) * 2)      # a new mtime, however fast the rounds

        change(0)
        server = Server(Options(profile=str(tmp / "team.sched"), cluster=(str(tmp / "cluster.json"),),
                                reload_interval=0), log=None)
        state = server.source.state
        names = list(state.nodes)
        pod = {**pending["items"][0], "spec": {**pending["items"][0]["spec"], "schedulerName": "team-scheduler"}}
        marks, took = {}, 0.0
        for i in range(1, count + 1):
            change(i)
            started = time.perf_counter()
            server.check_reload()
            took += time.perf_counter() - started
            passed, _, _ = server.answer("filter", {"Pod": pod, "NodeNames": names})
            assert f"({i})" in next(iter(passed["FailedNodes"].values())), "the policy was not reloaded"
            server.answer("prioritize", {"Pod": pod, "NodeNames": passed["NodeNames"]})
            if i in (count // 10, count):
                gc.collect()
                marks[i] = (_resident(), len(NodeCache.of(state).entries))
        server.close()
    (first, entries_first), (last, entries_last) = marks[count // 10], marks[count]
    return {"reloads": count, "nodes": size, "after_first_tenth_mib": first, "after_all_mib": last,
            "growth_mib": last - first, "entries": (entries_first, entries_last), "ms_per_reload": took / count * 1000}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[500, 5000], help="cluster sizes (none: the reloads alone)")
    ap.add_argument("--pairs", type=int, default=40, help="filter+prioritize pairs per client, at most")
    ap.add_argument("--seconds", type=float, default=30, help="time per size, at most")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, CLIENTS],
                    help=f"concurrent clients, one run each (default 1 and {CLIENTS})")
    ap.add_argument("--reloads", type=int, default=1000)
    ap.add_argument("--reload-nodes", type=int, default=500, help="the cluster's size for the reloads")
    a = ap.parse_args()
    print("loopback, nodeCacheCapable (NodeNames), team profile (GPU isolation in serve)")
    print(f"{'nodes':>6} {'clients':>7}  {'request':<18} {'count':>6} {'failed':>6} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'req/s':>8}")
    for size in a.sizes:
        for clients in a.clients:
            for row in load(size, a.pairs, a.seconds, clients):
                print(f"{row['nodes']:>6} {row['clients']:>7}  {row['what']:<18} {row['count']:>6} {row['failed']:>6} "
                      f"{row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f} {row['per_s']:>8.1f}", flush=True)
    if a.reloads:
        r = reloads(a.reloads, a.reload_nodes)
        print(f"resident memory across {r['reloads']} policy reloads, {r['nodes']} nodes, a pod filtered and "
              f"prioritized after each: {r['after_first_tenth_mib']:.1f} MiB after {r['reloads'] // 10}, "
              f"{r['after_all_mib']:.1f} MiB after {r['reloads']} ({r['growth_mib']:+.1f} MiB); node cache entries "
              f"{r['entries'][0]} → {r['entries'][1]}; {r['ms_per_reload']:.0f} ms a reload")
    return 0


if __name__ == "__main__":
    sys.exit(main())

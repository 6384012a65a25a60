"""No process-wide state outlives its use: a long-lived process (a server, a language server)
that loads and compiles a changed policy again and again, and evaluates pods with each, holds
flat memory. What it compiled and dropped (plans, their IR, the memos about that IR, the
executors' compiled forms) goes with it."""

from __future__ import annotations

import gc
import os
import tracemalloc
from pathlib import Path
import weakref

import pytest

from policylang import Executable, check, compile_all, load_cluster, load_objects, load_program, schedule
from policylang.cluster.state import ClusterState

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# A policy whose text changes every time (a number in a filter, a reason, a score), with a
# comprehension, a builtin, a def and interpolation, so that each compile makes new IR.
POLICY = '''
policy Team{i}

def tolerated(t) = any(tol in pod.spec.tolerations where tolerates(tol, t))

filter short_names {{
    reject when len(node.metadata.name) > {i} + 100 reason "name longer than ${{{i} + 100}}"
}}

filter taints {{
    reject when any(t in node.spec.taints where t.effect == "NoSchedule" and not tolerated(t))
        reason "node(s) had untolerated taint(s) ({i})"
}}

score fewer_taints {{
    value count(t in node.spec.taints where t.key != "k{i}") + {i} % 90
}}

profile team{i} {{
    use Team{i} weight 1
}}
'''

ROUNDS = 1000
WARM_UP = 20
# Each round compiles a new plan (~150 KiB of IR, memos and compiled closures, all of which
# stayed alive before: ~150 MiB over the rounds); what may stay is a small, bounded amount
# (the allocator's own keeping included, where the process's resident size is what is read).
BOUND = 24 * 2**20


def _round(i: int, objects: list, pod) -> None:
    (plan,) = compile_all(check(load_program(f"team{i}.sched", text=POLICY.format(i=i)))).values()
    decision = schedule(Executable(plan), ClusterState.build(objects), pod)
    assert decision.selected is not None


def _resident() -> "int | None":
    """The process's resident memory in bytes (Linux), or None where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def test_compiling_a_changed_policy_a_thousand_times_holds_flat_memory():
    objects = load_cluster([EXAMPLES / "cluster.yaml"]).objects()
    pod = load_objects(EXAMPLES / "pods" / "web.yaml")[0]
    assert gc.isenabled()       # loading left the collector as it found it
    for i in range(WARM_UP):    # the parser, the stdlib, the first compiled forms
        _round(i, objects, pod)
    gc.collect()
    # The resident size where it can be read (tracing every allocation makes a round 6 times
    # slower), else what tracemalloc traces.
    traced = _resident() is None
    if traced:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0] if traced else _resident()
        for i in range(WARM_UP, WARM_UP + ROUNDS):
            _round(i, objects, pod)
        gc.collect()
        grown = (tracemalloc.get_traced_memory()[0] if traced else _resident()) - before
    finally:
        if traced:
            tracemalloc.stop()
    assert grown < BOUND, f"{grown / 2**20:.1f} MiB more after {ROUNDS} compiles of a changed policy"


# ---- policylang serve: a policy reloaded while the server answers ----------------------------

SERVED = '''policy Team

def wants_gpu(p) = any(c in p.spec.containers where "nvidia.com/gpu" in c.resources.requests)

filter reserve_gpu_nodes {{
    reject when node.metadata.labels["gpu-model"] != null and not wants_gpu(pod) and len(node.metadata.name) < {i} + 99
        reason "node(s) are reserved for GPU workloads ({i})"
}}

score prefer_new_gpus {{
    value if node.metadata.labels["gpu-model"] in ["a100", "h{i}"] then 100
          else count(t in node.spec.taints where t.key != "k{i}")
}}
'''
# The profile is the team policy alone (as serve runs it), so that a reload checks no stdlib
# plugin: ~25 ms a round, most of it parsing the changed file. The check is exact (the node
# cache's entries), so a few dozen rounds show a leak; bench/serve.py runs 1,000 reloads of a
# whole profile (docs/benchmarks.md).
SERVED_ROUNDS = 40


def test_serve_reloading_a_changed_policy_holds_flat_memory(tmp_path):
    pytest.importorskip("orjson")
    from policylang.run.vector import NodeCache
    from policylang.serve.server import Options, Server

    (tmp_path / "team.sched").write_text('profile team-scheduler {\n    use "./policy.sched" weight 2\n}\n')
    policy = tmp_path / "policy.sched"

    def change(i: int) -> None:
        policy.write_text(SERVED.format(i=i))
        os.utime(policy, ns=(10**18 + i * 10**9,) * 2)    # a new mtime, however fast the rounds

    change(0)
    server = Server(Options(profile=str(tmp_path / "team.sched"), cluster=(str(EXAMPLES / "cluster.yaml"),),
                            reload_interval=0), log=None)
    state = server.source.state
    pod = {"metadata": {"name": "web", "namespace": "default", "uid": "u"},
           "spec": {"schedulerName": "team-scheduler", "containers": [{"name": "c", "image": "busybox"}]}}
    replaced = []

    def round_(i: int) -> int:
        replaced.append(weakref.ref(server.policy))
        change(i)
        server.check_reload()
        passed, _, _ = server.answer("filter", {"Pod": pod, "NodeNames": sorted(state.nodes)})
        reason = f"node(s) are reserved for GPU workloads ({i})"
        assert passed["FailedNodes"] == dict.fromkeys(["gpu-a1", "gpu-b1"], reason)
        server.answer("prioritize", {"Pod": pod, "NodeNames": passed["NodeNames"]})
        return len(NodeCache.of(state).entries)

    for i in range(1, WARM_UP // 4):
        kept = round_(i)
    gc.collect()
    before = _resident()
    for i in range(WARM_UP // 4, WARM_UP // 4 + SERVED_ROUNDS):
        # The state keeps values for the current plan alone (the old plans' keys are never met
        # again), however many reloads there were.
        assert round_(i) == kept
    gc.collect()
    assert [r for r in replaced if r() is not None] == []      # every replaced policy is gone
    if before is not None:
        grown = _resident() - before
        assert grown < 4 * 2**20, f"{grown / 2**20:.1f} MiB more after {SERVED_ROUNDS} reloads"


# ---- Engine.fork: a transaction tried and reverted again and again -------------------------------

FORK_CYCLES = 1000
FORK_BOUND = 8 * 2**20


def test_a_thousand_forks_evaluated_and_reverted_hold_flat_memory():
    """What a fork journals goes when it is reverted; what evaluating in it leaves is the
    executors' bounded caches. Measured over the second half of the cycles, after the first
    half has filled those caches to their working size."""
    from policylang import Engine

    engine = Engine(cluster=EXAMPLES / "cluster.yaml", executor="vector")
    pods = [p for p in load_objects(EXAMPLES / "pods") if p.metadata.name != "too-big"]
    names = list(engine.state.nodes)

    def cycle(i: int) -> None:
        with engine.fork() as fork:
            fork.bind(pods[i % len(pods)], names[i % len(names)])
            fork.evaluate(pods[(i + 1) % len(pods)])

    for i in range(FORK_CYCLES // 2):
        cycle(i)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(FORK_CYCLES // 2, FORK_CYCLES):
            cycle(i)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < FORK_BOUND, f"{grown / 2**20:.1f} MiB more after {FORK_CYCLES // 2} fork cycles"

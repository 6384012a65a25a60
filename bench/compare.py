"""This checkout against an earlier commit, in one process: `python bench/compare.py REV
[--nodes 5000] [--percentage N]`.

On a shared machine two runs a minute apart differ by 15-35%, more than most changes. Here
both versions load the same generated cluster and take turns on the same pods: `simulate` in
chunks of 50 pods (each version's state moves on by its own binds, which are the same), then
`eval` pod by pod on a fresh state of each. A slow minute slows both, and the ratios of their
times are the figures to read (below 1: this checkout is faster). Neither version's compiling of
the plan is timed (see compare_simulate).
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import generate  # noqa: E402

import policylang  # noqa: E402


def earlier(rev: str, into: Path):
    """The policylang of commit ``rev``, importable as policylang_<rev> (with its own stdlib)."""
    name = "policylang_" + "".join(c for c in rev if c.isalnum())
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", rev, "policylang", "stdlib_policies"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "policylang").rename(into / name)
    # The grammar is found by package name: resources.files("policylang") in policylang/parse.py or
    # policylang/grammar.py of earlier commits, resources.files("policylang.syntax") in
    # policylang/syntax/grammar.py since; whichever module says it is patched.
    for module in (into / name).rglob("*.py"):
        text = module.read_text()
        if 'resources.files("policylang' in text:
            module.write_text(text.replace('resources.files("policylang', f'resources.files("{name}'))
    sys.path.insert(0, str(into))
    return importlib.import_module(name)


def setup(mod, directory: Path):
    state = mod.load_cluster([directory / "cluster.json"])
    pods = mod.load_objects(directory / "pending.json")
    return state, pods, mod.Executable(mod.load_plans()["default-scheduler"], "vector")


def compare_simulate(versions: dict, directory: Path, pods: int, percentage, chunk: int = 50) -> dict:
    """Pods/s of each version, from a loaded state whose node cache is cold, with the plan compiled:
    each version first schedules a chunk, untimed, on a state of its own. Since 3db0d5e vector
    forms compile as the first pods reach them, where earlier commits compiled them all in
    Executable(), before the timed part; compiling is timed for neither."""
    runs = {}
    for name, mod in versions.items():
        state, pending, exe = setup(mod, directory)
        simulate_of(mod)({"default-scheduler": exe}, state, pending[:chunk], percentage=percentage)
        runs[name] = mod.load_cluster([directory / "cluster.json"]), pending, exe
    spent = dict.fromkeys(versions, 0.0)
    for i, start in enumerate(range(0, pods, chunk)):
        for name in (list(versions) if i % 2 == 0 else list(versions)[::-1]):
            mod = versions[name]
            state, pending, exe = runs[name]
            simulate = simulate_of(mod)
            t = time.process_time()
            simulate({"default-scheduler": exe}, state, pending[start:start + chunk], percentage=percentage)
            spent[name] += time.process_time() - t
    return {name: pods / seconds for name, seconds in spent.items()}


def simulate_of(mod):
    """``simulate`` of either layout: policylang/forecast/simulate.py, or policylang/simulate.py in
    commits before the forecast/ package."""
    try:
        return importlib.import_module(mod.__name__ + ".forecast.simulate").simulate
    except ModuleNotFoundError as e:
        if e.name not in (mod.__name__ + ".forecast", mod.__name__ + ".forecast.simulate"):
            raise
    return importlib.import_module(mod.__name__ + ".simulate").simulate


def compare_eval(versions: dict, directory: Path, pods: int) -> dict:
    runs = {name: setup(mod, directory) for name, mod in versions.items()}
    times: dict = {name: [] for name in versions}
    for i in range(pods):
        for name in (list(versions) if i % 2 == 0 else list(versions)[::-1]):
            state, pending, exe = runs[name]
            t = time.perf_counter()
            versions[name].schedule(exe, state, pending[i])
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) * 1000 for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="the earlier commit")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=1000, help="simulated pods (eval: 20)")
    ap.add_argument("--percentage", type=int, default=None, help="nodes to score, %% (default: adaptive)")
    a = ap.parse_args()
    from policylang.run.schedule import collector_paused

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cluster, pods = generate(a.nodes, 10, a.pods)
        (directory / "cluster.json").write_text(json.dumps(cluster))
        (directory / "pending.json").write_text(json.dumps(pods))
        versions = {"this": policylang, a.rev: earlier(a.rev, directory)}
        with collector_paused():
            rates = compare_simulate(versions, directory, a.pods, a.percentage)
            evals = compare_eval(versions, directory, 20)
    old = a.rev
    print(f"{'':>24} {'this':>10} {old:>10} {'this/' + old:>16}")
    print(f"{'simulate pods/s':>24} {rates['this']:>10.1f} {rates[old]:>10.1f} {rates[old] / rates['this']:>15.3f}x time")
    print(f"{'eval p50 ms':>24} {evals['this']:>10.2f} {evals[old]:>10.2f} {evals['this'] / evals[old]:>15.3f}x time")


if __name__ == "__main__":
    main()

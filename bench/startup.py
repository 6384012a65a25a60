"""Whole-process timings of the command line (issue 27): `python bench/startup.py [--runs 7]`.

Each command runs as a user runs it, a fresh `python -m policylang.cli` process, timed from
the outside (wall time, median of --runs), beside a bare `python -c pass` timed in the same
run, so that the ratio to it survives this shared machine's load:

- `check`, `fmt --check`, `lint` of one policy file and `eval` of the examples, each **cold**
  (an empty cache: what the first run after installing or upgrading pays) and **warm** (the
  cache filled: every later run); `check` also after an edit of the file (the stdlib cached,
  the edited file not: what an editor's save or a pre-commit hook pays);
- a 5,000-node, 50,000-pod dump (bench/generate.py) as YAML: `eval` of one pod end to end,
  against the time libyaml takes to parse the same file in-process
  (`yaml.load(text, Loader=yaml.CSafeLoader)`, the garbage collector paused: the least any
  Python tool spends to read it).

The processes get a cache directory of their own (XDG_CACHE_HOME in a temporary directory)
and write bytecode as an installed package has it. With ``--against REV`` the same commands run
on commit REV too, each of its runs next to this checkout's. The table ends with the targets.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from generate import generate, kubectl_yaml  # noqa: E402

EXAMPLES = ROOT / "examples"
POLICY = EXAMPLES / "policies" / "team.sched"
EVAL = ["eval", "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pods")]
TARGETS = {"check": 0.2, "fmt": 0.2, "lint": 0.2, "eval": 0.4}


def run(argv: list[str], env: dict) -> float:
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=env.get("PYTHONPATH", ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return seconds


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "policylang.cli", *args]


def commands(edited: Path) -> dict:
    return {"check": cli("check", str(POLICY)), "fmt": cli("fmt", "--check", str(POLICY)),
            "lint": cli("lint", str(POLICY)), "eval": cli(*EVAL), "check (edited)": cli("check", str(edited))}


def startup(runs: int, roots: dict[str, Path]) -> dict[str, dict]:
    """Each root's (a checkout's) cold and warm times, the roots' runs interleaved with each other
    and with `python -c pass`, so that a slow moment of this shared machine slows them alike."""
    with tempfile.TemporaryDirectory() as tmp:
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        envs, cmds = {}, {}
        for i, (label, root) in enumerate(roots.items()):
            own = Path(tmp) / str(i)
            own.mkdir()
            envs[label] = {**base, "XDG_CACHE_HOME": str(own / "cache"), "PYTHONPATH": str(root)}
            (own / "gpu_isolation.sched").write_text((POLICY.parent / "gpu_isolation.sched").read_text())
            cmds[label] = commands(own / "team.sched")
            run(cli("--help"), {**envs[label], "POLICYLANG_NO_CACHE": "1"})    # bytecode written, cache untouched
        bare = [sys.executable, "-c", "pass"]
        out = {label: {"cold": {}, "warm": {}, "runs": runs} for label in roots}
        for name in ("check", "fmt", "lint", "eval"):
            # Cold: each first run of a command meets an empty cache.
            times: dict = {label: [] for label in roots}
            for i in range(max(1, runs // 3)):
                for label, env in envs.items():
                    times[label].append(run(cmds[label][name], {**env, "XDG_CACHE_HOME": f"{env['XDG_CACHE_HOME']}-{name}-{i}"}))
            for label in roots:
                out[label]["cold"][name] = statistics.median(times[label])
        for label, env in envs.items():
            for name in ("check", "fmt", "lint", "eval"):
                run(cmds[label][name], env)                             # fills the cache
        times = {label: {name: [] for name in ("python -c pass", *cmds[label])} for label in roots}
        for i in range(runs):
            for label, env in envs.items():
                times[label]["python -c pass"].append(run(bare, env))
                for name, argv in cmds[label].items():
                    if name == "check (edited)":
                        Path(argv[-1]).write_text(POLICY.read_text() + f"\n# edit {i}\n")
                    times[label][name].append(run(argv, env))
        for label in roots:
            out[label]["warm"] = {name: statistics.median(ts) for name, ts in times[label].items()}
    return out


def yaml_dump(nodes: int, root: Path = ROOT) -> dict:
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cluster, pods = generate(nodes, 10, 1)
        dump = directory / "cluster.yaml"
        dump.write_text(kubectl_yaml(cluster))
        (directory / "pod.json").write_text(json.dumps(pods["items"][0]))
        del cluster
        text = dump.read_text()
        gc.disable()    # as policylang loads: with the collector on, libyaml's load takes 2-3x longer
        t = time.perf_counter()
        yaml.load(text, Loader=yaml.CSafeLoader)
        libyaml = time.perf_counter() - t
        gc.enable()
        del text
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(XDG_CACHE_HOME=str(directory / "cache"), PYTHONPATH=str(root))
        argv = cli("eval", "--cluster", str(dump), "--pod", str(directory / "pod.json"))
        run(argv, env)                       # the cache filled: the dump is what is measured
        end_to_end = run(argv, env)
        size = dump.stat().st_size
    return {"nodes": nodes, "yaml_mib": size / 2**20, "libyaml_s": libyaml, "eval_s": end_to_end,
            "ratio": end_to_end / libyaml}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs of each command (median)")
    ap.add_argument("--dump-nodes", type=int, default=5000, help="nodes in the YAML dump (0: skip it)")
    ap.add_argument("--against", metavar="REV",
                    help="also time the command line (not the dump) of commit REV (git archive), "
                         "its runs interleaved with this checkout's")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"this checkout": ROOT}
        if a.against:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.against], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            roots[a.against] = Path(tmp)
        timed = startup(a.runs, roots)
    results = {"startup": timed["this checkout"]}
    if a.against:
        results["against"] = {"rev": a.against, "startup": timed[a.against]}
    if a.dump_nodes:
        results["yaml"] = yaml_dump(a.dump_nodes)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "startup.json").write_text(json.dumps(results, indent=2))

    print_results(results, "this checkout")
    if "against" in results:
        print()
        print_results(results["against"], results["against"]["rev"])


def print_results(results: dict, title: str) -> None:
    s = results["startup"]
    bare = s["warm"]["python -c pass"]
    print(f"{title}: wall time, median of {s['runs']} runs; ratio = time / `python -c pass` "
          f"({bare * 1000:.0f} ms) in the same run")
    head = ["command", "cold s", "warm s", "warm / python", "target", ""]
    rows = []
    for name, warm in s["warm"].items():
        target = TARGETS.get(name.split()[0]) if name != "python -c pass" else None
        cold = s["cold"].get(name)
        rows.append([name, f"{cold:.3f}" if cold is not None else "-", f"{warm:.3f}", f"{warm / bare:.1f}x",
                     f"<= {target} s" if target else "-",
                     ("met" if warm <= target else "not met") if target else ""])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    if "yaml" in results:
        y = results["yaml"]
        print(f"YAML dump, {y['nodes']} nodes ({y['yaml_mib']:.0f} MiB): libyaml parse {y['libyaml_s']:.2f} s, "
              f"`eval` of one pod end to end {y['eval_s']:.2f} s: {y['ratio']:.2f}x (target <= 2x: "
              f"{'met' if y['ratio'] <= 2 else 'not met'})")

if __name__ == "__main__":
    main()

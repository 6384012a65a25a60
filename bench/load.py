"""Load benchmark: `python bench/load.py [--nodes 5000] [--baseline DIR]`.

Times `load_cluster` on the generated cluster (bench/generate.py, the same one bench/run.py
uses) as JSON (and with --yaml as YAML too), best of --repeat runs, each in a fresh interpreter.
With --baseline (another checkout, e.g. /work/main) the same files are loaded by that checkout's
code too, its runs interleaved with this checkout's, and each figure is given as a ratio of it:
how much the load changed, measured side by side on a machine that is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_TIMER = """
import json, sys, time
from policylang import load_cluster
t = time.perf_counter(); load_cluster([sys.argv[1]]); print(json.dumps(time.perf_counter() - t))
"""


def _time(checkout: Path, file: Path) -> float:
    out = subprocess.run([sys.executable, "-c", _TIMER, str(file)], check=True, capture_output=True, text=True,
                         env={"PYTHONPATH": str(checkout), "PATH": ""})
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="DIR", help="another checkout to compare with (e.g. the main branch)")
    ap.add_argument("--yaml", action="store_true", help="also time the YAML dump (minutes at 5,000 nodes)")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from generate import generate

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cluster, _ = generate(args.nodes, args.pods_per_node, 0)
        files = [directory / "cluster.json"]
        files[0].write_text(json.dumps(cluster))
        if args.yaml:
            import yaml
            files.append(directory / "cluster.yaml")
            files[1].write_text(yaml.dump(cluster, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)))
        del cluster
        checkouts = [HERE.parent] + ([Path(args.baseline)] if args.baseline else [])
        times = {(c, f): [] for c in checkouts for f in files}
        for _ in range(args.repeat):
            for f in files:
                for c in checkouts:
                    times[c, f].append(_time(c, f))
        here = {str(f): min(times[HERE.parent, f]) for f in files}
        base = {str(f): min(times[checkouts[-1], f]) for f in files} if args.baseline else None
    print(f"load_cluster, {args.nodes} nodes, {args.nodes * args.pods_per_node} pods (best of {args.repeat})")
    print(f"{'file':<14}{'this s':>9}" + (f"{'baseline s':>12}{'ratio':>8}" if base else ""))
    for f in files:
        row = f"{f.name:<14}{here[str(f)]:>9.2f}"
        if base:
            row += f"{base[str(f)]:>12.2f}{here[str(f)] / base[str(f)]:>8.2f}"
        print(row)


if __name__ == "__main__":
    main()

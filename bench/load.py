"""Load benchmark: `python bench/load.py [--nodes 5000] [--baseline DIR]`.

Times `load_cluster` on the generated cluster (bench/generate.py, the same one bench/run.py
uses) as JSON and as YAML, best of --repeat runs, in a fresh interpreter per checkout. With
--baseline (another checkout, e.g. /work/main) the same files are loaded by that checkout's
code too, and each figure is given as a ratio of it: how much the load changed on this machine,
which is shared and noisy, measured side by side.
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
import gc, json, sys, time
from policylang import load_cluster
best = {}
for name in sys.argv[2:]:
    times = []
    for _ in range(int(sys.argv[1])):
        t = time.perf_counter(); state = load_cluster([name]); times.append(time.perf_counter() - t)
        del state; gc.collect()
    best[name] = min(times)
print(json.dumps(best))
"""


def _time(checkout: Path, files: list[Path], repeat: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _TIMER, str(repeat), *map(str, files)], check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(checkout), "PATH": ""})
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="DIR", help="another checkout to compare with (e.g. the main branch)")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from generate import generate

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cluster, _ = generate(args.nodes, args.pods_per_node, 0)
        files = [directory / "cluster.json", directory / "cluster.yaml"]
        files[0].write_text(json.dumps(cluster))
        import yaml
        files[1].write_text(yaml.dump(cluster, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)))
        del cluster
        here = _time(HERE.parent, files, args.repeat)
        base = _time(Path(args.baseline), files, args.repeat) if args.baseline else None
    print(f"load_cluster, {args.nodes} nodes, {args.nodes * args.pods_per_node} pods (best of {args.repeat})")
    print(f"{'file':<14}{'this s':>9}" + (f"{'baseline s':>12}{'ratio':>8}" if base else ""))
    for f in files:
        row = f"{f.name:<14}{here[str(f)]:>9.2f}"
        if base:
            row += f"{base[str(f)]:>12.2f}{here[str(f)] / base[str(f)]:>8.2f}"
        print(row)


if __name__ == "__main__":
    main()

"""Language server latency: `python bench/lsp.py [--sizes 50,300,1000] [--repeat 3]`.

What a user waits for after pausing in typing, on generated policies of N filters (five lines
each): the first analysis of the file (parse, check, lint), the analysis after an edit inside one
declaration with the document's incremental parser, the same without it (the whole file parsed
again, as before it), and a field completion after `pod.spec.` typed in a declaration. The ratio
column is the edit without the incremental parser over the edit with it. The median of --repeat
runs is printed: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policylang.lsp.analysis import analyse  # noqa: E402
from policylang.lsp.completion import complete  # noqa: E402
from policylang.lsp.incremental import IncrementalParser  # noqa: E402

FILTER = '''filter f{i} {{
    let tolerations = pod.spec.tolerations
    reject when any(t in node.spec.taints where t.effect in ["NoSchedule"] and not any(tol in tolerations where tolerates(tol, t)))
        reason "node(s) had untolerated taint(s) {i}"
}}
'''


def policy(n: int) -> str:
    return "policy Generated\n\n" + "\n".join(FILTER.format(i=i) for i in range(n))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(n: int, repeat: int) -> dict:
    path = str(ROOT / "bench" / "generated.sched")   # never written: the editor's text is analysed
    text = policy(n)
    middle = f'taint(s) {n // 2}"'
    edited = text.replace(middle, f'taint(s) {n // 2}!"')
    typing = edited.replace(f"filter f{n // 2} {{\n    let tolerations = pod.spec.tolerations",
                            f"filter f{n // 2} {{\n    let tolerations = pod.spec.")
    line = typing[:typing.index("pod.spec.\n")].count("\n") + 1
    column = len("    let tolerations = pod.spec.") + 1
    rows = {"first": [], "edit": [], "edit_whole": [], "complete": []}
    for _ in range(repeat):
        parser = IncrementalParser()
        rows["first"].append(timed(lambda: analyse(path, text, parser=parser)))
        rows["edit"].append(timed(lambda: analyse(path, edited, parser=parser)))
        rows["edit_whole"].append(timed(lambda: analyse(path, edited)))
        broken = analyse(path, typing, parser=parser)
        items = []
        rows["complete"].append(timed(lambda: items.extend(complete(broken, line, column, parser))))
        assert any(i.label == "tolerations" for i in items), "completion found no fields"
    return {k: statistics.median(v) for k, v in rows.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,300,1000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"{'filters':>7}  {'lines':>6}  {'first':>7}  {'edit':>7}  {'edit, whole parse':>17}  {'ratio':>6}  "
          f"{'complete':>8}")
    for n in (int(s) for s in args.sizes.split(",")):
        r = measure(n, args.repeat)
        print(f"{n:>7}  {policy(n).count(chr(10)):>6}  {r['first']:>6.3f}s  {r['edit']:>6.3f}s  "
              f"{r['edit_whole']:>16.3f}s  {r['edit_whole'] / r['edit']:>5.1f}×  {r['complete']:>7.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

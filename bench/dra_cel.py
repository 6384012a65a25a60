"""DRA CEL selectors: µs per evaluation of one compiled selector against a device.

    python bench/dra_cel.py [--n 20000]

Measures policylang/dra/cel.py on the selector below (a device seen for the first time, and one
the allocator asks about again, whose converted maps are cached), and, for comparison, the other
CEL libraries for Python when they are installed: cel-expr-python (cel-cpp) and
common-expression-language (Rust), which cannot carry a Kubernetes quantity, so they run the
same selector with an int in its place; cel-python's own evaluator runs that int variant too.
Ratios are against policylang's cached-device figure, measured in the same run.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policylang.api.quantity import parse_quantity  # noqa: E402
from policylang.dra.cel import Device, compile_selector  # noqa: E402

SELECTOR = ('device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100" '
            '&& device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')
INT_PROXY = ('device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100" '
             '&& device.capacity["gpu.example.com"].memory >= 42949672960')
PLAIN = {"driver": "gpu.example.com", "attributes": {"gpu.example.com": {"model": "a100"}},
         "capacity": {"gpu.example.com": {"memory": 80 * 2**30}}}


def per_eval(fn, n: int) -> float:
    assert fn() is True or fn() == True  # noqa: E712 - cel libraries return their own bools
    return min(timeit.repeat(fn, number=n, repeat=3)) / n * 1e6


def rows(n: int) -> list[tuple[str, str, float | None, str]]:
    out = []
    selector = compile_selector(SELECTOR)
    device = Device("gpu.example.com", {"model": "a100", "vendor": "example"}, {"memory": parse_quantity("80Gi")})
    out.append(("policylang.dra.cel", "quantity", per_eval(lambda: selector.matches(device), n), "device seen before"))
    fresh = lambda: selector.matches(Device("gpu.example.com", {"model": "a100", "vendor": "example"},  # noqa: E731
                                            {"memory": parse_quantity("80Gi")}))
    out.append(("policylang.dra.cel", "quantity", per_eval(fresh, n), "a new Device each time"))
    try:
        from cel_expr_python import cel as cc
        env = cc.NewEnv(variables={"device": cc.Type.Map(cc.Type.STRING, cc.Type.DYN)})
        expr = env.compile(INT_PROXY)
        out.append(("cel-expr-python", "int proxy", per_eval(lambda: expr.eval(data={"device": PLAIN}).value(), n), ""))
    except ImportError:
        out.append(("cel-expr-python", "int proxy", None, "not installed"))
    try:
        import cel as rc
        program = rc.compile(INT_PROXY)
        out.append(("common-expression-language", "int proxy", per_eval(lambda: program.execute({"device": PLAIN}), n), ""))
    except (ImportError, AttributeError):
        out.append(("common-expression-language", "int proxy", None, "not installed"))
    try:
        import celpy
        cenv = celpy.Environment()
        prog = cenv.program(cenv.compile(INT_PROXY))
        data = {"device": celpy.json_to_cel(PLAIN)}
        out.append(("cel-python (celpy evaluator)", "int proxy", per_eval(lambda: prog.evaluate(data), max(n // 50, 20)), ""))
    except ImportError:
        out.append(("cel-python (celpy evaluator)", "int proxy", None, "not installed"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="evaluations per timing (best of 3)")
    args = parser.parse_args()
    table = rows(args.n)
    base = table[0][2]
    print(f"selector: {SELECTOR}\n")
    print("| library | capacity as | µs / eval | × policylang | note |\n|---|---|---:|---:|---|")
    for name, variant, us, note in table:
        shown = f"{us:.2f}" if us is not None else "—"
        ratio = f"{us / base:.2f}×" if us is not None else "—"
        print(f"| {name} | {variant} | {shown} | {ratio} | {note} |")


if __name__ == "__main__":
    main()

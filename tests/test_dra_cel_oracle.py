"""policylang/dra/cel.py against k8s.io/dynamic-resource-allocation/cel itself.

tests/dra_cel_oracle/main.go compiles and evaluates selectors with upstream's package (built here
against oracle/'s go.mod and go.sum, cached outside the tree as oracle/build.sh caches the
oracle). Every case must agree on the outcome: a compile error, an evaluation error, or the same
answer; and where both evaluate, our cost must be at least cel-go's actual cost (so a selector
upstream stops at CELSelectorExpressionMaxCost also stops here). The cases are the tables of
tests/test_dra_cel.py and a seeded batch of generated expressions. Without Go this skips with a
one-line reason; POLICYLANG_REQUIRE_ORACLE=1 (CI) makes that a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import test_dra_cel as cases
from policylang.api.quantity import parse_quantity
from policylang.dra.cel import CompileError, Device, EvalError, Version, compile_selector

ROOT = Path(__file__).parent.parent
SOURCE = Path(__file__).parent / "dra_cel_oracle" / "main.go"


def _required() -> bool:
    return os.environ.get("POLICYLANG_REQUIRE_ORACLE", "") not in ("", "0")


@pytest.fixture(scope="module")
def upstream() -> str:
    problem = None
    if shutil.which("go") is None:
        problem = "go is not on PATH: the DRA CEL oracle cannot be built"
    else:
        version = subprocess.run(["go", "version"], capture_output=True, text=True).stdout
        module = [ROOT / "oracle" / "go.mod", ROOT / "oracle" / "go.sum", SOURCE]
        key = hashlib.sha256(b"".join(p.read_bytes() for p in module) + version.encode()).hexdigest()[:16]
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        out = cache / "policylang" / "dra-cel-oracle" / key
        binary = out / "dra-cel-oracle"
        if binary.exists():
            return str(binary)
        out.mkdir(parents=True, exist_ok=True)
        (out / "go.mod").write_text((ROOT / "oracle" / "go.mod").read_text().replace(
            "module github.com/policylang/policylang/oracle", "module draceloracle", 1))
        shutil.copy(ROOT / "oracle" / "go.sum", out / "go.sum")
        shutil.copy(SOURCE, out / "main.go")
        done = subprocess.run(["go", "build", "-mod=mod", "-trimpath", "-o", "dra-cel-oracle.partial", "."],
                              cwd=out, capture_output=True, text=True)
        if done.returncode == 0:
            (out / "dra-cel-oracle.partial").rename(binary)
            return str(binary)
        problem = "building tests/dra_cel_oracle failed: " + done.stderr[-2000:]
    if _required():
        pytest.fail(f"POLICYLANG_REQUIRE_ORACLE is set, but: {problem}")
    pytest.skip(problem.splitlines()[0])


_ATOMS = ['1', '2u', '1.5', '"a,b"', "b'x'", "true", "null", "[1, 2]", '{"a": 1}', "device", "device.driver",
          'device.attributes["d"]', 'device.attributes["d"].i', 'device.attributes["d"].s',
          'device.attributes["d"].v', 'device.attributes["o"].x', 'device.capacity["d"].m', 'quantity("1Gi")',
          'semver("1.0.0")', "dyn(1)", 'dyn("x")', "x", "[]", "{}", "-9223372036854775808",
          "device.allowMultipleAllocations"]
_OPS = ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"]
_SUFFIXES = [".size()", '.contains("a")', '.startsWith("a")', '.matches("a+")', '.split(",")', ".lowerAscii()",
             '.isGreaterThan(quantity("1"))', '.compareTo(semver("1.0.0"))', ".add(1)", ".asInteger()",
             ".all(x, x > 0)", '.exists(x, x == "a")', ".map(x, x)", ".filter(x, true)", ".exists_one(x, true)",
             "[0]", '["a"]', ".a", ".major()", ".substring(1)", ".charAt(0)", '.indexOf("a")', '.join(",")',
             '.find("a")', ".isInteger()"]


def _generate(rnd: random.Random, depth: int = 0) -> str:
    r = rnd.random()
    if depth > 3 or r < 0.3:
        return rnd.choice(_ATOMS)
    if r < 0.6:
        return f"({_generate(rnd, depth + 1)} {rnd.choice(_OPS)} {_generate(rnd, depth + 1)})"
    if r < 0.7:
        return f"!{_generate(rnd, depth + 1)}"
    if r < 0.8:
        return f"({_generate(rnd, depth + 1)} ? {_generate(rnd, depth + 1)} : {_generate(rnd, depth + 1)})"
    if r < 0.85:
        return f"cel.bind(x, {_generate(rnd, depth + 1)}, {_generate(rnd, depth + 1)})"
    return _generate(rnd, depth + 1) + rnd.choice(_SUFFIXES)


# Selectors as people write them, over devices with qualified and unqualified names, to run
# the evaluation (most of the generated expressions above stop at the checker).
_DOMAINS = ['"gpu.example.com"', "device.driver", '"other.io"', '"nope"']
_IDS = ["model", "cores", "fw", "flag", "name", "missing"]
_EQUALS = ['"a100"', "108", "true", "1"]
_ORDERS = ["100", '"b"', "2.5"]
_VERSIONS = ['"1.2.3"', '"1.2.3-rc.1"', '"v1", true']
_QUANTITIES = ['"40Gi"', '"80Gi"', '"1500M"', '"1.5G"', '"0"', '"100m"', '"1e3"', '"2Ki"']
_DEVICES = [
    Device("gpu.example.com", {"model": "a100", "cores": 108, "fw": Version("1.2.3-rc.2"), "other.io/flag": True,
                               "name": "A100-80GB"}, {"memory": parse_quantity("80Gi"), "other.io/bw": parse_quantity("1500M")}),
    Device("gpu.example.com", {"model": "h100", "cores": 132, "fw": Version("2.0.0"), "flag": False},
           {"memory": parse_quantity("40Gi"), "bw": parse_quantity("1.5")}),
    Device("other.io", {"flag": True, "gpu.example.com/model": "x"}, {"bw": parse_quantity("100m")}),
    Device(""),
]


def _selector(rnd: random.Random, depth: int = 0) -> str:
    domain, ident = rnd.choice(_DOMAINS), rnd.choice(_IDS)
    attr = (f"device.attributes[{domain}].{ident}" if rnd.random() < 0.5
            else f'device.attributes[{domain}]["{ident}"]')
    cap = f'device.capacity[{rnd.choice(_DOMAINS)}].{rnd.choice(["memory", "bw", "missing"])}'
    q = f"quantity({rnd.choice(_QUANTITIES)})"
    r = rnd.random()
    if depth < 2 and r < 0.25:
        return f"({_selector(rnd, depth + 1)} {rnd.choice(['&&', '||'])} {_selector(rnd, depth + 1)})"
    if depth < 2 and r < 0.3:
        return f"!{_selector(rnd, depth + 1)}"
    return rnd.choice([
        f'{attr} == {rnd.choice(_EQUALS)}',
        f'{attr} {rnd.choice(["<", ">", ">=", "<="])} {rnd.choice(_ORDERS)}',
        f'{cap}.compareTo({q}) {rnd.choice(["<", ">=", "=="])} 0',
        f'{cap}.{rnd.choice(["isGreaterThan", "isLessThan"])}({q})',
        f"{cap}.add({q}).sub({rnd.randint(-5, 5)}).isGreaterThan({q})",
        f"{cap}.asApproximateFloat() > 1e10",
        f"{cap}.isInteger() && {cap}.asInteger() > 0",
        f'{attr}.{rnd.choice(["isGreaterThan", "isLessThan"])}(semver({rnd.choice(_VERSIONS)}))',
        f"{attr}.major() == {rnd.randint(0, 2)}",
        f'{domain} in device.{rnd.choice(["attributes", "capacity"])}',
        f'"{ident}" in device.attributes[{domain}]',
        f"has(device.attributes[{domain}].{ident})",
        f'{attr}.matches("{rnd.choice(["^a", "[0-9]+", "GB$"])}")',
        f'{attr}.{rnd.choice(["startsWith", "endsWith", "contains"])}("{rnd.choice(["a", "100", "GB"])}")',
        f'{attr}.lowerAscii().split("-").size() > 1',
        f'{attr} in ["a100", "h100"]',
        f'device.attributes[{domain}].{rnd.choice(["all", "exists", "exists_one"])}(k, k.size() > 2)',
        'device.attributes.exists(d, device.attributes[d].exists(k, k.startsWith("m")))',
        f'device.capacity[{domain}].map(k, device.capacity[{domain}][k]).filter(x, x.isGreaterThan(quantity("1"))).size() > 0',
        f"device.allowMultipleAllocations == {rnd.choice(['true', 'false'])}",
    ])


def _cases() -> list[tuple[str, Device]]:
    out = [(expression, Device(driver, attributes, capacity))
           for name, expression, driver, attributes, capacity, _ in cases.COMPILE_TEST_GO]
    out += [(expression, Device("d", {"s": "v"}))
            for _, expression, _ in cases.LIBRARY + cases.LANGUAGE + cases.NESTING]
    out += [(expression, Device("d", {"v": Version("1.0.0")})) for _, expression, _ in cases.ABORTING]
    device = Device("d", {"i": 3, "s": "a,b", "v": Version("1.2.3"), "o/x": True}, {"m": parse_quantity("2Gi")})
    rnd = random.Random(7)
    out += [(_generate(rnd), device) for _ in range(1000)]
    out += [(_selector(rnd), rnd.choice(_DEVICES)) for _ in range(1000)]
    return out


def _ours(expression: str, device: Device):
    try:
        selector = compile_selector(expression)
    except CompileError as err:
        return "compile", str(err), None
    try:
        matched, cost = selector.evaluate(device)
    except EvalError as err:
        return "eval", str(err), None
    return "match", matched, cost


def test_selectors_decide_as_upstream_does(upstream):
    batch = _cases()
    payload = [{"expression": e, "driver": d.driver,
                "attributes": {k: v for k, v in d.attributes.items() if not isinstance(v, Version)},
                "versions": {k: str(v) for k, v in d.attributes.items() if isinstance(v, Version)},
                "capacity": {k: str(v) for k, v in d.capacity.items()}} for e, d in batch]
    done = subprocess.run([upstream], input=json.dumps(payload), capture_output=True, text=True, check=True)
    disagreements, undercounted = [], []
    for (expression, device), theirs in zip(batch, json.loads(done.stdout)):
        kind, detail, cost = _ours(expression, device)
        if "compile_error" in theirs:
            agree = kind == "compile"
        elif "eval_error" in theirs:
            agree = kind == "eval"
        else:
            agree = kind == "match" and detail == theirs["match"]
        if not agree:
            disagreements.append(f"{expression[:200]!r}: ours {kind} {str(detail)[:200]!r}, upstream {str(theirs)[:300]}")
        elif cost is not None and cost < theirs.get("actual_cost", 0):
            undercounted.append(f"{expression!r}: ours {cost}, cel-go {theirs['actual_cost']}")
    assert not disagreements, "\n".join(disagreements[:20])
    assert not undercounted, "\n".join(undercounted[:20])


# validate_selector's "too complex" check is our own worst-case estimate, not cel-go's; on these
# selectors, from small to far beyond the limit, it decides as cel-go's estimate does.
_A = 'device.attributes["d"]'
ESTIMATED = [
    f"{_A}.all(a, {_A}.all(b, a != b))",
    f'{_A}.all(a, {_A}.all(b, {_A}.all(c, a + b + c != "")))',
    f'{_A}.all(a, {_A}.all(b, {_A}.all(c, {_A}.all(e, a + b + c + e != ""))))',
    "device.attributes.all(d, device.attributes[d].all(a, a.size() > 0))",
    f'{_A}.s.split(",").all(x, x.size() > 0)',
    f'{_A}.map(k, k).filter(k, k.startsWith("a")).size() > 0',
    f'{_A}.exists(k, {_A}[k] == "x")',
    f'{_A}.s.split(",").all(x, x.split(",").all(y, y.split(",").all(z, z.size() > 0)))',
    cases.NESTED_ALL,
]


def test_the_too_complex_check_agrees_with_cel_gos_estimate(upstream):
    payload = [{"expression": e, "driver": "d", "attributes": {}, "versions": {}, "capacity": {}} for e in ESTIMATED]
    done = subprocess.run([upstream], input=json.dumps(payload), capture_output=True, text=True, check=True)
    limit = 1_000_000
    for expression, theirs in zip(ESTIMATED, json.loads(done.stdout)):
        ours = compile_selector(expression).max_cost
        assert (ours > limit) == (theirs["max_cost"] > limit), (expression, ours, theirs["max_cost"])

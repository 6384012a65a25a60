"""Bounded work on hostile policies (issue 29): plans that inlining would blow up, evaluation
that would run for ever, nesting deeper than the stages can follow — each a clear error, never a
hang, a MemoryError or a traceback."""

import json
from pathlib import Path

import pytest

from policylang.cli import main

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def policy(tmp_path, lines: list[str], name="Hostile") -> Path:
    path = tmp_path / "hostile.sched"
    path.write_text("\n".join([f"policy {name}", *lines, "profile p {", f"    use {name}", "}", ""]))
    return path


def eval_args(path):
    return ("eval", "--profile", path, "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods" / "web.yaml")


# ---- inlining defs cannot grow the plan exponentially --------------------------------------------

def doubling_defs(levels: int) -> list[str]:
    """Each def calls the one before twice: inlined, level n is 2^n copies of f0."""
    return ["def f0(x) = x + 1"] + [f"def f{i}(x) = f{i - 1}(x) + f{i - 1}(x)" for i in range(1, levels + 1)] \
        + ["score s {", f"    value f{levels}(1) % 100", "}"]


@pytest.mark.parametrize("verb", ["check", "eval"])
def test_defs_that_double_at_each_level_are_refused_at_the_call_that_passes_the_limit(capsys, tmp_path, verb):
    path = policy(tmp_path, doubling_defs(30))
    code, _, err = run(capsys, *(eval_args(path) if verb == "eval" else (verb, path)))
    assert code == 2
    assert "error[P081]: the plan grows past 100,000 expressions at this call of f" in err
    assert "Traceback" not in err


def test_a_few_levels_of_doubling_defs_still_compile(capsys, tmp_path):
    code, _, err = run(capsys, "check", policy(tmp_path, doubling_defs(8)))
    assert code == 0, err


# ---- deep nesting: followed to a documented depth, a diagnostic beyond -----------------------------

def else_if_table(branches: int) -> list[str]:
    chain = "".join(f'        else if pod.metadata.name == "web-{i}" then {i % 100}\n' for i in range(1, branches))
    return ["score s {", f'    value if pod.metadata.name == "web-0" then 0\n{chain}        else 7', "}"]


@pytest.mark.parametrize("executor", ["reference", "vector"])
def test_a_long_else_if_table_evaluates(capsys, tmp_path, executor):
    path = policy(tmp_path, else_if_table(500))
    assert run(capsys, "check", path)[0] == 0
    code, out, err = run(capsys, *eval_args(path), "--executor", executor, "-o", "json")
    assert code == 0, err
    nodes = json.loads(out)["results"][0]["nodes"]
    assert {n["scores"]["Hostile"]["raw"] for n in nodes} == {7}


@pytest.mark.parametrize("verb", ["check", "fmt", "lint", "eval"])
def test_nesting_past_the_limit_is_a_diagnostic_on_every_verb(capsys, tmp_path, verb):
    path = policy(tmp_path, else_if_table(1100))
    args = eval_args(path) if verb == "eval" else (verb, path)
    code, _, err = run(capsys, *args)
    assert code == 2
    assert "error[P019]: this nests deeper than 1000 levels" in err
    assert "Traceback" not in err and "RecursionError" not in err


# ---- a cost budget per pod, and a wall-clock timeout ------------------------------------------------

HUGE = {
    "range": ['filter f {', '    reject when len(range(10000000000)) > 0', '        reason "never"', '}'],
    "nested": ['filter f {', '    reject when count(a in range(3000) where count(b in range(3000) where a == b) > 0)'
                             ' > 1 and node.metadata.name != ""',
               '        reason "never"', '}'],
    "node pods": ['score s {', '    value count(a in range(200000) where node.metadata.name == "x") % 100', '}'],
}


@pytest.mark.parametrize("executor", ["reference", "vector"])
@pytest.mark.parametrize("case", sorted(HUGE))
def test_evaluation_past_the_cost_budget_names_the_statement(capsys, tmp_path, case, executor):
    path = policy(tmp_path, HUGE[case])
    code, _, err = run(capsys, *eval_args(path), "--executor", executor, "--max-cost", "1000000")
    assert code == 2, err
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "value" in text or "reject" in text)
    assert f"error: {path}:{line}:" in err
    assert "evaluation ran past its cost budget of 1,000,000 steps for pod shop/web-7d4b9-mnopq in plugin Hostile" \
        in err
    assert "Traceback" not in err


def test_the_default_budget_refuses_a_range_that_would_take_all_memory(capsys, tmp_path):
    code, _, err = run(capsys, *eval_args(policy(tmp_path, HUGE["range"])))
    assert code == 2 and "ran past its cost budget" in err


@pytest.mark.parametrize("executor", ["reference", "vector"])
def test_a_fold_that_squares_its_accumulator_is_an_overflow_not_a_memory_error(capsys, tmp_path, executor):
    path = policy(tmp_path, ["score s {", "    value fold(acc = 2 for x in range(64): acc * acc) % 100", "}"])
    code, out, err = run(capsys, *eval_args(path), "--executor", executor)
    assert code == 1, err
    assert (f'running Score plugins: plugin "Hostile" failed with: {path}:3:5: integer overflow: '
            f'4294967296 * 4294967296 leaves the 64-bit integers') in out


# ---- a cost budget for the whole evaluation: every pod of the run together ----------------------

def pods_dir(tmp_path, count: int) -> Path:
    """``count`` copies of examples/pods/web.yaml, named web-0 …, in one directory."""
    import yaml

    pod = yaml.safe_load((EXAMPLES / "pods" / "web.yaml").read_text())
    out = tmp_path / "pods"
    out.mkdir()
    for i in range(count):
        pod["metadata"]["name"] = f"web-{i}"
        (out / f"web-{i}.yaml").write_text(yaml.safe_dump(pod))
    return out


# A thousand steps or two on each of examples/cluster.yaml's 7 nodes for every pod.
STEADY = ['filter f {', '    reject when count(a in range(1000) where node.metadata.name == pod.metadata.name) > 0',
          '        reason "never"', '}']


@pytest.mark.parametrize("executor", ["reference", "vector"])
@pytest.mark.parametrize("verb", ["eval", "simulate"])
def test_a_run_past_its_total_cost_budget_names_the_pod_and_statement_it_ran_out_at(capsys, tmp_path, executor,
                                                                                    verb):
    path = policy(tmp_path, STEADY)
    pods = ("--pods" if verb == "simulate" else "--pod", pods_dir(tmp_path, 5))
    args = (verb, "--profile", path, "--cluster", EXAMPLES / "cluster.yaml", *pods, "--executor", executor)
    code, out, err = run(capsys, *args, "-o", "json")
    assert code == 0, err
    # Each pod alone is far inside both budgets, the five together are not.
    code, _, err = run(capsys, *args, "--max-cost", "1000000", "--max-total-cost", "20000")
    assert code == 2, err
    assert f"error: {path}:3:5: evaluation ran past its total cost budget of 20,000 steps (every pod of the run " \
           f"together) at pod shop/web-" in err
    assert "at pod shop/web-0 " not in err     # the first pod took less than the whole
    assert "in plugin Hostile" in err and "--max-total-cost raises it" in err
    assert "Traceback" not in err


def test_the_total_budget_starts_whole_for_each_run_and_each_pod_keeps_its_own(capsys, tmp_path):
    path = policy(tmp_path, STEADY)
    args = ("eval", "--profile", path, "--cluster", EXAMPLES / "cluster.yaml", "--pod", pods_dir(tmp_path, 3))
    for _ in range(3):      # the same process: what one run spent is not taken from the next
        code, _, err = run(capsys, *args, "--max-total-cost", "100000")
        assert code == 0, err
    code, _, err = run(capsys, *args, "--max-cost", "1000")
    assert code == 2 and "ran past its cost budget of 1,000 steps for pod shop/web-0" in err


@pytest.mark.parametrize("verb", ["eval", "explain", "simulate"])
def test_timeout_stops_with_a_clear_error(capsys, tmp_path, verb):
    # Slow but small: 25 million steps a node over lists of 5,000.
    slow = 'count(a in range(5000) where count(b in range(5000) where a == b) > 1)'
    path = policy(tmp_path, ['score s {', f'    value {slow} % 100', '}'])
    pods = ("--pods" if verb == "simulate" else "--pod", EXAMPLES / "pods" / "web.yaml")
    code, _, err = run(capsys, verb, "--profile", path, "--cluster", EXAMPLES / "cluster.yaml", *pods,
                       "--timeout", "3", "--max-cost", "1000000000000")
    assert code == 2, err
    assert "the command ran past its --timeout of 3s" in err
    if verb == "simulate":
        assert "showing the pods placed so far" in err


def test_a_deadline_is_read_per_slice_of_the_budget_and_the_steps_stay_exact():
    import time

    from policylang import cost

    with cost.max_cost(25_000):
        with cost.deadline(600):
            for _ in range(25_000):     # three slices, the last one short: no more, no fewer steps
                cost.charge(1)
            with pytest.raises(cost.CostExceeded) as err:
                cost.charge(1)
            assert not isinstance(err.value, cost.DeadlinePassed)
        with cost.deadline(0.001):
            time.sleep(0.002)
            cost.charge(cost.SLICE)     # within the slice: the clock is not read
            with pytest.raises(cost.DeadlinePassed, match="ran past its deadline of 0.001s"):
                cost.charge(1)
        cost.charge(25_000)     # outside, the budget is whole again, with no deadline

import re
"""Hostile input (issue 29): what a pull request's author may put in policies, dumps, configs
and test files, and what every command must then do — refuse clearly (exit 2), never read
outside the policy's tree, never quote a file that is not a policy, never hang."""

import os
from pathlib import Path
import time

import pytest

from policylang.cli import main

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
SECRET = "root:x:0:0:secret-token-123"


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def outside(tmp_path):
    """A secret file, a policy outside the tree, and a tree (tmp_path/tree) to put policies in."""
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    (tmp_path / "other.sched").write_text("policy Other\n")
    (tmp_path / "tree").mkdir()
    return tmp_path


# ---- imports and uses confined ----------------------------------------------------------------

@pytest.mark.parametrize("line", [
    'import "{dir}/secret.txt" as s',
    'import "../secret.txt" as s',
    'import "{dir}/other.sched" as s',
    'import "../other.sched" as s',
    'profile p {{\n    use "../other.sched"\n}}',
    'profile p {{\n    use "{dir}/secret.txt"\n}}',
])
def test_imports_and_uses_stay_in_the_policys_tree(capsys, outside, line):
    policy = outside / "tree" / "team.sched"
    policy.write_text("policy Team\n" + line.format(dir=outside) + "\n")
    code, _, err = run(capsys, "check", policy)
    assert code == 2
    assert "error[P063]" in err
    assert "secret-token" not in err


@pytest.mark.parametrize("verb", [("check",), ("lint",), ("lint", "--format", "github"), ("lint", "--format", "json"),
                                  ("lint", "--format", "sarif")])
def test_a_special_file_imported_is_never_quoted_by_any_verb_or_format(capsys, tmp_path, monkeypatch, verb):
    """`import "/proc/self/environ"` printed CI's environment, secrets included, also through
    `lint --format github`."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("no /proc here")
    monkeypatch.setenv("POLICYLANG_TEST_SECRET", "secret-token-456")
    policy = tmp_path / "team.sched"
    policy.write_text('policy Team\nimport "/proc/self/environ" as e\n')
    code, out, err = run(capsys, *verb, policy)
    assert code == 2
    assert "P063" in out + err
    assert "secret-token-456" not in out + err and "POLICYLANG_TEST_SECRET" not in out + err


def test_a_symlink_inside_the_tree_does_not_lead_out_of_it(capsys, outside):
    (outside / "tree" / "link.sched").symlink_to(outside / "other.sched")
    policy = outside / "tree" / "team.sched"
    policy.write_text('policy Team\nimport "./link.sched" as o\n')
    code, _, err = run(capsys, "check", policy)
    assert code == 2 and "is outside the policy's directory" in err


def test_allow_root_lets_imports_reach_another_directory(capsys, outside):
    policy = outside / "tree" / "team.sched"
    policy.write_text('policy Team\nimport "../other.sched" as o\n')
    assert run(capsys, "check", policy)[0] == 2
    code, _, err = run(capsys, "check", "--allow-root", outside, policy)
    assert code == 0, err


def test_files_below_the_tree_and_the_stdlib_are_reachable(capsys, outside):
    (outside / "tree" / "lib").mkdir()
    (outside / "tree" / "lib" / "helpers.sched").write_text("policy Helpers\ndef one() = 1\n")
    policy = outside / "tree" / "team.sched"
    policy.write_text('policy Team\nimport "./lib/helpers.sched" as h\nimport taint_toleration\n'
                      'profile p {\n    use TaintToleration\n}\n')
    code, _, err = run(capsys, "check", policy)
    assert code == 0, err


def test_a_profile_that_is_not_a_policy_file_is_never_quoted(capsys, outside):
    code, _, err = run(capsys, "eval", "--profile", outside / "secret.txt", "--cluster", EXAMPLES / "cluster.yaml",
                       "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 2
    assert "error[P063]: not a .sched policy file" in err and "secret-token" not in err


def test_a_test_files_profile_stays_in_its_directory(capsys, outside):
    test = outside / "tree" / "x_test.yaml"
    test.write_text(f"profile: ../other.sched\ncluster: {EXAMPLES / 'cluster.yaml'}\ntests: []\n")
    code, _, err = run(capsys, "test", test)
    assert code == 2
    assert "field profile: '../other.sched' is outside the test file's directory" in err
    code, _, err = run(capsys, "test", "--allow-root", outside, test)
    assert code == 2 and "other.sched: no profile here, only policy Other" in err
    (outside / "other.sched").write_text("policy Other\nprofile other {\n    use TaintToleration\n}\n")
    code, _, err = run(capsys, "test", "--allow-root", outside, test)
    assert code == 0, err


def test_a_scheduler_name_cannot_inject_source(capsys, outside):
    config = outside / "tree" / "config.yaml"
    config.write_text('apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n'
                      'profiles:\n  - schedulerName: "x {\\n}\\nprofile y {\\n    use \\"../other.sched\\"\\n"\n')
    code, out, err = run(capsys, "plan", "--config", config, "--source")
    assert code == 2 and out == ""
    assert "field profiles[0].schedulerName: not a valid scheduler name" in err


# ---- special files refused --------------------------------------------------------------------

@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


def _fifo_commands(fifo: Path, tmp_path: Path):
    sched_fifo = tmp_path / "pipe.sched"
    os.mkfifo(sched_fifo)
    return [
        ["eval", "--cluster", fifo, "--pod", EXAMPLES / "pods" / "web.yaml"],
        ["eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", fifo],
        ["eval", "--config", fifo, "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods"],
        ["eval", "--profile", sched_fifo, "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods"],
        ["check", sched_fifo],
        ["fmt", sched_fifo],
        ["lint", fifo],
        ["lint", sched_fifo],
        ["test", fifo],
    ]


def test_a_fifo_is_refused_as_any_input_without_blocking(capsys, fifo, tmp_path):
    for args in _fifo_commands(fifo, tmp_path):
        started = time.monotonic()
        code, _, err = run(capsys, *args)
        assert code == 2, (args, err)
        assert "not a regular file" in err, (args, err)
        assert time.monotonic() - started < 5


@pytest.mark.parametrize("special", ["/dev/zero", "/proc/self/environ"])
def test_special_files_are_refused(capsys, special):
    if not Path(special).exists():
        pytest.skip(f"{special} does not exist here")
    code, _, err = run(capsys, "eval", "--cluster", special, "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 2 and "not a regular file" in err
    code, _, err = run(capsys, "test", special)
    assert code == 2 and "not a regular file" in err


# ---- encodings ----------------------------------------------------------------------------------

POLICY = "policy Team\n\nfilter f {\n    reject when pod.metadata.namespace == \"x\" reason \"node(s) are reserved for team x\"\n}\n"


def test_a_policy_with_a_byte_order_mark_is_accepted(capsys, tmp_path):
    policy = tmp_path / "bom.sched"
    policy.write_bytes(b"\xef\xbb\xbf" + POLICY.encode())
    code, _, err = run(capsys, "check", policy)
    assert code == 0, err
    code, out, err = run(capsys, "lint", policy)
    assert code == 0 and "no problems found" in out, err


@pytest.mark.parametrize("verb", ["check", "fmt", "fmt --check", "lint", "lint --fix", "plan", "eval"])
def test_invalid_utf8_is_a_clear_input_error_for_every_verb(capsys, tmp_path, verb):
    policy = tmp_path / "bad.sched"
    policy.write_bytes(POLICY.encode().replace(b'team x', b'team \xff'))
    args = verb.split() + [policy]
    if verb == "eval":
        args = ["eval", "--profile", policy, "--cluster", EXAMPLES / "cluster.yaml", "--pod", EXAMPLES / "pods"]
    code, _, err = run(capsys, *args)
    assert code == 2, err
    assert "not valid UTF-8 (byte 108, line 4)" in err
    assert "Traceback" not in err and "internal error" not in err


# ---- YAML inputs other than dumps -------------------------------------------------------------

BOMB = "".join([f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9)])


@pytest.mark.parametrize("kind", ["test", "lint", "config", "settings"])
def test_alias_bombs_and_duplicate_keys_are_refused_in_every_yaml_input(capsys, tmp_path, kind):
    for body, message in [('a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + BOMB,
                           "aliases expand to more than 100000 nodes"),
                          ("kind: KubeSchedulerConfiguration\nkind: Pod\n", "duplicate key 'kind' at line 2")]:
        if kind == "test":
            f = tmp_path / "x_test.yaml"
            args = ["test", f]
        elif kind == "lint":
            f = tmp_path / "x.yaml"
            args = ["lint", f]
        elif kind == "config":
            f = tmp_path / "config.yaml"
            args = ["plan", "--config", f]
        else:
            f = tmp_path / ".policylang.yaml"
            (tmp_path / "p.sched").write_text(POLICY)
            args = ["lint", tmp_path / "p.sched"]
        f.write_text(body)
        started = time.monotonic()
        code, _, err = run(capsys, *args)
        assert time.monotonic() - started < 10
        assert code == 2, err
        assert message in err and "Traceback" not in err


# ---- wrongly typed scheduler configurations ---------------------------------------------------

@pytest.mark.parametrize("body, message", [
    ("profiles: 5", ":3:11: field profiles: expected a list, got number"),
    ("profiles: [5]", ":3:12: field profiles[0]: expected an object (KubeSchedulerProfile), got number"),
    ("profiles: [{pluginConfig: 5}]", "field profiles[0].pluginConfig: expected a list, got number"),
    ("profiles: [{plugins: {score: {enabled: 5}}}]", "field profiles[0].plugins.score.enabled: expected a list"),
    ("percentageOfNodesToScore: true", ":3:27: field percentageOfNodesToScore: expected int32, got bool true"),
])
def test_a_wrongly_typed_scheduler_config_is_an_input_error(capsys, tmp_path, body, message):
    config = tmp_path / "config.yaml"
    config.write_text(f"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n{body}\n")
    code, _, err = run(capsys, "plan", "--config", config)
    assert code == 2 and message in err, err


# ---- wrongly typed objects, settings; inputs that cost too much ---------------------------------

@pytest.mark.parametrize("kind", ["ReplicaSet", "ReplicationController", "StatefulSet"])
@pytest.mark.parametrize("body, message", [
    ("spec: 5", "field spec: expected an object, got int"),
    ("spec: [1]", "field spec: expected an object, got list"),
    ("metadata: {name: w, labels: 5}", "field metadata.labels: expected a mapping, got int"),
])
def test_a_wrongly_typed_workload_in_a_dump_is_an_input_error(capsys, tmp_path, kind, body, message):
    dump = tmp_path / "w.yaml"
    dump.write_text(f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: w}}\n{body}\n".replace(
        "metadata: {name: w}\nmetadata", "metadata"))
    code, _, err = run(capsys, "eval", "--profile", ROOT / "fuzz" / "small.sched", "--cluster", EXAMPLES / "cluster.yaml",
                       "--cluster", dump, "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 2, err
    # The file with the line and column of the field, the object and what is wrong with it.
    assert re.search(rf"{re.escape(str(dump))}:\d+:\d+: {kind} w: {re.escape(message)}", err), err
    assert "internal error" not in err


@pytest.mark.parametrize("body, message", [
    ("metadata: {name: shop, labels: 5}", "Namespace shop: field metadata.labels: expected a mapping, got int"),
    ("metadata: {name: shop, labels: [a]}", "Namespace shop: field metadata.labels: expected a mapping, got list"),
    ("metadata: 7", "Namespace #1: field metadata: expected an object, got number"),
])
def test_a_wrongly_typed_namespace_is_an_input_error(capsys, tmp_path, body, message):
    dump = tmp_path / "ns.yaml"
    dump.write_text(f"apiVersion: v1\nkind: Namespace\n{body}\n")
    code, _, err = run(capsys, "eval", "--profile", ROOT / "fuzz" / "small.sched", "--cluster", EXAMPLES / "cluster.yaml",
                       "--cluster", dump, "--pod", EXAMPLES / "pods" / "web.yaml")
    assert code == 2 and message in err, err


@pytest.mark.parametrize("toml, message", [
    ('tool = "policylang"', "[tool] must be a table, not a string"),
    ("[tool.policylang.lint\n", "cannot read lint settings: "),
    ('[tool]\npolicylang = "x"', "[tool.policylang] must be a table, not a string"),
    ("[tool.policylang]\nlint = [1]", "[tool.policylang.lint] must be a table, not an array"),
    ("[tool.policylang.lint]\nselect = 5", "select: expected a list of rule codes"),
    ("[tool.policylang.lint]\nignore = [5]", "ignore: expected a list of rule codes"),
    ('[tool.policylang.lint.per-path."a/**"]\nselect = "S1"', "per-path 'a/**' select: expected a list"),
    ('[tool.policylang.lint.per-path]\n"a/**" = 5', "per-path 'a/**' takes select and ignore"),
])
def test_wrongly_typed_pyproject_lint_settings_are_an_input_error(capsys, tmp_path, toml, message):
    (tmp_path / "pyproject.toml").write_text(toml + "\n")
    (tmp_path / "p.sched").write_text(POLICY)
    code, _, err = run(capsys, "lint", tmp_path / "p.sched")
    assert code == 2 and f"{tmp_path / 'pyproject.toml'}: {message}" in err, err


@pytest.mark.parametrize("toml", ["[tool.other]\nx = 1\n", "tool = 5\n", "[[broken\n"])
def test_a_pyproject_without_policylang_settings_is_not_an_error(capsys, tmp_path, toml):
    # Not lint's file to judge: a Python project's pyproject.toml, however it is written.
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "p.sched").write_text(POLICY)
    code, out, err = run(capsys, "lint", tmp_path / "p.sched")
    assert code == 0 and "no problems found" in out, err


def test_a_star_heavy_glob_in_lint_settings_does_not_backtrack(capsys, tmp_path):
    # As a regex this pattern backtracks for minutes on the path below; the matcher is linear.
    pattern = "**a" * 30 + "**b"
    deep = tmp_path / ("a" * 200) / ("a" * 200)
    deep.mkdir(parents=True)
    (deep / "p.sched").write_text(POLICY)
    (tmp_path / ".policylang.yaml").write_text(f'lint:\n  per-path:\n    "{pattern}": {{ignore: [S1]}}\n')
    started = time.monotonic()
    code, out, err = run(capsys, "lint", deep / "p.sched")
    assert code == 0, err
    assert time.monotonic() - started < 10


def test_a_long_string_literal_lexes_in_linear_memory(capsys, tmp_path):
    # The string regex held backtracking state per character (~290 bytes a byte: 20 MB took 6 GB).
    import tracemalloc
    policy = tmp_path / "big.sched"
    policy.write_text('policy Big\n\ndef s() = "' + "a" * 400_000 + '\\n" + \'it\\\'s ' + "b" * 100_000 + "'\n")
    from policylang.syntax.parse import parse
    parse("policy Warm\n")                  # the parser itself is built once, outside the measure
    tracemalloc.start()
    try:
        module = parse(policy.read_text(), str(policy))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * policy.stat().st_size, peak
    assert module.decls[1].body.left.value == "a" * 400_000 + "\n"
    assert module.decls[1].body.right.value == "it's " + "b" * 100_000


def test_the_unused_let_rule_reads_each_statement_once(capsys, tmp_path, monkeypatch):
    # It gathered every later statement's names for each `let`: quadratic, 1,200 lets took 15 s.
    from policylang.lint.rules import names
    calls = []
    real = names.free_names
    monkeypatch.setattr(names, "free_names", lambda e: calls.append(e) or real(e))
    n = 300
    lets = "".join(f"    let x{i} = {f'x{i - 1}' if i else '1'} + 1\n" for i in range(n))
    policy = tmp_path / "lets.sched"
    policy.write_text(f'policy Lets\n\nfilter f {{\n    let unused = 2\n{lets}'
                      f'    reject when x{n - 1} > 5 reason "r"\n}}\n')
    code, out, err = run(capsys, "lint", "--select", "S301", policy)
    assert code == 1 and "'unused' is never used" in out and "'x" not in out, (out, err)
    assert len(calls) <= n + 3


# ---- numbers past what the API holds: refused at once by every command --------------------------

HUGE_QUANTITY = "1e999999999"   # 30 bytes that hung every command (10^999999999 computed)


def test_a_huge_quantity_is_refused_at_once_by_check_eval_and_lint(capsys, tmp_path):
    policy = tmp_path / "team.sched"
    policy.write_text(f"policy Team\nfilter f {{\n    reject when node.metadata.name == \"\" and "
                      f"milli({HUGE_QUANTITY}) > 0\n        reason \"never\"\n}}\n")
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: default}\nspec:\n"
                   f"  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: {HUGE_QUANTITY}}}}}}}]\n")
    started = time.monotonic()
    code, _, err = run(capsys, "check", policy)
    assert code == 2 and f"quantity '{HUGE_QUANTITY}' is out of range" in err
    code, _, err = run(capsys, "eval", "--cluster", EXAMPLES / "cluster.yaml", "--pod", pod)
    assert code == 2 and f"quantity '{HUGE_QUANTITY}' is out of range" in err
    code, out, err = run(capsys, "lint", pod)
    assert code in (1, 2) and HUGE_QUANTITY in out + err and "Traceback" not in err
    assert time.monotonic() - started < 30


def test_a_float_past_what_json_holds_in_simulate_is_an_input_error(capsys, tmp_path):
    """`1e400` in a pod given to simulate (YAML reads it as infinity) crashed."""
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: default}\nspec:\n"
                   "  priority: 1e400\n  containers: [{name: c, image: busybox, resources: {requests: {cpu: 1e400}}}]\n")
    code, _, err = run(capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--pods", pod)
    assert code == 2, err
    assert f"{pod}:5:13: Pod default/big: field spec" in err and "Traceback" not in err


@pytest.mark.parametrize("value, why", [("1 / 0", "division by zero"),
                                        ("9223372036854775807 + 1", "integer overflow: 9223372036854775807 + 1 "
                                                                    "leaves the 64-bit integers")])
def test_a_rule_value_that_cannot_be_computed_is_p057_not_a_crash(capsys, tmp_path, value, why):
    """A rule's max_skew is computed once, when the profile compiles: as a param's value, an error
    there is the policy's (it was an internal error, exit 3)."""
    policy = tmp_path / "rule.sched"
    policy.write_text("policy R\n\nrule r {\n"
                      f'    spread by "topology.kubernetes.io/zone" max_skew {value} when_unsatisfiable DoNotSchedule\n'
                      "}\n\nprofile p {\n    use R\n}\n")
    code, _, err = run(capsys, "check", policy)
    assert code == 2, err
    assert f"{policy}:4:54: error[P057]: this value cannot be computed: {why}" in err

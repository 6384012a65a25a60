"""Checker: every diagnostic is reported at the right place with its code, and its wording
is pinned by a golden file. Fixtures are chunked: chunks separated by `---`, each a file
that must fail, with `### CODE` on each line that must carry that error."""

import re
from pathlib import Path

import pytest

from policylang import check, load_program
from policylang.diagnostics import PolicyError

ERRORS = Path(__file__).parent / "fixtures" / "errors"


def chunks(path: Path):
    text = path.read_text()
    for i, chunk in enumerate(re.split(r"^---\n", text, flags=re.M)):
        yield i, chunk


def expected_marks(chunk: str) -> set[tuple[int, str]]:
    return {(n, m) for n, line in enumerate(chunk.splitlines(), 1) for m in re.findall(r"### (P\d+)", line)}


def diagnose(chunk: str, name: str, tmp_path: Path) -> PolicyError:
    path = tmp_path / name
    path.write_text(chunk)
    with pytest.raises(PolicyError) as info:
        check(load_program(path))
    return info.value


@pytest.mark.parametrize("index, chunk", list(chunks(ERRORS / "check.sched")), ids=lambda x: str(x)[:40])
def test_chunk_reports_marked_errors(index, chunk, tmp_path):
    err = diagnose(chunk, f"chunk{index}.sched", tmp_path)
    got = {(d.span.line, d.code) for d in err.diagnostics if d.severity == "error"}
    assert got == expected_marks(chunk)


def test_rendered_diagnostics_are_pinned(tmp_path, golden):
    out = []
    for index, chunk in chunks(ERRORS / "check.sched"):
        err = diagnose(chunk, f"chunk{index}.sched", tmp_path)
        out.append(err.render().replace(str(tmp_path) + "/", ""))
    golden(ERRORS / "check.sched.err", "\n\n".join(out) + "\n")


def test_several_errors_in_one_file_are_all_reported(tmp_path):
    err = diagnose("policy P\nfilter f {\n  reject when x > 1 reason y\n  reject when pod.spc reason \"z\"\n}\n",
                   "many.sched", tmp_path)
    assert [(d.span.line, d.code) for d in err.diagnostics] == [(3, "P013"), (3, "P013"), (4, "P012")]


def test_a_policy_implements_only_extension_points_that_decide(tmp_path):
    err = diagnose("policy P implements scores\nfilter f {\n  reject when true reason \"r\"\n}\n", "points.sched", tmp_path)
    assert [(d.span.line, d.code) for d in err.diagnostics] == [(1, "P018")]
    assert "help: did you mean 'score'?" in err.render()
    check(load_program(tmp_path / "points.sched", text="policy P implements score assumes filter P\n"))


def test_import_cycle_is_reported(tmp_path):
    (tmp_path / "a.sched").write_text('import "./b.sched" as b\n')
    (tmp_path / "b.sched").write_text('import "./a.sched" as a\n')
    with pytest.raises(PolicyError) as info:
        load_program(tmp_path / "a.sched")
    assert [d.code for d in info.value.diagnostics] == ["P060"]
    assert "import cycle" in info.value.diagnostics[0].message


def test_imported_defs_are_callable(tmp_path):
    (tmp_path / "lib.sched").write_text("def twice(x) = x * 2\n")
    (tmp_path / "p.sched").write_text('policy P\nimport "./lib.sched" as lib\n'
                                      'filter f {\n  reject when lib.twice(1) != 2 reason "math"\n}\n')
    check(load_program(tmp_path / "p.sched"))


def test_the_stdlib_checks_clean():
    from policylang import stdlib_dir
    for path in sorted(stdlib_dir().glob("*.sched")):
        check(load_program(path))


def test_check_all_reports_without_raising_and_keeps_each_expressions_type():
    from policylang.check import check_all
    from policylang.lint.sched_ast import all_exprs
    from policylang.syntax import ast as A
    text = ('policy P\n\nfilter f {\n    reject when pod.spec.tolerationz == null reason "no"\n'
            '    reject when len(node.spec.taints) > 0 reason "tainted"\n}\n')
    program = load_program("p.sched", text=text)
    checked, diagnostics = check_all(program)
    assert [d.code for d in diagnostics] == ["P012"]
    with pytest.raises(PolicyError):
        check(program)
    types = {f"{e.target.target.id}.{e.target.name}.{e.name}": str(checked.expr_types[e])
             for e in all_exprs(program.root_module) if isinstance(e, A.Field) and isinstance(e.target, A.Field)}
    assert types == {"pod.spec.tolerationz": "any", "node.spec.taints": "list[Taint]"}


def test_use_when_keeps_a_plugin_only_for_the_targets_where_it_holds(tmp_path):
    """`use P when COND` (default.sched: v1.37 runs NodeName's filter before NodeUnschedulable's):
    the plan of each target has the uses whose condition holds, in the profile's order."""
    from policylang import compile_profile
    from policylang.target import make_target

    path = tmp_path / "p.sched"
    path.write_text("profile p {\n    use NodeName when kubernetes.minor >= 37\n    use NodeUnschedulable\n"
                    "    use NodeName when kubernetes.minor < 37\n"
                    "    use ImageLocality weight 2 when kubernetes.gates.StorageCapacityScoring\n}\n")
    checked = check(load_program(path))
    order = {v: [p.name for p in compile_profile(checked, target=make_target(v)).plugins]
             for v in ("1.35", "1.36", "1.37")}
    assert order == {"1.35": ["NodeUnschedulable", "NodeName"], "1.36": ["NodeUnschedulable", "NodeName"],
                     "1.37": ["NodeName", "NodeUnschedulable", "ImageLocality"]}
    gated = compile_profile(checked, target=make_target("1.36", "StorageCapacityScoring=true"))
    assert [p.name for p in gated.plugins] == ["NodeUnschedulable", "NodeName", "ImageLocality"]


def test_two_uses_of_one_policy_that_hold_together_are_refused_for_that_target(tmp_path):
    """Conditions are constants over the target: compiling for a target where two uses of one
    policy both hold is P015; `policylang check` compiles for every version at its default gates,
    so it is found there, not only once someone targets that version."""
    from policylang import compile_profile
    from policylang.profiles import check_file
    from policylang.target import make_target

    path = tmp_path / "p.sched"
    path.write_text("profile p {\n    use ImageLocality when kubernetes.minor >= 36\n"
                    "    use ImageLocality weight 2 when kubernetes.minor >= 37\n}\n")
    checked = check(load_program(path))
    assert [p.weight for p in compile_profile(checked, target=make_target("1.36")).plugins] == [1]
    assert compile_profile(checked, target=make_target("1.35")).plugins == ()
    with pytest.raises(PolicyError) as err:
        compile_profile(checked, target=make_target("1.37"))
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("P015", 3) and "Kubernetes 1.37" in d.message
    with pytest.raises(PolicyError) as err:
        check_file(path)
    assert [d.code for d in err.value.diagnostics] == ["P015"]

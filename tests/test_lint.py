"""policylang lint: every rule's findings pinned on a bad and a good fixture, the catalogue's
own examples, the output formats (SARIF checked against a SARIF 2.1.0 schema written from the spec), settings,
suppressions, --fix, exit codes, and the generated docs/lint-rules.md."""

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from policylang.cli import main
from policylang.lint import all_rules, lint
from policylang.lint.context import Options
from policylang.lint.docs import markdown
from policylang.lint.model import CATEGORY_DIGIT, Edit
from policylang.program import stdlib_dir

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "lint"
RULE_FIXTURES = sorted(p for p in (FIXTURES / "rules").iterdir() if p.suffix in (".sched", ".yaml"))
NODES = "3"  # the cluster size every fixture is linted for (S210 needs one)


@pytest.fixture
def at_root(monkeypatch):
    """Run from the repository root, so paths in the output are relative and stable."""
    monkeypatch.chdir(ROOT)


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(["lint", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# ---- the catalogue -------------------------------------------------------------------------------

def test_catalogue_is_complete_and_consistent():
    rules = all_rules()
    assert len(rules) >= 20
    assert len({r.code for r in rules}) == len(rules) and len({r.name for r in rules}) == len(rules)
    for r in rules:
        assert r.code[1] == CATEGORY_DIGIT[r.category]
        assert r.summary and len(r.rationale) > 80 and r.bad.strip() and r.good.strip()
        assert r.inputs or r.code == "S307", f"{r.code} checks nothing"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_a_bad_and_a_good_fixture(rule):
    names = [p.name for p in RULE_FIXTURES]
    assert any(n.startswith(f"{rule.code}_bad") for n in names)
    assert any(n.startswith(f"{rule.code}_good") for n in names)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_catalogue_examples_do_what_they_say(rule, tmp_path):
    """The bad example in the docs triggers exactly its rule; the good one nothing at all."""
    suffix = ".sched" if rule.example_lang == "sched" else ".yaml"
    for which, text in (("bad", rule.bad), ("good", rule.good)):
        path = tmp_path / which / f"example{suffix}"
        path.parent.mkdir()
        path.write_text(text)
        result = lint([str(path)], options=Options(nodes=int(NODES)))
        assert not result.input_errors, result.input_errors
        codes = {f.code for f, _ in result.findings}
        assert codes == ({rule.code} if which == "bad" else set()), (which, codes)


# ---- golden findings per rule ----------------------------------------------------------------------

@pytest.mark.parametrize("fixture", RULE_FIXTURES, ids=lambda p: p.name)
def test_rule_fixture(fixture, capsys, golden, at_root):
    code, out, err = run(capsys, "--nodes", NODES, rel(fixture))
    assert err == ""
    rule_code = fixture.name.split("_")[0]
    if "_bad" in fixture.name:
        assert f"[{rule_code}]" in out
        heads = [line for line in out.splitlines() if f"[{rule_code}]: " in line]
        assert code == 1 or all(f"info[{rule_code}]" in line for line in heads)
    else:
        assert out.startswith("no problems found") and code == 0
    golden(fixture.with_name(fixture.name + ".out"), out)


def test_stdlib_and_examples_are_lint_clean(at_root):
    result = lint([str(stdlib_dir()), "examples"])
    assert not result.input_errors
    assert [f"{f.span}: {f.code} {f.message}" for f, _ in result.findings] == []


# ---- output formats ------------------------------------------------------------------------------------

MIXED = [FIXTURES / "rules" / "S301_bad.sched", FIXTURES / "rules" / "S104_bad.yaml",
         FIXTURES / "rules" / "S306_bad.sched"]


def test_text_output(capsys, golden, at_root):
    code, out, _ = run(capsys, *map(rel, MIXED))
    assert code == 1
    assert "S301_bad.sched:4:9: warning[S301]: 'zone' is never used (unused-let)" in out
    assert out.rstrip().endswith("found 8 problems (7 warnings, 1 info); 3 fixable with --fix")
    golden(FIXTURES / "formats" / "mixed.txt", out)


def test_json_output(capsys, golden, at_root):
    code, out, _ = run(capsys, "--format", "json", *map(rel, MIXED))
    doc = json.loads(out)
    assert doc["schema"] == "policylang/lint/v1" and doc["files"] == 3
    first = doc["findings"][0]
    assert first["code"] == "S104" and first["line"] == 8 and first["column"] == 25
    assert {f["severity"] for f in doc["findings"]} == {"warning", "info"}
    golden(FIXTURES / "formats" / "mixed.json", out)


def test_github_output(capsys, golden, at_root):
    _, out, _ = run(capsys, "--format", "github", *map(rel, MIXED))
    lines = out.splitlines()
    assert lines[0].startswith("::warning file=tests/fixtures/lint/rules/S104_bad.yaml,line=8,col=25,")
    assert any(line.startswith("::notice ") for line in lines)   # info → notice
    assert all("\n" not in line for line in lines) and "%0A" in out  # notes are escaped onto one line
    golden(FIXTURES / "formats" / "mixed.github", out)


def test_sarif_is_valid_sarif_2_1_0(capsys, at_root):
    """Every fixture's findings, as SARIF, validate against the SARIF 2.1.0 schema (tests/fixtures/lint/sarif-2.1.0.schema.json, written from the spec)."""
    schema = json.loads((FIXTURES / "sarif-2.1.0.schema.json").read_text())
    _, out, _ = run(capsys, "--format", "sarif", "--nodes", NODES, rel(FIXTURES / "rules"))
    doc = json.loads(out)
    jsonschema.Draft4Validator(schema).validate(doc)
    run_ = doc["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.code for r in all_rules()]
    for r in rules:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"]
        assert r["defaultConfiguration"]["level"] in ("error", "warning", "note")
    assert {res["ruleId"] for res in run_["results"]} >= {r.code for r in all_rules()}
    for res in run_["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        location = res["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"].startswith("tests/fixtures/lint/rules/")
        assert location["region"]["startLine"] >= 1 and location["region"]["startColumn"] >= 1


def test_sarif_with_no_findings_is_valid(capsys, at_root):
    schema = json.loads((FIXTURES / "sarif-2.1.0.schema.json").read_text())
    code, out, _ = run(capsys, "--format", "sarif", "examples")
    assert code == 0
    doc = json.loads(out)
    jsonschema.Draft4Validator(schema).validate(doc)
    assert doc["runs"][0]["results"] == []


def test_rules_listing(capsys):
    code, out, _ = run(capsys, "--rules")
    assert code == 0
    for r in all_rules():
        assert f"{r.code}  {r.severity:<8} {r.category:<12} {r.name}" in out


def test_docs_are_generated_from_the_catalogue():
    committed = (ROOT / "docs" / "lint-rules.md").read_text()
    assert committed == markdown(), "docs/lint-rules.md is stale: python -m policylang.lint.docs > docs/lint-rules.md"


# ---- exit codes -------------------------------------------------------------------------------------------

def test_exit_codes_follow_fail_on(capsys, at_root):
    warning, info = rel(FIXTURES / "rules" / "S301_bad.sched"), rel(FIXTURES / "rules" / "S306_bad.sched")
    assert run(capsys, warning)[0] == 1
    assert run(capsys, "--fail-on", "error", warning)[0] == 0
    assert run(capsys, info)[0] == 0                      # info findings do not fail by default
    assert run(capsys, "--fail-on", "info", info)[0] == 1
    assert run(capsys, rel(FIXTURES / "rules" / "S101_good.sched"))[0] == 0


def test_broken_policy_is_an_input_error(capsys, tmp_path):
    bad = tmp_path / "bad.sched"
    bad.write_text('policy P\nfilter f {\n    reject when pod.spec.nodeNme != "" reason "x"\n}\n')
    good = tmp_path / "good.sched"
    good.write_text('policy Q\nfilter f {\n    let unused = 1\n    reject when node.spec.unschedulable reason "node(s) were unschedulable"\n}\n')
    code, out, err = run(capsys, tmp_path)
    assert code == 2
    assert f"{bad}:3:17: error[P012]: PodSpec has no field 'nodeNme'" in err
    assert "[S301]" in out  # the other files are still linted


def test_unreadable_inputs_exit_2(capsys, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\nspec: [unclosed\n")
    code, _, err = run(capsys, broken)
    assert code == 2 and "invalid YAML" in err
    code, _, err = run(capsys, tmp_path / "missing.sched")
    assert code == 2 and "no such file or directory" in err
    config = tmp_path / "cfg.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "profiles:\n- plugins:\n    filter:\n      enabled:\n      - weight: 1\n")
    code, out, err = run(capsys, config)
    # A configuration kube-scheduler refuses is a finding of lint (it was read), not an input error.
    assert code == 1 and "error[S117]: profiles[0].plugins.filter.enabled[0].name: Required value" in out


def test_directories_skip_yaml_that_is_not_yaml(capsys, tmp_path):
    (tmp_path / "broken.yaml").write_text("kind: Pod\nspec: [\n")
    (tmp_path / "notes.yaml").write_text("kind: ConfigMap\n")
    code, out, err = run(capsys, tmp_path)
    # A file that was not linted is never counted among the files with no problems.
    assert code == 0 and "no problems found in 1 file; 1 file skipped, not linted" in out
    assert f"note: skipped {tmp_path / 'broken.yaml'}: not valid YAML: invalid YAML at line 3 column 1" in err


def test_helm_templates_are_skipped_with_the_reason_never_an_error(capsys, tmp_path):
    # As a pre-commit hook passes them: named explicitly.
    template = tmp_path / "templates" / "deployment.yaml"
    template.parent.mkdir()
    template.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n")
    code, out, err = run(capsys, template)
    assert code == 0
    assert out == "no problems found in 0 files; 1 file skipped, not linted (see the notes above)\n"
    assert err == f"note: skipped {template}: Helm template: not YAML until rendered (lint the output of `helm template`)\n"
    code, out, _ = run(capsys, "--format", "json", template)
    assert json.loads(out)["skipped"] == [{"path": str(template), "reason": "Helm template: not YAML until rendered "
                                                                           "(lint the output of `helm template`)"}]
    code, out, _ = run(capsys, "--format", "sarif", template)
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads((FIXTURES / "sarif-2.1.0.schema.json").read_text()))
    [note] = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("skipped, not linted: Helm template")
    code, out, _ = run(capsys, "--format", "github", template)
    assert out.startswith(f"::notice file={template},title=skipped::not linted: Helm template")


@pytest.mark.parametrize("name", ["S115_bad.yaml", "S116_bad.yaml"])
def test_fix_config_spelling(name, capsys, golden, tmp_path):
    target = tmp_path / name
    shutil.copy(FIXTURES / "rules" / name, target)
    code, out, _ = run(capsys, "--fix", target)
    assert "fixed 1 file" in out
    golden(FIXTURES / "fixed" / name, target.read_text())
    code, out, err = run(capsys, target)
    assert code == 0 and err == "", out


# ---- settings ------------------------------------------------------------------------------------------------

POLICY = """policy P
filter f {
    let unused = node.metadata.name
    reject when node.spec.unschedulable reason "failed"
}
"""


def _codes(capsys, *args) -> set[str]:
    code, out, err = run(capsys, "--format", "json", *args)
    assert code in (0, 1), err
    return {f["code"] for f in json.loads(out)["findings"]}


def test_pyproject_select_and_ignore(capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.policylang.lint]\nignore = ["S305"]\n')
    (tmp_path / "p.sched").write_text(POLICY)
    assert _codes(capsys, tmp_path / "p.sched") == {"S301"}
    (tmp_path / "pyproject.toml").write_text('[tool.policylang.lint]\nselect = ["style"]\nignore = ["unused-let"]\n')
    assert _codes(capsys, tmp_path / "p.sched") == {"S305"}


def test_settings_are_found_walking_up_and_nearest_wins(capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.policylang.lint]\nignore = ["S3"]\n')
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    (nested / "p.sched").write_text(POLICY)
    assert _codes(capsys, nested / "p.sched") == set()
    (tmp_path / "a" / ".policylang.yaml").write_text("lint:\n  ignore: [S301]\n")
    assert _codes(capsys, nested / "p.sched") == {"S305"}


def test_per_path_overrides(capsys, tmp_path):
    (tmp_path / ".policylang.yaml").write_text(
        "lint:\n  per-path:\n    'legacy/**':\n      select: [correctness]\n    '*.sched':\n      ignore: [S305]\n")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.sched").write_text(POLICY)
    (tmp_path / "new.sched").write_text(POLICY)
    assert _codes(capsys, tmp_path / "legacy" / "old.sched") == set()
    assert _codes(capsys, tmp_path / "new.sched") == {"S301"}


def test_cli_select_and_ignore(capsys, tmp_path):
    (tmp_path / "p.sched").write_text(POLICY)
    assert _codes(capsys, "--select", "S305", tmp_path / "p.sched") == {"S305"}
    assert _codes(capsys, "--ignore", "S30", tmp_path / "p.sched") == set()


def test_bad_settings_are_input_errors(capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.policylang.lint]\nselect = ["S999"]\n')
    (tmp_path / "p.sched").write_text(POLICY)
    code, _, err = run(capsys, tmp_path / "p.sched")
    assert code == 2 and "'S999' is not a rule code" in err
    assert run(capsys, "--select", "bogus", tmp_path / "p.sched")[0] == 2


# ---- suppressions ------------------------------------------------------------------------------------------

def test_suppressions_on_the_line_and_the_line_before(capsys, tmp_path):
    (tmp_path / "p.sched").write_text(
        "policy P\nfilter f {\n"
        "    let unused = 1  # policylang: ignore[S301]\n"
        "    # policylang: ignore[vague-reason]\n"
        "    reject when node.spec.unschedulable reason \"failed\"\n"
        "    # policylang: ignore[S301]\n\n"
        "    let far = 2\n}\n")
    assert _codes(capsys, tmp_path / "p.sched") == {"S301", "S307"}  # a blank line breaks the link


def test_suppressions_of_disabled_rules_are_not_reported_unused(capsys, tmp_path):
    (tmp_path / "p.sched").write_text("policy P\nfilter f {\n    # policylang: ignore[S305]\n"
                                      "    reject when node.spec.unschedulable reason \"node(s) were unschedulable\"\n}\n")
    assert _codes(capsys, tmp_path / "p.sched") == {"S307"}
    assert _codes(capsys, "--ignore", "S305", tmp_path / "p.sched") == set()


def test_suppressions_work_in_yaml(capsys, tmp_path):
    manifest = (FIXTURES / "rules" / "S209_bad.yaml").read_text().replace(
        "      - name: main\n", "      - name: main  # policylang: ignore[S209]\n")
    (tmp_path / "rs.yaml").write_text(manifest)
    code, out, _ = run(capsys, tmp_path / "rs.yaml")
    assert "'main'" not in out and "'sidecar'" in out


# ---- --fix --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["S301_bad.sched", "S302_bad.sched", "S304_bad.sched", "S307_bad.sched"])
def test_fix(name, capsys, golden, tmp_path):
    source = FIXTURES / "rules" / name
    target = tmp_path / name
    shutil.copy(source, target)
    if name == "S304_bad.sched":
        shutil.copy(FIXTURES / "rules" / "S302_good_library.sched", tmp_path)
    code, out, _ = run(capsys, "--fix", target)
    assert "fixed 1 file" in out
    fixed = target.read_text()
    golden(FIXTURES / "fixed" / name, fixed)
    # Nothing fixable is left, and the file still checks.
    code, out, err = run(capsys, "--format", "json", target)
    assert err == "" and not any(f["fixable"] for f in json.loads(out)["findings"])


def test_fix_never_writes_a_file_that_does_not_check(capsys, tmp_path, monkeypatch):
    """A fix whose result does not parse is not applied (here a rule that would delete a brace)."""
    from policylang.lint import get
    from policylang.lint.model import Finding

    path = tmp_path / "p.sched"
    path.write_text(POLICY)
    rule = get("S301")
    original = rule.checks["sched"]

    def breaking(ctx):
        for f in original(ctx):
            brace = ctx.text.rindex("}")
            yield Finding(f.code, f.message, f.span, f.notes, (Edit(brace, brace + 1, ""),))
    monkeypatch.setitem(rule.checks, "sched", breaking)
    code, out, err = run(capsys, "--fix", path)
    assert path.read_text() == POLICY
    assert "would break" in err and "fixed" not in out


def test_fix_leaves_yaml_alone(capsys, tmp_path):
    target = tmp_path / "s.yaml"
    shutil.copy(FIXTURES / "rules" / "S209_bad.yaml", target)
    before = target.read_text()
    run(capsys, "--fix", target)
    assert target.read_text() == before


def test_the_sarif_schema_rejects_what_the_spec_forbids():
    """The schema the SARIF tests use is not a rubber stamp."""
    schema = json.loads((FIXTURES / "sarif-2.1.0.schema.json").read_text())
    validator = jsonschema.Draft4Validator(schema)
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                          "results": [{"message": {"text": "m"}, "level": "error"}]}]}
    validator.validate(good)
    for bad in ({"version": "2.0.0", "runs": []},
                {"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]},
                {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                               "results": [{"message": {"text": "m"}, "level": "fatal"}]}]},
                {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [
                    {"message": {"text": "m"}, "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": "a"}, "region": {"startLine": 0}}}]}]}]}):
        assert not validator.is_valid(bad)


def test_an_input_error_is_never_summarised_as_no_problems(capsys, tmp_path):
    broken = tmp_path / "broken.sched"
    broken.write_text("policy P\nfilter f {\n")
    code, out, err = run(capsys, broken)
    assert code == 2
    assert "no problems found" not in out
    assert out.strip() == "no findings, but 1 input error (above): not every file was linted"
    assert "broken.sched:" in err


def test_fix_keeps_crlf_line_endings(capsys, tmp_path):
    source = FIXTURES / "rules" / "S301_bad.sched"
    target = tmp_path / "S301_bad.sched"
    target.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
    code, out, _ = run(capsys, "--fix", target)
    assert "fixed 1 file" in out
    assert target.read_bytes() == (FIXTURES / "fixed" / "S301_bad.sched").read_bytes().replace(b"\n", b"\r\n")


# ---- what check reports beyond the checker: a plan past its bound --------------------------------

def test_a_plan_that_inlining_grows_past_its_bound_is_reported_as_check_reports_it(capsys, golden, at_root):
    fixture = FIXTURES / "errors" / "P081_plan_too_large.sched"
    code, out, err = run(capsys, rel(fixture))
    assert code == 2
    assert main(["check", rel(fixture)]) == 2
    assert capsys.readouterr().err in err      # the same diagnostic, at the same call
    golden(fixture.with_name(fixture.name + ".out"), out + err)


def test_a_plan_within_its_bound_is_counted_not_compiled(at_root, monkeypatch):
    """Lint counts each profile's plan from the syntax (each def's inlined size once): the stdlib
    and the examples are far inside the bound, so lint compiles none of them."""
    from policylang import compile as compiler

    def refuse(*args):
        raise AssertionError("lint compiled a profile")
    monkeypatch.setattr(compiler._Compiler, "profile", refuse)
    result = lint([str(stdlib_dir() / "default.sched"), "examples"])
    assert not result.input_errors


def test_a_plan_whose_count_passes_the_bound_is_compiled_to_be_sure(tmp_path):
    """The count is an upper bound (statements count, and every plugin three times): past it, the
    profile is compiled, and a plan that compile finds within the bound is no error."""
    from test_budget import doubling_defs

    path = tmp_path / "doubling.sched"      # 13 levels: 65,535 expressions, counted as 196,612
    path.write_text("\n".join(["policy Doubling", *doubling_defs(13), "profile p {", "    use Doubling", "}", ""]))
    assert not lint([str(path)]).input_errors
    assert main(["check", str(path)]) == 0

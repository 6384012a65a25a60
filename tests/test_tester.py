"""policylang test: passing and failing expectations, JUnit output, coverage."""

import xml.etree.ElementTree as ET
from pathlib import Path

from policylang.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_the_example_tests_pass(capsys):
    assert main(["test", str(EXAMPLES / "policies")]) == 0
    assert capsys.readouterr().out.strip().endswith("4 passed, 0 failed")


def test_a_wrong_expectation_fails_with_a_diff(tmp_path, capsys):
    (tmp_path / "wrong_test.yaml").write_text(f"""
cluster: {EXAMPLES / 'cluster.yaml'}
tests:
  - name: web goes to worker-a1
    pod: {EXAMPLES / 'pods' / 'web.yaml'}
    expect:
      selected: worker-a1
      rejected: {{cp-1: {{plugin: NodeName}}}}
""")
    assert main(["test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "web goes to worker-a1" in out
    assert "- expected: 'worker-a1'" in out and "+ actual:   'worker-c1'" in out
    assert "rejected[cp-1]" in out
    assert out.strip().endswith("0 passed, 1 failed")


def test_junit_report(capsys):
    main(["test", "--format", "junit", str(EXAMPLES / "policies")])
    suite = ET.fromstring(capsys.readouterr().out)
    assert suite.tag == "testsuite" and suite.get("tests") == "4" and suite.get("failures") == "0"
    assert len(suite.findall("testcase")) == 4


def test_coverage_lists_what_no_test_exercised(capsys):
    main(["test", "--coverage", str(EXAMPLES / "policies")])
    out = capsys.readouterr().out
    assert "coverage: " in out
    assert "never rejected: " in out and "node_name.sched" in out
    assert "gpu_isolation.sched" not in out  # the team policy's reject was exercised


def test_bad_test_file_is_an_input_error(tmp_path, capsys):
    (tmp_path / "bad_test.yaml").write_text("cluster: nope.yaml\ntests: [{pod: x.yaml, expect: {colour: red}}]\n")
    assert main(["test", str(tmp_path)]) == 2
    assert "error:" in capsys.readouterr().err


# ---- malformed test files and hostile names (issue 29) ------------------------------------------

import pytest  # noqa: E402

POD = EXAMPLES / "pods" / "web.yaml"


@pytest.mark.parametrize("body, message", [
    ("tests: 5", "field tests: expected a list of tests, got int"),
    (f"tests: [{{pod: {POD}, expect: 5}}]", "field tests[0].expect: expected a mapping of expectations"),
    (f"tests: [{{pod: {POD}, expect: {{rejected: 5}}}}]", "field tests[0].expect.rejected: expected a mapping"),
    (f"tests: [{{pod: {POD}, expect: {{rejected: {{n: {{plugin: [1]}}}}}}}}]", "field tests[0].expect.rejected[n]"),
    (f"tests: [{{pod: {POD}, expect: {{scores: {{a: 5}}}}}}]", "field tests[0].expect.scores[a]"),
    (f"tests: [{{pod: {POD}, expect: {{scores: {{a: {{P: 5}}}}}}}}]", "field tests[0].expect.scores[a][P]"),
    (f"tests: [{{pod: {POD}, expect: {{feasible: 5}}}}]", "field tests[0].expect.feasible: expected a list"),
    (f"tests: [{{pod: {POD}, expect: {{message_contains: 5}}}}]", "field tests[0].expect.message_contains"),
    (f"tests: [{{name: [1], pod: {POD}, expect: {{}}}}]", "field tests[0].name: expected a string"),
    ("tests: [{pod: 5, expect: {}}]", "field tests[0].pod: expected a path or a Pod, got int"),
    ("profile: 5\ntests: []", "field profile: expected a .sched file or a stdlib profile name, got 5"),
])
def test_a_malformed_test_file_is_an_input_error_naming_the_field(tmp_path, capsys, body, message):
    f = tmp_path / "bad_test.yaml"
    f.write_text(f"cluster: {EXAMPLES / 'cluster.yaml'}\n{body}\n")
    assert main(["test", str(f)]) == 2
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err


def test_a_malformed_cluster_entry_is_an_input_error(tmp_path, capsys):
    f = tmp_path / "bad_test.yaml"
    f.write_text("cluster: 5\ntests: []\n")
    assert main(["test", str(f)]) == 2
    assert "field cluster: expected a path, a list of paths, or {items: [objects]}" in capsys.readouterr().err


def test_junit_is_well_formed_xml_whatever_the_names(tmp_path, capsys):
    f = tmp_path / "odd_test.yaml"
    f.write_text(f"cluster: {EXAMPLES / 'cluster.yaml'}\ntests:\n"
                 f"  - name: \"bell \\a, escape \\e[31m, nul \\0, <&> and ]]>\"\n"
                 f"    pod: {POD}\n    expect: {{selected: \"nowhere \\x01\"}}\n")
    assert main(["test", "--format", "junit", str(f)]) == 1
    suite = ET.fromstring(capsys.readouterr().out)
    case = suite.find("testcase")
    assert case.get("name") == "bell \\x07, escape \\x1b[31m, nul \\x00, <&> and ]]>"
    assert "nowhere \\x01" in case.find("failure").text

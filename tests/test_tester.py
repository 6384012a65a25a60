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

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
    ("tests: 5", "field tests: expected a list of tests, got number 5"),
    (f"tests: [{{pod: {POD}, expect: 5}}]", "field tests[0].expect: expected a mapping of expectations"),
    (f"tests: [{{pod: {POD}, expect: {{rejected: 5}}}}]", "field tests[0].expect.rejected: expected a mapping"),
    (f"tests: [{{pod: {POD}, expect: {{rejected: {{n: {{plugin: [1]}}}}}}}}]", "field tests[0].expect.rejected[n]"),
    (f"tests: [{{pod: {POD}, expect: {{scores: {{a: 5}}}}}}]", "field tests[0].expect.scores[a]"),
    (f"tests: [{{pod: {POD}, expect: {{scores: {{a: {{P: 5}}}}}}}}]", "field tests[0].expect.scores[a][P]"),
    (f"tests: [{{pod: {POD}, expect: {{feasible: 5}}}}]", "field tests[0].expect.feasible: expected a list"),
    (f"tests: [{{pod: {POD}, expect: {{message_contains: 5}}}}]", "field tests[0].expect.message_contains"),
    (f"tests: [{{name: [1], pod: {POD}, expect: {{}}}}]", "field tests[0].name: expected a string"),
    ("tests: [{pod: 5, expect: {}}]", "field tests[0].pod: expected a path or a Pod, got number 5"),
    ("profile: 5\ntests: []", "field profile: expected a .sched file or a stdlib profile name, got number 5"),
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


# ---- the test-file format: a schema checked first, every problem at its line and column (issue 46)

def _errors(tmp_path, capsys, text: str, name: str = "t_test.yaml") -> tuple[str, list[str]]:
    """Runs `policylang test` on a file with ``text``: exit 2, no crash, and its error lines."""
    f = tmp_path / name
    f.write_text(text)
    code = main(["test", str(f)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and "Traceback" not in err
    lines = err.strip().splitlines()
    assert all(line.startswith("error: ") for line in lines), err
    return str(f), [line.removeprefix("error: ") for line in lines]


CLUSTER = EXAMPLES / "cluster.yaml"


@pytest.mark.parametrize("body, where, message", [
    # The cases of the issue: each was an internal error (exit 3).
    (f"tests:\n  - name: x\n    pod: {POD}\n    expect: null\n", "5:13",
     "field tests[0].expect: expected a mapping of expectations"),
    (f"tests:\n  - pod:\n      kind: Deployment\n      metadata: {{name: p}}\n    expect: {{selected: null}}\n",
     "4:13", 'field tests[0].pod.kind: expected kind Pod (a test places one Pod), got string "Deployment"'),
    (f"tests:\n  - pod:\n      kind: 7\n      metadata: {{name: p}}\n    expect: {{selected: null}}\n",
     "4:13", "field tests[0].pod.kind: expected kind Pod (a test places one Pod), got number 7"),
    # A test without its pod or its expect, and a misspelt field.
    (f"tests:\n  - name: x\n    expect: {{}}\n", "3:5", "field tests[0].pod: a test needs a pod"),
    (f"tests:\n  - name: x\n    pod: {POD}\n", "3:5", "field tests[0].expect: a test needs an expect"),
    (f"tests:\n  - pod: {POD}\n    expect: {{selcted: a}}\n", "4:14",
     'field tests[0].expect.selcted: unknown field "selcted" (did you mean "selected"?)'),
    ("test:\n  - {}\n", "2:1", 'field test: unknown field "test" (did you mean "tests"?)'),
    (f"tests:\n  - pod: {POD}\n    expect: {{scores: {{a: {{P: {{min: 5, max: 101}}}}}}}}\n", "4:44",
     "field tests[0].expect.scores[a][P].max: expected an integer from 0 to 100"),
    ("kubernetes: {version: 1.34}\ntests: []\n", "2:23", 'field kubernetes.version: expected a version as a string'),
    ('kubernetes: {version: "1.20"}\ntests: []\n', "2:23", "field kubernetes.version: --kubernetes-version 1.20"),
    ("profile: no-such-profile\ntests: []\n", "2:10", "field profile: no profile named 'no-such-profile'"),
])
def test_a_malformed_test_file_is_reported_at_the_line_and_column(tmp_path, capsys, body, where, message):
    path, errors = _errors(tmp_path, capsys, f"cluster: {CLUSTER}\n{body}")
    assert f"{path}:{where}: {message}" in "\n".join(errors)


def test_an_inline_cluster_object_without_a_kind(tmp_path, capsys):
    path, errors = _errors(tmp_path, capsys, "cluster:\n  items:\n    - metadata: {name: n1}\n"
                                             "    - {kind: 7, metadata: {name: n2}}\n    - kind: Deployment\n"
                                             "tests: []\n")
    assert errors[0].startswith(f"{path}:3:7: field cluster.items[0].kind: an object needs a kind: one of ")
    assert errors[1].startswith(f"{path}:4:14: field cluster.items[1].kind: expected a kind a cluster holds (")
    assert errors[1].endswith("got number 7")
    assert errors[2].startswith(f"{path}:5:13: field cluster.items[2].kind: ") and 'got string "Deployment"' in errors[2]


def test_an_inline_pod_needs_no_kind(tmp_path, capsys):
    f = tmp_path / "t_test.yaml"
    f.write_text(f"cluster: {CLUSTER}\ntests:\n  - pod: {{metadata: {{name: p, namespace: shop}}, spec: "
                 "{containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}}\n"
                 "    expect: {message_contains: ''}\n")
    assert main(["test", str(f)]) == 0
    assert capsys.readouterr().out.strip().endswith("1 passed, 0 failed")


def test_every_wrong_type_is_reported_at_once_in_file_order(tmp_path, capsys):
    path, errors = _errors(tmp_path, capsys, f"""\
profile: [1]
cluster: {CLUSTER}
kubernetes: {{featureGates: {{A: true, B: 2}}}}
tests:
  - name: 7
    pod: 5
    expect:
      selected: false
      feasible: [a, 1]
      rejected: {{a: {{plugin: 5, reasn: x}}, 3: {{}}}}
      scores: {{a: {{P: {{min: 90, max: 10}}}}, b: 5}}
      message: [1]
      message_contains: null
  - 3
""")
    assert errors == [
        f"{path}:1:10: field profile: expected a .sched file or a stdlib profile name, got a list",
        f"{path}:3:41: field kubernetes.featureGates.B: expected true or false, got number 2",
        f"{path}:5:11: field tests[0].name: expected a string, got number 7",
        f"{path}:6:10: field tests[0].pod: expected a path or a Pod, got number 5",
        f"{path}:8:17: field tests[0].expect.selected: expected a node name or null, got boolean false",
        f"{path}:9:21: field tests[0].expect.feasible[1]: expected a node name, got number 1",
        f"{path}:10:30: field tests[0].expect.rejected[a].plugin: expected a string, got number 5",
        f'{path}:10:33: field tests[0].expect.rejected[a].reasn: unknown field "reasn" (did you mean "reason"?)',
        f"{path}:10:44: field tests[0].expect.rejected: expected a name as the key, got number 3",
        f"{path}:11:29: field tests[0].expect.scores[a][P].min: min 90 is above max 10",
        f"{path}:11:47: field tests[0].expect.scores[b]: expected a mapping of plugin → {{min, max}}, got number 5",
        f"{path}:12:16: field tests[0].expect.message: expected a string or null, got a list",
        f"{path}:13:25: field tests[0].expect.message_contains: expected a string, got null",
        f"{path}:14:5: field tests[1]: expected a test: a mapping with a name, a pod and an expect, got number 3",
    ]


def test_inline_objects_the_api_server_refuses_are_reported_where_they_are_written(tmp_path, capsys):
    path, errors = _errors(tmp_path, capsys, """\
cluster:
  items:
    - {kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: lots}}}
    - {kind: Node, metadata: {name: n2}}
    - {kind: Node, metadata: {name: n2}}
tests:
  - pod:
      metadata: {name: p}
      spec:
        containers:
          - name: c
            resources: {requests: {cpu: x}}
    expect: {selected: null}
""")
    assert errors[0].startswith(f"{path}:3:70: Node n1: field cluster.items[0].status.allocatable['cpu']: quantities")
    assert errors[1] == f"{path}:5:7: field cluster.items[2]: the same object as cluster.items[1]: give each object once"
    assert errors[2].startswith(f"{path}:12:41: Pod p: field tests[0].pod.spec.containers[0].resources.requests['cpu']")


def test_a_file_the_test_names_that_is_missing_is_reported_at_the_reference(tmp_path, capsys):
    path, errors = _errors(tmp_path, capsys, f"cluster: [{CLUSTER}, nothere.yaml]\n"
                                             "tests:\n  - pod: nope.yaml\n    expect: {}\n")
    assert errors[0] == f"{path}:1:{len(str(CLUSTER)) + 13}: field cluster: {tmp_path}/nothere.yaml: no such file or directory"
    assert errors[1] == f"{path}:3:10: field tests[0].pod: {tmp_path}/nope.yaml: no such file or directory"


def test_an_error_in_a_pod_file_a_test_names_is_reported_in_that_file(tmp_path, capsys):
    pod = tmp_path / "pod.yaml"
    pod.write_text("kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, resources: {requests: {cpu: x}}}]\n")
    _, errors = _errors(tmp_path, capsys, f"cluster: {CLUSTER}\ntests:\n  - pod: pod.yaml\n    expect: {{}}\n")
    assert errors[0].startswith(f"{pod}:4:54: Pod p: field spec.containers[0].resources.requests['cpu']")


@pytest.mark.parametrize("text, where, message", [
    ("", "1:1", "expected a mapping with `cluster` and `tests`, got an empty file"),
    ("- 1\n", "1:1", "expected a mapping with `cluster` and `tests`, got a list"),
    ("cluster: x\ntests: [\n", "3:1", "invalid YAML at line 3 column 1"),
    ("cluster: x\ncluster: y\n", "2:1", "duplicate key 'cluster' at line 2 (first at line 1)"),
    ("cluster: x\n---\ntests: []\n", "3:1", "expected one YAML document, found several"),
    ("tests: []\n", "1:1", "field cluster: a test file needs a `cluster`"),
])
def test_a_test_file_that_is_not_one_is_reported_at_the_place(tmp_path, capsys, text, where, message):
    path, errors = _errors(tmp_path, capsys, text)
    assert errors[0].startswith(f"{path}:{where}: {message}")

"""Loading cluster state: every shape kubectl prints, API defaults, and the indexes."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylang.cluster.load import load_cluster, load_objects
from policylang.api.quantity import parse_quantity
from policylang.diagnostics import InputError

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name, node=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x", **spec}]}}


def test_list_multidoc_json_and_directory_shapes(tmp_path):
    (tmp_path / "list.yaml").write_text(json.dumps({"kind": "List", "items": [NODE, pod("a", "n1")]}))
    (tmp_path / "multi.yaml").write_text("---\n" + json.dumps(pod("b", "n1")) + "\n---\n" + json.dumps(pod("c")))
    (tmp_path / "one.json").write_text(json.dumps({"kind": "PodList", "items": [
        {k: v for k, v in pod("d", "n1").items() if k != "kind"}]}))
    state = load_cluster([tmp_path])
    assert list(state.nodes) == ["n1"]
    assert sorted(p.metadata.name for p in state.pods) == ["a", "b", "c", "d"]
    assert sorted(p.metadata.name for p in state.pods_by_node["n1"]) == ["a", "b", "d"]


def test_api_defaults_are_applied(tmp_path):
    (tmp_path / "p.yaml").write_text(json.dumps(pod("p", resources={"limits": {"cpu": "2"}},
                                                   ports=[{"containerPort": 80, "hostPort": 80}])))
    [p] = load_objects(tmp_path / "p.yaml")
    assert p.metadata.namespace == "default"
    assert p.spec.scheduler_name == "default-scheduler"
    assert p.spec.containers[0].resources.requests["cpu"] == parse_quantity("2")  # requests default to limits
    assert p.spec.containers[0].ports[0].protocol == "TCP"


def test_requested_counts_sidecars_init_containers_and_overhead(tmp_path):
    doc = pod("p", "n1", resources={"requests": {"cpu": "1"}})
    doc["spec"]["initContainers"] = [
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "3"}}},
    ]
    doc["spec"]["overhead"] = {"cpu": "100m"}
    (tmp_path / "c.yaml").write_text(json.dumps({"kind": "List", "items": [NODE, doc]}))
    state = load_cluster([tmp_path / "c.yaml"])
    # max(1 + 0.5 (sidecar keeps running), 3 + 0.5 (init runs beside the sidecar)) + 0.1 overhead
    assert state.requested["n1"]["cpu"] == parse_quantity("3.6")
    # every container without a memory request counts 200Mi: the container and the sidecar
    assert state.nonzero_requested["n1"]["memory"] == parse_quantity("400Mi")


def test_terminated_pods_do_not_use_the_node(tmp_path):
    done = pod("done", "n1", resources={"requests": {"cpu": "1"}})
    done["status"] = {"phase": "Succeeded"}
    (tmp_path / "c.yaml").write_text(json.dumps({"kind": "List", "items": [NODE, done]}))
    state = load_cluster([tmp_path / "c.yaml"])
    assert state.pods_by_node["n1"] == []


def test_priority_comes_from_priority_classes(tmp_path):
    pc = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    default = {"kind": "PriorityClass", "metadata": {"name": "base"}, "value": 10, "globalDefault": True}
    high = pod("high")
    high["spec"]["priorityClassName"] = "high"
    (tmp_path / "c.yaml").write_text(json.dumps({"kind": "List", "items": [NODE, pc, default, high, pod("plain")]}))
    state = load_cluster([tmp_path / "c.yaml"])
    prio = {p.metadata.name: p.spec.priority for p in state.pods}
    assert prio == {"high": 1000, "plain": 10}


@pytest.mark.parametrize("doc, field", [
    ({**NODE, "status": {"allocatable": {"cpu": "four"}}}, "status.allocatable['cpu']"),
    ({**NODE, "spec": {"unschedulable": "yes"}}, "spec.unschedulable"),
    (pod("p", resources={"requests": []}), "spec.containers[0].resources.requests"),
])
def test_malformed_objects_name_the_field(tmp_path, doc, field):
    (tmp_path / "bad.yaml").write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        load_cluster([tmp_path / "bad.yaml"])
    assert info.value.field == field
    assert info.value.path == str(tmp_path / "bad.yaml")
    assert info.value.obj.startswith(doc["kind"])


@pytest.mark.parametrize("field, value, message", [
    ("cpu", "1e999999999", "quantity '1e999999999' is out of range"),
    ("memory", "99999999999999999999999", "is out of range"),
    ("pods", 2**70, "is out of range"),
])
def test_quantities_beyond_int64_name_the_file_object_and_field(tmp_path, field, value, message):
    f = tmp_path / "n.yaml"
    f.write_text(json.dumps({"kind": "Node", "metadata": {"name": "n1"},
                             "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110", field: value}}}))
    with pytest.raises(InputError) as err:
        load_objects(f)
    assert str(err.value).startswith(f"{f}:1:{err.value.column}: Node n1: field status.allocatable['{field}']: ")
    assert err.value.line == 1 and err.value.column > 1
    assert message in str(err.value)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1])
def test_integers_beyond_int64_are_refused(tmp_path, value):
    f = tmp_path / "p.yaml"
    f.write_text(f'{{"kind": "Pod", "metadata": {{"name": "p"}}, "spec": {{"priority": {json.dumps(value)}}}}}')
    with pytest.raises(InputError, match=r"p.yaml:1:\d+: Pod p: field spec.priority: integer .* is out of range"):
        load_objects(f)


def test_a_string_of_digits_is_not_an_integer(tmp_path):
    # The API decodes JSON numbers only: "9"*5000 (or "8080") where an integer belongs is refused
    # as a type error, not read as a number.
    f = tmp_path / "p.yaml"
    f.write_text(f'{{"kind": "Pod", "metadata": {{"name": "p"}}, "spec": {{"priority": "{"9" * 5000}"}}}}')
    with pytest.raises(InputError, match=r"p.yaml:1:\d+: Pod p: field spec.priority: expected an integer, got string"):
        load_objects(f)


# ---- bounded YAML and JSON (issue 29) -------------------------------------------------------------

def _alias_bomb() -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name, text, message", [
    ("bomb.yaml", _alias_bomb(), "aliases expand to more than 100000 nodes"),
    ("cycle.yaml", "kind: Pod\nmetadata: &m {name: p, x: [*m]}\n", "refers to a node containing it"),
    ("deep.yaml", "kind: Pod\nx: " + "[" * 2000 + "]" * 2000 + "\n", "nesting depth"),
    ("deep_block.yaml", "kind: Pod\n" + "".join(" " * i + f"k{i}:\n" for i in range(150)) + " " * 150 + "v\n",
     "nested more than 100 levels deep"),
    ("deep.json", '{"kind": "Pod", "x": ' + "[" * 100000 + "]" * 100000 + "}", "nested more than 100 levels deep"),
    ("deep2.json", '{"kind": "Pod", "x": ' + "[" * 150 + "]" * 150 + "}", "nested more than 100 levels deep"),
    ("digits.json", '{"kind": "Pod", "x": ' + "9" * 5000 + "}", "invalid JSON: a number has more than 4300 digits"),
    ("digits.yaml", "kind: Pod\nx: " + "9" * 5000 + "\n", "invalid YAML: a number has more than 4300 digits"),
    ("dup.yaml", "kind: Pod\nmetadata:\n  name: p\n  name: q\n", "duplicate key 'name' at line 4 (first at line 3)"),
    ("dup2.yaml", "kind: Pod\n---\nkind: Node\nkind: Pod\n", "duplicate key 'kind' at line 4 (first at line 3)"),
    ("utf8.yaml", b"kind: Pod\nmetadata: {name: \xff}\n", "not valid UTF-8 (byte 27, line 2)"),
])
def test_hostile_yaml_and_json_are_refused_quickly(tmp_path, name, text, message):
    import time
    f = tmp_path / name
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    started = time.monotonic()
    with pytest.raises(InputError) as err:
        load_objects(f)
    assert time.monotonic() - started < 5
    # With the line and column where the text says where (a duplicate key, a node too deep).
    assert re.match(re.escape(str(f)) + r"(:\d+:\d+)?: ", str(err.value)) and message in str(err.value)


def test_merge_keys_and_shared_anchors_still_load(tmp_path):
    f = tmp_path / "anchors.yaml"
    f.write_text("kind: List\nitems:\n- &p {kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}\n"
                 "- <<: *p\n  metadata: {name: b}\n")
    assert [p.metadata.name for p in load_objects(f)] == ["a", "b"]


def test_a_byte_order_mark_is_accepted(tmp_path):
    f = tmp_path / "bom.yaml"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(pod("p")).encode())
    assert [p.metadata.name for p in load_objects(f)] == ["p"]


def test_the_input_size_is_bounded_and_the_flag_raises_it(tmp_path, capsys):
    from policylang.cli import main
    from policylang.inputs import input_size_limit
    f = tmp_path / "p.yaml"
    f.write_text(json.dumps(pod("p")) + "\n" + "# padding\n" * 200)
    with input_size_limit(1000):
        with pytest.raises(InputError, match="larger than the input size limit of 1000 bytes"):
            load_objects(f)
    assert len(load_objects(f)) == 1
    from pathlib import Path
    examples = Path(__file__).parent.parent / "examples"
    code = main(["eval", "--max-input-size", "1K", "--cluster", str(f), "--pod", str(examples / "pods" / "web.yaml")])
    assert code == 2 and "raise it with --max-input-size" in capsys.readouterr().err
    code = main(["eval", "--max-input-size", "64M", "--cluster", str(f), "--pod", str(examples / "pods" / "web.yaml")])
    assert code == 1, capsys.readouterr().err  # no node in that cluster: unschedulable, not refused


def test_reading_a_small_file_does_not_allocate_the_size_limit(tmp_path):
    import tracemalloc

    from policylang.inputs import read_bytes
    f = tmp_path / "small.json"
    f.write_text(json.dumps(pod("p")))
    tracemalloc.start()
    try:
        read_bytes(f)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20     # the default limit is 256 MiB: a read of the limit at once would show it


# ---- the lean walk for alias-free texts (issue 27) -----------------------------------------------

@pytest.mark.parametrize("text, aliases", [
    ("a: *x\n", True), ("- *x\n", True), ("[*x]\n", True), ("{a: *x}\n", True), ('{"a":*x}\n', True),
    ("*x\n", True), ("a: [1,*x]\n", True), ("? *x\n: 1\n", True),
    ("host: '*.example.com'\n", False), ('host: "*.example.com"\n', False), ("a: b*c\n", False),
    ("a: 2*3\n", False),
])
def test_the_alias_pattern_never_misses_an_alias(text, aliases):
    from policylang.inputs import may_have_aliases
    assert may_have_aliases(text) is aliases


def _nested(depth: int) -> str:
    return "kind: Pod\nx: " + "[" * (depth - 2) + "]" * (depth - 2) + "\n"


@pytest.mark.parametrize("text", [
    "kind: Pod\nmetadata:\n  name: p\n",
    "kind: Pod\nspec:\n  containers:\n  - name: a\n    image: b\n    image: c\n",
    "- {a: 1, b: 2, a: 3}\n",
    "base: {a: 1}\nm: {<<: {a: 1}, <<: {b: 2}, c: 3}\n",
    "? [a, b]\n: 1\n? [a, b]\n: 2\n",
    _nested(100), _nested(101),
    "a: {x: 1}\n" * 1 + "b:\n" + "".join(f"  k{i}: {i}\n" for i in range(200)),
])
def test_the_lean_walk_decides_as_the_full_one(text):
    """For an alias-free text, check_node_graph with tree_size (the lean walk) refuses exactly
    what the full walk refuses, with the same message."""
    import yaml

    from policylang.diagnostics import InputError
    from policylang.inputs import check_node_graph

    def outcome(**kw):
        try:
            check_node_graph(yaml.compose(text, Loader=yaml.SafeLoader), "t.yaml", **kw)
        except InputError as err:
            return str(err).split(" at line")[0]
        return None

    assert outcome(tree_size=len(text) + 1) == outcome()


def test_the_lean_walk_hands_an_aliased_graph_to_the_full_one():
    """Given a graph that is not a tree (as if the pattern had missed an alias), the lean walk
    still ends: past its budget, or by depth on a cycle, and the document is refused."""
    import yaml

    from policylang.diagnostics import InputError
    from policylang.inputs import check_node_graph

    bomb = yaml.compose(_alias_bomb(), Loader=yaml.SafeLoader)
    with pytest.raises(InputError, match="aliases expand to more than"):
        check_node_graph(bomb, "bomb.yaml", tree_size=len(_alias_bomb()) + 1)
    cycle = yaml.compose("kind: Pod\nmetadata: &m {name: p, x: [*m]}\n", Loader=yaml.SafeLoader)
    with pytest.raises(InputError):
        check_node_graph(cycle, "cycle.yaml", tree_size=100)


# What PyYAML's SafeConstructor makes of a text is what a file loads as; the plain tree builder
# (inputs.construct_tree) must agree on every document, or leave it to PyYAML.
_YAML_CORNERS = [
    "kind: Pod\nmetadata: {name: p, labels: {a: 'yes', b: yes, c: on, d: ~, e: null}}\n",
    "a: 0x1F\nb: 0o17\nc: 017\nd: 1_000\ne: +12\nf: 1:30\ng: -.inf\nh: .NaN\ni: 1e3\nj: 6.02e+23\n",
    "t: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\nbin: !!binary aGVsbG8=\ns: !!str 12\n",
    "base: &b {a: 1}\nm: {<<: *b, c: 3}\n",
    "m: {<<: {a: 1}, c: 3}\n",
    "? [a, b]\n: 1\n",
    "= : x\n",
    "a: =\n",
    "s: !!set {a, b}\n",
    "o: !!omap [a: 1, b: 2]\n",
    "x: !custom 1\n",
    "1: one\n2.5: two\ntrue: three\n~: four\n",
    "- [1, [2, [3, {a: [4]}]]]\n- ''\n- \"\\u00e9\\t\"\n- |\n  block\n  text\n- >\n  folded\n  text\n",
    "---\na: 1\n---\n---\n- 2\n...\n",
    "",
]


def _both_loads(text: str):
    import yaml

    from policylang.inputs import yaml_documents

    def run(load):
        try:
            return ("ok", load())
        except Exception as err:  # noqa: BLE001 - compared: both refuse, or both load alike
            return ("refused", type(err).__name__)
    ours = run(lambda: yaml_documents(text, "t.yaml"))
    theirs = run(lambda: list(yaml.load_all(text, Loader=yaml.CSafeLoader)))
    return ours, theirs


@pytest.mark.parametrize("text", _YAML_CORNERS)
def test_a_yaml_text_loads_as_pyyamls_safe_loader_loads_it(text):
    ours, theirs = _both_loads(text)
    if theirs[0] == "ok":
        assert ours == theirs
    else:
        assert ours[0] == "refused"


_yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                          st.floats(allow_nan=False), st.text(max_size=12),
                          st.sampled_from(["yes", "No", "on", "~", "0x10", "1:20", "2002-12-14", "=", "<<", ".inf"]))
_yaml_values = st.recursive(_yaml_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(_yaml_values, st.sampled_from([None, True, False]), st.booleans())
def test_any_dumped_value_loads_as_pyyamls_safe_loader_loads_it(value, flow, as_list):
    import yaml

    text = yaml.safe_dump([value] if as_list else {"v": value}, default_flow_style=flow, allow_unicode=True)
    ours, theirs = _both_loads(text)
    assert ours == theirs


# ---- every input error from a pod file or standard input has its line and column (issue 46) -------

import io  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from policylang.cli import main  # noqa: E402

EXAMPLES = Path(__file__).parent.parent / "examples"
CLUSTER = str(EXAMPLES / "cluster.yaml")
GOOD_POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec: {containers: [{name: c}]}\n"
BAD_POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - name: c\n"
           "    resources: {requests: {cpu: abc}}\n")
BAD_FIELD = "Pod bad: field spec.containers[0].resources.requests['cpu']: quantities must match"
JSON_LIST = json.dumps({"kind": "PodList", "items": [
    {"metadata": {"name": "ok"}, "spec": {"containers": [{"name": "c"}]}},
    {"metadata": {"name": "bad"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}]},
    indent=2)
JSON_FIELD = 'Pod bad: field spec.containers[0].ports[0].containerPort: expected an integer, got string "80"'


def _run(capsys, monkeypatch, argv: list[str], stdin: str | None = None) -> list[str]:
    """The error lines of a command that exits 2 (an input error, never a crash)."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err and "Traceback" not in err, err
    return [line.removeprefix("error: ") for line in err.strip().splitlines()]


@pytest.mark.parametrize("name, text, where, message", [
    ("one.yaml", BAD_POD, "7:33", BAD_FIELD),                                 # one YAML document
    ("multi.yaml", GOOD_POD + "---\n" + BAD_POD, "12:33", BAD_FIELD),         # the second of two
    ("list.json", JSON_LIST, "26:34", JSON_FIELD),                            # JSON, a *List
    ("multi.yml", f"{GOOD_POD}---\n{JSON_LIST}\n", "31:34", JSON_FIELD),      # JSON in a YAML stream
    ("nokind.yaml", GOOD_POD + "---\nmetadata: {name: x}\n", "6:1", "? x: field kind: object has no 'kind'"),
    ("items.yaml", "kind: List\nitems:\n- 5\n", "3:3", "field items[0]: expected a Kubernetes object"),
    ("syntax.yaml", "kind: Pod\nmetadata: [1, 2\n", "3:1", "invalid YAML at line 3 column 1"),
    ("syntax.json", '{"kind": "Pod",\n "metadata": }', "2:14", "invalid JSON at line 2 column 14"),
    ("dup.yaml", "kind: Pod\nmetadata: {name: a}\nkind: Pod\n", "3:1", "duplicate key 'kind' at line 3"),
])
@pytest.mark.parametrize("verb", [["eval", "--pod"], ["simulate", "--pods"], ["capacity", "--pod"]])
def test_an_error_in_a_pod_file_names_its_line_and_column(tmp_path, capsys, monkeypatch, verb, name, text, where,
                                                          message):
    f = tmp_path / name
    f.write_text(text)
    errors = _run(capsys, monkeypatch, [verb[0], "--cluster", CLUSTER, verb[1], str(f)])
    assert errors[0].startswith(f"{f}:{where}: {message}"), errors


@pytest.mark.parametrize("text, where, message", [
    (BAD_POD, "7:33", BAD_FIELD),
    (GOOD_POD + "---\n" + BAD_POD, "12:33", BAD_FIELD),
    (JSON_LIST, "26:34", JSON_FIELD),
    ("kind: Pod\nmetadata: [1, 2\n", "3:1", "invalid YAML at line 3 column 1"),
    ('{"kind": "Pod",\n "metadata": }', "2:14", "invalid JSON at line 2 column 14"),
    (GOOD_POD + "---\nmetadata: {name: x}\n", "6:1", "? x: field kind: object has no 'kind'"),
])
def test_an_error_in_pods_from_standard_input_names_stdin_with_its_line_and_column(capsys, monkeypatch, text,
                                                                                     where, message):
    errors = _run(capsys, monkeypatch, ["eval", "--cluster", CLUSTER, "--pod", "-"], stdin=text)
    assert errors[0].startswith(f"<stdin>:{where}: {message}"), errors


def test_an_error_in_a_cluster_from_standard_input_names_stdin_with_its_line_and_column(capsys, monkeypatch):
    node = "kind: Node\nmetadata: {name: n}\nstatus:\n  allocatable: {cpu: lots}\n"
    errors = _run(capsys, monkeypatch, ["eval", "--cluster", "-", "--pod", str(EXAMPLES / "pods" / "web.yaml")],
                  stdin=GOOD_POD + "---\n" + node)
    assert errors[0].startswith("<stdin>:9:22: Node n: field status.allocatable['cpu']: quantities"), errors


def test_a_pod_file_is_located_by_load_objects_too(tmp_path):
    f = tmp_path / "pods.json"
    f.write_text(JSON_LIST)
    with pytest.raises(InputError) as err:
        load_objects(f, kinds=["Pod"])
    assert (err.value.line, err.value.column) == (26, 34) and str(err.value).startswith(f"{f}:26:34: {JSON_FIELD}")


def test_a_dumped_replication_controller_loads_back(tmp_path):
    """A ReplicationController's selector is a plain map in the API: the dump writes it so, and
    loading the dump gives the same controller (it was wrapped in matchLabels a second time)."""
    from policylang.cluster.dump import dump_state

    (tmp_path / "rc.yaml").write_text(
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: web, namespace: default}\n"
        "spec: {replicas: 2, selector: {app: web}}\n")
    state = load_cluster([tmp_path / "rc.yaml"])
    (tmp_path / "dump.json").write_text(json.dumps(dump_state(state)))
    (again,) = load_cluster([tmp_path / "dump.json"]).workloads
    assert again == state.workloads[0] and again.spec.selector.match_labels == {"app": "web"}

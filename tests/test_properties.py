"""Invariants that hold for every cluster and every policy, checked with Hypothesis.

Each test states its invariant in its docstring. Strategies live in tests/strategies.py;
settings profiles (`ci`, the default, and `thorough`) in tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import tempfile
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import attrs
import pytest
from hypothesis import assume, example, given, note, settings
from hypothesis import strategies as st

import strategies as S
from policylang import Executable, check, compile_all, load_plans, load_program, schedule, stdlib_dir
from policylang.syntax import ast as A
from policylang.syntax.ast import Module
from policylang.api.selectors import tolerates
from policylang.cli import main
from policylang.api.model import Taint
from policylang.api.quantity import Quantity, format_quantity, parse_quantity
from policylang.diagnostics import PolicyError
from policylang.syntax.format import expr as fmt_expr
from policylang.syntax.format import format_module, format_source
from policylang.syntax.parse import parse
from policylang.report.decisions import eval_json

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
STDLIB = sorted(stdlib_dir().glob("*.sched"))


@lru_cache(maxsize=None)
def default_profile() -> Executable:
    return Executable(load_plans()["default-scheduler"])


@st.composite
def scheduling_cases(draw, affinity: bool = True):
    """A cluster and a pending pod for it."""
    cluster = draw(S.clusters(min_nodes=2, affinity=affinity))
    pod = draw(S.pods("pending-0", tuple(cluster.node_names), affinity=affinity))
    return cluster, pod


def decide(cluster: S.Cluster, pod: dict, exe: Executable | None = None):
    """Schedule the pod on a freshly loaded state. Generated inputs use only what the engine
    supports, so the plan must run to the end: every node gets a verdict."""
    decision = schedule(exe or default_profile(), cluster.state(), S.structure(pod))
    assert len(decision.nodes) == len(cluster.nodes), decision.message
    return decision


def more_examples(factor: int):
    """For tests that take a millisecond per example: `factor` times the profile's examples."""
    return settings(max_examples=settings.default.max_examples * factor)


# ---- syntax: the formatter and the parser agree --------------------------------------------------

def _module(*decls) -> Module:
    return Module("<generated>", decls)


def _int(v: int, text: str | None = None) -> A.Literal:
    return A.Literal(v, "int", text or str(v))


# Shrunk examples of bugs these properties found, kept as regression tests.
FORMAT_REGRESSIONS = [
    # Strings were quoted with json.dumps: "\u001f" is not an escape of the grammar (P011).
    _module(A.Import(alias="pod", path="\x1f")),
    # ... and a map key holding "${" was printed unescaped, so it read back as a hole (P010).
    _module(A.Def("f", (), A.MapExpr(("${x}",), (_int(1),), record=False))),
    # A negative number as a field's target lost its parentheses: -0.metadata is -(0.metadata).
    _module(A.Rule("pod", None, (A.Tolerate("dedicated", "Exists", None, "pod"),
                                 A.Spread("", A.Field(_int(0, "-0"), "metadata"), "pod")))),
    # The source of a short comprehension lost its parentheses: [pod in not 0 where 0] does not
    # parse, and any(t in a or b) means something else.
    _module(A.Param("pod", A.TypeRef("pod"), A.Interpolated((
        A.Comprehension("list", "pod", A.Unary("not", _int(0)), None, _int(0)),)))),
    _module(A.Def("f", (), A.Comprehension("any", "t", A.Binary("or", A.Name("a"), A.Name("b"))))),
    # An escaped quote inside a hole's string ended the hole early: '${{"\"": 0}}' (P010).
    _module(A.Param("pod", A.RecordTypeRef(()), A.Interpolated((A.MapExpr(('"',), (_int(0),), record=False),)))),
    # "\x85" (like "\r", "\u2028") broke the formatter's lines inside a string: a comment `#"` appeared.
    _module(A.Def("pod", (), A.Literal("\x85#", "string"))),
]


def _examples(cases):
    def decorate(test):
        for case in reversed(cases):
            test = example(case)(test)
        return test
    return decorate


@_examples(FORMAT_REGRESSIONS)
@given(S.modules())
def test_parse_of_format_is_the_tree(module):
    """For every syntax tree the parser can produce, parsing its formatted text gives the same
    tree back: the formatter never drops, adds or regroups anything (spans aside)."""
    text = format_module(module)
    note(text)
    assert parse(text, "<generated>").decls == module.decls


@_examples(FORMAT_REGRESSIONS)
@given(S.modules())
def test_format_is_idempotent(module):
    """Formatting formatted text changes nothing."""
    text = format_module(module)
    note(text)
    assert format_source(text, "<generated>") == text


@lru_cache(maxsize=None)
def _mutated_file(path: Path) -> st.SearchStrategy[tuple[str, str]]:
    """(the file's name, its text edited): one strategy per file, not one per draw."""
    return S.mutated(path.read_text()).map(lambda t: (path.name, t))


@given(st.sampled_from(STDLIB + sorted(EXAMPLES.rglob("*.sched"))).flatmap(_mutated_file))
def test_formatting_a_real_file_keeps_its_tree_and_comments(named):
    """For any text that parses (here: stdlib and example policies with random edits, comments
    and blank lines included), formatting keeps the tree, every comment, and is idempotent;
    text that does not parse is refused with a PolicyError, never anything else."""
    name, text = named
    try:
        tree = parse(text, name)
    except PolicyError:
        with pytest.raises(PolicyError):
            format_source(text, name)
        return
    once = format_source(text, name)
    note(once)
    assert parse(once, name).decls == tree.decls
    assert format_source(once, name) == once
    kept = once.split("\n")
    for line in text.split("\n"):
        if line.strip().startswith("#"):
            assert any(line.strip() in k for k in kept), f"comment lost: {line.strip()!r}"


# ---- robustness: only the project's own errors, whatever the input ----------------------------

_WORDS = ["policy", "import", "as", "param", "def", "filter", "score", "rule", "profile", "use", "skip", "when",
          "let", "reject", "pod", "reason", "code", "restrict", "nodes", "to", "value", "normalize", "with",
          "tolerate", "exists", "require", "prefer", "weight", "spread", "by", "max_skew", "when_unsatisfiable",
          "without", "percentage_of_nodes_to_score", "if", "then", "else", "for", "where", "in", "not", "and",
          "or", "x", "P", " ", "\n"]
token_soup = st.lists(st.sampled_from(S.TOKENS + _WORDS), max_size=40).map("".join)


def _policy_error(err: PolicyError) -> None:
    """A PolicyError as users see it: at least one diagnostic, rendered without failing."""
    assert err.diagnostics
    assert all(d.code.startswith("P") for d in err.diagnostics)
    assert err.render()


@more_examples(10)
@given(st.text() | token_soup)
def test_the_parser_raises_only_policy_errors(text):
    """Any text at all parses or raises a PolicyError with at least one rendered diagnostic; no
    other exception (from Lark or the tree builder) escapes."""
    try:
        parse(text)
    except PolicyError as err:
        _policy_error(err)


def _with_profile(path: Path, text: str) -> str:
    """A stdlib policy file with a profile that uses it, so that checking and compiling reach it."""
    if path.name == "default.sched":
        return text
    name = parse(path.read_text()).policy.name
    return text + f"\nprofile property-test {{\n    use {name}\n}}\n"


@given(st.sampled_from(STDLIB).flatmap(lambda p: S.mutated(p.read_text()).map(lambda t: (p, t))))
def test_the_checker_raises_only_policy_errors_on_mutated_policies(case):
    """Every stdlib policy, edited at random (characters and lines deleted, duplicated, replaced;
    language tokens inserted) and used by a profile, either loads, checks and compiles, or fails
    with a PolicyError; nothing else is ever raised."""
    path, text = case
    try:
        compile_all(check(load_program(path, text=_with_profile(path, text))))
    except PolicyError as err:
        _policy_error(err)


@example(_module(A.Profile("A", (A.Use("\x00", is_path=True),))))  # resolving the path raised ValueError
@given(S.modules())
def test_the_checker_raises_only_policy_errors_on_generated_programs(module):
    """Any syntactically valid program (generated as a tree) checks and compiles, or fails with a
    PolicyError; the checker never crashes on a tree it did not expect."""
    text = format_module(module)
    note(text)
    try:
        compile_all(check(load_program(text=text)))
    except PolicyError as err:
        _policy_error(err)


@example(A.Binary("/", _int(1), _int(0)), _int(0), _int(0),  # `param x: int = 1 / 0` raised EvalError
         (S.Cluster((), ()), {"kind": "Pod", "metadata": {"name": "p"}}))
@given(S.int_constants(), S.int_constants(), S.int_constants(), scheduling_cases())
def test_a_checked_program_compiles_and_runs_or_reports_a_policy_error(default, argument, per_node, case):
    """A program the checker accepts compiles, or fails with a PolicyError that points at the
    constant that cannot be computed (a param default or `use` argument of `1 / 0`); and the
    plan it compiles to schedules any pod on any cluster to a decision (a failure while running,
    such as a division by zero on a node, is the decision's message), never an exception."""
    text = (f"policy Constants\n\nparam x: int = {fmt_expr(default)}\nparam y: int = 0\n\n"
            f"filter f {{\n    reject when params.x + params.y + {fmt_expr(per_node)} * len(node.pods) > 100\n"
            f"        reason \"too much\"\n}}\n\n"
            f"profile constants {{\n    use NodeUnschedulable\n    use Constants {{y: {fmt_expr(argument)}}}\n}}\n")
    note(text)
    try:
        plan = compile_all(check(load_program("<constants>.sched", text=text)))["constants"]
    except PolicyError as err:
        _policy_error(err)
        assert all(d.span.line >= 1 for d in err.diagnostics)
        return
    cluster, pod = case
    decision = schedule(Executable(plan), cluster.state(), S.structure(pod))
    assert decision.selected is not None or decision.message


_EVAL_INPUTS = [EXAMPLES / "cluster.yaml", *sorted((EXAMPLES / "pods").glob("*.yaml")), *STDLIB]


@st.composite
def _eval_inputs(draw):
    """The example cluster, one example pod and a profile, one of the three edited at random."""
    target = draw(st.sampled_from(_EVAL_INPUTS))
    text = draw(S.mutated(target.read_text()))
    return target, text


@given(_eval_inputs())
def test_eval_exits_0_1_or_2_on_mutated_inputs(case):
    """`policylang eval` on inputs edited at random (the example cluster YAML, an example pod,
    a stdlib policy or the default profile) exits 0 or 1 with a JSON document, or 2 with a
    message and no traceback; it never raises."""
    target, text = case
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cluster, pod, profile = EXAMPLES / "cluster.yaml", EXAMPLES / "pods" / "web.yaml", None
        if target.suffix == ".sched":  # the default profile, or a policy in a profile of its own
            profile = tmp / "policy.sched"
            profile.write_text(_with_profile(target, text).replace(
                "profile property-test {", "profile property-test {\n    use NodeUnschedulable\n    use NodeResourcesFit"))
        elif target.name == "cluster.yaml":
            cluster = tmp / "cluster.yaml"
            cluster.write_text(text)
        else:
            pod = tmp / "pod.yaml"
            pod.write_text(text)
        args = ["eval", "--cluster", str(cluster), "--pod", str(pod), "-o", "json"]
        if profile is not None:
            args += ["--profile", str(profile)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    note(err.getvalue())
    assert code in (0, 1, 2)
    if code == 2:
        assert err.getvalue().strip() and "Traceback" not in err.getvalue()
    else:
        doc = json.loads(out.getvalue())
        assert doc["schema"] == "policylang/eval/v1"
        # 0: every pod placed, already bound or finished, or left to the scheduler its
        # schedulerName names (README, exit codes).
        done = [r["selected"] or r.get("bound_to") or r.get("phase") or r.get("left_to_scheduler")
                for r in doc["results"]]
        assert (code == 0) == all(done)


# ---- quantities ------------------------------------------------------------------------------

MAX_INT64 = 2**63 - 1


def _round_up_to_nanos(x: Fraction) -> Fraction:
    """The API's rule: a value finer than a nano-unit has its magnitude rounded up to the next
    nano-unit (resource.ParseQuantity rounds with inf.RoundUp, away from zero)."""
    nanos = abs(x) * 10**9
    magnitude = Fraction(math.ceil(nanos), 10**9)
    return magnitude if x >= 0 else -magnitude


@more_examples(10)
@given(S.quantity_texts())
@example(S.QuantityText("-", "0", "0000000001", ""))  # -0.1n is -1n, not 0
def test_quantity_text_parses_to_its_exact_value(q):
    """A quantity's text parses to exactly the rational number it denotes (digits × suffix,
    computed here with fractions), magnitudes finer than a nano-unit rounded up as the API does."""
    assume(abs(q.exact) <= MAX_INT64)  # the API caps larger values at 2^63-1; that cap is not modelled
    note(q.text)
    assert parse_quantity(q.text).amount == _round_up_to_nanos(q.exact)


@more_examples(10)
@given(S.quantities())
def test_quantity_print_parse_round_trip(q):
    """Printing a quantity and parsing the text gives the same value, whatever its format; and
    the text of the parsed value is canonical: printed, parsed and printed again, it is the same.
    (Not the first text itself: as upstream, BinarySI 5000 prints "5000", which reads back as
    DecimalSI and prints "5k".)"""
    text = format_quantity(q)
    again = parse_quantity(text)
    assert again == q and again.amount == q.amount
    canonical = format_quantity(again)
    assert format_quantity(parse_quantity(canonical)) == canonical
    if q.format != "BinarySI":
        assert canonical == text


@more_examples(10)
@given(S.quantity_texts())
def test_canonical_quantity_text_is_a_fixed_point(q):
    """Any accepted text, parsed and printed, is canonical: parsing the printed text gives the
    same value and prints the same text."""
    value = parse_quantity(q.text)
    text = str(value)
    assert parse_quantity(text) == value
    assert str(parse_quantity(text)) == text


@more_examples(10)
@given(S.quantities(), S.quantities(), st.integers(-10**6, 10**6))
def test_quantity_arithmetic_is_exact(a, b, k):
    """Sums, differences, products with integers, negation and comparisons of quantities agree
    with exact rational arithmetic on their values."""
    x, y = a.amount, b.amount
    assert (a + b).amount == x + y and (a - b).amount == x - y
    assert (a + k).amount == x + k and (k + a).amount == x + k and (k - a).amount == k - x
    assert (a * k).amount == x * k and (k * a).amount == x * k
    assert (-a).amount == -x
    assert sum([a, b, a], Quantity(Fraction(0))).amount == 2 * x + y
    assert (a < b) == (x < y) and (a <= b) == (x <= y) and (a == b) == (x == y) and (a > b) == (x > y)
    assert (a == k) == (x == k) and (a < k) == (x < k)


@more_examples(10)
@given(S.quantities())
def test_milli_and_value_round_up(q):
    """milli() and value() are the smallest integers at or above the value in thousandths and in
    whole units (the API's MilliValue() and Value() round up)."""
    m, v = q.milli(), q.value()
    assert isinstance(m, int) and isinstance(v, int)
    assert m - 1 < q.amount * 1000 <= m
    assert v - 1 < q.amount <= v


# ---- decisions of the default profile -----------------------------------------------------------

@given(scheduling_cases())
def test_decisions_are_deterministic(case):
    """Scheduling the same pod on the same cluster twice gives the same decision, to every
    score and message, and the same JSON."""
    cluster, pod = case
    first, second = decide(cluster, pod), decide(cluster, pod)
    assert first == second
    assert eval_json([first]) == eval_json([second])


def _one_size_per_image(nodes):
    """The nodes with every image given the size the first node listing it reports."""
    sizes: dict = {}
    for n in nodes:
        for image in n.get("status", {}).get("images", ()):
            for name in image.get("names", ()):
                sizes.setdefault(name, image.get("sizeBytes", 0))
    for n in nodes:
        images = n.get("status", {}).get("images")
        if not images:
            yield n
            continue
        same = [{**image, "sizeBytes": sizes[image["names"][0]]} if image.get("names") else image for image in images]
        yield {**n, "status": {**n["status"], "images": same}}


@given(scheduling_cases(), st.data())
def test_decisions_do_not_depend_on_input_order(case, data):
    """The decision does not depend on the order in which nodes and pods are listed in the
    cluster input, where each image has one size on every node reporting it. (Where nodes
    disagree, an image's size is the one the first node to reach the cache reported, upstream's
    addNodeImageStates in backend/cache/cache.go: there the dump's order decides, as the
    oracle's properties check.)"""
    cluster, pod = case
    cluster = cluster.evolve(nodes=tuple(_one_size_per_image(cluster.nodes)))
    shuffled = cluster.evolve(nodes=data.draw(st.permutations(cluster.nodes), label="nodes"),
                              pods=data.draw(st.permutations(cluster.pods), label="pods"))
    assert decide(cluster, pod) == decide(shuffled, pod)


@given(scheduling_cases())
def test_the_selected_node_is_feasible_and_scores_best(case):
    """A pod is placed exactly when some node is feasible, on a feasible node with the highest
    total score, the smallest name among equal totals; otherwise the decision says why."""
    d = decide(*case)
    if not d.feasible:
        assert d.selected is None and d.fit_error.startswith(f"0/{len(d.nodes)} nodes are available")
        return
    totals = {n.name: n.total for n in d.nodes if n.feasible}
    best = max(totals.values())
    assert d.selected == min(name for name, total in totals.items() if total == best)
    assert d.fit_error is None and d.nominated_node is None


def _default_normalize(raws: list[int], reverse: bool) -> list[int]:
    """helper.DefaultNormalizeScore, transcribed from upstream (Go's integer division truncates)."""
    top = max([0, *raws])
    if top == 0:
        return [100 if reverse else 0 for _ in raws]
    scaled = [int(Fraction(100 * r, top)) for r in raws]
    return [100 - s for s in scaled] if reverse else scaled


@given(scheduling_cases())
def test_scores_are_normalized_and_totals_are_weighted_sums(case):
    """Every normalized score is within 0..100 and carries its plugin's weight from the profile;
    a node's total is the sum of normalized × weight; plugins that normalize with `max` or
    `reverse` give DefaultNormalizeScore of their raw scores; a lone feasible node is not scored."""
    d = decide(*case)
    plugins = {p.name: p for p in default_profile().plan.plugins}
    feasible = [n for n in d.nodes if n.feasible]
    for n in d.nodes:
        if not n.feasible:
            assert n.scores is None and n.total is None
    if len(feasible) == 1:
        assert feasible[0].scores == {} and feasible[0].total == 0
        return
    for n in feasible:
        for name, s in n.scores.items():
            assert 0 <= s.normalized <= 100, (n.name, name, s)
            assert s.weight == plugins[name].weight
        assert n.total == sum(s.normalized * s.weight for s in n.scores.values())
    scored = {name for n in feasible for name in n.scores}
    for name in scored:
        assert all(name in n.scores for n in feasible), f"{name} scored some feasible nodes only"
        method = plugins[name].score.normalize
        if method in ("max", "reverse"):
            raws = [n.scores[name].raw for n in feasible]
            assert [n.scores[name].normalized for n in feasible] == _default_normalize(raws, method == "reverse")


def _prefilter(exe: Executable, state, pod):
    from policylang.run.schedule import base_env, run_prefilter
    return run_prefilter(exe, state, pod, base_env(state, pod))


def _rejected_by_some_filter(exe: Executable, pre, node) -> bool:
    """Whether any reject of any filter fires on the node, every filter evaluated on its own
    (not through run_filters, which stops at the first failing plugin)."""
    for plugin in exe.plugins:
        for f in pre.active.get(plugin.name, ()):
            env = {**pre.envs[plugin.name], "node": node}
            for step in f.node_steps:
                result = step.fn(env)
                if step.kind == "let":
                    env[step.name] = result
                elif result is not None and result is not False:
                    return True
    return False


@given(scheduling_cases())
def test_a_node_a_filter_rejects_is_never_feasible(case):
    """A node is feasible exactly when PreFilter admits the pod and the node, and no reject of
    any filter fires on it (every filter evaluated on its own)."""
    cluster, pod_dict = case
    exe, state = default_profile(), cluster.state()
    d = decide(cluster, pod_dict)
    pod = exe.apply_rules(state, state.with_priority(S.structure(pod_dict)))
    pre = _prefilter(exe, state, pod)
    for node in state.node_list:
        admitted = pre.status is None and (pre.allowed is None or node.name in pre.allowed)
        fits = admitted and not _rejected_by_some_filter(exe, pre, node)
        assert (node.name in d.feasible) == fits, node.name


# ---- monotonicity of the default profile ------------------------------------------------------
#
# Pods here have no inter-pod (anti-)affinity and no topology spread constraints: with those,
# removing a pod can break a required affinity, and a toleration or a taint can change which
# nodes count as spread domains (nodeTaintsPolicy), so feasibility is not monotone in them.

def feasible(cluster: S.Cluster, pod: dict) -> set[str]:
    return set(decide(cluster, pod).feasible)


def _node_index(data, cluster) -> int:
    return data.draw(st.integers(0, len(cluster.nodes) - 1), label="node")


@given(scheduling_cases(affinity=False), S.tolerations())
def test_adding_a_toleration_never_shrinks_the_feasible_set(case, toleration):
    """Adding a toleration to the pod never makes a feasible node infeasible (pods without
    inter-pod affinity or topology spread)."""
    cluster, pod = case
    more = copy.deepcopy(pod)
    more["spec"].setdefault("tolerations", []).append(toleration)
    assert feasible(cluster, pod) <= feasible(cluster, more)


@given(scheduling_cases(affinity=False), S.taints(), st.data())
def test_removing_a_taint_never_shrinks_the_feasible_set(case, taint, data):
    """Removing a taint from a node never makes a feasible node infeasible (pods without
    inter-pod affinity or topology spread)."""
    cluster, pod = case
    nodes = [copy.deepcopy(n) for n in cluster.nodes]
    i = _node_index(data, cluster)
    taints = nodes[i]["spec"].setdefault("taints", [])
    taints.insert(data.draw(st.integers(0, len(taints)), label="position"), taint)
    tainted = cluster.evolve(nodes=nodes)  # the same cluster with one more taint on node i
    assert feasible(tainted, pod) <= feasible(cluster, pod)


@given(scheduling_cases(affinity=False), st.data())
def test_adding_allocatable_never_shrinks_the_feasible_set(case, data):
    """Giving a node more allocatable cpu, memory, pods, ephemeral storage or extended
    resource never makes a feasible node infeasible."""
    cluster, pod = case
    nodes = [copy.deepcopy(n) for n in cluster.nodes]
    allocatable = nodes[_node_index(data, cluster)]["status"]["allocatable"]
    resource = data.draw(st.sampled_from(["cpu", "memory", "pods", "ephemeral-storage", S.EXTENDED]), label="resource")
    extra = data.draw(S.cpu_texts() if resource == "cpu" else S.memory_texts(), label="extra")
    allocatable[resource] = str(parse_quantity(allocatable.get(resource, "0")) + parse_quantity(extra))
    note(f"{resource}: {allocatable[resource]}")
    assert feasible(cluster, pod) <= feasible(cluster.evolve(nodes=nodes), pod)


@given(scheduling_cases(affinity=False), st.data())
def test_removing_a_pod_never_shrinks_the_feasible_set(case, data):
    """Removing a pod bound to a node never makes a feasible node infeasible. Holds because no
    pod here has inter-pod affinity or topology spread (a pod that satisfied a required
    affinity, or evened out a spread, could be needed)."""
    cluster, pod = case
    extra = data.draw(S.pods("running-extra", tuple(cluster.node_names), bound=True, affinity=False), label="extra")
    crowded = cluster.evolve(pods=[*cluster.pods, extra])
    assert feasible(crowded, pod) <= feasible(cluster, pod)


@given(scheduling_cases(affinity=False), st.sampled_from(S.TAINT_KEYS) | S.label_keys(),
       st.sampled_from(S.TAINT_VALUES), st.data())
def test_an_untolerated_no_schedule_taint_never_grows_the_feasible_set(case, key, value, data):
    """Adding a NoSchedule taint that the pod does not tolerate never makes an infeasible node
    feasible (and the tainted node is not feasible afterwards)."""
    cluster, pod = case
    taint = {"key": key, "value": value, "effect": "NoSchedule"}
    typed = Taint(key=key, value=value, effect="NoSchedule")
    assume(not any(tolerates(t, typed) for t in S.structure(pod).spec.tolerations))
    nodes = [copy.deepcopy(n) for n in cluster.nodes]
    i = _node_index(data, cluster)
    nodes[i]["spec"].setdefault("taints", []).append(taint)
    after = feasible(cluster.evolve(nodes=nodes), pod)
    assert after <= feasible(cluster, pod)
    assert nodes[i]["metadata"]["name"] not in after


# ---- rules ------------------------------------------------------------------------------------

# A rule's condition as policy source, with the same test in Python over the typed pod.
RULE_CONDITIONS = {
    None: lambda pod: True,
    'pod.metadata.namespace == "ml"': lambda pod: pod.metadata.namespace == "ml",
    'pod.metadata.labels["app"] == "web"': lambda pod: pod.metadata.labels.get("app") == "web",
    'not ("disktype" in pod.spec.nodeSelector)': lambda pod: "disktype" not in pod.spec.node_selector,
    "pod.spec.priority > 100": lambda pod: (pod.spec.priority or 0) > 100,
    "len(pod.spec.tolerations) > 0": lambda pod: len(pod.spec.tolerations) > 0,
}


@attrs.frozen
class RuleToleration:
    condition: str | None
    key: str
    operator: str
    value: str
    effect: str        # NoSchedule | PreferNoSchedule | NoExecute | All
    seconds: int | None

    def source(self) -> str:
        when = f" when {self.condition}" if self.condition else ""
        op = "exists" if self.operator == "Exists" else f"= {json.dumps(self.value)}"
        seconds = f" for {self.seconds}s" if self.seconds is not None else ""
        return (f"policy PropertyRules\n\nrule property_rule{when} {{\n"
                f"    tolerate {json.dumps(self.key)} {op} : {self.effect}{seconds}\n}}\n")

    def written(self) -> dict:
        """The same toleration as it would be written in a pod's spec."""
        tol = {"key": self.key, "operator": self.operator}
        if self.operator == "Equal":
            tol["value"] = self.value
        if self.effect != "All":
            tol["effect"] = self.effect
        if self.seconds is not None:
            tol["tolerationSeconds"] = self.seconds
        return tol


_SECONDS = st.none() | st.integers(0, 3600)


@st.composite
def rule_tolerations(draw, cluster: S.Cluster):
    """A rule toleration; half the time for a taint that is on some node of the cluster, so that
    it makes a difference."""
    present = [t for n in cluster.nodes for t in n["spec"].get("taints", [])]
    if present and draw(st.booleans()):
        taint = S.drawn_from(draw, present)
        key, value, effect = taint["key"], taint.get("value", ""), taint["effect"]
    else:
        key, value = draw(S.sampled(tuple(S.TAINT_KEYS))), draw(S.sampled(tuple(S.TAINT_VALUES)))
        effect = draw(S.sampled(tuple(S.EFFECTS)))
    return RuleToleration(draw(S.sampled(tuple(RULE_CONDITIONS))), key,
                          draw(S.sampled(("Equal", "Exists"))), value,
                          draw(S.sampled((effect, "All"))), draw(_SECONDS))


@lru_cache(maxsize=None)
def profile_with_rule(rule_source: str) -> Executable:
    """The default profile plus, last, one policy holding the rule: as `use PropertyRules` at the
    end of default-scheduler (each `use` compiles on its own, so only the rule's policy is
    compiled here)."""
    text = rule_source + "\nprofile rules-only {\n    use PropertyRules\n}\n"
    rules = compile_all(check(load_program("<property-rules>.sched", text=text)))["rules-only"]
    plan = default_profile().plan
    return Executable(attrs.evolve(plan, profile="with-rule", plugins=plan.plugins + rules.plugins))


@given(scheduling_cases(), st.data())
def test_a_rule_toleration_is_the_same_as_writing_it_into_the_pod(case, data):
    """Scheduling with a rule that adds a toleration to the pods its condition matches decides
    exactly as scheduling, without the rule, the pod with that toleration written in its spec
    (and the pod unchanged when the condition does not match)."""
    cluster, pod = case
    rule = data.draw(rule_tolerations(cluster), label="rule")
    state = cluster.state()
    with_rule = decide(cluster, pod, profile_with_rule(rule.source()))
    matches = RULE_CONDITIONS[rule.condition](state.with_priority(S.structure(pod)))
    written = copy.deepcopy(pod)
    if matches:
        written["spec"].setdefault("tolerations", []).append(rule.written())
    by_hand = decide(cluster, written)
    note(f"matches: {matches}")
    assert attrs.evolve(with_rule, profile="") == attrs.evolve(by_hand, profile="")


# ---- regressions found while writing these properties ---------------------------------------------

def test_a_program_given_as_text_can_use_its_own_policy():
    """A program loaded from text under a path that is not on disk could not `use` the policy
    it declares itself (P054 policy file not found); found building the rule property."""
    text = 'policy P\n\nfilter f {\n    reject when false\n        reason "never"\n}\n\nprofile p {\n    use P\n}\n'
    plan = compile_all(check(load_program("<text>.sched", text=text)))["p"]
    assert [plugin.name for plugin in plan.plugins] == ["P"]


def test_a_file_named_by_a_relative_path_can_use_itself(tmp_path, monkeypatch, capsys):
    """`policylang plan p.sched` on a file saying `use "./p.sched"` loaded it twice, under two
    spellings of its path (P015 policy P is also declared in p.sched)."""
    (tmp_path / "p.sched").write_text('policy P\n\nfilter f {\n    reject when false\n        reason "never"\n}\n\n'
                                      'profile p {\n    use "./p.sched"\n}\n')
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "p.sched"]) == 0
    assert "plugin P" in capsys.readouterr().out

"""The vector executor decides exactly as the reference interpreter, on any cluster, any pod
and any policy: the stdlib's default profile and generated team policies.

"Exactly" is the whole Decision: every node's status (code, reasons, plugin), every raw and
normalised score, the selected node, the messages. When a policy fails on some node, the
vector executor hands the pod to the reference interpreter (so the error is the reference's);
these tests also check that it does so only when the reference itself fails.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from unittest import mock

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import strategies as S
from policylang import Executable, check, compile_all, load_plans, load_program, schedule
from policylang.run import vector
from policylang.run.schedule import Sampling
from policylang.forecast.simulate import simulate
from test_properties import more_examples, scheduling_cases


@pytest.fixture(autouse=True, scope="module", params=["as shipped", "smallest batches"])
def batch_thresholds(request):
    """Each test with the vector executor's size thresholds as shipped, then at their smallest:
    generated clusters are small, and this way they take the paths large clusters take too
    (per-node lists exploded into one batch of members, a few stale nodes recomputed as a
    batch, the node cache widening a sample's values to every node, and giving up keeping an
    expression whose keys are not met again after a bind)."""
    if request.param == "as shipped":
        yield
        return
    with mock.patch.multiple(vector.tuning, EXPLODE_MIN=1, FEW_NODES=0, ONE_OFF_KEYS=1):
        yield


@lru_cache(maxsize=None)
def default_plan():
    return load_plans()["default-scheduler"]


_EXECUTABLES: dict = {}


def executables(plan) -> tuple[Executable, Executable]:
    """The plan compiled for each executor (compiling is the slow part of a small case)."""
    if id(plan) not in _EXECUTABLES:
        _EXECUTABLES[id(plan)] = (plan, Executable(plan, "reference"), Executable(plan, "vector"))
    return _EXECUTABLES[id(plan)][1:]


def both(plan, cluster: S.Cluster, pod: dict, **kw):
    """The reference's decision, and the vector executor's made without falling back to the
    reference unless the reference reports a policy failure."""
    pod_obj = S.structure(pod)
    reference_exe, vector_exe = executables(plan)
    reference = schedule(reference_exe, cluster.state(), pod_obj, sampling=Sampling(**kw) if kw else None)
    failed = reference.message is not None and reference.message.startswith("running ")
    guard = mock.patch.object(Executable, "reference", side_effect=AssertionError("fell back to the reference"))
    if failed:
        vector = schedule(vector_exe, cluster.state(), pod_obj, sampling=Sampling(**kw) if kw else None)
    else:
        with guard:
            vector = schedule(vector_exe, cluster.state(), pod_obj, sampling=Sampling(**kw) if kw else None)
    return reference, vector


@more_examples(2)
@given(scheduling_cases())
def test_the_default_profile_decides_alike_on_both_executors(case):
    """With the stdlib default profile, both executors give the same Decision."""
    cluster, pod = case
    reference, vector = both(default_plan(), cluster, pod)
    assert vector == reference


@given(scheduling_cases(affinity=False), st.sampled_from([None, 0, 30, 100]))
def test_node_sampling_decides_alike_on_both_executors(case, percentage):
    """With node sampling (which stops filtering once enough nodes fit), both executors visit
    the same nodes and give the same Decision."""
    cluster, pod = case
    reference, vector = both(default_plan(), cluster, pod, percentage=percentage)
    assert vector == reference


@lru_cache(maxsize=256)
def _team_plan(text: str):
    return compile_all(check(load_program("<team>.sched", text=text)))["team"]


def _team_decisions(text: str, nodes: list[dict]) -> tuple:
    """A plain pod scheduled with the team policy on each executor, each on a fresh state of
    these nodes: (the reference's decision, the vector executor's)."""
    from policylang.cluster.state import ClusterState

    pod = S.structure({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                       "spec": {"containers": [{"name": "c"}]}})
    return tuple(schedule(exe, ClusterState.build([S.structure(n) for n in nodes]), pod)
                 for exe in executables(_team_plan(text)))


@more_examples(5)
@given(S.team_policies(), scheduling_cases(affinity=False))
def test_team_policies_decide_alike_on_both_executors(text, case):
    """A generated team policy (filters with lets and rejects, scores with every normalisation,
    alone or with stdlib plugins) gives the same Decision on both executors, including the
    message when the policy fails on a node (a division by zero, a negative sqrt)."""
    note(text)
    cluster, pod = case
    reference, vector = both(_team_plan(text), cluster, pod)
    assert vector == reference


@st.composite
def simulations(draw):
    """A cluster and a few pending pods, some of them alike (replicas of one template)."""
    cluster = draw(S.clusters(min_nodes=2, max_nodes=4, affinity=False))
    names = tuple(cluster.node_names)
    templates = [draw(S.pods(f"pending-{i}", names, affinity=False)) for i in range(draw(st.integers(1, 3)))]
    pods = []
    for i in range(draw(st.integers(2, 6))):
        pod = copy.deepcopy(S.drawn_from(draw, templates))
        pod["metadata"]["name"] = f"pending-{i}"
        pods.append(pod)
    return cluster, pods


@given(simulations(), st.sampled_from([None, 100]))
def test_simulations_place_alike_on_both_executors(case, percentage):
    """Simulating pods one after another (each bind changing what the next pod sees, and what
    the vector executor's node cache must recompute) places every pod alike on both executors:
    same node, same decision, same victims."""
    cluster, pods = case
    plan = default_plan()
    outcomes = []
    for exe in executables(plan):
        state = cluster.state()
        placements = simulate({"default-scheduler": exe}, state, [S.structure(p) for p in pods],
                              percentage=percentage)
        outcomes.append([(p.pod.metadata.name, p.node, p.decision, p.victims) for p in placements])
    assert outcomes[0] == outcomes[1]


def test_cache_keys_name_the_fields_an_expression_reads():
    """The node cache keys a value by what its expression reads (plan.free_paths): a field chain
    of a variable when only that is read, the variable whole where it is read whole, never a
    variable the expression binds itself."""
    from policylang import plan as P

    def field(var, *names):
        ir = P.Var(var)
        for name in names:
            ir = P.GetField(ir, name)
        return ir

    node_name = P.Op("!=", field("pod", "spec", "nodeName"), field("node", "metadata", "name"))
    assert P.free_paths(node_name) == {("pod", "spec", "nodeName"), ("node", "metadata", "name")}
    # `any(t in pod.spec.tolerations where t.key == k)`: t is bound, the list is read whole.
    tolerated = P.Comp("any", "t", field("pod", "spec", "tolerations"),
                       where=P.Op("==", field("t", "key"), P.Var("k")))
    assert P.free_paths(tolerated) == {("pod", "spec", "tolerations"), ("k",)}
    # An inlined def: its parameter is bound; what its argument reads is what the call reads.
    call = P.Bind(("x#1",), (field("c", "topologyKey"),),
                  P.GetIndex(field("node", "metadata", "labels"), P.Var("x#1")))
    assert P.free_paths(call) == {("c", "topologyKey"), ("node", "metadata", "labels")}


def test_the_node_cache_keeps_lists_of_plain_members_as_they_were():
    """Lists chosen per node from a few plain candidates (NodeResourcesFit's short resources)
    are kept as codes and read back as the same lists, in the same order; lists that the codes
    cannot hold (members out of the candidates' order) turn the entry into lists per node,
    losing nothing kept before."""
    import numpy as np

    from policylang.run.vector.cache import _Entry
    from policylang.run.vector.values import Col, Seq, values_of

    entry = _Entry(1, 4, 0)
    short = Seq(["cpu", "memory", "ephemeral-storage"],
                [np.array([True, False, True]), True, np.array([False, False, True])])
    entry.store(np.array([0, 1, 3]), short)
    assert isinstance(entry.column(np.array([0, 1, 3])), Seq)
    entry.store(np.array([2]), Col(np.array([["memory", "ephemeral-storage"]], dtype=object)))
    everyone = np.arange(4)
    assert values_of(entry.column(everyone), 4) == [
        ["cpu", "memory"], ["memory"], ["memory", "ephemeral-storage"], ["cpu", "memory", "ephemeral-storage"]]
    entry.store(np.array([1]), Seq(["memory", "cpu"], [True, True]))
    assert values_of(entry.column(everyone), 4) == [
        ["cpu", "memory"], ["memory", "cpu"], ["memory", "ephemeral-storage"], ["cpu", "memory", "ephemeral-storage"]]
    # 1 and True are equal but not the same member.
    entry = _Entry(2, 2, 0)
    entry.store(np.arange(2), Seq([1], [np.array([True, False])]))
    entry.store(np.array([1]), [True])
    assert [[type(x) for x in xs] for xs in values_of(entry.column(np.arange(2)), 2)] == [[int], [bool]]


def test_a_branch_not_taken_fails_on_no_node():
    """Arithmetic branches of an `if` may be computed over the whole batch and picked from; a
    branch that would fail on the nodes that do not take it (a division by zero) must not fail
    the pod, and branches of different kinds of number keep each node's own."""
    from policylang.cluster.state import ClusterState

    text = ("policy Team\n\nscore team {\n"
            "    let cpu = milli(node.status.allocatable[\"cpu\"] ?? 0) / 1000\n"
            "    value int(if cpu % 2 == 1 then 100 / (cpu % 2) else 3)"
            " + int(if cpu > 2 then 1.5 else 2) + (if cpu == 0 then 0 else 64 / cpu)\n"
            "    normalize max\n}\n\n"
            "profile team {\n    use Team weight 1\n}\n")
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{cpu}"},
              "status": {"allocatable": {"cpu": str(cpu), "pods": "10"}}} for cpu in range(6)]
    pod = S.structure({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                       "spec": {"containers": [{"name": "c"}]}})
    reference_exe, vector_exe = executables(_team_plan(text))
    decisions = [schedule(reference_exe, ClusterState.build([S.structure(n) for n in nodes]), pod)]
    with mock.patch.object(Executable, "reference", side_effect=AssertionError("fell back to the reference")):
        decisions.append(schedule(vector_exe, ClusterState.build([S.structure(n) for n in nodes]), pod))
    assert decisions[0].message is None
    assert decisions[1] == decisions[0]
    raws = {r.name: r.scores["Team"].raw for r in decisions[1].nodes}
    assert raws == {"node-0": 5, "node-1": 166, "node-2": 37, "node-3": 122, "node-4": 20, "node-5": 113}


def test_kept_columns_of_few_values_are_looked_up_once_per_value():
    """A column read from the node cache whose values are few (a zone per node) is looked up
    per distinct value and spread back by code: the same values as per node, after a sub-batch
    too; columns not yet complete, of unhashable values or of too many values are not coded."""
    import numpy as np

    from policylang.run.vector.cache import _Entry
    from policylang.run.vector.tuning import FEW_DISTINCT
    from policylang.run.vector.values import Col, codes_of, take

    zones = ["a", "b", "a", "c", "b", "a"]
    entry = _Entry(1, 6, 0)
    entry.store(np.arange(3), Col(np.array(zones[:3], dtype=object)))
    assert codes_of(entry.column(np.arange(3))) is None     # three nodes have no value yet
    entry.store(np.arange(3, 6), Col(np.array(zones[3:], dtype=object)))
    entry.synced = 0
    pos = np.array([5, 3, 1, 0])
    col = entry.column(pos)
    for c, values in ((col, [zones[i] for i in pos]), (take(col, np.array([1, 3])), ["c", "a"])):
        codes, distinct = codes_of(c)
        assert [distinct[i] for i in codes.tolist()] == values
    unhashable = _Entry(2, 2, 0)
    unhashable.store(np.arange(2), Col(np.array([None, None], dtype=object)))
    unhashable.values[:] = [["x"], ["y"]]
    unhashable.synced = 0
    assert codes_of(unhashable.column(np.arange(2))) is None
    many = _Entry(3, FEW_DISTINCT + 1, 0)
    many.store(np.arange(FEW_DISTINCT + 1), Col(np.array([f"n{i}" for i in range(FEW_DISTINCT + 1)], dtype=object)))
    many.synced = 0
    assert codes_of(many.column(np.arange(FEW_DISTINCT + 1))) is None


@pytest.mark.parametrize("reject, message", [
    # Null nodes: the look-ups answer as for no node.
    ('has_image(node_named("nope"), "x") or len(requested(node_named("nope"))) > 0'
     ' or count_on_node(node_named("nope"), "default", null) > 0'
     ' or len(domains_of("zone", [node_named("nope"), node])) != 1'
     ' or len(count_by_domain_on("default", null, "zone", [node_named("nope")])) > 0', None),
    # A record literal where a builtin reads a cluster object: a policy error, not a crash.
    ('node_selector_term_matches({matchExpressions: [], matchFields: []}, node)',
     'running "Team" filter plugin: a builtin cannot read its argument'),
])
def test_builtins_given_null_or_a_literal_answer_or_fail_as_policies_do(reject, message):
    text = f"policy Team\n\nfilter team {{\n    reject when {reject}\n        reason \"no\"\n}}\n\n" \
           "profile team {\n    use Team weight 1\n}\n"
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}", "labels": {"zone": "a"}}}
             for i in range(2)]
    decisions = _team_decisions(text, nodes)
    assert decisions[1] == decisions[0]
    if message is None:
        assert decisions[0].selected == "node-0"
    else:
        assert decisions[0].message.startswith(message)


@pytest.mark.parametrize("normalize, normalized, message", [
    # -2**63 / (2**63 - 1) truncates to -1; numpy's abs(-2**63) is -2**63, so int64 division is off.
    ("50 + score / 9223372036854775807", 49, None),
    # -2**63 * 100 leaves the 64 bits: an error on both, where int64 arithmetic would wrap.
    ("score * 100 / (max(scores) ?? 1)", None,
     'running Normalize on Score plugins: plugin "Team" failed with: <team>.sched:3:1: integer overflow: '
     '-9223372036854775808 * 100 leaves the 64-bit integers'),
])
def test_a_raw_score_of_the_smallest_int64_is_normalised_as_the_reference_does(normalize, normalized, message):
    """-2**63 is an int64 whose absolute value is itself: normalising it with int64 arithmetic
    overflowed (found by the team-policy property test)."""

    text = ("policy Team\n\nscore team {\n"
            "    value 2147483648 * (0 - 2147483648 * len(node.metadata.labels))\n"
            f"    normalize with {normalize}\n}}\n\n"
            "profile team {\n    use Team weight 1\n}\n")
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}", "labels": {"a": "1", "b": "2"}}}
             for i in range(2)]
    reference, vector = _team_decisions(text, nodes)
    assert reference.message == message
    if normalized is not None:
        assert reference.nodes[0].scores["Team"] == (-(2 ** 63), normalized, 1)
    assert vector == reference


LABELS = "len(node.metadata.labels)"     # 2 on node-0, 1 on node-1: a column in the vector executor
SMALLEST = f"(0 - 9223372036854775806 - 2 * min({LABELS}, 1))"     # -2**63 on every node


@pytest.mark.parametrize("cond, overflow", [
    (f"9223372036854775807 + {LABELS} > 0", "9223372036854775807 + 2"),
    (f"(0 - 9223372036854775807) - 2 * {LABELS} < 0", "-9223372036854775807 - 4"),
    (f"4611686018427387904 * (1 + {LABELS}) > 0", "4611686018427387904 * 3"),
    (f"-{SMALLEST} > 0", "-(-9223372036854775808)"),
    (f"{SMALLEST} / -1 > 0", "-9223372036854775808 / -1"),
    (f"abs({SMALLEST}) > 0", "abs(-9223372036854775808)"),
    (f"sum(x in [9223372036854775807, {LABELS}]) > 0", "a sum"),
    (f"int(10000000000.0 * 1000000000.0 * {LABELS}) > 0", "int(2e+19)"),
    ('int("99999999999999999999") > 0', 'int("99999999999999999999")'),
    ("fold(acc = 2 for x in range(64): acc * acc) > 0", "4294967296 * 4294967296"),
    (f'milli(quantity("8Pi") * {LABELS}) > 0', "8Pi * 2"),
    (f'quantity("8Pi") + quantity("1Pi") * {LABELS} > quantity("1")', "8Pi + 2Pi"),
    # At the bounds, not past them: exact on both executors.
    (f"9223372036854775806 + min({LABELS}, 1) == 9223372036854775807", None),
    (f"{SMALLEST} < 0 and {SMALLEST} % -1 == 0", None),
    (f"sum([9223372036854775807, {LABELS}, 0 - 5]) > 0", None),     # only a partial sum leaves: Go wraps back
    (f"int(1000000000.0 * 1000000000.0 * {LABELS}) > 0", None),
    (f'milli(quantity("8Pi") + quantity("1Ti") * {LABELS}) > 0', None),
])
def test_integers_stay_in_64_bits_on_both_executors(cond, overflow):
    """Integer arithmetic, sums, abs and conversions refuse to leave the 64-bit integers (and
    quantities their 64-bit milli-units), as a policy error naming the statement, alike on both
    executors; where int64 would wrap, numpy would too, so the vector executor must notice."""
    text = f"policy Team\n\nfilter team {{\n    reject when {cond}\n        reason \"no\"\n}}\n\n" \
           "profile team {\n    use Team weight 1\n}\n"
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"node-{i}", "labels": {"a": "1", "b": "2"} if i == 0 else {"a": "1"}}}
             for i in range(2)]
    if overflow is None:
        with mock.patch.object(Executable, "reference", side_effect=AssertionError("fell back to the reference")):
            reference, vector = _team_decisions(text, nodes)
        assert reference.message == "0/2 nodes are available: 2 no."
    else:
        reference, vector = _team_decisions(text, nodes)
        kind = "a quantity's 64-bit count of milli-units" if "Pi" in overflow else "the 64-bit integers"
        assert reference.message == (f'running "Team" filter plugin: <team>.sched:4:5: integer overflow: {overflow} '
                                     f'leaves {kind}')
    assert vector == reference


def test_strings_formatted_per_node_read_alike_on_both_executors():
    """A string interpolated per node (node_domain's "key=value", a reason naming the node) is
    formatted over the batch by the vector executor: nulls, booleans, quantities and lists
    read as the reference reads them."""

    text = ('policy Team\n\ndef zone(n) = n.metadata.labels["zone"]\n'
            'def cpu(n) = n.status.allocatable["cpu"]\ndef pair(n) = ["x", zone(n)]\n'
            'def text(n) = "${n.metadata.name}/${zone(n)}/${n.spec.unschedulable}/${cpu(n)}/${pair(n)}"\n\n'
            'filter team {\n    reject when text(node) in ["node-1/b/true/1500m/[x b]", "node-2//false/2/[x ]"]\n'
            '        reason "${text(node)} is out"\n}\n\n'
            "profile team {\n    use Team weight 1\n}\n")
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"node-{i}", "labels": {"zone": zone} if zone else {}},
              "spec": {"unschedulable": unschedulable},
              "status": {"allocatable": {"cpu": cpu}}}
             for i, (zone, unschedulable, cpu) in enumerate([("a", False, "2"), ("b", True, "1500m"),
                                                             (None, False, "2")])]
    reference, vector = _team_decisions(text, nodes)
    assert vector == reference
    assert [r.failure.reasons if r.failure else None for r in vector.nodes] == [
        None, ("node-1/b/true/1500m/[x b] is out",), ("node-2//false/2/[x ] is out",)]


def test_values_read_from_kept_columns_are_widened_to_every_node_as_the_reference_computes_them():
    """A value that reads only a let kept for every node (ImageLocality's score of its `total`)
    is computed, on a second pod of a template, for every node missing it, from that column
    at those nodes; a third pod then reads those nodes' values, which must be theirs."""
    from policylang.cluster.state import ClusterState

    text = ('policy Team\n\nfilter team {\n'
            '    reject when node.metadata.labels["group"] == pod.metadata.labels["group"]\n'
            '        reason "group"\n}\n\n'
            'score team {\n    let weight = int(node.metadata.labels["w"]) * 7 + len(node.metadata.name)\n'
            '    value weight * 3 + 1\n    normalize minmax\n}\n\n'
            "profile team {\n    use Team weight 1\n}\n")
    nodes = [S.structure({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": f"node-{i:02d}",
                                       "labels": {"group": "abc"[i % 3], "w": str(i * i % 17)}}})
             for i in range(30)]
    pods = [S.structure({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"p-{group}", "namespace": "default", "labels": {"group": group}},
                         "spec": {"containers": [{"name": "c"}]}}) for group in "abc"]
    outcomes = []
    for exe in executables(_team_plan(text)):
        state = ClusterState.build(nodes)
        outcomes.append([schedule(exe, state, pod) for pod in pods])
    assert outcomes[1] == outcomes[0]


def test_objects_compared_and_looked_up_per_node_read_alike_on_both_executors():
    """`==` / `!=` over values numpy cannot compare (records, null, quantities) and `x in m`
    with both sides varying by node are Python's equality and membership, node by node."""

    text = ('policy Team\n\nfilter team {\n'
            '    let found = first(s in [{key: "a", v: 1}, {key: "b", v: 2}] where s.key in node.metadata.labels)\n'
            '    reject when found == null\n        reason "none"\n'
            '    reject when found != null and found.key in node.metadata.labels and found == {key: "b", v: 2}\n'
            '        reason "b"\n'
            '    reject when node.status.allocatable["cpu"] != quantity("1000m")\n        reason "not one cpu"\n}\n\n'
            "profile team {\n    use Team weight 1\n}\n")
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}", "labels": labels},
              "status": {"allocatable": {"cpu": cpu}}}
             for i, (labels, cpu) in enumerate([({"a": "1"}, "1"), ({"b": "1"}, "1"), ({}, "1"),
                                                ({"a": "1", "b": "1"}, "2")])]
    reference, vector = _team_decisions(text, nodes)
    assert vector == reference
    assert [r.failure.reasons if r.failure else None for r in vector.nodes] == [
        None, ("b",), ("none",), ("not one cpu",)]


def test_a_value_of_params_alone_is_each_profiles_own_and_fails_on_every_pod():
    """What reads only params is computed once per plugin's params, not once for every pod:
    two profiles using a policy with different args each get their own value, and a check of
    the args that fails, fails every pod, not just the first."""
    from policylang.cluster.state import ClusterState

    text = ('policy Team\n\nparam zones: list[string] = ["a"]\n\n'
            'filter team {\n    let ok = if len(params.zones) > 0 then true else fail("no zones")\n'
            '    reject when not node.metadata.labels["zone"] in [z + "" for z in params.zones]\n'
            '        reason "zone"\n}\n\n'
            'profile a {\n    use Team weight 1\n}\n\nprofile b {\n    use Team { zones: ["b"] } weight 1\n}\n\n'
            'profile none {\n    use Team { zones: [] } weight 1\n}\n')
    plans = compile_all(check(load_program("<team>.sched", text=text)))
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{z}", "labels": {"zone": z}}}
             for z in "ab"]
    pods = [S.structure({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
                         "spec": {"containers": [{"name": "c"}]}}) for i in range(2)]
    for pod in pods:
        for profile, selected in (("a", "node-a"), ("b", "node-b"), ("none", None)):
            reference, vector = (schedule(exe, ClusterState.build([S.structure(n) for n in nodes]), pod)
                                 for exe in executables(plans[profile]))
            assert vector == reference
            assert vector.selected == selected
            if selected is None:
                assert "no zones" in vector.message


@pytest.mark.parametrize("expr, long", [
    ("[c.name for c in pod.spec.containers]", False),
    ("[t for t in [c.name for c in pod.spec.containers] where t != \"\"]", False),
    ("[x for x in params.zones]", False),
    ("[n.metadata.name for n in cluster.nodes]", True),
    ("[x for x in [n.metadata.name for n in cluster.nodes]]", True),
    ("[p for p in pods_matching(pod.metadata.namespace, null)]", True),
    ("[c for c in zones]", True),      # a let: it may hold anything
])
def test_comprehensions_over_what_a_pod_spec_holds_are_not_taken_apart(expr, long):
    """A pod-stage expression is evaluated part by part (so that a comprehension over a long
    list, the cluster's nodes say, runs as a batch) only when it holds one that may be long:
    lists read from the pod or params alone, and lists made from their members, are short."""
    from policylang import plan as P
    from policylang.run.vector.analysis import has_long_comprehension

    text = ('policy Team\n\nparam zones: list[string] = ["a"]\n\nfilter team {\n'
            f'    let zones = params.zones\n    let value = {expr}\n'
            '    reject when len(value) > 100\n        reason "many"\n}\n\n'
            "profile team {\n    use Team weight 1\n}\n")
    (step,) = [s for s in _team_plan(text).plugins[0].filters[0].pod_steps
               if isinstance(s, P.LetStep) and s.name.startswith("value")]
    assert has_long_comprehension(step.expr) is long


def test_nodes_named_over_a_batch_read_alike_on_both_executors():
    """node_named over a column of names (a pod-stage comprehension over the cluster's nodes,
    run as a batch): each name's node, null for a name no node has or for null."""

    text = ('policy Team\n\nfilter team {\n'
            '    let pairs = [{of: n.metadata.name, peer: node_named(n.metadata.labels["peer"])}\n'
            '                 for n in cluster.nodes]\n'
            '    let named = [x.peer.metadata.name for x in pairs where x.peer != null]\n'
            '    reject when node.metadata.name in named\n'
            '        reason "peer of ${first(x in pairs where x.peer.metadata.name == node.metadata.name).of}"\n'
            '}\n\n'
            "profile team {\n    use Team weight 1\n}\n")
    peers = {0: "node-10", 1: "node-11", 2: "node-12", 3: "nope", 4: "node-14"}
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"node-{i}", "labels": {"peer": peers[i]} if i in peers else {}}}
             for i in range(20)]
    reference, vector = _team_decisions(text, nodes)
    assert vector == reference
    assert [(r.name, r.failure.reasons) for r in vector.nodes if r.failure] == [
        (f"node-1{i}", (f"peer of node-{i}",)) for i in (0, 1, 2, 4)]

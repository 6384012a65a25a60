"""The vector executor's own workings (that it decides as the reference does is
tests/test_executors.py): who keeps its caches, and what its passes decide."""

from __future__ import annotations

import gc
import weakref

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies as S
from policylang import Executable, load_plans, schedule
from policylang.cluster.state import ClusterState
from policylang import plan as P
from policylang.run.vector.cache import NodeCache, Unfrozen, freeze
from policylang.run.vector.passes import PASSES, annotate


def _nodes(k: int) -> list:
    return [S.structure({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}",
                         "labels": {"topology.kubernetes.io/zone": f"zone-{i % 2}"}},
                         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
            for i in range(k)]


def _pod():
    return S.structure({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})


def test_the_vector_executor_keeps_its_caches_itself_and_lets_a_state_go():
    """Scheduling writes none of the executor's data into the state's own cache; two executors
    share a state (and its node cache); once nothing holds the state, it and its cache are gone."""
    plan = load_plans()["default-scheduler"]
    first, second = Executable(plan, "vector"), Executable(plan, "vector")
    state = ClusterState.build(_nodes(6))
    before = set(state.cache)
    decisions = [schedule(exe, state, _pod()) for exe in (first, second, first)]
    assert decisions[0] == decisions[1] == decisions[2]
    assert not {"vector", "nodes by position"} & (set(state.cache) - before)
    assert NodeCache.of(state).entries, "the node cache kept values"
    gone, cache_gone = weakref.ref(state), weakref.ref(NodeCache.of(state))
    del state
    gc.collect()
    assert gone() is None and cache_gone() is None


def _expr(text: str):
    """The IR of ``let value = <text>`` in a filter's per-node steps."""
    from policylang import check, compile_all, load_program

    source = ("policy Team\n\nfilter team {\n    let tolerations = pod.spec.tolerations\n"
              f"    let value = {text}\n    reject when value == null\n        reason \"x\"\n}}\n\n"
              "profile team {\n    use Team weight 1\n}\n")
    plan = compile_all(check(load_program("<team>.sched", text=source)))["team"]
    steps = plan.plugins[0].filters[0].pod_steps + plan.plugins[0].filters[0].node_steps
    return next(s.expr for s in steps if isinstance(s, P.LetStep) and s.name.startswith("value"))


def test_the_passes_run_in_order_and_annotate_each_expression_once():
    assert [name for name, _ in PASSES] == ["free_paths", "params_only", "node_locality", "cheapness",
                                           "long_comprehensions", "caching", "lifting"]
    ir = _expr("count(t in node.spec.taints where not any(tol in tolerations where tolerates(tol, t)))")
    facts = annotate(ir)
    assert annotate(ir) is facts
    assert facts.free[0] == "node" and facts.free[1].startswith("tolerations")
    assert facts.locality == "static" and facts.cached and facts.lifted and facts.long


def test_what_reads_the_pods_on_a_node_is_kept_until_they_change_and_cheap_is_not_kept():
    assert annotate(_expr('requested(node)["cpu"]')).locality == "dynamic"
    assert annotate(_expr('requested(node)["cpu"]')).cached
    cheap = annotate(_expr("abs(milli(node.status.allocatable[\"cpu\"]) - 1)"))
    assert cheap.cheap and not cheap.cached
    assert annotate(_expr('len(pods_matching("default", null))')).locality is None


@attrs.frozen
class _Record:
    a: object
    b: object = None


_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: (st.lists(inner, max_size=12) | st.lists(inner, max_size=12).map(tuple)
                   | st.dictionaries(st.text(max_size=3), inner, max_size=12) | st.builds(_Record, inner, inner)),
    max_leaves=80)


def _values_in(v) -> int:
    """How many values v holds, itself included: what freezing it costs of the budget."""
    if isinstance(v, (list, tuple)):
        return 1 + sum(map(_values_in, v))
    if isinstance(v, dict):
        return 1 + sum(map(_values_in, v.values()))
    if isinstance(v, _Record):
        return 1 + _values_in(v.a) + _values_in(v.b)
    return 1


@settings(max_examples=300, deadline=None)
@given(_PLAIN, st.integers(0, 40))
def test_a_value_is_frozen_exactly_when_the_budget_covers_each_value_it_holds(v, budget):
    """freeze refuses a list, map or record with more members than the budget has left before
    freezing any (a speed-up): the answer is still the budget's, one per value held."""
    left = [budget]
    try:
        frozen = freeze(v, left)
    except Unfrozen:
        assert _values_in(v) > budget
    else:
        assert _values_in(v) <= budget and left[0] == budget - _values_in(v)
        assert hash(frozen) == hash(freeze(v, [budget]))

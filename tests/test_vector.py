"""The vector executor's own workings (that it decides as the reference does is
tests/test_executors.py): who keeps its caches."""

from __future__ import annotations

import gc
import weakref

import strategies as S
from policylang import Executable, load_plans, schedule
from policylang.cluster.state import ClusterState
from policylang.run.vector.cache import NodeCache


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

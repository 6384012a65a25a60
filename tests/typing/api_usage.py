"""The public API as the docs show it (docs/api.md), type-checked by tests/test_api_types.py: a
change to the surface that breaks a caller's types fails there."""

from __future__ import annotations

from policylang import Decision, Engine, Fork, Held, InputError, PolicylangError


def where(engine: Engine, pod: dict) -> str | None:
    result = engine.evaluate(pod)
    if isinstance(result, Held):
        return None
    decision: Decision = result
    feasible: tuple = decision.feasible
    assert isinstance(feasible, tuple)
    return decision.selected


def trial(engine: Engine, pod: dict, other: dict) -> bool:
    first = engine.evaluate(pod)
    if isinstance(first, Held) or first.selected is None:
        return False
    with engine.fork() as fork:
        assert isinstance(fork, Fork)
        fork.bind(pod, first.selected)
        fork.taint(first.selected, "example.com/maintenance", "true", "NoSchedule")
        second = fork.evaluate(other, seed=7)
        placed = second.to_json()["selected"] is not None
        fork.revert()
    return placed


def main() -> int:
    try:
        engine = Engine(cluster="examples/cluster.yaml", profile="default-scheduler", kubernetes_version="1.35")
    except InputError as err:
        print(err)
        return 2
    except PolicylangError as err:
        print(err)
        return 2
    outcome = engine.whatif(["cordon worker-a1"])
    room = engine.capacity("examples/pods/web.yaml")
    placements = engine.simulate(["examples/pods/web.yaml"])
    print(where(engine, {"metadata": {"name": "p"}, "spec": {"containers": []}}), outcome, room, placements,
          engine.explain("examples/pods/web.yaml"))
    return 0

"""PodTopologySpread's explain fixer: relax maxSkew."""

from __future__ import annotations

import attrs

from .edits import Change, with_spec


def fix(state, pod, node, status):
    constraints = pod.spec.topology_spread_constraints
    for skew in range(1, 11):
        relaxed = tuple(attrs.evolve(c, max_skew=c.max_skew + skew) if c.when_unsatisfiable == "DoNotSchedule" else c
                        for c in constraints)
        new_max = max((c.max_skew for c in relaxed if c.when_unsatisfiable == "DoNotSchedule"), default=0)
        yield Change(f"relax maxSkew to {new_max}", with_spec(pod, topology_spread_constraints=relaxed), state)

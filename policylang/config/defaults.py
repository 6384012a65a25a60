"""kube-scheduler's default plugins for a target: default.sched's profile, its `use … when`s
decided for the target's version and gates (apis/config/v1/default_plugins.go), as the
configuration reader merges a configuration with them and serve's export diffs a profile
against them. Here, not in plugins/registry.py: deciding a `when` takes the checker and the
compiler, which themselves ask the registry."""

from __future__ import annotations

import functools

from ..plugins import registry


def default_plugins(target=None) -> tuple:
    """The MultiPoint defaults of ``target`` (default: the default target) as (name, weight): the
    default profile's plugins in its order for that target, with its weights (0 where it gives
    none), among those that never change a decision."""
    from ..target import DEFAULT
    return _default_plugins(DEFAULT if target is None else target)


@functools.cache
def _default_plugins(target) -> tuple:
    from ..check import check
    from ..compile import active_uses
    from ..program import load_program

    path = registry.default_profile_path()
    program = load_program(path)
    ((_, profile),) = [(f, p) for f, p in program.profiles() if p.name == "default-scheduler"]
    uses = active_uses(check(program), path, profile, target)
    weighted = tuple((u.ref, u.weight.value if u.weight is not None else 0) for u in uses)
    return (tuple((n, 0) for n in registry.NO_DECISION_BEFORE) + weighted
            + tuple((n, 0) for n in registry.NO_DECISION_AFTER))

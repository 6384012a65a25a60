"""Every stdlib plugin, found in one place, as kube-scheduler's ``plugins/registry.go``.

What a plugin is comes from its ``.sched`` file: the extension points it implements (its filters,
scores, rules, and those its ``policy P implements …`` line declares) and whose filter its score
assumes (``policy P assumes filter Q``). The default
profile, with its weights, is ``default.sched``. Engine code a plugin needs is its companion
(found by run/companions.py).
"""

from __future__ import annotations

import functools
from pathlib import Path

from .. import cache
from ..syntax import ast
from ..frozen import frozen
from ..syntax.parse import parse_file
from ..vocabulary import EXTENSION_POINTS
from ..roots import snake_case, stdlib_dir

# Upstream plugins with no .sched here, because they never change where a pod goes (gates, queue
# order, binding): a configuration may name them, at their one extension point. Where they stand
# among v1.35's defaults.
NO_DECISION_POINTS = {"SchedulingGates": "preEnqueue", "PrioritySort": "queueSort", "DefaultBinder": "bind"}
NO_DECISION_BEFORE = ("SchedulingGates", "PrioritySort")
NO_DECISION_AFTER = ("DefaultBinder",)
NO_DECISION = frozenset(NO_DECISION_POINTS)


@frozen
class Plugin:
    name: str
    path: str
    implements: frozenset      # of "filter", "score", "postFilter"
    assumes_filter: tuple = ()   # plugins whose filters its score assumes have run
    params: frozenset = frozenset()     # the params it declares


def _points(module: ast.Module) -> frozenset:
    rules = module.of_type(ast.Rule)
    points = set(module.policy.implements)
    if not points <= set(EXTENSION_POINTS):
        raise ValueError(f"{module.path}: a policy implements {', '.join(EXTENSION_POINTS)}, not "
                         f"{', '.join(sorted(points - set(EXTENSION_POINTS)))}")
    if module.of_type(ast.Filter) or any(isinstance(s, (ast.Require, ast.Spread)) for r in rules for s in r.body):
        points.add("filter")
    if module.of_type(ast.Score) or any(isinstance(s, ast.Prefer) for r in rules for s in r.body):
        points.add("score")
    return frozenset(points)


@functools.cache
def plugins() -> dict[str, Plugin]:
    """The stdlib's plugins by name, in file name order, read off their .sched files; through the
    cache by those files' texts (unpickling the 17 syntax trees to read this cost every `check`
    ~0.1 s)."""
    texts = tuple((str(path), path.read_text()) for path in sorted(stdlib_dir().glob("*.sched")))
    return cache.cached("registry", cache.key("registry", *(part for file in texts for part in file)),
                        lambda: _read(texts), dict)


def _read(texts) -> dict[str, Plugin]:
    out = {}
    for path, text in texts:
        module = parse_file(text, path)
        policy = module.policy
        if policy is None:
            continue
        if snake_case(policy.name) != Path(path).stem:
            raise ValueError(f"{path}: policy {policy.name} belongs in {snake_case(policy.name)}.sched")
        out[policy.name] = Plugin(policy.name, path, _points(module), policy.assumes_filter,
                                  frozenset(p.name for p in module.of_type(ast.Param)))
    return out


def plugin(name: str) -> "Plugin | None":
    return plugins().get(name)


def implements(name: str) -> frozenset:
    found = plugins().get(name)
    return found.implements if found is not None else frozenset()


def params(name: str) -> frozenset:
    """The params a stdlib plugin declares: the args of its KubeSchedulerConfiguration entry it reads."""
    found = plugins().get(name)
    return found.params if found is not None else frozenset()


def known() -> frozenset:
    """Every plugin name a configuration may use."""
    return frozenset(plugins()) | NO_DECISION


def default_profile_path() -> str:
    """default.sched: kube-scheduler's default profile, for every version (its `use … when`s
    decide which plugins a version has; config/defaults.py reads them for a target)."""
    return str(stdlib_dir() / "default.sched")

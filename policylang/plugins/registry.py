"""Every stdlib plugin, found in one place, as kube-scheduler's ``plugins/registry.go``.

What a plugin is comes from its ``.sched`` file: the extension points it implements (its filters,
scores, rules, and those its ``policy P implements …`` line declares) and whose filter its score
assumes (``policy P assumes filter Q``). The default
profile, with its weights, is ``default.sched``. Engine code a plugin needs lives in its
**companion**, the module of this package named as the policy's file, and is found by the plugin's
name; a companion may define:

- ``postfilter(exe, state, pod, pre, statuses, *, plugin, preemption, rng)``: its PostFilter, a
  ``PostFilterOutcome`` (or None to take no part); the plugin then implements ``postFilter``.
- ``reserve(exe, state, pod, node_name, plugin)``: its Reserve, before ``simulate`` binds the pod;
  it may return the error that stops the binding (its PreBind refused by the API server).
- ``fix(state, pod, node, status)``: explain's changes that might let the pod onto a node this
  plugin alone rejected, smallest first, as ``edits.Change`` (one text for the same change
  found on several nodes).
- ``detail(state, pod, reason, node_names)``: what a reason amounts to across the nodes it
  rejects ("needs 4, the most free is 3500m on node-a"), or None.
- ``distance(state, pod, node_name, status)``: how far such a near miss is from fitting (0..1).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import attrs

from .. import ast
from ..parse import parse_file
from ..plan import EXTENSION_POINTS
from ..program import snake_case, stdlib_dir

# Upstream plugins with no .sched here, because they never change where a pod goes (gates, queue
# order, binding): a configuration may name them, at their one extension point. Where they stand
# among v1.35's defaults.
NO_DECISION_POINTS = {"SchedulingGates": "preEnqueue", "PrioritySort": "queueSort", "DefaultBinder": "bind"}
NO_DECISION_BEFORE = ("SchedulingGates", "PrioritySort")
NO_DECISION_AFTER = ("DefaultBinder",)
NO_DECISION = frozenset(NO_DECISION_POINTS)


@attrs.frozen
class Plugin:
    name: str
    path: str
    implements: frozenset      # of "filter", "score", "postFilter"
    assumes_filter: tuple = ()   # plugins whose filters its score assumes have run
    companion: "ModuleType | None" = attrs.field(default=None, eq=False, repr=False)

    def hook(self, name: str):
        # The module's namespace, not getattr: a missing hook is the common case (simulate asks
        # every plugin for its Reserve on every pod) and getattr makes an AttributeError for it.
        return vars(self.companion).get(name) if self.companion is not None else None


def _companion(stem: str) -> "ModuleType | None":
    name = f"{__package__}.{stem}"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


def _points(module: ast.Module, companion) -> frozenset:
    rules = module.of_type(ast.Rule)
    points = set(module.policy.implements)
    if not points <= set(EXTENSION_POINTS):
        raise ValueError(f"{module.path}: a policy implements {', '.join(EXTENSION_POINTS)}, not "
                         f"{', '.join(sorted(points - set(EXTENSION_POINTS)))}")
    if module.of_type(ast.Filter) or any(isinstance(s, (ast.Require, ast.Spread)) for r in rules for s in r.body):
        points.add("filter")
    if module.of_type(ast.Score) or any(isinstance(s, ast.Prefer) for r in rules for s in r.body):
        points.add("score")
    if getattr(companion, "postfilter", None) is not None:
        points.add("postFilter")
    return frozenset(points)


@functools.cache
def plugins() -> dict[str, Plugin]:
    """The stdlib's plugins by name, in file name order."""
    out = {}
    for path in sorted(stdlib_dir().glob("*.sched")):
        module = parse_file(path.read_text(), str(path))
        policy = module.policy
        if policy is None:
            continue
        if snake_case(policy.name) != path.stem:
            raise ValueError(f"{path}: policy {policy.name} belongs in {snake_case(policy.name)}.sched")
        companion = _companion(path.stem)
        out[policy.name] = Plugin(policy.name, str(path), _points(module, companion), policy.assumes_filter, companion)
    return out


def plugin(name: str) -> "Plugin | None":
    return plugins().get(name)


def hook(name: str, hook_name: str):
    """The companion's function ``hook_name`` of plugin ``name``, or None."""
    found = plugins().get(name)
    return found.hook(hook_name) if found is not None else None


def implements(name: str) -> frozenset:
    found = plugins().get(name)
    return found.implements if found is not None else frozenset()


@functools.cache
def params(name: str) -> frozenset:
    """The params a stdlib plugin declares: the args of its KubeSchedulerConfiguration entry it reads."""
    found = plugins().get(name)
    if found is None:
        return frozenset()
    module = parse_file(Path(found.path).read_text(), found.path)
    return frozenset(p.name for p in module.of_type(ast.Param))


def known() -> frozenset:
    """Every plugin name a configuration may use."""
    return frozenset(plugins()) | NO_DECISION


@functools.cache
def default_plugins() -> tuple:
    """v1.35's MultiPoint defaults (pkg/scheduler/apis/config/v1/default_plugins.go) as
    (name, weight): the default profile's plugins in its order, with its weights (0 where it
    gives none), among those that never change a decision."""
    module = parse_file((stdlib_dir() / "default.sched").read_text(), str(stdlib_dir() / "default.sched"))
    (profile,) = [p for p in module.of_type(ast.Profile) if p.name == "default-scheduler"]
    uses = tuple((u.ref, u.weight.value if u.weight is not None else 0) for u in profile.uses)
    return tuple((n, 0) for n in NO_DECISION_BEFORE) + uses + tuple((n, 0) for n in NO_DECISION_AFTER)

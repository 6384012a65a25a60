"""The plugin registry: what it reads from the stdlib's .sched files is kube-scheduler v1.35's
plugin set, and the companions define only the hooks the engine calls."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from policylang.plugins import registry
from policylang.run import companions
from policylang.program import snake_case

ROOT = Path(__file__).parent.parent

# pkg/scheduler/apis/config/v1/default_plugins.go (v1.35), with the DynamicResourceAllocation
# gate's DynamicResources before DefaultPreemption.
DEFAULT_PLUGINS = (
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 2), ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
)
# What each implements among the extension points that change a decision.
IMPLEMENTS = {
    "NodeUnschedulable": {"filter"}, "NodeName": {"filter"},
    "TaintToleration": {"filter", "score"}, "NodeAffinity": {"filter", "score"}, "NodePorts": {"filter"},
    "NodeResourcesFit": {"filter", "score"}, "VolumeRestrictions": {"filter"}, "NodeVolumeLimits": {"filter"},
    "VolumeBinding": {"filter", "score"}, "VolumeZone": {"filter"}, "PodTopologySpread": {"filter", "score"},
    "InterPodAffinity": {"filter", "score"}, "DynamicResources": {"filter", "score", "postFilter"},
    "DefaultPreemption": {"postFilter"}, "NodeResourcesBalancedAllocation": {"score"},
    "ImageLocality": {"score"},
}
HOOKS = {"postfilter", "reserve", "fix", "distance", "detail"}


def test_the_default_plugins_are_v1_35s_in_its_order():
    from policylang.config.defaults import default_plugins
    from policylang.target import make_target
    defaults = default_plugins(make_target("1.35"))
    assert [p for p in defaults if p[0] in dict(DEFAULT_PLUGINS)] == list(DEFAULT_PLUGINS)


def test_v1_37_runs_node_name_before_node_unschedulable():
    """default_plugins.go (v1.37) swapped them; the rest stays in v1.35's order."""
    from policylang.config.defaults import default_plugins
    from policylang.target import make_target
    names = [n for n, _ in default_plugins(make_target("1.37")) if n in dict(DEFAULT_PLUGINS)]
    v135 = [n for n, _ in DEFAULT_PLUGINS]
    i = v135.index("NodeUnschedulable")
    assert v135[i:i + 2] == ["NodeUnschedulable", "NodeName"]
    assert names == v135[:i] + ["NodeName", "NodeUnschedulable"] + v135[i + 2:]


def test_each_plugin_implements_what_upstreams_does():
    assert {name: set(registry.implements(name)) for name in IMPLEMENTS} == IMPLEMENTS
    assert registry.known() >= set(IMPLEMENTS) | {"SchedulingGates", "PrioritySort", "DefaultBinder"}


def test_scores_that_assume_a_filter_say_which():
    assumes = {name: p.assumes_filter for name, p in registry.plugins().items() if p.assumes_filter}
    assert assumes | {"NodeResourcesFit": ("NodeResourcesFit",),
                       "NodeResourcesBalancedAllocation": ("NodeResourcesFit",),
                       "VolumeBinding": ("VolumeBinding",), "DynamicResources": ("DynamicResources",)} == assumes


def test_companions_define_only_the_engines_hooks_and_belong_to_a_plugin():
    stems = {snake_case(name) for name in registry.plugins()}
    for path in sorted((ROOT / "policylang" / "plugins").glob("*.py")):
        if path.stem in ("__init__", "registry", "companions", "edits"):
            continue
        assert path.stem in stems, f"{path.name} is no stdlib plugin's companion"
        functions = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
        assert {f for f in functions if not f.startswith("_")} <= HOOKS, path.name
    for name, p in registry.plugins().items():
        for hook in HOOKS:
            fn = companions.hook(name, hook)
            assert fn is None or inspect.isfunction(fn), (name, hook)


def test_a_plugin_implements_postfilter_where_its_companion_has_one():
    # Declared in the .sched, so that knowing what a plugin implements imports no companion.
    for name, p in registry.plugins().items():
        assert ("postFilter" in p.implements) == (companions.hook(name, "postfilter") is not None), name


def _imports(root: Path) -> dict:
    """module → the policylang modules it imports (inside functions too)."""
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                target = ".".join(base + (node.module.split(".") if node.module else []))
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                found.update(subs + ([target] if len(subs) < len(node.names) else []))
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_the_cycle_its_executors_and_the_plugins_import_no_cycle():
    graph = _imports(ROOT / "policylang")
    scope = {m for m in graph if m.startswith(("policylang.run.", "policylang.plugins."))}

    def reaches(start: str, goal: str, seen: set) -> bool:
        for m in graph[start] & scope:
            if m == goal or (m not in seen and (seen.add(m) or reaches(m, goal, seen))):
                return True
        return False

    assert sorted(m for m in scope if reaches(m, m, set())) == []

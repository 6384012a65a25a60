"""No import cycles among policylang's modules: every import is walked (at the top of a module
and inside its functions alike, read with `ast`), and a cycle fails the test, printed as the
chain of modules that makes it."""

from __future__ import annotations

import ast
from pathlib import Path

import policylang

PACKAGE = Path(policylang.__file__).resolve().parent

# Cycles known and being broken elsewhere, each as the set of modules it runs through. Keep
# this empty: an entry is a debt, with who is paying it.
ALLOWED_CYCLES: list[frozenset] = []   # none: a cycle added here needs a comment saying why

def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The policylang modules this module imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from . import x` imports the submodule x when there is one.
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:     # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one cycle
    through them, found by a walk from its first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def _a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One chain a → b → … → a through the component's modules."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    while True:
        nxt = sorted(graph[path[-1]] & members)
        back = [w for w in nxt if w == start]
        if back and len(path) > 1:
            return path + [start]
        step = next((w for w in nxt if w not in seen), None)
        if step is None:
            return path + [nxt[0]] if nxt else path
        path.append(step)
        seen.add(step)


def test_the_walk_sees_imports_at_the_top_and_inside_functions():
    graph = _graph()
    assert "policylang.cluster.model" in graph["policylang.cluster.state"]
    assert "policylang.run.schedule" in graph["policylang.cli.decide"]               # inside a command
    assert "policylang.builtins" in graph["policylang.compile"]                 # inside a method


def test_no_import_cycles_among_policylang_modules():
    graph = _graph()
    cycles = [c for c in _cycles(graph) if frozenset(c) not in ALLOWED_CYCLES]
    assert not cycles, "import cycles:\n" + "\n".join("  " + " → ".join(_a_cycle(graph, c)) for c in cycles)

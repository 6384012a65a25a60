"""No import cycles among policylang's modules, and the layers kept apart: every import is walked
(at the top of a module and inside its functions alike, read with `ast`); a cycle fails the test,
printed as the chain of modules that makes it, and so does an import a layer contract (CONTRACTS)
forbids."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import policylang

PACKAGE = Path(policylang.__file__).resolve().parent

# Cycles known and being broken elsewhere, each as the set of modules it runs through. Keep
# this empty: an entry is a debt, with who is paying it.
ALLOWED_CYCLES: list[frozenset] = []   # none: a cycle added here needs a comment saying why


class Contract(NamedTuple):
    """A layer contract: the modules it binds may not import the forbidden ones. A name stands for
    the module or the package of that name and every module in it."""
    rule: str                        # what it says, as a failure prints it
    binds: tuple[str, ...]           # the importers
    forbidden: tuple[str, ...]       # what they may not import
    exempt: tuple[str, ...] = ()     # importers under `binds` that it does not bind
    through: bool = False            # imports through other modules count too (a → b → forbidden)
    # Known exceptions, (importer, imported, why): like ALLOWED_CYCLES, each is a debt with its
    # reason; one that no longer happens fails the test until it is taken off.
    allowed: tuple[tuple[str, str, str], ...] = ()


# What people, editors, agents and clusters talk to; kubectl.py and __main__.py only start cli/.
FRONT_ENDS = ("policylang.cli", "policylang.serve", "policylang.lsp", "policylang.mcp", "policylang.kubectl",
              "policylang.__main__")
REPORT = ("policylang.report",)
# The language's stages: syntax, checking (check, with infer's expression rules), compiling to a plan.
LANGUAGE = ("policylang.syntax", "policylang.check", "policylang.infer", "policylang.compile",
            "policylang.plan", "policylang.plan_size", "policylang.plan_text")

# Every top-level module and package of policylang but api/ itself and the frozen helper it builds on.
ABOVE_API = tuple(sorted(f"policylang.{p.stem}" for p in (Path(__file__).parent.parent / "policylang").iterdir()
                         if (p.suffix == ".py" or (p / "__init__.py").is_file())
                         and p.stem not in ("__init__", "__main__", "api", "frozen")))

CONTRACTS = [
    Contract("api/ (the Kubernetes objects, quantities, selectors, requests, API error texts) is the bottom layer: "
             "it imports nothing of policylang's but the frozen helper",
             binds=("policylang.api",), forbidden=ABOVE_API),
    Contract("report/ (text, JSON and HTML for people and machines) is imported only by the front ends",
             binds=("policylang",), exempt=FRONT_ENDS + REPORT, forbidden=REPORT),
    Contract("cluster/ and dra/ (the state and the allocator) import no language stage, directly or not",
             binds=("policylang.cluster", "policylang.dra"), forbidden=LANGUAGE, through=True),
    Contract("run/ (the scheduling cycle and the executors) imports no front end and no report, directly or not",
             binds=("policylang.run",), forbidden=FRONT_ENDS + REPORT, through=True),
]


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


def _within(module: str, names) -> bool:
    return any(module == n or module.startswith(n + ".") for n in names)


def _violations(graph: dict[str, set[str]], contract: Contract) -> dict[tuple[str, str], list[str]]:
    """Each import the contract forbids, (importer, imported), with the shortest chain that reaches
    it from a module the contract binds (the import itself when ``through`` is off). The walk stops at a
    forbidden module: what it imports in turn is its own business."""
    allowed = {(a, b) for a, b, _ in contract.allowed}
    found: dict[tuple[str, str], list[str]] = {}
    for start in sorted(graph):
        if not _within(start, contract.binds) or _within(start, contract.exempt):
            continue
        chains, seen = [[start]], {start}
        while chains:
            chain = chains.pop(0)
            for target in sorted(graph[chain[-1]]):
                if _within(target, contract.forbidden):
                    key = (chain[-1], target)
                    if key not in allowed and (key not in found or len(chain) + 1 < len(found[key])):
                        found[key] = chain + [target]
                elif contract.through and target not in seen:
                    seen.add(target)
                    chains.append(chain + [target])
    return found


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
    assert "policylang.api.model" in graph["policylang.cluster.state"]
    assert "policylang.run.schedule" in graph["policylang.cli.decide"]               # inside a command
    assert "policylang.builtins" in graph["policylang.compile"]                 # inside a method


def test_no_import_cycles_among_policylang_modules():
    graph = _graph()
    cycles = [c for c in _cycles(graph) if frozenset(c) not in ALLOWED_CYCLES]
    assert not cycles, "import cycles:\n" + "\n".join("  " + " → ".join(_a_cycle(graph, c)) for c in cycles)


def test_a_contract_sees_imports_through_other_modules():
    graph = {"policylang.run.schedule": {"policylang.cost"}, "policylang.cost": {"policylang.report.decisions"},
             "policylang.report.decisions": {"policylang.cli.common"}, "policylang.cli.common": set()}
    found = _violations(graph, Contract("run/ imports no report", binds=("policylang.run",),
                                        forbidden=("policylang.report", "policylang.cli"), through=True))
    assert found == {("policylang.cost", "policylang.report.decisions"):
                     ["policylang.run.schedule", "policylang.cost", "policylang.report.decisions"]}
    assert not _violations(graph, Contract("direct only", binds=("policylang.run",), forbidden=("policylang.report",)))


def test_the_layer_contracts_hold():
    graph = _graph()
    problems = []
    for contract in CONTRACTS:
        for name in contract.binds + contract.forbidden + contract.exempt:
            assert any(_within(m, (name,)) for m in graph), f"{contract.rule}: no module {name}"
        for importer, imported, _ in contract.allowed:
            if imported not in graph.get(importer, ()):
                problems.append(f"{contract.rule}: the exception {importer} → {imported} no longer happens: take it off")
        for chain in _violations(graph, contract).values():
            problems.append(f"{contract.rule}: " + " → ".join(chain))
    assert not problems, "layer contracts broken:\n" + "\n".join("  " + p for p in problems)

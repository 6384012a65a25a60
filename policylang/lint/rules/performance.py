"""Work a policy makes the scheduler do for nothing: per-node scans of the whole cluster,
and lists built only to be counted."""

from __future__ import annotations

from ...syntax import ast
from ..registry import rule
from ..sched_ast import children, decl_exprs, free_names, head_span, stmt_exprs, walk

COUNT_VIA_LEN = rule(
    "S401", "count-via-len", "performance", "info",
    summary="`len([x in xs where c])` builds a list only to count it or test it for emptiness.",
    rationale="""A list comprehension inside `len(...)` allocates every kept item just to count them.
    `count(x in xs where c)` counts without building the list, and `any(x in xs where c)` (for
    `len(...) > 0`) stops at the first match. In a filter this runs once per node and pod.""",
    bad="""
policy P
filter f {
    reject when len([t in node.spec.taints where t.effect == "NoExecute"]) > 0
        reason "node(s) are being evacuated"
}""",
    good="""
policy P
filter f {
    reject when any(t in node.spec.taints where t.effect == "NoExecute")
        reason "node(s) are being evacuated"
}""")

PER_NODE_SCAN = rule(
    "S402", "per-node-cluster-scan", "performance", "warning",
    summary="A per-node statement that scans `cluster.pods`, `cluster.nodes` or `feasible` against `node` or an outer variable.",
    rationale="""Filters and scores run once for every node. A comprehension over all the cluster's pods
    or nodes that compares each with `node` makes scheduling one pod cost nodes × pods: on 5,000
    nodes and 100,000 pods that is half a billion steps per pod. `node.pods` already holds the pods
    on the node; for anything else, compute a map once per pod in a `let` that does not use
    `node` (`group(p in cluster.pods by p.spec.nodeName)`) and look the node up in it.""",
    bad="""
policy P
filter f {
    reject when count(p in cluster.pods where p.spec.nodeName == node.metadata.name) >= 50
        reason "node(s) have too many pods"
}""",
    good="""
policy P
filter f {
    reject when len(node.pods) >= 50
        reason "node(s) have too many pods"
}""")

HOISTABLE_SCAN = rule(
    "S403", "hoistable-cluster-scan", "performance", "info",
    summary="A scan of `cluster.*` or `feasible` that does not use `node`, inside a per-node statement.",
    rationale="""A statement that reads `node` runs once per node, and so does every expression in it,
    even the parts that do not read `node`. A comprehension over the cluster's pods or nodes that
    is the same for every node is then recomputed for each of them. Move it into its own `let`:
    a `let` that does not use `node` runs once per pod (PreFilter/PreScore).""",
    bad="""
policy P
score s {
    value count(t in node.spec.taints where t.key in [n.metadata.name for n in cluster.nodes])
}""",
    good="""
policy P
score s {
    let names = [n.metadata.name for n in cluster.nodes]
    value count(t in node.spec.taints where t.key in names)
}""")

PER_NODE = frozenset({"node", "score"})
COUNT_COMPARISONS = {(">", 0): "any", ("!=", 0): "any", (">=", 1): "any", ("==", 0): "not any", ("<", 1): "not any",
                     ("<=", 0): "not any"}


def _is_whole_list(e) -> bool:
    """`cluster.pods`, `cluster.nodes` or `feasible`: lists as long as the cluster."""
    if isinstance(e, ast.Name):
        return e.id == "feasible"
    return isinstance(e, ast.Field) and isinstance(e.target, ast.Name) and e.target.id == "cluster" \
        and e.name in ("pods", "nodes")


@COUNT_VIA_LEN.on("sched")
def _count_via_len(ctx):
    seen = set()
    for decl in ctx.module.decls:
        for root in decl_exprs(decl):
            for e in walk(root):
                if isinstance(e, ast.Binary) and isinstance(e.left, ast.Call) and _len_of_list(e.left) \
                        and isinstance(e.right, ast.Literal) and e.right.kind == "int":
                    better = COUNT_COMPARISONS.get((e.op, e.right.value))
                    if better:
                        seen.add(id(e.left))
                        yield COUNT_VIA_LEN.finding("this builds a list only to test it for emptiness",
                                                    head_span(e.span, ctx.text),
                                                    f"help: write `{better}(x in xs where …)`: it stops at the first match")
                elif isinstance(e, ast.Call) and _len_of_list(e) and id(e) not in seen:
                    yield COUNT_VIA_LEN.finding("this builds a list only to count it", head_span(e.span, ctx.text),
                                                "help: write `count(x in xs where …)`")


def _len_of_list(call) -> bool:
    return call.func == "len" and len(call.args) == 1 and isinstance(call.args[0], ast.Comprehension) \
        and call.args[0].kind == "list" and call.args[0].by is None


def _per_node_statements(ctx):
    for block in ctx.module.of_type(ast.Filter) + ctx.module.of_type(ast.Score):
        for s in block.body:
            if (ctx.deps(s) or frozenset()) & PER_NODE:
                yield s


def _scans(e, bound: frozenset = frozenset()):
    """(comprehension, comprehension variables bound around it) for scans of whole lists."""
    if isinstance(e, ast.Comprehension):
        if _is_whole_list(e.source):
            yield e, bound
        yield from _scans(e.source, bound)
        for part in (e.where, e.element, e.by):
            if part is not None:
                yield from _scans(part, bound | {e.var})
        return
    for c in children(e):
        yield from _scans(c, bound)


@PER_NODE_SCAN.on("sched")
def _per_node_scan(ctx):
    for s in _per_node_statements(ctx):
        for x in stmt_exprs(s):
            for scan, bound in _scans(x):
                inner = [p for p in (scan.where, scan.element, scan.by) if p is not None]
                # Against `node`, or against an outer variable: either way it is redone for every node.
                if any((ctx.deps(p) or frozenset()) & PER_NODE or free_names(p) & bound for p in inner):
                    yield PER_NODE_SCAN.finding(f"this scans {_show(scan.source)} once for every node",
                                                head_span(scan.span, ctx.text),
                                                "help: use node.pods, or group the list by node once in a `let` "
                                                "that does not use `node`")


@HOISTABLE_SCAN.on("sched")
def _hoistable(ctx):
    for s in _per_node_statements(ctx):
        reported: list = []
        for x in stmt_exprs(s):
            for scan, bound in _scans(x):
                if (ctx.deps(scan) or frozenset()) & PER_NODE or free_names(scan) & bound:
                    continue
                if any(scan is not r and _inside(scan, r) for r in reported):
                    continue
                reported.append(scan)
                yield HOISTABLE_SCAN.finding(f"this scan of {_show(scan.source)} is the same for every node, "
                                             "but runs once per node", head_span(scan.span, ctx.text),
                                             "help: move it into a `let` before this statement: it then runs once per pod")


def _inside(e, outer) -> bool:
    return any(n is e for n in walk(outer))


def _show(e) -> str:
    return "feasible" if isinstance(e, ast.Name) else f"cluster.{e.name}"

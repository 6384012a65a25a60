"""Names: what is declared and never read, and what hides another name."""

from __future__ import annotations

import re

from ...syntax import ast
from ...program import Program
from .. import edits
from ..registry import rule
from ..sched_ast import BLOCKS, calls, children, decl_exprs, free_names, name_span, stmt_exprs, walk

UNUSED_LET = rule(
    "S301", "unused-let", "style", "warning", fixable=True,
    summary="A `let` whose name nothing after it reads.",
    rationale="""A binding nobody reads is either left over from an edit or a sign that the statement
    meant to use it reads something else by mistake. Either way a reviewer has to work out that it
    does nothing. A `let` whose value may call `fail(...)` is kept: it is there to stop the cycle
    with an error (the stdlib's `let unsupported = fail(...)`), and so is a name starting with `_`.
    The fix deletes the statement.""",
    bad="""
policy P
filter f {
    let zone = node.metadata.labels["topology.kubernetes.io/zone"]
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""",
    good="""
policy P
filter f {
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""")

UNUSED_DEF = rule(
    "S302", "unused-def", "style", "warning", fixable=True,
    summary="A `def` that no statement reaches.",
    rationale="""A function that no filter, score or rule calls, directly or through other defs, and
    that no other linted file calls through an import, is dead code that still has to be read and
    kept type-correct. Files without a `policy` declaration are libraries made to be imported, so
    their defs are not reported. The fix deletes the def and the comment right above it.""",
    bad="""
policy P
def is_gpu(n) = "nvidia.com/gpu" in n.status.allocatable
def is_arm(n) = n.metadata.labels["kubernetes.io/arch"] == "arm64"
filter f {
    reject when is_gpu(node) reason "node(s) are reserved for GPU workloads"
}""",
    good="""
policy P
def is_gpu(n) = "nvidia.com/gpu" in n.status.allocatable
filter f {
    reject when is_gpu(node) reason "node(s) are reserved for GPU workloads"
}""")

UNUSED_PARAM = rule(
    "S303", "unused-param", "style", "warning",
    summary="A `param` the policy never reads through `params.NAME`.",
    rationale="""A param is a knob profiles can turn (`use P {name: value}`). When the policy never
    reads it, turning it does nothing, silently: the profile author believes the plugin is
    configured when it is not. Remove it, or read it where it was meant to matter. There is no
    automatic fix, since profiles elsewhere may still set it.""",
    bad="""
policy P
param label: string = "gpu-model"
param strict: bool = true
filter f {
    reject when node.metadata.labels[params.label] == null reason "node(s) have no GPU model label"
}""",
    good="""
policy P
param label: string = "gpu-model"
filter f {
    reject when node.metadata.labels[params.label] == null reason "node(s) have no GPU model label"
}""")

UNUSED_IMPORT = rule(
    "S304", "unused-import", "style", "warning", fixable=True,
    summary="An `import` whose alias no call uses.",
    rationale="""An import that nothing calls through makes the file depend on another file for
    nothing: the import is still loaded, parsed and checked, and a reader looks for what it is
    used for. The fix deletes the import.""",
    bad="""
policy P
import node_ports
filter f {
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""",
    good="""
policy P
filter f {
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""")

SHADOWED = rule(
    "S204", "shadowed-name", "suspicious", "warning",
    summary="A `let` or comprehension variable that hides a def, a param, a `let` or an outer variable.",
    rationale="""When a comprehension variable reuses the name of an enclosing `let`, def parameter
    or outer comprehension variable, the inner one silently wins and the outer value cannot be
    reached inside it; a `let` or variable named like a def or a param makes `f` and `f(...)`, or
    `x` and `params.x`, mean different things a few lines apart. Both are easy to misread in
    review. (A `let x` whose value reads `params.x`, the param made ready to use, is not reported.)""",
    bad="""
policy P
filter untolerated {
    let tol = [x in pod.spec.tolerations where x.effect == "NoExecute"]
    reject when any(t in node.spec.taints
                    where t.effect == "NoExecute" and not any(tol in tol where tolerates(tol, t)))
        reason "node(s) had untolerated NoExecute taint(s)"
}""",
    good="""
policy P
filter untolerated {
    let tolerations = [x in pod.spec.tolerations where x.effect == "NoExecute"]
    reject when any(t in node.spec.taints
                    where t.effect == "NoExecute" and not any(tol in tolerations where tolerates(tol, t)))
        reason "node(s) had untolerated NoExecute taint(s)"
}""")


# ---- what may fail ----------------------------------------------------------------------------

def failing_defs(program: Program, path: str, memo: dict | None = None) -> set[str]:
    """Defs of the module at ``path`` that may call fail(...), directly or through other defs."""
    memo = {} if memo is None else memo
    if path in memo:
        return memo[path]
    memo[path] = set()
    module = program.modules.get(path)
    if module is None:
        return set()
    defs = {d.name: d for d in module.of_type(ast.Def)}
    imported = {alias: failing_defs(program, target, memo)
                for alias, target in program.imports.get(path, {}).items()}
    failing: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, d in defs.items():
            if name not in failing and may_fail(d.body, failing, imported):
                failing.add(name)
                changed = True
    memo[path] = failing
    return failing


def may_fail(e, failing: set[str], imported: dict[str, set[str]]) -> bool:
    for node in walk(e):
        if isinstance(node, ast.Call):
            alias, _, name = node.func.rpartition(".")
            if node.func == "fail" or (not alias and name in failing) or (alias and name in imported.get(alias, ())):
                return True
    return False


# ---- checks -------------------------------------------------------------------------------------

@UNUSED_LET.on("sched")
def _unused_lets(ctx):
    failing = failing_defs(ctx.program, ctx.program.root)
    imported = {alias: failing_defs(ctx.program, target) for alias, target in ctx.program.imports[ctx.program.root].items()}
    for block in ctx.module.of_type(ast.Filter) + ctx.module.of_type(ast.Score):
        # The names read after each statement, gathered from the end once: linear in the block
        # (the union of every later statement per `let` was quadratic, issue 29).
        unused, later = [], set()
        for stmt in reversed(block.body):
            if isinstance(stmt, ast.Let) and not stmt.name.startswith("_") and stmt.name not in later:
                unused.append(stmt)
            later.update(*(free_names(x) for x in stmt_exprs(stmt)))
        for stmt in reversed(unused):
            if may_fail(stmt.value, failing, imported):
                continue
            yield UNUSED_LET.finding(f"'{stmt.name}' is never used", name_span(ctx.text, stmt.span, "let", stmt.name),
                                     "help: remove the `let`, or use it where it was meant to be used",
                                     edits=edits.delete(ctx.text, stmt.span))


@UNUSED_DEF.on("sched")
def _unused_defs(ctx):
    module = ctx.module
    if module.policy is None:
        return
    defs = {d.name: d for d in module.of_type(ast.Def)}
    local_calls = lambda exprs: {c.func for x in exprs for c in walk(x) if isinstance(c, ast.Call) and c.func in defs}
    reached = local_calls(x for d in module.decls if not isinstance(d, ast.Def) for x in decl_exprs(d))
    reached |= {name for path, name in ctx.external_def_uses if path == ctx.resolved}
    todo = list(reached)
    while todo:
        for name in local_calls([defs[todo.pop()].body]) - reached:
            reached.add(name)
            todo.append(name)
    for name, d in defs.items():
        if name not in reached:
            yield UNUSED_DEF.finding(f"def {name} is never called", name_span(ctx.text, d.span, "def", name),
                                     "help: remove it, or call it where it was meant to be used",
                                     edits=edits.delete(ctx.text, d.span, with_comment_above=True))


@UNUSED_PARAM.on("sched")
def _unused_params(ctx):
    module = ctx.module
    if module.policy is None:
        return
    exprs = [n for d in module.decls for x in decl_exprs(d) for n in walk(x)]
    read = {e.name for e in exprs if isinstance(e, ast.Field) and isinstance(e.target, ast.Name) and e.target.id == "params"}
    whole = sum(isinstance(e, ast.Name) and e.id == "params" for e in exprs) > sum(
        isinstance(e, ast.Field) and isinstance(e.target, ast.Name) and e.target.id == "params" for e in exprs)
    if whole:  # `params` passed on as a whole: any field may be read
        return
    for p in module.of_type(ast.Param):
        if p.name not in read:
            yield UNUSED_PARAM.finding(f"param {p.name} is never read", name_span(ctx.text, p.span, "param", p.name),
                                       f"help: read it as params.{p.name}, or remove it")


@UNUSED_IMPORT.on("sched")
def _unused_imports(ctx):
    used = {c.func.split(".", 1)[0] for c in calls(ctx.module) if "." in c.func}
    for imp in ctx.module.of_type(ast.Import):
        if imp.alias not in used:
            keyword = "as" if imp.path is not None else "import"
            yield UNUSED_IMPORT.finding(f"'{imp.alias}' is imported but never used",
                                        name_span(ctx.text, imp.span, keyword, imp.alias),
                                        "help: remove the import",
                                        edits=edits.delete(ctx.text, imp.span, with_comment_above=True))


@SHADOWED.on("sched")
def _shadowing(ctx):
    module = ctx.module
    outer = {d.name: "def" for d in module.of_type(ast.Def)}
    params = {p.name for p in module.of_type(ast.Param)}
    text = edits.Text(ctx.text)
    found = []

    def hides(name: str, scope: dict) -> str | None:
        if name in scope:
            return scope[name]
        if name in outer:
            return "def"
        if name in params:
            return "param"
        return None

    def visit(e, scope: dict):
        if isinstance(e, ast.Comprehension):
            visit(e.source, scope)
            what = hides(e.var, scope)
            if what:
                found.append((e, e.var, what))
            inner = {**scope, e.var: "comprehension variable"}
            for part in (e.where, e.element, e.by):
                if part is not None:
                    visit(part, inner)
            return
        if isinstance(e, ast.Fold):
            visit(e.init, scope)
            visit(e.source, scope)
            for name in (e.acc, e.var):
                what = hides(name, scope)
                if what:
                    found.append((e, name, what))
            visit(e.body, {**scope, e.acc: "fold accumulator", e.var: "fold variable"})
            return
        for c in children(e):
            visit(c, scope)

    for d in module.of_type(ast.Def):
        visit(d.body, {p: "def parameter" for p in d.params})
    for block in module.decls:
        if not isinstance(block, BLOCKS):
            continue
        scope: dict = {}
        if isinstance(block, ast.Rule) and block.when is not None:
            visit(block.when, scope)
        for stmt in block.body:
            for x in stmt_exprs(stmt):
                visit(x, scope)
            if isinstance(stmt, ast.Let):
                # `let x = f(params.x)` is the param's value made ready to use, not a second meaning.
                alias = any(isinstance(e, ast.Field) and isinstance(e.target, ast.Name)
                            and e.target.id == "params" and e.name == stmt.name for e in walk(stmt.value))
                what = hides(stmt.name, {})
                if what and not (what == "param" and alias):
                    yield SHADOWED.finding(f"let '{stmt.name}' has the name of a {what}",
                                           name_span(ctx.text, stmt.span, "let", stmt.name),
                                           f"help: rename the let so '{stmt.name}' means one thing")
                scope[stmt.name] = "let"
    for e, var, what in found:
        yield SHADOWED.finding(f"comprehension variable '{var}' hides the {what} '{var}'",
                               _var_span(ctx.path, text, e), f"help: rename the variable so '{var}' means one thing")


def _var_span(path: str, text: edits.Text, e: ast.Comprehension):
    """Where a comprehension's variable is written: after the element in `[f(x) for x in xs]`,
    first in `any(x in xs …)`."""
    start_at = e.element.span if e.element is not None else e.span
    start = text.offset(start_at.end_line, start_at.end_column) if e.element is not None else \
        text.offset(e.span.line, e.span.column)
    pattern = rf"\bfor\s+({re.escape(e.var)})\b" if e.element is not None else rf"\b({re.escape(e.var)})\s+in\b"
    m = re.compile(pattern).search(text.text, start)
    if not m:
        return e.span
    return text.span(path, m.start(1), m.end(1))

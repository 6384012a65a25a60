"""Conditions: ones that cannot change, that contradict themselves, or that repeat."""

from __future__ import annotations

from ...syntax import ast
from ...syntax.format import expr as show
from ..registry import rule
from ..sched_ast import BLOCKS, NotConstant, children, decl_exprs, fold, fold_bool, head_span

CONTRADICTION = rule(
    "S101", "contradictory-conditions", "correctness", "error",
    summary="Requirements joined by `and` that no value can meet at once.",
    rationale="""`x in ["a"] and x not in ["a"]`, `x == "a" and x == "b"` or `x > 5 and x < 3` are
    false whatever `x` is, so the condition is constantly false: a `reject` never fires, a `where`
    keeps nothing, and the `require` statements of one rule (which must all hold) reject every
    node. It is almost always a typo in one of the constants or an `and` that was meant to be
    an `or`.""",
    bad="""
policy P
filter f {
    reject when node.metadata.labels["tier"] == "batch" and node.metadata.labels["tier"] == "web"
        reason "node(s) are in the wrong tier"
}""",
    good="""
policy P
filter f {
    reject when node.metadata.labels["tier"] in ["batch", "web"]
        reason "node(s) are in the wrong tier"
}""")

NEVER_PASSES = rule(
    "S102", "filter-never-passes", "correctness", "error",
    summary="A `reject` whose condition is always true, or a `require` whose condition is always false.",
    rationale="""A filter whose `reject when` condition is constantly true rejects every node (or, with
    `reject pod`, every pod), so no pod it applies to can ever be scheduled; a rule's
    `require false` does the same. This is usually a condition left at `true` while debugging,
    or an operand folded away by mistake.""",
    bad="""
policy P
filter f {
    reject when true reason "node(s) are being drained"
}""",
    good="""
policy P
filter f {
    reject when node.metadata.labels["drain"] == "true" reason "node(s) are being drained"
}""")

NEVER_REJECTS = rule(
    "S201", "filter-never-rejects", "suspicious", "warning",
    summary="A `reject` whose condition is always false, a `require` that always holds, or a filter that always skips.",
    rationale="""A `reject when` that can never be true never rejects anything, and a filter whose
    `skip when` is always true never runs: the policy looks like it enforces something it does
    not. Either the condition is wrong or the statement should go.""",
    bad="""
policy P
filter f {
    reject when false and node.spec.unschedulable reason "node(s) were unschedulable"
}""",
    good="""
policy P
filter f {
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""")

CONSTANT_CONDITION = rule(
    "S202", "constant-condition", "suspicious", "warning",
    summary="An `if`, `where`, `skip when`, rule `when` or `prefer` condition, or an `and`/`or` operand, that cannot change.",
    rationale="""A condition made only of constants decides the same way for every pod and node: one
    branch of the `if` is dead, the `where` keeps everything or nothing, the `skip` always or never
    skips, the `prefer` adds its weight to every node alike, and an `and true` or `or false`
    operand has no effect. What was meant to vary does not.""",
    bad="""
policy P
score s {
    value if true then len(node.pods) else 0
}""",
    good="""
policy P
score s {
    value len(node.pods)
}""")

SELF_COMPARISON = rule(
    "S205", "self-comparison", "suspicious", "warning",
    summary="An expression compared with itself.",
    rationale="""`x == x` is always true and `x != x`, `x < x` always false (null-safe access makes a
    missing field equal to itself too). One side was almost certainly meant to be something
    else, typically `pod` on one side and `node` on the other.""",
    bad="""
policy P
filter f {
    reject when node.metadata.labels["zone"] != node.metadata.labels["zone"]
        reason "node(s) are in another zone"
}""",
    good="""
policy P
filter f {
    reject when node.metadata.labels["zone"] != pod.metadata.labels["zone"]
        reason "node(s) are in another zone"
}""")

DUPLICATE = rule(
    "S208", "duplicate-condition", "suspicious", "warning",
    summary="A `reject`, `skip` or `require` with the same condition as an earlier one in its block.",
    rationale="""The first `reject` that fires rejects the node, so a later `reject` with the same
    condition can never fire and its reason is never shown; a repeated `skip` or `require` adds
    nothing. The copy was usually meant to test something else.""",
    bad="""
policy P
filter f {
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
    reject when node.spec.unschedulable reason "node(s) are cordoned"
}""",
    good="""
policy P
filter f {
    reject when node.spec.unschedulable reason "node(s) were unschedulable"
}""")

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


def _is_literal_only(e) -> bool:
    """Made of literals and operators only (no names, calls or comprehensions)."""
    if isinstance(e, (ast.Name, ast.Call, ast.Comprehension)):
        return False
    return all(_is_literal_only(c) for c in children(e))


# ---- constant conditions ----------------------------------------------------------------------

@NEVER_PASSES.on("sched")
def _never_passes(ctx):
    for role, e, value, stmt in _statement_conditions(ctx.module):
        if role in ("reject", "reject pod") and value is True:
            who = "every pod" if role == "reject pod" else "every node"
            yield NEVER_PASSES.finding(f"this condition is always true: the filter rejects {who}",
                                       _span(ctx, e, stmt), "help: reject only when something about the "
                                       "pod or the node makes it unfit")
        elif role == "require" and value is False:
            yield NEVER_PASSES.finding("this requirement is always false: no node satisfies the rule",
                                       _span(ctx, e, stmt))


@NEVER_REJECTS.on("sched")
def _never_rejects(ctx):
    for role, e, value, stmt in _statement_conditions(ctx.module):
        if role in ("reject", "reject pod") and value is False:
            yield NEVER_REJECTS.finding("this condition is always false: the `reject` never fires",
                                        _span(ctx, e, stmt), "help: remove the statement or fix the condition")
        elif role == "require" and value is True:
            yield NEVER_REJECTS.finding("this requirement always holds: it never rejects a node", _span(ctx, e, stmt))
        elif role == "filter skip" and value is True:
            yield NEVER_REJECTS.finding("this `skip when` is always true: the filter never runs", _span(ctx, e, stmt))


def _statement_conditions(module):
    """(role, condition, folded value or None, statement) for every statement-level condition."""
    for decl in module.decls:
        if isinstance(decl, ast.Rule):
            if decl.when is not None:
                yield "rule when", decl.when, fold_bool(decl.when), decl
            for s in decl.body:
                if isinstance(s, ast.Require):
                    yield "require", s.cond, fold_bool(s.cond), s
                elif isinstance(s, ast.Prefer):
                    yield "prefer", s.cond, fold_bool(s.cond), s
        elif isinstance(decl, (ast.Filter, ast.Score)):
            kind = "filter" if isinstance(decl, ast.Filter) else "score"
            for s in decl.body:
                if isinstance(s, ast.Skip):
                    yield f"{kind} skip", s.cond, fold_bool(s.cond), s
                elif isinstance(s, ast.Reject):
                    yield ("reject pod" if s.pod else "reject"), s.cond, fold_bool(s.cond), s


def _span(ctx, e, parent):
    """Where ``e`` is; `true`, `false` and `null` carry no span of their own, so those
    point at the enclosing ``parent``."""
    return head_span(e.span if e.span.line > 0 else parent.span, ctx.text)


_STATEMENT_MESSAGES = {
    ("filter skip", False): "this `skip when` is always false: it never skips",
    ("score skip", True): "this `skip when` is always true: the score never runs",
    ("score skip", False): "this `skip when` is always false: it never skips",
    ("rule when", True): "this `when` is always true: write the rule without it",
    ("rule when", False): "this `when` is always false: the rule never applies",
    ("prefer", True): "this preference holds on every node: it adds the same weight everywhere",
    ("prefer", False): "this preference holds on no node: it never adds its weight",
}


@CONSTANT_CONDITION.on("sched")
def _constant_conditions(ctx):
    reported = set()
    for role, e, value, stmt in _statement_conditions(ctx.module):
        if value is not None:
            reported.add(id(e))
            if (role, value) in _STATEMENT_MESSAGES:
                yield CONSTANT_CONDITION.finding(_STATEMENT_MESSAGES[(role, value)], _span(ctx, e, stmt))
        elif _is_literal_only(e) and not isinstance(e, ast.Literal):
            reported.add(id(e))
            yield CONSTANT_CONDITION.finding("this condition is made of constants only: it never changes",
                                             _span(ctx, e, stmt))
    for decl in ctx.module.decls:
        for root in decl_exprs(decl):
            yield from _inner(ctx, root, reported)


def _inner(ctx, e, reported: set):
    """Constant `if` conditions, `where` clauses and `and`/`or` operands, outermost first."""
    if id(e) in reported:
        return
    found = None
    if isinstance(e, ast.If) and (v := fold_bool(e.cond)) is not None:
        found = (e.cond, f"this `if` condition is always {_word(v)}: the {'else' if v else 'then'} branch never runs")
    elif isinstance(e, ast.Comprehension) and e.where is not None and (v := fold_bool(e.where)) is not None:
        found = (e.where, f"this `where` is always {_word(v)}: it keeps {'every' if v else 'no'} item")
    elif isinstance(e, ast.Binary) and e.op in ("and", "or"):
        for side in (e.left, e.right):
            v = fold_bool(side)
            if v is not None:
                effect = "has no effect" if v == (e.op == "and") else \
                    f"makes the whole `{e.op}` always {_word(v)}"
                found = (side, f"`{e.op} {_word(v)}`: this operand is always {_word(v)} and {effect}")
                break
    if found is not None:
        cond, message = found
        reported.add(id(cond))
        yield CONSTANT_CONDITION.finding(message, _span(ctx, cond, e))
    for c in children(e):
        yield from _inner(ctx, c, reported)


def _word(v: bool) -> str:
    return "true" if v else "false"


# ---- self-comparison and duplicates --------------------------------------------------------------

@SELF_COMPARISON.on("sched")
def _self_comparisons(ctx):
    for decl in ctx.module.decls:
        for root in decl_exprs(decl):
            for e in _walk(root):
                if isinstance(e, ast.Binary) and e.op in COMPARISONS and e.left == e.right \
                        and not _is_literal_only(e.left):
                    always = e.op in ("==", "<=", ">=")
                    yield SELF_COMPARISON.finding(f"`{show(e.left)}` is compared with itself: this is always "
                                                  f"{_word(always)}", head_span(e.span, ctx.text))


def _walk(e):
    yield e
    for c in children(e):
        yield from _walk(c)


@DUPLICATE.on("sched")
def _duplicates(ctx):
    for block in ctx.module.decls:
        if not isinstance(block, BLOCKS):
            continue
        seen: dict = {}
        for s in block.body:
            if isinstance(s, (ast.Reject, ast.Skip, ast.Require)):
                key = (type(s).__name__, getattr(s, "pod", False), s.cond)
                if key in seen:
                    what = {"Reject": "`reject`", "Skip": "`skip when`", "Require": "`require`"}[type(s).__name__]
                    tail = ": it can never fire" if isinstance(s, ast.Reject) else ": it adds nothing"
                    yield DUPLICATE.finding(f"this {what} repeats the condition of line {seen[key].span.line}{tail}",
                                            head_span(s.span, ctx.text))
                else:
                    seen[key] = s


# ---- contradictions --------------------------------------------------------------------------------

@CONTRADICTION.on("sched")
def _contradictions(ctx):
    for decl in ctx.module.decls:
        if isinstance(decl, ast.Rule):
            requires = [s.cond for s in decl.body if isinstance(s, ast.Require)]
            if len(requires) > 1:
                conjuncts = [c for r in requires for c in _conjuncts(r)]
                pair = _conflict(conjuncts)
                if pair:
                    yield _contradiction(ctx, requires[-1], pair, "together, this rule's `require` statements hold on no node")
        for root in decl_exprs(decl):
            yield from _chains(ctx, root, inside_and=False)


def _chains(ctx, e, inside_and: bool):
    is_and = isinstance(e, ast.Binary) and e.op == "and"
    if is_and and not inside_and:
        pair = _conflict(_conjuncts(e))
        if pair:
            yield _contradiction(ctx, e, pair, "this condition is always false")
    for c in children(e):
        yield from _chains(ctx, c, inside_and=is_and and _is_and(c))


def _is_and(e) -> bool:
    return isinstance(e, ast.Binary) and e.op == "and"


def _contradiction(ctx, at, pair, what: str):
    a, b = pair
    message = f"`{show(a)}` and `{show(b)}` cannot both hold: {what}"
    return CONTRADICTION.finding(message, head_span(at.span, ctx.text),
                                 "help: check the constants, or whether `or` was meant")


def _conjuncts(e) -> list:
    if _is_and(e):
        return _conjuncts(e.left) + _conjuncts(e.right)
    return [e]


def _constant(e):
    try:
        return fold(e)
    except NotConstant:
        return None


def _constraint(c):
    """(subject, allowed set or None, excluded set, (low, low_strict) or None, (high, high_strict) or None)."""
    negate = False
    if isinstance(c, ast.Unary) and c.op == "not":
        c, negate = c.operand, True
    if not isinstance(c, ast.Binary):
        return None
    if c.op in ("in", "notin") and isinstance(c.right, ast.ListExpr) and _constant(c.left) is None:
        items = [_constant(i) for i in c.right.items]
        if None in items:
            return None
        excluded = (c.op == "notin") != negate
        return (c.left, None, set(items), None, None) if excluded else (c.left, set(items), set(), None, None)
    if c.op not in COMPARISONS:
        return None
    left, right = _constant(c.left), _constant(c.right)
    op = c.op
    if left is not None and right is None:
        subject, value, op = c.right, left, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    elif right is not None and left is None:
        subject, value = c.left, right
    else:
        return None
    if negate:
        op = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
    if op == "==":
        return (subject, {value}, set(), None, None)
    if op == "!=":
        return (subject, None, {value}, None, None)
    if value[0] != "number":
        return None
    n = value[1]
    if op in (">", ">="):
        return (subject, None, set(), (n, op == ">"), None)
    return (subject, None, set(), None, (n, op == "<"))


def _satisfiable(constraints) -> bool:
    allowed = None
    excluded: set = set()
    low = high = None
    for _, a, x, lo, hi in constraints:
        if a is not None:
            allowed = set(a) if allowed is None else allowed & a
        excluded |= x
        if lo is not None and (low is None or lo[0] > low[0] or (lo[0] == low[0] and lo[1])):
            low = lo
        if hi is not None and (high is None or hi[0] < high[0] or (hi[0] == high[0] and hi[1])):
            high = hi
    if low is not None and high is not None:
        if low[0] > high[0] or (low[0] == high[0] and (low[1] or high[1])):
            return False
    if allowed is None:
        return True

    def in_range(v) -> bool:
        if low is None and high is None:
            return True
        if v[0] != "number":
            return False
        n = v[1]
        return (low is None or (n > low[0] if low[1] else n >= low[0])) and \
               (high is None or (n < high[0] if high[1] else n <= high[0]))
    return any(v not in excluded and in_range(v) for v in allowed)


def _conflict(conjuncts):
    """The first two conjuncts about one subject that cannot both hold, or None."""
    parsed = [(c, _constraint(c)) for c in conjuncts]
    parsed = [(c, k) for c, k in parsed if k is not None]
    for i, (a, ka) in enumerate(parsed):
        for b, kb in parsed[i + 1:]:
            if ka[0] == kb[0] and not _satisfiable([ka, kb]):
                return a, b
    return None

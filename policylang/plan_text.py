"""Print a Plan readably, like SQL's EXPLAIN: each plugin, its stages, and what runs where."""

from __future__ import annotations

from . import plan as P
from .vocabulary import PRECEDENCE
from .builtins import to_string


def plan_text(plan: P.Plan, notes=None) -> str:
    """The plan, one line per step; ``notes(ir, per_node) -> lines``, when given, adds lines of
    its own under each step's expression (`policylang plan --vector`: what the vector executor's passes
    decided)."""
    lines = [f"profile {plan.profile}"]
    if plan.percentage_of_nodes_to_score is not None:
        lines.append(f"  percentage_of_nodes_to_score {plan.percentage_of_nodes_to_score}")
    for plugin in plan.plugins:
        points = [x for x, on in (("filter", plugin.filters), ("score", plugin.score),
                                  ("postfilter", plugin.postfilter)) if on]
        lines.append(f"  plugin {plugin.name}  weight {plugin.weight}  [{', '.join(points) or 'no-op'}]")
        for f in plugin.filters:
            lines.append(f"    filter {f.name}")
            _stage(lines, "once per pod (PreFilter)", f.pod_steps, pod=True, notes=notes)
            _stage(lines, "per node (Filter)", f.node_steps, notes=notes, per_node=True)
        if plugin.score is not None:
            s = plugin.score
            lines.append(f"    score {s.name}")
            _stage(lines, "once per pod (PreScore)", s.pod_steps, notes=notes)
            _stage(lines, "once per pod, after filtering (PreScore)", s.feasible_steps, notes=notes)
            _stage(lines, "per feasible node (Score)", s.node_steps + (("value", s.value),), notes=notes,
                   per_node=True)
            normalize = s.normalize if s.normalize_expr is None else f"with {expr_text(s.normalize_expr)}"
            lines.append(f"      across nodes (NormalizeScore): {normalize}")
            if notes is not None and s.normalize_expr is not None:
                _notes(lines, notes, s.normalize_expr, True)
    return "\n".join(lines)


def _stage(lines: list[str], title: str, steps, pod: bool = False, notes=None, per_node: bool = False) -> None:
    if not steps:
        return
    lines.append(f"      {title}:")
    for step in steps:
        lines.append(f"        {_step(step, pod)}")
        if notes is not None:
            _notes(lines, notes, _expr(step), per_node)


def _notes(lines: list[str], notes, ir, per_node: bool) -> None:
    for i, note in enumerate(notes(ir, per_node)):
        lines.append(f"          {'vector: ' if i == 0 else '  '}{note}")


def _expr(step):
    """The expression a step evaluates (a reject's condition; its reason is text)."""
    if isinstance(step, tuple):
        return step[1]
    if isinstance(step, P.LetStep):
        return step.expr
    if isinstance(step, P.RestrictStep):
        return step.names
    return step.cond


def _step(step, pod: bool = False) -> str:
    if isinstance(step, tuple):
        return f"value {expr_text(step[1])}"
    if isinstance(step, P.LetStep):
        return f"let {_name(step.name)} = {expr_text(step.expr)}"
    if isinstance(step, P.SkipStep):
        return f"skip when {expr_text(step.cond)}"
    if isinstance(step, P.RestrictStep):
        return f"restrict nodes to {expr_text(step.names)}"
    return f"reject {'pod ' if pod else ''}when {expr_text(step.cond)} → {step.code}: {expr_text(step.reason)}"


def _name(unique: str) -> str:
    return unique.split("#", 1)[0]


def expr_text(ir, parent: int = 0) -> str:
    if isinstance(ir, P.Const):
        v = ir.value
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, dict)):
            return repr(v)
        return to_string(v)
    if isinstance(ir, P.Var):
        return _name(ir.name)
    if isinstance(ir, P.GetField):
        return f"{expr_text(ir.target, 9)}.{ir.name}"
    if isinstance(ir, P.GetIndex):
        return f"{expr_text(ir.target, 9)}[{expr_text(ir.key)}]"
    if isinstance(ir, P.Op):
        prec = PRECEDENCE[ir.op]
        op = "not in" if ir.op == "notin" else ir.op
        text = f"{expr_text(ir.left, prec)} {op} {expr_text(ir.right, prec + 1)}"
        return f"({text})" if prec < parent else text
    if isinstance(ir, P.Not):
        return f"not {expr_text(ir.operand, 3)}"
    if isinstance(ir, P.Neg):
        return f"-{expr_text(ir.operand, 8)}"
    if isinstance(ir, P.Cond):
        text = f"if {expr_text(ir.cond)} then {expr_text(ir.then)} else {expr_text(ir.else_)}"
        return f"({text})" if parent else text
    if isinstance(ir, P.MakeList):
        return "[" + ", ".join(expr_text(i) for i in ir.items) + "]"
    if isinstance(ir, P.MakeMap):
        return "{" + ", ".join(f"{k}: {expr_text(v)}" for k, v in zip(ir.keys, ir.values)) + "}"
    if isinstance(ir, P.Format):
        return '"' + "".join(p if isinstance(p, str) else "${" + expr_text(p) + "}" for p in ir.parts) + '"'
    if isinstance(ir, P.Comp):
        var = _name(ir.var)
        body = f"{expr_text(ir.element)} for {var} in" if ir.element is not None else f"{var} in"
        text = f"{body} {expr_text(ir.source)}"
        if ir.where is not None:
            text += f" where {expr_text(ir.where)}"
        if ir.by is not None:
            text += f" by {expr_text(ir.by)}"
        return f"[{text}]" if ir.kind == "list" else f"{ir.kind}({text})"
    if isinstance(ir, P.Fold):
        return f"fold({_name(ir.acc)} = {expr_text(ir.init)} for {_name(ir.var)} in {expr_text(ir.source)}: " \
               f"{expr_text(ir.body)})"
    if isinstance(ir, P.CallBuiltin):
        return f"{ir.name}({', '.join(expr_text(a) for a in ir.args)})"
    if isinstance(ir, P.Bind):
        return f"{ir.def_name}({', '.join(expr_text(a) for a in ir.values)})"
    return repr(ir)

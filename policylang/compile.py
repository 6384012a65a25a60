"""Compile: a checked program's profile → Plan.

Names are resolved, defs inlined (with their parameters renamed so nothing is captured),
aggregates over plain lists turned into comprehensions, params bound to constants, and
each statement placed in its stage using the dependencies the checker found.
"""

from __future__ import annotations

import itertools

from .syntax import ast
from . import builtins as bi
from . import plan as P
from .api.requests import counting_of
from .check import Checked
from .diagnostics import Diagnostic, PolicyError
from .infer import GLOBALS
from .plan_size import MAX_PLAN_SIZE
from .plugins import registry
from .target import DEFAULT as DEFAULT_TARGET, Target

POD_SCOPES = frozenset({"pod", "cluster", "params"})
AGGREGATES = ast.AGGREGATES


def compile_profile(checked: Checked, name: str | None = None, target: Target = DEFAULT_TARGET) -> P.Plan:
    """The plan of the named profile (or the only / first one in the root file), deciding as
    ``target``'s Kubernetes version and feature gates."""
    profiles = checked.program.profiles()
    if not profiles:
        raise PolicyError([Diagnostic("P080", "no profile is declared", checked.program.root_module.span)],
                          checked.program.sources)
    if name is None:
        root = [p for p in profiles if p[0] == checked.program.root] or profiles
        path, profile = root[0]
    else:
        found = [p for p in profiles if p[1].name == name]
        if not found:
            known = ", ".join(sorted(p.name for _, p in profiles))
            raise PolicyError([Diagnostic("P080", f"no profile named '{name}' (profiles: {known})",
                                          checked.program.root_module.span)], checked.program.sources)
        path, profile = found[0]
    return _Compiler(checked, target).profile(path, profile)


def active_uses(checked: Checked, path: str, profile: ast.Profile, target: Target = DEFAULT_TARGET) -> tuple:
    """The profile's uses that are in it for ``target``: those without a `when`, and those whose
    `when` holds."""
    compiler = _Compiler(checked, target)
    return tuple(u for u in profile.uses if compiler.used(u, path))


def compile_all(checked: Checked, target: Target = DEFAULT_TARGET) -> dict[str, P.Plan]:
    compiler = _Compiler(checked, target)
    return {profile.name: compiler.profile(path, profile) for path, profile in checked.program.profiles()}


class _Compiler:
    def __init__(self, checked: Checked, target: Target = DEFAULT_TARGET):
        self.checked = checked
        self.target = target
        self.program = checked.program
        self.counter = itertools.count(1)
        self.size = 0       # expressions lowered into the current profile's plan
        self.def_sizes: dict = {}   # (module, def) → expressions one call of it inlines

    def fresh(self, name: str) -> str:
        return f"{name}#{next(self.counter)}"

    def deps(self, node) -> frozenset:
        """The scopes the checker found a statement depends on (a KeyError if it never saw it)."""
        return self.checked.stage_deps[node]

    # ---- profiles and policies ----
    def profile(self, path: str, profile: ast.Profile) -> P.Plan:
        self.size = 0
        plugins, chosen = [], {}
        for use in profile.uses:
            if not self.used(use, path):
                continue
            target = self.program.uses[use]
            plan = self.plugin(target, use, path)
            if plan.name in chosen:
                raise PolicyError([Diagnostic("P015", f"policy {plan.name} is used twice in profile {profile.name} "
                                                      f"for Kubernetes {self.target.version} with these feature "
                                                      "gates: the `when` of both uses holds", use.span,
                                              notes=(f"note: the other use is at line {chosen[plan.name].span.line}",))],
                                  self.program.sources)
            chosen[plan.name] = use
            plugins.append(plan)
        pct = profile.percentage_of_nodes_to_score
        return P.Plan(profile.name, tuple(plugins), pct.value if pct is not None else None, origin=profile.span,
                      target=self.target)

    def used(self, use: ast.Use, path: str) -> bool:
        """Whether a `use` is in the profile for this target (its `when`, a constant over it)."""
        return use.when is None or self.constant(use.when, path) is True

    def plugin(self, module_path: str, use: ast.Use, use_path: str) -> P.PluginPlan:
        module = self.program.modules[module_path]
        name = module.policy.name
        params = self.params(module_path, module, use, use_path)
        rules = module.of_type(ast.Rule)
        filters = () if "filter" in use.without else tuple(
            [self.filter(module_path, f) for f in module.of_type(ast.Filter)]
            + [f for r in rules if (f := self.rule_filter(module_path, r)) is not None])
        scores = () if "score" in use.without else module.of_type(ast.Score)
        score = self.score(module_path, scores[0]) if scores else None
        if score is None and "score" not in use.without:
            score = self.rule_score(module_path, rules)
        weight = use.weight.value if use.weight is not None else 1
        return P.PluginPlan(name, weight, params, filters, score,
                            postfilter="postFilter" in registry.implements(name) and "postfilter" not in use.without,
                            rules=tuple(self.rule(module_path, r) for r in rules), origin=use.span)

    def params(self, module_path, module, use, use_path) -> dict:
        types = self.checked.param_types.get(module_path, {})
        values = {}
        for p in module.of_type(ast.Param):
            if p.default is not None:
                values[p.name] = self.constant(p.default, module_path)
        for arg in use.args:
            values[arg.name] = merge_defaults(values.get(arg.name), self.constant(arg.value, use_path))
        out = {}
        for name, v in values.items():
            try:
                out[name] = as_param_value(types.get(name), v)
            except Exception as err:  # cattrs reports a malformed Kubernetes object in many shapes
                from .cluster.load import first_error, field_of
                field = field_of(err)
                where = f" at {field}" if field else ""
                raise PolicyError([Diagnostic("P052", f"param {name} is not a valid {types[name]}{where}: "
                                                      f"{first_error(err)}", use.span)],
                                  self.program.sources) from None
        return out

    def constant(self, e, path: str):
        """A param's value, computed once; a value that cannot be computed is a policy error."""
        from .builtins import POLICY_ERRORS, error_text
        from .run.interpret import evaluate

        try:
            return evaluate(self.expr(e, path, {}), {})
        except POLICY_ERRORS as err:
            raise PolicyError([Diagnostic("P057", f"this value cannot be computed: {error_text(err)}", e.span)],
                              self.program.sources) from None

    # ---- blocks ----
    def filter(self, path: str, block: ast.Filter) -> P.FilterPlan:
        names: dict[str, str] = {}
        pod_steps, node_steps = [], []
        for stmt in block.body:
            if isinstance(stmt, ast.Skip):
                pod_steps.append(P.SkipStep(self.expr(stmt.cond, path, names), origin=stmt.span))
            elif isinstance(stmt, ast.Let):
                pod_stage = self.deps(stmt) <= POD_SCOPES
                value = self.expr(stmt.value, path, names)
                names[stmt.name] = self.fresh(stmt.name)
                step = P.LetStep(names[stmt.name], value, "pod" if pod_stage else "node", origin=stmt.span)
                (pod_steps if pod_stage else node_steps).append(step)
            elif isinstance(stmt, ast.Reject):
                step = P.RejectStep(self.expr(stmt.cond, path, names), self.expr(stmt.reason, path, names),
                                    stmt.code, origin=stmt.span)
                (pod_steps if stmt.pod else node_steps).append(step)
            elif isinstance(stmt, ast.Restrict):
                pod_steps.append(P.RestrictStep(self.expr(stmt.names, path, names), origin=stmt.span))
        return P.FilterPlan(block.name, tuple(pod_steps), tuple(node_steps), origin=block.span)

    def score(self, path: str, block: ast.Score) -> P.ScorePlan:
        names: dict[str, str] = {}
        pod_steps, feasible_steps, node_steps = [], [], []
        value, normalize, normalize_expr = P.Const(0), "none", None
        value_origin = block.span
        for stmt in block.body:
            deps = self.deps(stmt) if isinstance(stmt, (ast.Skip, ast.Let)) else None
            if isinstance(stmt, ast.Skip):
                step = P.SkipStep(self.expr(stmt.cond, path, names), origin=stmt.span)
                (pod_steps if deps <= POD_SCOPES else feasible_steps).append(step)
            elif isinstance(stmt, ast.Let):
                expr = self.expr(stmt.value, path, names)
                names[stmt.name] = self.fresh(stmt.name)
                if deps <= POD_SCOPES:
                    pod_steps.append(P.LetStep(names[stmt.name], expr, "pod", origin=stmt.span))
                elif "node" not in deps:
                    feasible_steps.append(P.LetStep(names[stmt.name], expr, "feasible", origin=stmt.span))
                else:
                    node_steps.append(P.LetStep(names[stmt.name], expr, "node", origin=stmt.span))
            elif isinstance(stmt, ast.Value):
                value, value_origin = self.expr(stmt.expr, path, names), stmt.span
            elif isinstance(stmt, ast.Normalize):
                normalize = stmt.method
                if stmt.expr is not None:
                    normalize_expr = self.expr(stmt.expr, path, names)
        return P.ScorePlan(block.name, tuple(pod_steps), tuple(feasible_steps), tuple(node_steps),
                           value, normalize, normalize_expr, origin=block.span, value_origin=value_origin)

    # ---- rules ----
    def rule(self, path: str, r: ast.Rule) -> P.RulePlan:
        from .api.model import LabelSelector, Toleration, TopologySpreadConstraint

        # A value that cannot be computed (1 / 0, past the 64 bits) is P057, as a param's is.
        const = lambda e: self.constant(e, path) if e is not None else None  # noqa: E731
        tolerations = tuple(
            Toleration(key=t.key, operator=t.operator, value=const(t.value) or "",
                       effect="" if t.effect == "All" else t.effect, toleration_seconds=const(t.seconds))
            for t in r.body if isinstance(t, ast.Tolerate))
        spreads = tuple(
            TopologySpreadConstraint(max_skew=const(s.max_skew), topology_key=s.topology_key,
                                     when_unsatisfiable=s.when_unsatisfiable, label_selector=LabelSelector())
            for s in r.body if isinstance(s, ast.Spread))
        when = self.expr(r.when, path, {}) if r.when is not None else None
        return P.RulePlan(r.name, when, tolerations, spreads, origin=r.span)

    def _unless_rule_applies(self, path: str, r: ast.Rule) -> tuple:
        return (P.SkipStep(P.Not(self.expr(r.when, path, {}))),) if r.when is not None else ()

    def rule_filter(self, path: str, r: ast.Rule) -> "P.FilterPlan | None":
        requires = [s for s in r.body if isinstance(s, ast.Require)]
        if not requires:
            return None
        reason = P.Const(f"node(s) didn't satisfy rule {r.name}")
        rejects = tuple(P.RejectStep(P.Not(self.expr(s.cond, path, {})), reason, "UnschedulableAndUnresolvable",
                                     origin=s.span) for s in requires)
        return P.FilterPlan(f"rule {r.name}", self._unless_rule_applies(path, r), rejects, origin=r.span)

    def rule_score(self, path: str, rules) -> "P.ScorePlan | None":
        """A policy's rules' `prefer` clauses: the weights of the matching ones, scaled to 0..100."""
        terms, whens = [], []
        for r in rules:
            prefers = [s for s in r.body if isinstance(s, ast.Prefer)]
            if not prefers:
                continue
            total = None
            for s in prefers:
                term = P.Cond(self.expr(s.cond, path, {}), self.expr(s.weight, path, {}), P.Const(0))
                total = term if total is None else P.Op("+", total, term)
            applies = self.expr(r.when, path, {}) if r.when is not None else P.Const(True)
            whens.append(applies)
            terms.append(P.Cond(applies, total, P.Const(0)))
        if not terms:
            return None
        value, any_applies = terms[0], whens[0]
        for t, w in zip(terms[1:], whens[1:]):
            value, any_applies = P.Op("+", value, t), P.Op("or", any_applies, w)
        # Pods no rule applies to get no score from it, as a PreScore Skip.
        return P.ScorePlan("rules", (P.SkipStep(P.Not(any_applies)),), (), (), value, "max")

    # ---- expressions ----
    def expr(self, e, path: str, names: dict) -> P.IR:
        self.size += 1
        return getattr(self, "lower_" + type(e).__name__)(e, path, names)

    def lower_Literal(self, e, path, names):
        return P.Const(e.value)

    def lower_Interpolated(self, e, path, names):
        return P.Format(tuple(p if isinstance(p, str) else self.expr(p, path, names) for p in e.parts))

    def lower_Name(self, e, path, names):
        if e.id in GLOBALS and e.id not in names:
            return P.Const(self.target.value())     # `kubernetes`: the target, a constant of the plan
        return P.Var(names.get(e.id, e.id))

    def lower_Field(self, e, path, names):
        target = self.expr(e.target, path, names)
        if isinstance(target, P.Const) and isinstance(target.value, dict) and e.name in target.value:
            return P.Const(target.value[e.name])    # kubernetes.gates.X: folded where it is read
        return P.GetField(target, e.name)

    def lower_Index(self, e, path, names):
        return P.GetIndex(self.expr(e.target, path, names), self.expr(e.key, path, names))

    def lower_Unary(self, e, path, names):
        operand = self.expr(e.operand, path, names)
        return P.Not(operand) if e.op == "not" else P.Neg(operand)

    def lower_Binary(self, e, path, names):
        return P.Op(e.op, self.expr(e.left, path, names), self.expr(e.right, path, names))

    def lower_If(self, e, path, names):
        return P.Cond(self.expr(e.cond, path, names), self.expr(e.then, path, names),
                      self.expr(e.else_, path, names))

    def lower_ListExpr(self, e, path, names):
        return P.MakeList(tuple(self.expr(i, path, names) for i in e.items))

    def lower_MapExpr(self, e, path, names):
        return P.MakeMap(tuple(e.keys), tuple(self.expr(v, path, names) for v in e.values))

    def lower_Comprehension(self, e, path, names):
        source = self.expr(e.source, path, names)
        var = self.fresh(e.var)
        inner = {**names, e.var: var}
        lower = lambda x: self.expr(x, path, inner) if x is not None else None  # noqa: E731
        return P.Comp(e.kind, var, source, lower(e.element), lower(e.where), lower(e.by))

    def lower_Fold(self, e, path, names):
        init, source = self.expr(e.init, path, names), self.expr(e.source, path, names)
        acc, var = self.fresh(e.acc), self.fresh(e.var)
        body = self.expr(e.body, path, {**names, e.acc: acc, e.var: var})
        return P.Fold(acc, init, var, source, body)

    def lower_Call(self, e, path, names):
        args = tuple(self.expr(a, path, names) for a in e.args)
        module_path, func = path, e.func
        if "." in func:
            alias, func = func.split(".", 1)
            module_path = self.program.imports[path][alias]
        module = self.program.modules[module_path]
        defs = {d.name: d for d in module.of_type(ast.Def)}
        if func in defs:
            d = defs[func]
            params = tuple(self.fresh(p) for p in d.params)
            key = (module_path, func)
            if self.size + self.def_sizes.get(key, 0) > MAX_PLAN_SIZE:
                self.too_large(e)
            before = self.size
            body = self.expr(d.body, module_path, dict(zip(d.params, params)))
            self.def_sizes[key] = self.size - before
            if self.size > MAX_PLAN_SIZE:
                self.too_large(e)
            return P.Bind(params, args, body, def_name=func)
        if func in AGGREGATES and len(args) == 1:
            return P.Comp(func, self.fresh("x"), args[0])
        if bi.REGISTRY[func].counting:     # counts as the target counts: its Counting, a constant
            args = (*args, P.Const(counting_of(self.target).key))
        return P.CallBuiltin(func, args)

    def too_large(self, e: ast.Call):
        """Stop before the plan takes the memory: the call whose inlining would pass the limit."""
        raise PolicyError([Diagnostic(
            "P081", f"the plan grows past {MAX_PLAN_SIZE:,} expressions at this call of {e.func}: "
                    "a def is inlined wherever it is called", e.span,
            notes=("help: call a def fewer times (bind its value with `let`), or "
                   "nest defs that call each other less deeply",))],
            self.program.sources)


def plan_size_error(checked: Checked, profiles: list) -> "PolicyError | None":
    """The error compile_all would raise (P081) for the first of ``profiles``, those whose bound
    passes MAX_PLAN_SIZE (plan_size.profiles_past_bound), whose plan does pass it."""
    for path, profile in profiles:
        try:
            _Compiler(checked).profile(path, profile)
        except PolicyError as err:
            return err
    return None


def merge_defaults(default, given):
    """A record argument keeps the default's values for the fields it leaves out."""
    if isinstance(default, dict) and isinstance(given, dict):
        return {**default, **{k: merge_defaults(default.get(k), v) for k, v in given.items()}}
    return given


def as_param_value(t, value):
    """Params typed as a Kubernetes kind hold the typed object, as cluster data does."""
    from .types import model_class

    cls = model_class(t.name) if t is not None and t.kind == "record" and isinstance(value, dict) else None
    if cls is None:
        return value
    from .cluster.load import CONVERTER
    return CONVERTER.structure(value, cls)

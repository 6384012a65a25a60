"""Check: names, types, arity, params, weights and stages of a loaded Program.

The checker infers, for every expression, its type and the scopes it depends on (pod,
node, cluster, params, feasible, score, scores). Dependencies decide the stage a
statement runs in (once per pod, per node, or across nodes), so the compiler reads
them from here instead of working them out again.
"""

from __future__ import annotations

import attrs

from .syntax import ast
from .diagnostics import Diagnostic, PolicyError, Reporter
from .frozen import frozen
from .vocabulary import EXTENSION_POINTS, NORMALIZERS
from .program import Program
from .infer import NO_DEPS, RESERVED, _Env, _ExpressionChecker, did_you_mean
from .source import Span
from .types import ANY, DURATION, INT, SCALARS, STRING, Type, anon_record, compatible, list_of, map_of, model_record

STATUS_CODES = ("Unschedulable", "UnschedulableAndUnresolvable")
NODE_DEPS = frozenset({"node", "score"})


@frozen
class Checked:
    """The result of checking: the program plus what the compiler needs to know about it."""
    program: Program
    stage_deps: ast.NodeMap   # statement or expression → frozenset of scopes it depends on
    param_types: dict    # module path → {param name: Type}
    # expression → its inferred Type (an editor's hover and field completion read it)
    expr_types: ast.NodeMap = attrs.Factory(ast.NodeMap)


def check(program: Program) -> Checked:
    checked, diagnostics = check_all(program)
    if any(d.severity == "error" for d in diagnostics):
        raise PolicyError(diagnostics, program.sources)
    return checked


def check_all(program: Program) -> tuple[Checked, list[Diagnostic]]:
    """Check without raising: what was found, with every diagnostic. An editor wants both
    while the file has errors (types of the expressions that did check, for hover)."""
    checker = _Checker(program)
    checker.run()
    return (Checked(program, checker.stage_deps, checker.param_types, checker.expr_types),
            checker.reporter.diagnostics)


class _Checker(_ExpressionChecker):
    def __init__(self, program: Program):
        self.program = program
        self.reporter = Reporter()
        self.stage_deps = ast.NodeMap()
        self.expr_types = ast.NodeMap()
        self.param_types: dict[str, dict[str, Type]] = {}
        self.def_cache: dict = {}
        self.def_stack: list = []

    def error(self, code, message, span, *notes):
        self.reporter.error(code, message, span, *notes)

    # ---- modules -----------------------------------------------------------------
    def run(self) -> None:
        for path, module in self.program.modules.items():
            self.param_types[path] = self.check_params(path, module)
        for path, module in self.program.modules.items():
            self.check_module(path, module)

    def check_module(self, path: str, module: ast.Module) -> None:
        seen: dict[str, Span] = {}
        for decl in module.decls:
            if isinstance(decl, (ast.Def, ast.Filter, ast.Score, ast.Rule, ast.Param, ast.Profile)):
                key = f"{type(decl).__name__.lower()} {decl.name}"
                if key in seen:
                    self.error("P015", f"{key} is declared twice", decl.span,
                               f"note: first declared at {seen[key]}")
                seen.setdefault(key, decl.span)
        policies = module.of_type(ast.PolicyDecl)
        for extra in policies[1:]:
            self.error("P015", "a file declares at most one policy", extra.span)
        for point in (p for decl in policies for p in decl.implements):
            if point not in EXTENSION_POINTS:
                self.error("P018", f"a policy implements {', '.join(EXTENSION_POINTS)}, not '{point}'", policies[0].span,
                           *did_you_mean(point, EXTENSION_POINTS))
        if (module.of_type(ast.Filter) or module.of_type(ast.Score) or module.of_type(ast.Rule)) and not policies:
            first = (module.of_type(ast.Filter) + module.of_type(ast.Score) + module.of_type(ast.Rule))[0]
            self.error("P016", "filters, scores and rules belong to a policy: start the file with `policy Name`",
                       first.span)
        scores = module.of_type(ast.Score)
        for extra in scores[1:]:
            self.error("P045", "a policy has at most one score (it is one score plugin)", extra.span)
        prefers = [s for r in module.of_type(ast.Rule) for s in r.body if isinstance(s, ast.Prefer)]
        if scores and prefers:
            self.error("P045", "a policy with a `score` cannot also `prefer` in its rules: both would be its score",
                       prefers[0].span)
        for d in module.of_type(ast.Def):
            self.check_def_decl(path, d)
        for f in module.of_type(ast.Filter):
            self.check_block(path, f, {"pod", "node", "cluster", "params"}, is_score=False)
        for s in module.of_type(ast.Score):
            self.check_block(path, s, {"pod", "node", "cluster", "params", "feasible"}, is_score=True)
        for r in module.of_type(ast.Rule):
            self.check_rule(path, r)
        for p in module.of_type(ast.Profile):
            self.check_profile(path, p)

    # ---- params ------------------------------------------------------------------
    def check_params(self, path: str, module: ast.Module) -> dict[str, Type]:
        out = {}
        for p in module.of_type(ast.Param):
            t = self.resolve_type(p.type)
            out[p.name] = t
            if p.default is not None:
                got, deps = self.infer(p.default, _Env(path, {}, set()))
                if deps:
                    self.error("P056", "a param default must be a constant", p.default.span)
                elif not compatible(t, got):
                    self.error("P050", f"param {p.name} is {t}, but its default is {got}", p.default.span)
        return out

    def resolve_type(self, ref) -> Type:
        if isinstance(ref, ast.RecordTypeRef):
            return anon_record((n, self.resolve_type(t)) for n, t in ref.fields)
        if ref.name in SCALARS and not ref.args:
            return SCALARS[ref.name]
        if ref.name == "list" and len(ref.args) == 1:
            return list_of(self.resolve_type(ref.args[0]))
        if ref.name == "map" and len(ref.args) == 2:
            return map_of(self.resolve_type(ref.args[0]), self.resolve_type(ref.args[1]))
        if not ref.args and model_record(ref.name) is not None:
            return model_record(ref.name)
        self.error("P017", f"unknown type '{ref.name}'", ref.span,
                   "help: types are bool, int, float, string, quantity, duration, any, list[T], map[K, V], "
                   "{field: T}, or a Kubernetes kind such as NodeAffinity")
        return ANY

    # ---- blocks ------------------------------------------------------------------
    def check_block(self, path: str, block, scopes: set, is_score: bool) -> None:
        env = _Env(path, {}, scopes)
        values = [s for s in block.body if isinstance(s, ast.Value)]
        if is_score and len(values) != 1:
            self.error("P045", f"score {block.name} needs exactly one `value`, has {len(values)}", block.span)
        normalizers = [s for s in block.body if isinstance(s, ast.Normalize)]
        for extra in normalizers[1:]:
            self.error("P044", "`normalize` is given twice", extra.span)
        for stmt in block.body:
            if isinstance(stmt, ast.Skip):
                t, deps = self.infer(stmt.cond, env)
                self.expect_bool(t, stmt.cond)
                if deps & {"node", "feasible"}:
                    self.error("P041", "`skip when` decides per pod, so it cannot look at `node`", stmt.cond.span)
                self.stage_deps[stmt] = deps
            elif isinstance(stmt, ast.Let):
                if stmt.name in env.locals:
                    self.error("P014", f"'{stmt.name}' is already defined in this block", stmt.span)
                if stmt.name in RESERVED:
                    self.error("P014", f"'{stmt.name}' names a scope and cannot be redefined", stmt.span)
                t, deps = self.infer(stmt.value, env)
                env.locals[stmt.name] = (t, deps)
                self.stage_deps[stmt] = deps
            elif isinstance(stmt, ast.Reject):
                self.check_reject(stmt, env)
            elif isinstance(stmt, ast.Restrict):
                t, deps = self.infer(stmt.names, env)
                if not compatible(list_of(STRING), t):
                    self.error("P048", f"`restrict nodes to` takes a list of node names, not {t}", stmt.names.span)
                if deps & {"node", "feasible"}:
                    self.error("P042", "`restrict nodes to` decides before any node is looked at, so it cannot use "
                                       "`node`", stmt.names.span)
                self.stage_deps[stmt] = deps
            elif isinstance(stmt, ast.Value):
                t, deps = self.infer(stmt.expr, env)
                if not (compatible(INT, t) and t.kind != "null"):
                    self.error("P043", f"a score's value must be an int, not {t}", stmt.expr.span,
                               "help: use int(x) to truncate a float as Go's int64(x) does")
                self.stage_deps[stmt] = deps
            elif isinstance(stmt, ast.Normalize):
                if stmt.method == "with":
                    norm_env = _Env(path, dict(env.locals), scopes | {"score", "scores"})
                    t, deps = self.infer(stmt.expr, norm_env)
                    if not (compatible(INT, t) and t.kind != "null"):
                        self.error("P043", f"a normalized score must be an int, not {t}", stmt.expr.span)
                    self.stage_deps[stmt] = deps
                elif stmt.method not in NORMALIZERS:
                    self.error("P044", f"unknown normalization '{stmt.method}'", stmt.span,
                               *did_you_mean(stmt.method, NORMALIZERS),
                               "help: normalize none | max | reverse | minmax | with <expr>")

    def check_reject(self, stmt: ast.Reject, env: "_Env") -> None:
        t, deps = self.infer(stmt.cond, env)
        self.expect_bool(t, stmt.cond)
        rt, rdeps = self.infer(stmt.reason, env)
        if not (compatible(STRING, rt) or compatible(list_of(STRING), rt)):
            self.error("P046", f"a reason is a string or a list of strings, not {rt}", stmt.reason.span)
        if stmt.code not in STATUS_CODES:
            self.error("P040", f"unknown status code '{stmt.code}'", stmt.span,
                       *did_you_mean(stmt.code, STATUS_CODES),
                       "help: codes are Unschedulable and UnschedulableAndUnresolvable")
        if stmt.pod and (deps | rdeps) & {"node", "feasible"}:
            self.error("P042", "`reject pod when` decides before any node is looked at, so it cannot use `node`",
                       stmt.cond.span, "help: use `reject when` to reject node by node")
        self.stage_deps[stmt] = deps | rdeps

    # ---- rules -------------------------------------------------------------------
    def check_rule(self, path: str, rule: ast.Rule) -> None:
        env = _Env(path, {}, {"pod", "cluster", "params"})
        if rule.when is not None:
            t, _ = self.infer(rule.when, env)
            self.expect_bool(t, rule.when)
        node_env = _Env(path, {}, {"pod", "node", "cluster", "params"})
        for stmt in rule.body:
            if isinstance(stmt, ast.Tolerate):
                if stmt.effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute", "All"):
                    self.error("P070", f"unknown taint effect '{stmt.effect}'", stmt.span,
                               "help: effects are NoSchedule, PreferNoSchedule and NoExecute (All for any)")
                if stmt.value is not None:
                    self.expect_const(stmt.value, STRING, env)
                if stmt.seconds is not None:
                    self.expect_const(stmt.seconds, DURATION, env)
            elif isinstance(stmt, ast.Require):
                t, _ = self.infer(stmt.cond, node_env)
                self.expect_bool(t, stmt.cond)
            elif isinstance(stmt, ast.Prefer):
                self.expect_const(stmt.weight, INT, env)
                t, _ = self.infer(stmt.cond, node_env)
                self.expect_bool(t, stmt.cond)
            elif isinstance(stmt, ast.Spread):
                self.expect_const(stmt.max_skew, INT, env)
                if stmt.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
                    self.error("P070", f"when_unsatisfiable is DoNotSchedule or ScheduleAnyway, "
                                       f"not '{stmt.when_unsatisfiable}'", stmt.span)

    def expect_const(self, expr, want: Type, env) -> None:
        t, deps = self.infer(expr, env)
        if deps - {"params"}:
            self.error("P056", "expected a constant", expr.span)
        elif not compatible(want, t):
            self.error("P052", f"expected {want}, found {t}", expr.span)

    # ---- profiles ----------------------------------------------------------------
    def check_profile(self, path: str, profile: ast.Profile) -> None:
        names: dict[str, ast.Use] = {}
        const_env = _Env(path, {}, set())
        for use in profile.uses:
            target = self.program.uses.get(use)
            if target is None:
                known = sorted(set(self.program.policies) | _stdlib_policy_names())
                self.error("P054", f"unknown policy '{use.ref}'", use.span, *did_you_mean(use.ref, known))
                continue
            module = self.program.modules.get(target)
            if module is None:
                continue
            if module.policy is None:
                self.error("P054", f"{use.ref} declares no policy", use.span)
                continue
            name = module.policy.name
            if use.when is not None:
                got, deps = self.infer(use.when, const_env)
                if deps:
                    self.error("P058", "`use … when` decides which plugins the profile has, before any pod: it "
                                       "can read only `kubernetes`", use.when.span)
                else:
                    self.expect_bool(got, use.when)
            if name in names:
                # Several uses of one policy are alternatives for different targets (compile keeps at
                # most one): each needs its `when`.
                if use.when is None or names[name].when is None:
                    self.error("P015", f"policy {name} is used twice in profile {profile.name} (two uses "
                                       "of one policy must each have a `when`)", use.span)
            names[name] = use
            params = self.param_types.get(target, {})
            declared = {p.name: p for p in module.of_type(ast.Param)}
            for arg_name, expr, span in ((a.name, a.value, a.span) for a in use.args):
                if arg_name not in params:
                    self.error("P051", f"{name} has no param '{arg_name}'", span, *did_you_mean(arg_name, params))
                    continue
                got, deps = self.infer(expr, const_env)
                if deps:
                    self.error("P056", "a param value must be a constant", expr.span)
                elif not compatible(params[arg_name], got):
                    self.error("P052", f"param {arg_name} of {name} is {params[arg_name]}, not {got}", expr.span)
            given = {a.name for a in use.args}
            for pname, p in declared.items():
                if p.default is None and pname not in given:
                    self.error("P051", f"{name} needs a value for param '{pname}'", use.span)
            if use.weight is not None:
                w = _const_int(use.weight)
                if w is None:
                    self.error("P053", "a weight is a whole number", use.weight.span)
                elif not 1 <= w <= 100:
                    self.error("P053", f"weight {w} is outside 1..100", use.weight.span)
        if profile.percentage_of_nodes_to_score is not None:
            pct = _const_int(profile.percentage_of_nodes_to_score)
            if pct is None or not 0 <= pct <= 100:
                self.error("P055", "percentage_of_nodes_to_score is a whole number in 0..100",
                           profile.percentage_of_nodes_to_score.span)

    # ---- defs --------------------------------------------------------------------
    def check_def_decl(self, path: str, d: ast.Def) -> None:
        if len(set(d.params)) != len(d.params):
            self.error("P014", f"def {d.name} names a parameter twice", d.span)
        self.check_def_body(path, d, tuple(ANY for _ in d.params), d.span)

    def check_def_body(self, path: str, d: ast.Def, arg_types: tuple, call_span: Span):
        key = (path, d.name, arg_types)
        if key in self.def_cache:
            return self.def_cache[key]
        if (path, d.name) in self.def_stack:
            self.error("P031", f"def {d.name} calls itself (recursion is not allowed: the language is total)",
                       call_span)
            return ANY, NO_DEPS
        self.def_stack.append((path, d.name))
        locals_ = {p: (t, NO_DEPS) for p, t in zip(d.params, arg_types)}
        env = _Env(path, locals_, {"pod", "node", "cluster", "params"})
        result = self.infer(d.body, env)
        self.def_stack.pop()
        self.def_cache[key] = result
        return result


def _const_int(expr) -> int | None:
    if isinstance(expr, ast.Literal) and expr.kind == "int":
        return expr.value
    return None


def _stdlib_policy_names() -> set[str]:
    from .program import stdlib_dir
    names = set()
    for f in stdlib_dir().glob("*.sched"):
        for line in f.read_text().splitlines():
            if line.startswith("policy "):
                names.add(line.split()[1])
                break
    return names

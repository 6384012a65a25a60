"""Check: names, types, arity, params, weights and stages of a loaded Program.

The checker infers, for every expression, its type and the scopes it depends on (pod,
node, cluster, params, feasible, score, scores). Dependencies decide the stage a
statement runs in (once per pod, per node, or across nodes), so the compiler reads
them from here instead of working them out again.
"""

from __future__ import annotations

import difflib
from typing import Iterable

import attrs

from . import ast
from . import builtins as bi
from .diagnostics import PolicyError, Reporter
from .plan import EXTENSION_POINTS, NORMALIZERS
from .program import Program
from .source import Span
from .types import (ANY, BOOL, DURATION, FLOAT, INT, NULL, NUMERIC, QUANTITY, SCALARS, STRING, Type,
                    anon_record, compatible, fields_of, is_any, list_of, map_of, model_record, record, unify)

STATUS_CODES = ("Unschedulable", "UnschedulableAndUnresolvable")
SCOPE_TYPES = {
    "pod": record("Pod"),
    "node": record("Node"),
    "cluster": record("Cluster"),
    "feasible": list_of(record("Node")),
    "score": INT,
    "scores": list_of(INT),
}
NODE_DEPS = frozenset({"node", "score"})

NO_DEPS: frozenset = frozenset()


@attrs.frozen
class Checked:
    """The result of checking: the program plus what the compiler needs to know about it."""
    program: Program
    stage_deps: ast.NodeMap   # statement or expression → frozenset of scopes it depends on
    param_types: dict    # module path → {param name: Type}


def check(program: Program) -> Checked:
    checker = _Checker(program)
    checker.run()
    errors = [d for d in checker.reporter.diagnostics if d.severity == "error"]
    if errors:
        raise PolicyError(checker.reporter.diagnostics, program.sources)
    return Checked(program, checker.stage_deps, checker.param_types)


def did_you_mean(name: str, options: Iterable[str]) -> tuple[str, ...]:
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return (f"help: did you mean '{close[0]}'?",) if close else ()


class _Checker:
    def __init__(self, program: Program):
        self.program = program
        self.reporter = Reporter()
        self.stage_deps = ast.NodeMap()
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
                if stmt.name in SCOPE_TYPES or stmt.name == "params":
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

    def expect_bool(self, t: Type, expr) -> None:
        if t.kind not in ("bool", "any", "null"):
            self.error("P023", f"expected a bool condition, found {t}", expr.span)

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
        names: dict[str, Span] = {}
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
            if name in names:
                self.error("P015", f"policy {name} is used twice in profile {profile.name}", use.span)
            names[name] = use.span
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

    # ---- expressions ---------------------------------------------------------------
    def infer(self, e, env: "_Env") -> tuple[Type, frozenset]:
        method = getattr(self, "infer_" + type(e).__name__)
        t, deps = method(e, env)
        self.stage_deps[e] = deps
        return t, deps

    def infer_Literal(self, e: ast.Literal, env):
        return {"int": INT, "float": FLOAT, "string": STRING, "bool": BOOL, "null": NULL,
                "quantity": QUANTITY, "duration": DURATION}[e.kind], NO_DEPS

    def infer_Interpolated(self, e: ast.Interpolated, env):
        deps = NO_DEPS
        for part in e.parts:
            if not isinstance(part, str):
                _, d = self.infer(part, env)
                deps |= d
        return STRING, deps

    def infer_Name(self, e: ast.Name, env):
        if e.id in env.locals:
            return env.locals[e.id]
        if e.id in env.scopes and e.id in SCOPE_TYPES:
            return SCOPE_TYPES[e.id], frozenset({e.id})
        if e.id == "params" and "params" in env.scopes:
            return anon_record(self.param_types.get(env.path, {}).items()), frozenset({"params"})
        options = set(env.locals) | {s for s in env.scopes if s in SCOPE_TYPES or s == "params"}
        hint = did_you_mean(e.id, options)
        if e.id in SCOPE_TYPES or e.id == "params":
            self.error("P013", f"'{e.id}' is not available here", e.span)
        else:
            self.error("P013", f"undefined: {e.id}", e.span, *hint)
        return ANY, NO_DEPS

    def infer_Field(self, e: ast.Field, env):
        t, deps = self.infer(e.target, env)
        if is_any(t) or t.kind == "null":
            return ANY, deps
        fields = fields_of(t)
        if fields is None:
            if t.kind == "map":
                self.error("P012", f"a map has no fields; write [\"{e.name}\"] to look up a key", e.span)
            else:
                self.error("P012", f"{t} has no field '{e.name}'", e.span)
            return ANY, deps
        if e.name not in fields:
            self.error("P012", f"{t} has no field '{e.name}'", e.span, *did_you_mean(e.name, fields))
            return ANY, deps
        return fields[e.name], deps

    def infer_Index(self, e: ast.Index, env):
        t, deps = self.infer(e.target, env)
        kt, kdeps = self.infer(e.key, env)
        deps |= kdeps
        if is_any(t) or t.kind == "null":
            return ANY, deps
        if t.kind == "list":
            if not compatible(INT, kt) or kt.kind == "float":
                self.error("P024", f"a list index is an int, not {kt}", e.key.span)
            return t.args[0], deps
        if t.kind == "map":
            if not compatible(t.args[0], kt):
                self.error("P024", f"this map's keys are {t.args[0]}, not {kt}", e.key.span)
            return t.args[1], deps
        self.error("P024", f"{t} cannot be indexed", e.span)
        return ANY, deps

    def infer_Unary(self, e: ast.Unary, env):
        t, deps = self.infer(e.operand, env)
        if e.op == "not":
            self.expect_bool(t, e.operand)
            return BOOL, deps
        if t.kind not in NUMERIC | {"any", "null"}:
            self.error("P020", f"cannot negate {t}", e.span)
            return ANY, deps
        return t, deps

    def infer_Binary(self, e: ast.Binary, env):
        lt, ldeps = self.infer(e.left, env)
        rt, rdeps = self.infer(e.right, env)
        deps = ldeps | rdeps
        op = e.op
        if op in ("and", "or"):
            self.expect_bool(lt, e.left)
            self.expect_bool(rt, e.right)
            return BOOL, deps
        if op == "??":
            return (unify(lt, rt) or ANY), deps
        if op in ("in", "notin"):
            if rt.kind == "list":
                if not compatible(rt.args[0], lt) and not compatible(lt, rt.args[0]):
                    self.error("P021", f"a {lt} is never in a {rt}", e.span)
            elif rt.kind == "map":
                if not compatible(rt.args[0], lt):
                    self.error("P021", f"a {lt} is never a key of a {rt}", e.span)
            elif rt.kind == "string":
                if lt.kind not in ("string", "any", "null"):
                    self.error("P021", f"only a string can be in a string, not a {lt}", e.span)
            elif not is_any(rt) and rt.kind != "null":
                self.error("P021", f"'in' needs a list, a map or a string on the right, not {rt}", e.right.span)
            return BOOL, deps
        if op in ("==", "!="):
            if not (unify(lt, rt) or compatible(lt, rt) or compatible(rt, lt)):
                self.error("P021", f"comparing {lt} with {rt} is always {'false' if op == '==' else 'true'}", e.span)
            return BOOL, deps
        if op in ("<", "<=", ">", ">="):
            ok = (lt.kind in NUMERIC | {"any", "null"} and rt.kind in NUMERIC | {"any", "null"}) or \
                 (lt.kind in ("string", "any") and rt.kind in ("string", "any"))
            if ok and lt.kind in NUMERIC and rt.kind in NUMERIC and not unify(lt, rt):
                ok = False
            if not ok:
                self.error("P021", f"cannot order {lt} and {rt}", e.span)
            return BOOL, deps
        return self.arith(op, lt, rt, e), deps

    def arith(self, op: str, lt: Type, rt: Type, e) -> Type:
        kinds = {lt.kind, rt.kind}
        if "any" in kinds or "null" in kinds:
            return ANY if "any" in kinds else (rt if lt.kind == "null" else lt)
        if op == "+" and kinds == {"string"}:
            return STRING
        if op == "+" and lt.kind == rt.kind == "list":
            return unify(lt, rt) or ANY
        if kinds <= {"int"}:
            return INT
        if kinds <= {"int", "float"}:
            return FLOAT
        if kinds <= {"int", "quantity"} and (op in ("+", "-") or (op == "*" and kinds == {"int", "quantity"})):
            return QUANTITY
        if kinds <= {"int", "duration"} and op in ("+", "-", "*"):
            return DURATION
        self.error("P020", f"cannot apply '{op}' to {lt} and {rt}", e.span,
                   *(("help: convert with milli(q) or value(q) to compute with whole numbers",)
                     if "quantity" in kinds else ()))
        return ANY

    def infer_If(self, e: ast.If, env):
        ct, cdeps = self.infer(e.cond, env)
        self.expect_bool(ct, e.cond)
        at, adeps = self.infer(e.then, env)
        bt, bdeps = self.infer(e.else_, env)
        t = unify(at, bt)
        if t is None:
            self.error("P022", f"the branches of this `if` differ: {at} and {bt}", e.span)
            t = ANY
        return t, cdeps | adeps | bdeps

    def infer_ListExpr(self, e: ast.ListExpr, env):
        elem, deps = NULL, NO_DEPS
        for item in e.items:
            t, d = self.infer(item, env)
            deps |= d
            u = unify(elem, t)
            if u is None:
                self.error("P022", f"a list holds one type of item; found {elem} and {t}", item.span)
                u = ANY
            elem = u
        return list_of(ANY if elem.kind == "null" else elem), deps

    def infer_MapExpr(self, e: ast.MapExpr, env):
        deps = NO_DEPS
        types = []
        for k, v in zip(e.keys, e.values):
            t, d = self.infer(v, env)
            deps |= d
            types.append((k, t))
        if e.record:
            return anon_record(types), deps
        value = NULL
        for _, t in types:
            value = unify(value, t) or ANY
        return map_of(STRING, ANY if value.kind == "null" else value), deps

    def infer_Comprehension(self, e: ast.Comprehension, env):
        st, deps = self.infer(e.source, env)
        if st.kind == "list":
            item = st.args[0]
        elif is_any(st) or st.kind == "null":
            item = ANY
        else:
            self.error("P025", f"can only iterate over a list, not {st}", e.source.span,
                       *(("help: iterate over keys(m) or values(m)",) if st.kind == "map" else ()))
            item = ANY
        if e.var in SCOPE_TYPES or e.var == "params":
            self.error("P014", f"'{e.var}' names a scope and cannot be a loop variable", e.span)
        inner = env.child({e.var: (item, NO_DEPS)})
        if e.where is not None:
            wt, wd = self.infer(e.where, inner)
            self.expect_bool(wt, e.where)
            deps |= wd
        elem = item
        if e.element is not None:
            elem, ed = self.infer(e.element, inner)
            deps |= ed
        kt = NULL
        if e.by is not None:
            kt, bd = self.infer(e.by, inner)
            deps |= bd
        kind = e.kind
        if kind == "list":
            return list_of(elem), deps
        if kind in ("any", "all"):
            if e.element is not None:
                self.expect_bool(elem, e.element)
            return BOOL, deps
        if kind == "count":
            return INT, deps
        if kind == "sum":
            if elem.kind not in NUMERIC | {"any"}:
                self.error("P020", f"cannot sum {elem}", e.span)
            return elem, deps
        if kind in ("min", "max", "first"):
            return elem, deps
        if kind == "group":
            return map_of(kt, list_of(elem)), deps
        return ANY, deps

    def infer_Fold(self, e: ast.Fold, env):
        init_t, deps = self.infer(e.init, env)
        st, sdeps = self.infer(e.source, env)
        deps |= sdeps
        item = st.args[0] if st.kind == "list" else ANY
        if st.kind not in ("list", "any", "null"):
            self.error("P025", f"can only fold over a list, not {st}", e.source.span)
        for name in (e.acc, e.var):
            if name in SCOPE_TYPES or name == "params":
                self.error("P014", f"'{name}' names a scope and cannot be a fold variable", e.span)
        acc_t = init_t
        inner = env.child({e.acc: (acc_t, deps), e.var: (item, NO_DEPS)})
        body_t, bdeps = self.infer(e.body, inner)
        result = unify(acc_t, body_t)
        if result is None:
            self.error("P022", f"fold starts as {acc_t} but its body gives {body_t}", e.body.span)
            result = ANY
        return result, deps | bdeps

    def infer_Call(self, e: ast.Call, env):
        arg_types, deps = [], NO_DEPS
        for a in e.args:
            t, d = self.infer(a, env)
            arg_types.append(t)
            deps |= d
        target = self.resolve_call(e, env)
        if target is None:
            return ANY, deps
        if isinstance(target, str):
            if target in ("sum", "any", "all", "count", "first") and len(arg_types) == 1:
                return self.aggregate_of_list(target, arg_types[0], e), deps
            if target in ("min", "max") and len(arg_types) == 1:
                t = arg_types[0]
                if t.kind not in ("list", "any", "null"):
                    self.error("P033", f"{target}() of one argument takes a list, not {t}", e.span)
                return (t.args[0] if t.kind == "list" else ANY), deps
            result, problem = bi.check_call(target, arg_types)
            if problem:
                self.error("P030", problem, e.span)
                return ANY, deps
            return result, deps | (frozenset({"cluster"}) if bi.REGISTRY[target].needs_state else NO_DEPS)
        path, d = target
        if len(arg_types) != len(d.params):
            self.error("P030", f"{d.name}() takes {len(d.params)} argument{'s' if len(d.params) != 1 else ''}, "
                               f"got {len(arg_types)}", e.span)
            return ANY, deps
        result, body_deps = self.check_def_body(path, d, tuple(arg_types), e.span)
        return result, deps | body_deps

    def aggregate_of_list(self, kind: str, t: Type, e) -> Type:
        if t.kind not in ("list", "any", "null"):
            self.error("P033", f"{kind}() takes a list, not {t}", e.span)
            return ANY
        elem = t.args[0] if t.kind == "list" else ANY
        return {"sum": elem, "any": BOOL, "all": BOOL, "count": INT, "first": elem}[kind]

    def resolve_call(self, e: ast.Call, env):
        """A builtin's name, or (module path, Def)."""
        module_path = env.path
        name = e.func
        if "." in name:
            alias, name = name.split(".", 1)
            imported = self.program.imports.get(env.path, {})
            if alias not in imported:
                self.error("P062", f"no imported module named '{alias}'", e.func_span,
                           *did_you_mean(alias, imported))
                return None
            module_path = imported[alias]
        module = self.program.modules.get(module_path)
        defs = {d.name: d for d in module.of_type(ast.Def)} if module else {}
        if name in defs:
            return module_path, defs[name]
        if module_path == env.path and (name in bi.REGISTRY or name in ("sum", "any", "all", "count", "first")):
            return name
        options = set(defs) | (set(bi.REGISTRY) if module_path == env.path else set())
        self.error("P032", f"unknown function '{e.func}'", e.func_span, *did_you_mean(name, options))
        return None


@attrs.define
class _Env:
    path: str
    locals: dict
    scopes: set

    def child(self, extra: dict) -> "_Env":
        return _Env(self.path, {**self.locals, **extra}, self.scopes)


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

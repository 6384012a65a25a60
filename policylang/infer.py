"""Infer: the type of every expression, and the scopes it depends on.

The expression half of the checker (`check.py` holds the declarations: modules, params,
blocks, rules, profiles, defs). Its methods are mixed into the checker, which provides
`error`, `program`, `param_types`, `stage_deps` and `check_def_body` (a call to a def
is checked by expanding its body with the argument types).
"""

from __future__ import annotations

import difflib
from typing import Iterable

import attrs

from .syntax import ast
from . import builtins as bi
from .types import (ANY, BOOL, DURATION, FLOAT, INT, NULL, NUMERIC, QUANTITY, STRING, Type,
                    anon_record, compatible, fields_of, is_any, list_of, map_of, record, unify)


SCOPE_TYPES = {
    "pod": record("Pod"),
    "node": record("Node"),
    "cluster": record("Cluster"),
    "feasible": list_of(record("Node")),
    "score": INT,
    "scores": list_of(INT),
}

NO_DEPS: frozenset = frozenset()

# Names every expression may read, that depend on nothing of a cycle: `kubernetes`, the target's
# version and feature gates (target.py), a constant of the plan.
GLOBALS = {"kubernetes": record("Kubernetes")}
RESERVED = set(SCOPE_TYPES) | {"params"} | set(GLOBALS)


def did_you_mean(name: str, options: Iterable[str]) -> tuple[str, ...]:
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return (f"help: did you mean '{close[0]}'?",) if close else ()


class _ExpressionChecker:
    """The checker's rules for expressions: `infer` and one `infer_<Node>` per kind."""

    def expect_bool(self, t: Type, expr) -> None:
        if t.kind not in ("bool", "any", "null"):
            self.error("P023", f"expected a bool condition, found {t}", expr.span)

    # ---- expressions ---------------------------------------------------------------
    def infer(self, e, env: "_Env") -> tuple[Type, frozenset]:
        method = getattr(self, "infer_" + type(e).__name__)
        t, deps = method(e, env)
        self.stage_deps[e] = deps
        self.expr_types[e] = t
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
        if e.id in GLOBALS:
            return GLOBALS[e.id], NO_DEPS
        if e.id == "params" and "params" in env.scopes:
            return anon_record(self.param_types.get(env.path, {}).items()), frozenset({"params"})
        options = set(env.locals) | set(GLOBALS) | {s for s in env.scopes if s in SCOPE_TYPES or s == "params"}
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
        if e.var in RESERVED:
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
            if name in RESERVED:
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

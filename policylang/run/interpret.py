"""The reference interpreter of plan expressions.

Each IR node is turned once into a Python closure ``f(env) -> value``; running a plan is
then calling closures, with no re-walking of the tree per node. ``env`` is a dict of
variables; ``env["$state"]`` is the ClusterState (for derived fields and state builtins).

Values: null is None; lists are Python sequences; maps are dicts; records are attrs
objects (cluster data) or dicts (params, record literals). Field access and indexing are
null-safe; arithmetic with null is null; ordering comparisons with null are false; null
is false where a condition is expected.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import attrs

from .. import builtins as bi
from .. import plan as P
from ..api.quantity import Quantity
from ..builtins import INT64, EvalError, in_range
from ..cost import BUDGET, charge
from ..types import DERIVED

Fn = Callable[[dict], Any]


def evaluate(ir: P.IR, env: dict) -> Any:
    return compile_ir(ir)(env)


@lru_cache(maxsize=None)
def _api_attrs(cls: type) -> dict[str, str]:
    from ..api import model     # here: compiling a policy's params runs this module, and needs no model

    return {model.api_name(a.name): a.name for a in attrs.fields(cls)}


def get_field(obj: Any, name: str, state) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    attr = _api_attrs(type(obj)).get(name)
    if attr is not None:
        return getattr(obj, attr)
    derived = DERIVED.get(type(obj).__name__, {}).get(name)
    if derived is not None:
        return getattr(state, derived[1]).get(obj.metadata.name, ()) if state is not None else ()
    raise EvalError(f"{type(obj).__name__} has no field '{name}'")


def _truthy(v) -> bool:
    """Only null and false are false (spelled out as this expression where it is hot)."""
    return v is not None and v is not False


def go_div(a, b):
    if b == 0:
        raise EvalError("division by zero")
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if isinstance(a, Quantity) or isinstance(b, Quantity):
        raise EvalError("cannot divide quantities; use milli(q) or value(q)")
    return a / b


def go_mod(a, b):
    if b == 0:
        raise EvalError("division by zero")
    if isinstance(a, int) and isinstance(b, int):
        return a - b * go_div(a, b)
    return math.fmod(a, b)


def _order(op: str, a, b) -> bool:
    if a is None or b is None:
        return False
    try:
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        return a >= b
    except TypeError:
        raise EvalError(f"cannot compare {type(a).__name__} and {type(b).__name__}") from None


def _contains(container, item) -> bool:
    if container is None:
        return False
    if isinstance(container, str):
        return isinstance(item, str) and item in container
    return item in container


@P.by_identity   # a plan's parts are compiled once, inlined defs shared
def compile_ir(ir: P.IR) -> Fn:
    return _COMPILERS[type(ir)](ir)


def compile_lazily(ir: P.IR) -> Fn:
    """compile_ir(ir) on the closure's first call: `eval` of a few pods compiles only the steps
    they reach (as the vector executor's vcompile_lazily)."""
    fn = None

    def run(env):
        nonlocal fn
        if fn is None:
            fn = compile_ir(ir)
        return fn(env)
    return run


def _const(ir: P.Const) -> Fn:
    value = ir.value
    return lambda env: value


def _var(ir: P.Var) -> Fn:
    name = ir.name
    return lambda env: env[name]


def _field(ir: P.GetField) -> Fn:
    target, name, read = compile_ir(ir.target), ir.name, field_reader(ir.name)
    held_in: dict[type, str] = {}   # per API type, the attribute this field is held in

    def run(env):
        # Records and API objects, the common cases, read here without further calls.
        obj = target(env)
        kind = type(obj)
        if kind is dict:
            return obj.get(name)
        attr = held_in.get(kind)
        if attr is not None:
            return getattr(obj, attr)
        if attrs.has(kind) and name in _api_attrs(kind):
            held_in[kind] = _api_attrs(kind)[name]
        return read(obj, env)
    return run


def field_reader(name: str) -> Callable:
    """``read(obj, env)``: the field of obj (null for null), how to read it found once per type."""
    readers: dict[type, Callable] = {}

    def read(obj, env):
        if obj is None:
            return None
        fn = readers.get(type(obj))
        if fn is None:
            fn = readers[type(obj)] = _reader(type(obj), name)
        return fn(obj, env)
    return read


def _reader(cls: type, name: str) -> Callable:
    if cls is dict:
        return lambda obj, env: obj.get(name)
    if attrs.has(cls):
        attr = _api_attrs(cls).get(name)
        if attr is not None:
            return lambda obj, env: getattr(obj, attr)
    return lambda obj, env: get_field(obj, name, env.get("$state"))


def _index(ir: P.GetIndex) -> Fn:
    target, key = compile_ir(ir.target), compile_ir(ir.key)

    return lambda env: index_value(target(env), key(env))


def index_value(obj, k):
    if obj is None or k is None:
        return None
    if isinstance(obj, dict):
        return obj.get(k)
    if isinstance(k, bool) or not isinstance(k, int):
        raise EvalError(f"a list index is an int, not {k!r}")
    return obj[k] if -len(obj) <= k < len(obj) else None


def _op(ir: P.Op) -> Fn:
    op, left, right = ir.op, compile_ir(ir.left), compile_ir(ir.right)
    if op == "and":
        def both(env):
            x = left(env)
            if x is None or x is False:
                return False
            y = right(env)
            return y is not None and y is not False
        return both
    if op == "or":
        def either(env):
            x = left(env)
            if x is not None and x is not False:
                return True
            y = right(env)
            return y is not None and y is not False
        return either
    if op == "??":
        def coalesce(env):
            v = left(env)
            return right(env) if v is None else v
        return coalesce
    if op == "==":
        return lambda env: left(env) == right(env)
    if op == "!=":
        return lambda env: left(env) != right(env)
    if op in ("<", "<=", ">", ">="):
        return lambda env: _order(op, left(env), right(env))
    if op == "in":
        return lambda env: _contains(right(env), left(env))
    if op == "notin":
        return lambda env: not _contains(right(env), left(env))
    arith = _ARITH[op]

    def calc(env):
        a, b = left(env), right(env)
        if a is None or b is None:
            return None
        return arith(a, b)
    return calc


def _plus(a, b):
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) + list(b)
    r = a + b
    return r if type(r) is int and -INT64 <= r < INT64 else in_range(r, "{} + {}", a, b)


# Both executors' arithmetic on plain values: integers stay in the 64 bits (builtins.in_range),
# checked here first for the common case of an int that fits.
def _minus(a, b):
    r = a - b
    return r if type(r) is int and -INT64 <= r < INT64 else in_range(r, "{} - {}", a, b)


def _times(a, b):
    r = a * b
    return r if type(r) is int and -INT64 <= r < INT64 else in_range(r, "{} * {}", a, b)


def _divided(a, b):
    return in_range(go_div(a, b), "{} / {}", a, b)


_ARITH = {"+": _plus, "-": _minus, "*": _times, "/": _divided, "%": go_mod}


def negate(v):
    if v is None:
        return None
    r = -v
    return r if type(r) is int and -INT64 <= r < INT64 else in_range(r, "-({})", v)


def _not(ir: P.Not) -> Fn:
    operand = compile_ir(ir.operand)
    return lambda env: (x := operand(env)) is None or x is False


def _neg(ir: P.Neg) -> Fn:
    operand = compile_ir(ir.operand)

    return lambda env: negate(operand(env))


def _cond(ir: P.Cond) -> Fn:
    c, a, b = compile_ir(ir.cond), compile_ir(ir.then), compile_ir(ir.else_)
    return lambda env: a(env) if (x := c(env)) is not None and x is not False else b(env)


def _list(ir: P.MakeList) -> Fn:
    items = [compile_ir(i) for i in ir.items]
    return lambda env: [f(env) for f in items]


def _map(ir: P.MakeMap) -> Fn:
    keys, values = ir.keys, [compile_ir(v) for v in ir.values]
    return lambda env: {k: f(env) for k, f in zip(keys, values)}


def _format(ir: P.Format) -> Fn:
    parts = [p if isinstance(p, str) else compile_ir(p) for p in ir.parts]

    def run(env):
        return "".join(p if isinstance(p, str) else bi.to_string(p(env)) for p in parts)
    return run


def _comp(ir: P.Comp) -> Fn:
    kind, var = ir.kind, ir.var
    source = compile_ir(ir.source)
    element = compile_ir(ir.element) if ir.element is not None else None
    where = compile_ir(ir.where) if ir.where is not None else None
    by = compile_ir(ir.by) if ir.by is not None else None

    def items(env):
        seq = source(env)
        if seq is None:
            return
        _charge_len(seq)
        for x in seq:
            env[var] = x
            if where is None or ((w := where(env)) is not None and w is not False):
                yield x

    def project(env):
        for x in items(env):
            yield element(env) if element is not None else x

    if kind == "list":
        def collect(env):
            seq = source(env)
            out = []
            if seq is None:
                return out
            try:    # _charge_len inline: these are the hottest comprehensions
                BUDGET.left -= len(seq)
            except TypeError:
                pass
            if BUDGET.left < 0:
                charge(0)
            for x in seq:
                env[var] = x
                if where is None or ((w := where(env)) is not None and w is not False):
                    out.append(element(env) if element is not None else x)
            return out
        return collect
    if kind == "count":
        def count(env):
            seq = source(env)
            if seq is None:
                return 0
            if where is None:
                return len(seq)
            try:
                BUDGET.left -= len(seq)
            except TypeError:
                pass
            if BUDGET.left < 0:
                charge(0)
            n = 0
            for x in seq:
                env[var] = x
                if (w := where(env)) is not None and w is not False:
                    n += 1
            return n
        return count
    if kind in ("any", "all") and element is None and where is not None:
        # `all(x in xs where c)`: c is the predicate every (or some) x must satisfy.
        quantifier = all if kind == "all" else any

        def quantify(env):
            seq = source(env)
            if seq is None:
                return kind == "all"
            _charge_len(seq)
            return quantifier(_satisfies(env, var, x, where) for x in seq)
        return quantify
    if kind in AGGREGATES:
        aggregate = AGGREGATES[kind]
        return lambda env: aggregate(project(env))
    if kind == "group":
        def group(env):
            out: dict = {}
            for x in items(env):
                out.setdefault(by(env), []).append(element(env) if element is not None else x)
            return out
        return group
    raise EvalError(f"unknown comprehension {kind}")


def _sum(values) -> Any:
    """Checked once, at the end: Go's int64 sum wraps back as exactly when only a partial sum
    leaves the 64 bits."""
    acc = 0
    for v in values:
        if v is not None:
            acc = acc + v
    return in_range(acc, "a sum")


def _extreme(pick):
    def run(values):
        if type(values) is not list or None in values:
            values = [v for v in values if v is not None]
        return pick(values) if values else None
    return run


# What an aggregate makes of the values it is given (in order; any, all and first stop early on
# an iterator): the one definition both executors use.
AGGREGATES = {
    "any": lambda values: any(_truthy(v) for v in values),
    "all": lambda values: all(_truthy(v) for v in values),
    "sum": _sum, "min": _extreme(min), "max": _extreme(max),
    "first": lambda values: next(iter(values), None),
}


def _satisfies(env: dict, var: str, x, predicate: Fn) -> bool:
    env[var] = x
    return _truthy(predicate(env))


def _charge_len(seq) -> None:
    """Charge the budget for the items a comprehension or fold is about to go through."""
    try:
        BUDGET.left -= len(seq)
    except TypeError:   # not sized: a step per item would cost more than it bounds
        return
    if BUDGET.left < 0:
        charge(0)


def _fold(ir: P.Fold) -> Fn:
    acc, var = ir.acc, ir.var
    init, source, body = compile_ir(ir.init), compile_ir(ir.source), compile_ir(ir.body)

    def run(env):
        value = init(env)
        seq = source(env) or ()
        _charge_len(seq)
        for x in seq:
            env[acc], env[var] = value, x
            value = body(env)
        return value
    return run


def _call(ir: P.CallBuiltin) -> Fn:
    b = bi.REGISTRY[ir.name]
    args = [compile_ir(a) for a in ir.args]
    impl = b.impl
    if b.needs_state:
        return lambda env: impl(env.get("$state"), *[a(env) for a in args])
    if len(args) == 1:
        a0 = args[0]
        return lambda env: impl(a0(env))
    if len(args) == 2:
        a0, a1 = args
        return lambda env: impl(a0(env), a1(env))
    return lambda env: impl(*[a(env) for a in args])


def _bind(ir: P.Bind) -> Fn:
    names, values, body = ir.names, [compile_ir(v) for v in ir.values], compile_ir(ir.body)

    def run(env):
        for n, v in zip(names, values):
            env[n] = v(env)
        return body(env)
    return run


_COMPILERS = {
    P.Const: _const, P.Var: _var, P.GetField: _field, P.GetIndex: _index, P.Op: _op, P.Not: _not,
    P.Neg: _neg, P.Cond: _cond, P.MakeList: _list, P.MakeMap: _map, P.Format: _format, P.Comp: _comp, P.Fold: _fold,
    P.CallBuiltin: _call, P.Bind: _bind,
}

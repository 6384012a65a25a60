"""The vector form of each IR node: ``form(ir, sub) -> f(venv, n)``, where ``sub`` gives the
vector form of a sub-expression (``compile.vcompile``).

Where the reference would not evaluate an expression on a node (the right of ``and``, a
branch of ``if``) neither does this: such expressions run on the sub-batch of nodes that
reach them.
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, eq, is_, ne

import attrs
import numpy as np

from ... import builtins as bi
from ... import plan as P
from ...builtins import POLICY_ERRORS
from ...cost import charge
from ..interpret import _ARITH, _api_attrs, _contains, _order, compile_ir, field_reader, index_value, negate
from . import builtin_forms
from .analysis import is_arithmetic
from .comprehension import comprehension_form
from .values import (NUMPY_COMPARE, VARYING, Col, Rec, Seq, VFn, arith_ok, array_of, as_seq, bool_value, codes_of,
                     col_of, comparable, elementwise, is_listy, merge, node_by_node, num_kind, numeric_arith, restrict,
                     take, truth, values_of, where_true)


def var_form(ir):
    name = ir.name
    return lambda venv, n: venv[name]


def _field(ir: P.GetField, sub):
    target, name = sub(ir.target), ir.name
    read = field_reader(name)

    def run(venv, n):
        obj = target(venv, n)
        if isinstance(obj, Rec):
            return obj.fields.get(name)
        if not isinstance(obj, VARYING):
            return read(obj, venv)
        xs = values_of(obj, n)
        kinds = set(map(type, xs))
        if len(kinds) == 1:     # one kind of object: its field read without a call per node
            kind = kinds.pop()
            if kind is dict:
                return col_of([x.get(name) for x in xs])
            attr = _api_attrs(kind).get(name) if attrs.has(kind) else None
            if attr is not None:
                return col_of(list(map(attrgetter(attr), xs)))
        return col_of([read(x, venv) for x in xs])
    return run


def _index(ir: P.GetIndex, sub):
    target, key = sub(ir.target), sub(ir.key)

    def run(venv, n):
        obj, k = target(venv, n), key(venv, n)
        if isinstance(obj, Seq) and not isinstance(k, VARYING) and isinstance(k, int) and not isinstance(k, bool) \
                and k >= 0:
            return _member(obj, k, n)
        if isinstance(obj, (list, tuple)) and isinstance(k, Col) and k.a.dtype.kind == "i":
            items = np.full(len(obj) + 1, None, dtype=object)   # the last slot: null, for out of range
            for j, x in enumerate(obj):
                items[j] = x
            i = np.where((k.a >= -len(obj)) & (k.a < len(obj)), k.a % max(len(obj), 1), len(obj))
            return col_of(items[i].tolist())
        # A map looked up per node, or each node's map looked up by one key: the reference's
        # index_value, without a call per node where the answer is a dict lookup.
        if isinstance(obj, dict) and isinstance(k, Col):
            encoded = codes_of(k)
            keys = encoded[1] if encoded is not None else k.a.tolist()
            if None in obj:     # a null key finds nothing, even where a map has one
                found = col_of([None if x is None else obj.get(x) for x in keys])
            else:
                found = col_of(list(map(obj.get, keys)))
            return Col(found.a[encoded[0]]) if encoded is not None else found
        if isinstance(obj, Col) and k is not None and not isinstance(k, VARYING):
            objs = obj.a.tolist()
            if set(map(type, objs)) == {dict}:     # every node's map: one C loop of look-ups
                return col_of(list(map(dict.get, objs, repeat(k))))
            return col_of([o.get(k) if type(o) is dict else index_value(o, k) for o in objs])
        return elementwise(index_value, [obj, k], n)
    return run


def _member(seq: Seq, k: int, n: int):
    """The k-th member of a Seq on each node (null where it has fewer)."""
    if all(m is True for m in seq.masks[:k + 1]):
        return seq.items[k] if k < len(seq.items) else None
    before = np.zeros(n, dtype=np.int64)    # members so far, per node
    parts, taken = [], np.zeros(n, dtype=bool)
    for item, m in zip(seq.items, seq.masks):
        hit = (before == k) if m is True else (m & (before == k))
        if hit.any():
            sel = where_true(hit)
            parts.append((sel, take(item, sel) if isinstance(item, VARYING) else item))
            taken |= hit
        before = before + (1 if m is True else m)
    return merge(parts + [(where_true(~taken), None)], n)


def _op(ir: P.Op, sub):
    op, left, right = ir.op, sub(ir.left), sub(ir.right)
    right_reads = P.free_vars(ir.right)
    if op in ("and", "or"):
        def logic(venv, n):
            a = truth(left(venv, n), n)
            if not isinstance(a, np.ndarray):
                if a == (op == "or"):
                    return a
                return bool_value(truth(right(venv, n), n), n)
            undecided = a if op == "and" else ~a
            sel = where_true(undecided)
            if not len(sel):
                return Col(a)
            b = truth(right(restrict(venv, sel, right_reads), len(sel)), len(sel))
            out = a.copy()
            out[sel] = b
            return Col(out)
        return logic
    if op == "??":
        constant = isinstance(ir.right, P.Const)    # `m[k] ?? 0`: the filler needs no sub-batch

        def coalesce(venv, n):
            a = left(venv, n)
            if not isinstance(a, VARYING):
                return right(venv, n) if a is None else a
            if not isinstance(a, Col) or a.a.dtype != object:
                return a
            if constant:
                filler = ir.right.value
                return col_of([filler if x is None else x for x in a.a.tolist()])
            missing = np.fromiter(map(is_, a.a.tolist(), repeat(None)), dtype=bool, count=n)
            sel = where_true(missing)
            if not len(sel):
                return a
            keep = where_true(~missing)
            return merge([(keep, take(a, keep)), (sel, right(restrict(venv, sel, right_reads), len(sel)))], n)
        return coalesce
    if op in NUMPY_COMPARE:
        compare = NUMPY_COMPARE[op]

        def cmp(venv, n):
            a, b = left(venv, n), right(venv, n)
            if (isinstance(a, Col) or isinstance(b, Col)) and comparable(a, b) and (op in ("==", "!=") or num_kind(a) != "bool"):
                return Col(np.asarray(compare(array_of(a), array_of(b)), dtype=bool))
            if op in ("==", "!="):
                return _equal_each(a, b, n, op == "!=")
            return elementwise(lambda x, y: _order(op, x, y), [a, b], n)
        return cmp
    if op in ("in", "notin"):
        negate = op == "notin"

        def member(venv, n):
            x, c = left(venv, n), right(venv, n)
            if isinstance(c, (dict, list, tuple)) and not c:     # nothing is in an empty one
                return Col(np.full(n, negate)) if isinstance(x, VARYING) else negate
            if isinstance(c, Col) and not isinstance(x, VARYING):
                hits = _contains_in_each(repeat(x), c.a)
            elif isinstance(c, Col) and isinstance(x, Col):
                hits = _contains_in_each(x.a.tolist(), c.a)
            elif isinstance(x, Col) and isinstance(c, (dict, list, tuple)):
                encoded = codes_of(x)
                if encoded is not None:     # once per distinct value
                    hits = np.fromiter(map(c.__contains__, encoded[1]), dtype=bool, count=len(encoded[1]))[encoded[0]]
                else:
                    hits = np.fromiter(map(c.__contains__, x.a.tolist()), dtype=bool, count=n)
            else:
                return elementwise(lambda x, c: _contains(c, x) != negate, [x, c], n)
            return Col(~hits if negate else hits)
        return member
    arith = _ARITH[op]

    def calc(venv, n):
        a, b = left(venv, n), right(venv, n)
        if op == "+" and is_listy(a) and is_listy(b) and (isinstance(a, Seq) or isinstance(b, Seq)):
            a, b = as_seq(a), as_seq(b)
            return Seq(a.items + b.items, a.masks + b.masks)
        if (isinstance(a, Col) or isinstance(b, Col)) and arith_ok(op, a, b):
            return Col(np.asarray(numeric_arith(op, a, b)))
        return elementwise(lambda x, y: None if x is None or y is None else arith(x, y), [a, b], n)
    return calc


def _contains_in_each(items, containers: np.ndarray) -> np.ndarray:
    """`x in c` for every container c of a column and its item x, as the reference's _contains."""
    cs = containers.tolist()
    kinds = set(map(type, cs))
    if len(kinds) == 1 and kinds <= {dict, list}:    # one kind of container: membership in C
        return np.fromiter(map(kinds.pop().__contains__, cs, items), dtype=bool, count=len(cs))
    return np.fromiter(map(_contains, cs, items), dtype=bool, count=len(cs))


def _equal_each(a, b, n: int, negate: bool):
    """`a == b` (or !=) node by node for values numpy cannot compare: Python's equality, each
    distinct value of a kept column compared once."""
    same = ne if negate else eq
    if isinstance(a, Col) and not isinstance(b, VARYING):
        encoded = codes_of(a)
        if encoded is not None:
            return Col(np.fromiter(map(same, encoded[1], repeat(b)), dtype=bool, count=len(encoded[1]))[encoded[0]])
        return Col(np.fromiter(map(same, a.a.tolist(), repeat(b)), dtype=bool, count=n))
    if isinstance(b, Col) and not isinstance(a, VARYING):
        return Col(np.fromiter(map(same, repeat(a), b.a.tolist()), dtype=bool, count=n))
    if isinstance(a, Col) and isinstance(b, Col):
        return Col(np.fromiter(map(same, a.a.tolist(), b.a.tolist()), dtype=bool, count=n))
    return elementwise(same, [a, b], n)


def _not(ir: P.Not, sub):
    operand = sub(ir.operand)

    def run(venv, n):
        t = truth(operand(venv, n), n)
        return Col(~t) if isinstance(t, np.ndarray) else not t
    return run


def _neg(ir: P.Neg, sub):
    operand = sub(ir.operand)

    def run(venv, n):
        v = operand(venv, n)
        if isinstance(v, Col) and num_kind(v) in ("int", "float"):
            return Col(-v.a)    # int columns hold less than 2^62 (values.INT_LIMIT): no wrap
        return elementwise(negate, [v], n)
    return run


def _cond(ir: P.Cond, sub):
    cond, then, else_ = sub(ir.cond), sub(ir.then), sub(ir.else_)
    then_reads, else_reads = P.free_vars(ir.then), P.free_vars(ir.else_)
    # Branches of arithmetic on numbers: both computed over the batch and picked from, when
    # neither fails anywhere (cheaper than a sub-batch each, and the values are the same).
    arithmetic = is_arithmetic(ir.then) and is_arithmetic(ir.else_)

    def run(venv, n):
        c = truth(cond(venv, n), n)
        if not isinstance(c, np.ndarray):
            return then(venv, n) if c else else_(venv, n)
        if arithmetic:
            picked = _picked(c, then, else_, venv, n)
            if picked is not None:
                return picked
        yes, no = where_true(c), where_true(~c)
        parts = []
        if len(yes):
            parts.append((yes, then(restrict(venv, yes, then_reads), len(yes)) if len(yes) < n else then(venv, n)))
        if len(no):
            parts.append((no, else_(restrict(venv, no, else_reads), len(no)) if len(no) < n else else_(venv, n)))
        return merge(parts, n)
    return run


def _picked(c: np.ndarray, then: VFn, else_: VFn, venv: dict, n: int) -> "Col | None":
    """Where c holds then's value, else else_'s, both computed over the batch; None when either
    fails somewhere or their numbers are not of one kind (the branches are then taken apart)."""
    try:
        a, b = then(dict(venv), n), else_(dict(venv), n)
    except POLICY_ERRORS:
        return None
    kind = num_kind(a)
    if kind not in ("int", "float") or num_kind(b) != kind:
        return None
    return Col(np.where(c, array_of(a), array_of(b)))


def _list(ir: P.MakeList, sub):
    items = [sub(i) for i in ir.items]

    def run(venv, n):
        values = [f(venv, n) for f in items]
        if not any(isinstance(v, VARYING) for v in values):
            return values
        return Seq(values, [True] * len(values))
    return run


def _map(ir: P.MakeMap, sub):
    keys, values = ir.keys, [sub(v) for v in ir.values]

    def run(venv, n):
        fields = {k: f(venv, n) for k, f in zip(keys, values)}
        return Rec(fields) if any(isinstance(v, VARYING) for v in fields.values()) else fields
    return run


def _fold(ir: P.Fold, sub):
    acc, var = ir.acc, ir.var
    init, source, body = sub(ir.init), sub(ir.source), sub(ir.body)
    ref = compile_ir(ir)
    inner = tuple(sorted(P.free_vars(ir)))

    def run(venv, n):
        seq = source(venv, n)
        if isinstance(seq, VARYING):
            return node_by_node(ref, venv, [v for v in inner if isinstance(venv.get(v), VARYING)], n)
        value = init(venv, n)
        seq = seq or ()
        charge(len(seq) * n)    # as the reference, which folds the list on each node
        for x in seq:
            venv[acc], venv[var] = value, x
            value = body(venv, n)
        return value
    return run


def _call(ir: P.CallBuiltin, sub):
    b = bi.REGISTRY[ir.name]
    args = [sub(a) for a in ir.args]
    form = getattr(builtin_forms, b.vector) if b.vector is not None else None
    impl, needs_state = b.impl, b.needs_state

    def run(venv, n):
        values = [a(venv, n) for a in args]
        if form is not None:
            out = form(venv, values, n)
            if out is not None:
                return out
        if needs_state:
            state = venv.get("$state")
            return elementwise(lambda *xs: impl(state, *xs), values, n)
        return elementwise(impl, values, n)
    return run


def _bind(ir: P.Bind, sub):
    names, values, body = ir.names, [sub(v) for v in ir.values], sub(ir.body)

    def run(venv, n):
        for name, v in zip(names, values):
            venv[name] = v(venv, n)
        return body(venv, n)
    return run


def _format(ir: P.Format, sub):
    parts = [p if isinstance(p, str) else sub(p) for p in ir.parts]

    def run(venv, n):
        texts = []
        for p in parts:
            v = p if isinstance(p, str) else p(venv, n)
            texts.append(map(_text, values_of(v, n)) if isinstance(v, VARYING) else repeat(bi.to_string(v), n))
        return col_of(list(map("".join, zip(*texts))))
    return run


def _text(x) -> str:
    return x if type(x) is str else bi.to_string(x)


# (Var and Const are their own vector forms: see vcompile.)
FORMS = {
    P.GetField: _field, P.GetIndex: _index, P.Op: _op, P.Not: _not, P.Neg: _neg,
    P.Cond: _cond, P.MakeList: _list, P.MakeMap: _map, P.Comp: comprehension_form, P.Fold: _fold,
    P.CallBuiltin: _call, P.Bind: _bind, P.Format: _format,
}

"""The checker and compiler of the DRA CEL environment (policylang/dra/cel.py): the parse tree of
a selector, type-checked as cel-go checks it, becomes a tree of Python closures (Nodes), with
its static cost, its worst-case estimate and cel-go's nesting limits. This module holds the
compiler's walk and the expressions (logic, operators, member access, literals); calls and
macros are in cel_calls.py, Nodes and scopes in cel_nodes.py, positions in cel_tree.py,
literal parsing in cel_literals.py. Package-internal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policylang.api.quantity import Quantity
from policylang.dra.cel_values import (AbortError, ANY, BOOL, BYTES, DEVICE,
    DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH, DEVICE_FIELDS, DOUBLE, DYN, EvalError, INT,
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE, MAX_NESTING, NULL, NUMERIC, STRING, Semver, T, UINT, Uint,
    _DefaultMap, _DeviceValue, _EMPTY, _MISSING, _UNSIZED, _compare_cost, _find, _is_number, _lookup,
    _size_cost, assignable, compare, equal, is_dyn, join, list_of, map_of)
from policylang.dra.cel_library import _fdiv, _go_div, _go_mod, _int_result, _to_string, _uint_result
from policylang.dra.cel_calls import _Calls, _MACROS
from policylang.dra.cel_literals import _KEYWORD_LITERALS, _literal
from policylang.dra.cel_nodes import Node, _Scope
from policylang.dra.cel_tree import _CheckError, _UNCOUNTED, _WRAPPERS, _is_ident, _unwrap_to


# ---------------------------------------------------------------------------------------------
# The compiler: the celpy parse tree → typed Nodes.


class _Compiler(_Calls):
    def __init__(self, fields: "frozenset[str] | dict" = DEVICE_FIELDS) -> None:
        self.fields = fields   # the device fields this environment declares
        self.deepest = 0       # the deepest nesting compiled: evaluation recurses as deep
        self.nodes = 0     # nodes compiled so far: a comprehension body's static cost
        self.extra = 0     # the worst-case cost of comprehensions' iterations beyond one

    def fail(self, message: str, where: Any):
        raise _CheckError(message, where)

    def compile(self, tree: Any, scope: _Scope, depth: tuple[int, int] = (0, 0)) -> Node:
        # Nesting, bounded as cel-go's parser bounds it (measured against it): at most 250
        # nested expressions (parentheses, arguments, elements) and 250 operators or calls
        # inside one another; && and || chains are flattened (cel-go balances them), and `!`
        # and unary `-` are not counted.
        exprs, ops = depth
        if tree.data == "expr":
            exprs += 1
        while tree.data in _WRAPPERS and len(tree.children) == 1:
            tree = tree.children[0]          # the grammar's precedence levels, not nodes
        rule = tree.data
        if rule not in _UNCOUNTED:
            ops += 1
        if exprs > MAX_NESTING:
            self.fail(f"expression recursion limit exceeded: {MAX_NESTING}", None)
        if ops > MAX_NESTING:
            self.fail("max recursion depth exceeded", None)
        depth = (exprs, ops)
        self.deepest = max(self.deepest, exprs + ops)
        self.nodes += 1
        method = getattr(self, "c_" + rule)
        return method(tree, scope, depth)

    # -- logic
    def c_expr(self, tree, scope, d) -> Node:
        cond, yes, no = (self.compile(c, scope, d) for c in tree.children)
        rt = join(yes.type, no.type)
        if rt is None or not assignable(BOOL, cond.type):
            self.fail(f"found no matching overload for '_?_:_' applied to '({cond.type}, {yes.type}, {no.type})'", tree)
        cf, yf, nf = cond.fn, yes.fn, no.fn

        def ternary(r):
            c = cf(r)
            if c is True:
                return yf(r)
            if c is False:
                return nf(r)
            raise EvalError("no such overload")
        return Node(rt, ternary)

    def _logic(self, tree, scope, d, absorbing: bool) -> Node:
        # A chain `a || b || c` is one n-ary node (left-recursive in the grammar): compiled and
        # run without recursion, with CEL's commutative rule that an error in one term is
        # absorbed when another term decides the result.
        rule, terms = tree.data, []
        while tree.data == rule and len(tree.children) == 2:
            terms.append(tree.children[1])
            tree = tree.children[0]
        terms.append(tree)
        terms.reverse()
        nodes = [self.compile(t, scope, d) for t in terms]
        for node, term in zip(nodes, terms):
            if not assignable(BOOL, node.type):
                self.fail(f"expected type 'bool' but found '{node.type}'", term)
        fns = [n.fn for n in nodes]

        def logic(r):
            error = None
            for f in fns:
                try:
                    v = f(r)
                except AbortError:
                    raise
                except EvalError as err:
                    error = error or err
                    continue
                if v is absorbing:
                    return absorbing
                if not isinstance(v, bool):
                    error = error or EvalError("no such overload")
            if error is not None:
                raise error
            return not absorbing
        return Node(BOOL, logic)

    def c_conditionalor(self, tree, scope, d) -> Node:
        return self._logic(tree, scope, d, True)

    def c_conditionaland(self, tree, scope, d) -> Node:
        return self._logic(tree, scope, d, False)

    # -- operators
    def c_relation(self, tree, scope, d) -> Node:
        op_tree, right_tree = tree.children
        op = op_tree.data
        left = self.compile(op_tree.children[0], scope, d)
        right = self.compile(right_tree, scope, d)
        lt, rt = left.type, right.type
        lf, rf = left.fn, right.fn
        if op == "relation_in":
            name = "@in"
            if not is_dyn(rt) and rt.name not in ("list", "map") or (
                    rt.name in ("list", "map") and not assignable(rt.params[0], lt)):
                self.fail(f"found no matching overload for '{name}' applied to '({lt}, {rt})'", tree)

            # cel-go turns `x in [literal scalars]` into a hash-set lookup, where a semantic
            # version (a Go struct holding slices) cannot be hashed: upstream's error, kept.
            hashed = right.scalars

            def contains(r):
                item, container = lf(r), rf(r)
                if hashed and isinstance(item, Semver):
                    raise AbortError("internal error: runtime error: hash of unhashable type cel.Semver")
                if isinstance(container, tuple):
                    r.charge(len(container))
                    return any(equal(x, item) for x in container)   # as list.Contains: element.Equal(item)
                if isinstance(container, Mapping):
                    return _find(container, item) is not _MISSING
                raise EvalError("no such overload")
            return Node(BOOL, contains)
        symbol = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
                  "relation_eq": "==", "relation_ne": "!="}[op]
        name = f"_{symbol}_"
        if symbol in ("==", "!="):
            if join(lt, rt) is None:
                self.fail(f"found no matching overload for '{name}' applied to '({lt}, {rt})'", tree)
            negate = symbol == "!="

            def eq(r):
                a, b = lf(r), rf(r)
                if type(a) not in _UNSIZED and type(b) not in _UNSIZED:
                    r.charge(_compare_cost(a, b))
                if negate:
                    try:
                        return not equal(a, b)
                    except EvalError:
                        return True
                return equal(a, b)
            return Node(BOOL, eq)
        orderable = (BOOL, STRING, BYTES, INT, UINT, DOUBLE, NULL)
        ok = (is_dyn(lt) or lt in orderable) and (is_dyn(rt) or rt in orderable) and (
            is_dyn(lt) or is_dyn(rt) or lt == rt or lt in NUMERIC and rt in NUMERIC)
        if not ok:
            self.fail(f"found no matching overload for '{name}' applied to '({lt}, {rt})'", tree)
        test = {"<": lambda c: c == -1, "<=": lambda c: c in (-1, 0), ">": lambda c: c == 1,
                ">=": lambda c: c in (0, 1)}[symbol]

        def order(r):
            a, b = lf(r), rf(r)
            if type(a) not in _UNSIZED and type(b) not in _UNSIZED:
                r.charge(_compare_cost(a, b))
            return test(compare(a, b, name))
        return Node(BOOL, order)

    def c_addition(self, tree, scope, d) -> Node:
        return self._arith(tree, scope, d, {"addition_add": "+", "addition_sub": "-"})

    def c_multiplication(self, tree, scope, d) -> Node:
        return self._arith(tree, scope, d, {"multiplication_mul": "*", "multiplication_div": "/",
                                            "multiplication_mod": "%"})

    def _arith(self, tree, scope, d, symbols) -> Node:
        op_tree, right_tree = tree.children
        symbol = symbols[op_tree.data]
        left = self.compile(op_tree.children[0], scope, d)
        right = self.compile(right_tree, scope, d)
        lt, rt = left.type, right.type
        allowed = [INT, UINT, DOUBLE] + ([STRING, BYTES, T("list")] if symbol == "+" else [])
        if symbol == "%":
            allowed = [INT, UINT]
        static = join(lt, rt)
        if static is not None and is_dyn(static):
            static = lt if not is_dyn(lt) else rt if not is_dyn(rt) else DYN
        if symbol in "+-" and NULL in (lt, rt) and all(t == NULL or is_dyn(t) for t in (lt, rt)):
            static = DYN     # null is assignable to timestamp and duration, which + and - take
        if static is None or not is_dyn(static) and not any(static.name == a.name for a in allowed):
            self.fail(f"found no matching overload for '_{symbol}_' applied to '({lt}, {rt})'", tree)
        lf, rf = left.fn, right.fn
        impl = _ARITH[symbol]
        return Node(static, lambda r: impl(r, lf(r), rf(r)))

    def c_unary(self, tree, scope, d) -> Node:
        op, operand_tree = tree.children
        # cel-go's parser drops an even run of `!` or `-` (`!!x` is `x`, unchecked as bool).
        count, inner = 1, operand_tree
        while True:
            inner = _unwrap_to(inner, "unary")
            if inner is None or len(inner.children) != 2 or inner.children[0].data != op.data:
                break
            count, inner = count + 1, inner.children[1]
        if count % 2 == 0:
            self.nodes -= 1
            return self.compile(inner, scope, d)
        if count > 1:
            operand_tree = inner
        operand = self.compile(operand_tree, scope, d)
        f = operand.fn
        if op.data == "unary_not":
            if not assignable(BOOL, operand.type):
                self.fail(f"found no matching overload for '!_' applied to '({operand.type})'", tree)

            def negate(r):
                v = f(r)
                if not isinstance(v, bool):
                    raise EvalError("no such overload")
                return not v
            return Node(BOOL, negate)
        if operand.type not in (INT, DOUBLE, DYN, ANY):
            self.fail(f"found no matching overload for '-_' applied to '({operand.type})'", tree)
        result = DYN if is_dyn(operand.type) else operand.type

        def minus(r):
            v = f(r)
            if isinstance(v, bool) or isinstance(v, Uint) or not _is_number(v):
                raise EvalError("no such overload")
            return -v if isinstance(v, float) else _int_result(-v)
        if operand.const is not _MISSING:
            value = minus(None)
            return Node(result, lambda r: value, value)
        return Node(result, minus)

    # -- member access and calls
    def c_member_dot(self, tree, scope, d) -> Node:
        target_tree, name_token = tree.children
        field = str(name_token)
        target = self.compile(target_tree, scope, d)
        return self.select(target, field, tree)

    def select(self, target: Node, field: str, where) -> Node:
        t, f = target.type, target.fn
        if t == DEVICE:
            if field not in self.fields:
                self.fail(f"undefined field '{field}'", where)
            size = MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE if field in ("attributes", "capacity") else None
            return Node(DEVICE_FIELDS[field], lambda r: getattr(f(r), field), size=size)
        if t.name == "map":
            if not assignable(t.params[0], STRING):
                self.fail(f"type '{t}' does not support field selection", where)
            result = t.params[1]
        elif is_dyn(t):
            result = DYN
        else:
            self.fail(f"type '{t}' does not support field selection", where)

        def get(r):
            m = f(r)
            if type(m) is dict or type(m) is _DefaultMap:      # the common case, first
                v = m.get(field, _MISSING)
                if v is not _MISSING:
                    return v
                if type(m) is _DefaultMap:
                    return _EMPTY
                raise EvalError(f"no such key: {field}")
            if isinstance(m, _DeviceValue):
                if field in DEVICE_FIELDS:
                    return getattr(m, field)
            elif isinstance(m, Mapping):
                v = _lookup(m, field)
                if v is not _MISSING:
                    return v
            else:
                raise EvalError("no such overload")
            raise EvalError(f"no such key: {field}")
        return Node(result, get, size=_element_size(target, result))

    def c_member_index(self, tree, scope, d) -> Node:
        target = self.compile(tree.children[0], scope, d)
        index = self.compile(tree.children[1], scope, d)
        t, it = target.type, index.type
        if t.name == "map":
            if not assignable(t.params[0], it):
                self.fail(f"found no matching overload for '_[_]' applied to '({t}, {it})'", tree)
            result = t.params[1]
        elif t.name == "list":
            if it not in (INT, UINT, DOUBLE, DYN, ANY):
                self.fail(f"found no matching overload for '_[_]' applied to '({t}, {it})'", tree)
            result = t.params[0]
        elif is_dyn(t):
            result = DYN
        else:
            self.fail(f"found no matching overload for '_[_]' applied to '({t}, {it})'", tree)
        tf, xf = target.fn, index.fn

        def get(r):
            c, k = tf(r), xf(r)
            if type(k) is str and (type(c) is dict or type(c) is _DefaultMap):
                v = c.get(k, _MISSING)
                if v is not _MISSING:
                    return v
                if type(c) is _DefaultMap:
                    return _EMPTY
                raise EvalError(f"no such key: {k}")
            if isinstance(c, Mapping):
                v = _lookup(c, k)
                if v is _MISSING:
                    raise EvalError(f"no such key: {_to_string(k) if not isinstance(k, str) else k}")
                return v
            if isinstance(c, tuple):
                if isinstance(k, float) and k.is_integer():
                    k = int(k)
                if isinstance(k, bool) or not isinstance(k, int):
                    raise EvalError("unsupported index type")
                if not 0 <= k < len(c):
                    raise EvalError(f"index '{k}' out of range in list size '{len(c)}'")
                return c[k]
            raise EvalError("no such overload")
        return Node(result, get, size=_element_size(target, result))

    def c_member_dot_arg(self, tree, scope, d) -> Node:
        target_tree, name_token = tree.children[0], tree.children[1]
        args_tree = tree.children[2] if len(tree.children) > 2 else None
        name = str(name_token)
        arg_trees = list(args_tree.children) if args_tree is not None else []
        if _is_ident(target_tree, "cel") and "cel" not in scope.names and name == "bind":
            return self.bind(arg_trees, scope, d, tree)
        if name in _MACROS and (len(arg_trees) == 2 or name == "map" and len(arg_trees) == 3):
            return self.macro(name, target_tree, arg_trees, scope, d, tree)
        target = self.compile(target_tree, scope, d)
        args = [self.compile(a, scope, d) for a in arg_trees]
        return self.call(name, [target] + args, True, tree)

    def c_ident(self, tree, scope, d) -> Node:
        token = tree.children[0]
        name = str(token)
        if name in _KEYWORD_LITERALS:       # the lexer reads `true`, `false` and `null` as names
            value, t = _KEYWORD_LITERALS[name]
            return Node(t, lambda r: value, value)
        if name not in scope.names:
            self.fail(f"undeclared reference to '{name}' (in container '')", token)
        t = scope.names[name]
        if name in scope.lazy:
            return Node(t, lambda r: r.vars[name].get(r))
        return Node(t, lambda r: r.vars[name])

    def c_dot_ident(self, tree, scope, d) -> Node:
        token = tree.children[0]
        name = str(token)
        if name != "device":
            self.fail(f"undeclared reference to '{name}' (in container '')", token)
        return Node(DEVICE, lambda r: r.vars["device"])

    def c_ident_arg(self, tree, scope, d) -> Node:
        token = tree.children[0]
        name = str(token)
        arg_trees = list(tree.children[1].children) if len(tree.children) > 1 else []
        if name == "has":
            return self.has(arg_trees, scope, d, tree)
        args = [self.compile(a, scope, d) for a in arg_trees]
        return self.call(name, args, False, tree)

    def c_dot_ident_arg(self, tree, scope, d) -> Node:
        return self.c_ident_arg(tree, scope, d)

    def c_paren_expr(self, tree, scope, d) -> Node:
        self.nodes -= 1
        return self.compile(tree.children[0], scope, d)

    def c_list_lit(self, tree, scope, d) -> Node:
        trees = tree.children[0].children if tree.children else []
        items = [self.compile(c, scope, d) for c in trees]
        elem = None
        for item, item_tree in zip(items, trees):
            # HomogeneousAggregateLiterals: every element of the first one's type, dyn included
            if elem is not None and item.type != elem:
                self.fail(f"expected type '{elem}' but found '{item.type}'", item_tree)
            elem = item.type
        elem = elem or DYN
        fns = [i.fn for i in items]
        n = len(fns)

        def make(r):
            r.charge(10 + _size_cost(n))
            return tuple(f(r) for f in fns)
        scalars = bool(items) and all(isinstance(i.const, (str, int, float)) for i in items)
        return Node(list_of(elem), make, size=n, scalars=scalars)

    def c_map_lit(self, tree, scope, d) -> Node:
        parts = tree.children[0].children if tree.children else []
        entries = [(self.compile(parts[i], scope, d), self.compile(parts[i + 1], scope, d))
                   for i in range(0, len(parts), 2)]
        kt = vt = None
        for k, v in entries:
            if k.type not in (STRING, INT, UINT, BOOL, DYN, ANY):
                self.fail(f"unsupported map key type: {k.type}", tree)
            if kt is not None and k.type != kt:
                self.fail(f"expected type '{kt}' but found '{k.type}'", tree)
            if vt is not None and v.type != vt:
                self.fail(f"expected type '{vt}' but found '{v.type}'", tree)
            kt, vt = k.type, v.type
        fns = [(k.fn, v.fn) for k, v in entries]

        def make(r):
            r.charge(30 + _size_cost(len(fns)))
            out: dict = {}
            for kf, vf in fns:
                key = kf(r)
                if isinstance(key, (float, tuple)) or isinstance(key, (Mapping, Quantity, Semver)) or key is None:
                    raise EvalError("unsupported key type")
                if _find(out, key) is not _MISSING:
                    raise EvalError(f"Failed with repeated key: {_to_string(key)}")
                out[key] = vf(r)
            return out
        return Node(map_of(kt or DYN, vt or DYN), make, size=len(fns))

    def c_member_object(self, tree, scope, d) -> Node:
        self.fail("message construction is not supported in device selectors", tree)

    def c_literal(self, tree, scope, d) -> Node:
        token = tree.children[0]
        value, t = _literal(token, self)
        return Node(t, lambda r: value, value, size=len(value) if isinstance(value, (str, bytes)) else None)


def _element_size(container: Node, element: T) -> int | None:
    """The most elements (or bytes) a looked-up value can have, for the validation estimate: a
    domain's map holds 32 attributes, an attribute's value 64 bytes (DeviceAttributeMaxValueLength)."""
    if element.name == "map":
        return container.size
    if container.type == map_of(STRING, ANY):
        return DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH
    return None


def _add(r, a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        raise EvalError("no such overload")
    if isinstance(a, Uint) and isinstance(b, Uint):
        return _uint_result(a + b)
    if type(a) is int and type(b) is int:
        return _int_result(a + b)
    if isinstance(a, float) and isinstance(b, float):
        return a + b
    if isinstance(a, str) and isinstance(b, str) or isinstance(a, bytes) and isinstance(b, bytes) \
            or isinstance(a, tuple) and isinstance(b, tuple):
        r.charge(_size_cost(len(a) + len(b)))
        return a + b
    raise EvalError("no such overload")


def _numeric(op_int, op_float):
    def apply(r, a, b):
        if isinstance(a, Uint) and isinstance(b, Uint):
            return _uint_result(op_int(a, b))
        if type(a) is int and type(b) is int:
            return _int_result(op_int(a, b))
        if op_float is not None and isinstance(a, float) and isinstance(b, float):
            return op_float(a, b)
        raise EvalError("no such overload")
    return apply


_ARITH = {
    "+": _add,
    "-": _numeric(lambda a, b: a - b, lambda a, b: a - b),
    "*": _numeric(lambda a, b: a * b, lambda a, b: a * b),
    "/": _numeric(_go_div, _fdiv),
    "%": _numeric(_go_mod, None),
}

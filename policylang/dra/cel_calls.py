"""Checking and compiling calls in DRA CEL selectors (policylang/dra/cel_check.py's _Compiler
inherits them): library functions by overload, with literal arguments folded; the has() and
cel.bind macros; the comprehension macros (all, exists, exists_one, map, filter) and their
runtime folds, with their costs. Package-internal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policylang.dra.cel_values import (AbortError, BOOL, CEL_SELECTOR_EXPRESSION_MAX_LENGTH, DEVICE,
    DEVICE_FIELDS, DYN, EvalError, _DeviceValue, _MISSING, _lookup, assignable, is_dyn, kind, list_of)
from policylang.dra.cel_library import GLOBALS, MEMBERS, UNSUPPORTED, _matches_runtime, _regex
from policylang.dra.cel_nodes import Node, _Lazy
from policylang.dra.cel_tree import _is_ident, _unwrap


class _Calls:
    """The _Compiler's calls and macros (a mixin: it uses the compiler's compile(), fail(),
    fields, nodes and extra)."""

    def call(self, name: str, args: list[Node], member: bool, where) -> Node:
        table = MEMBERS if member else GLOBALS
        overloads = table.get(name)
        if overloads is None:
            if name in UNSUPPORTED or name in (MEMBERS if not member else GLOBALS):
                self.fail(f"function '{name}' of the Kubernetes CEL environment is not supported "
                          f"by policylang yet", where)
            self.fail(f"undeclared reference to '{name}' (in container '')", where)
        types = [a.type for a in args]
        candidates = [o for o in overloads if len(o.params) == len(types)
                      and all(assignable(p, a) for p, a in zip(o.params, types))]
        if not candidates:
            shown = (f"{types[0]}.({', '.join(map(str, types[1:]))})" if member
                     else f"({', '.join(map(str, types))})")
            self.fail(f"found no matching overload for '{name}' applied to '{shown}'", where)
        results = {o.result for o in candidates}
        result = results.pop() if len(results) == 1 else DYN
        if name in ("matches", "find", "findAll") and args[1].const is not _MISSING:
            try:
                _regex(args[1].const)
            except EvalError as err:
                self.fail(str(err), where)
        fns = [a.fn for a in args]
        if args and all(a.const is not _MISSING for a in args) and len(candidates) == 1 and all(
                _matches_runtime(p, a.const) for p, a in zip(candidates[0].params, args)):
            # Every library function is pure: with literal arguments (`quantity("40Gi")`) it is
            # evaluated once, here. One that fails is left to fail at runtime, as upstream does.
            consts = [a.const for a in args]
            try:
                value = candidates[0].impl(*consts)
            except EvalError:
                pass
            else:
                # Charged where the call stands (each iteration of a comprehension around
                # it), as if it ran there: folding saves time, never cost.
                self.nodes += candidates[0].cost(*consts) if candidates[0].cost else 0
                return Node(result, lambda r: value, value)
        if len(candidates) == 1 and all(p == DYN or a == p for p, a in zip(candidates[0].params, types)):
            only = candidates[0]
            impl, cost = only.impl, only.cost

            def direct(r):
                values = [f(r) for f in fns]
                if cost is not None:
                    r.charge(cost(*values))
                return impl(*values)
            return Node(result, direct, size=_result_size(name, args))

        def dispatch(r):
            values = [f(r) for f in fns]
            for o in candidates:
                if all(_matches_runtime(p, v) for p, v in zip(o.params, values)):
                    if o.cost is not None:
                        r.charge(o.cost(*values))
                    return o.impl(*values)
            # CEL's own string functions answer a value of another type with a bare "no such
            # overload"; the extensions' and Kubernetes' dispatch names the call's runtime types.
            if name in _STANDARD and not any(v is None for v in values):
                raise EvalError("no such overload")
            raise EvalError(f"no such overload: {name}({', '.join(kind(v).output() for v in values)})")
        return Node(result, dispatch, size=_result_size(name, args))

    def has(self, arg_trees, scope, d, where) -> Node:
        if len(arg_trees) != 1:
            self.fail("invalid argument to has() macro", where)
        inner = _unwrap(arg_trees[0])
        if inner.data != "member_dot":
            self.fail("invalid argument to has() macro", where)
        target = self.compile(inner.children[0], scope, d)
        field = str(inner.children[1])
        t = target.type
        if t == DEVICE:
            if field not in self.fields:
                self.fail(f"undefined field '{field}'", inner.children[1])
            return Node(BOOL, lambda r: True)
        if t.name != "map" and not is_dyn(t):
            self.fail(f"type '{t}' does not support field selection", inner.children[1])
        f = target.fn

        def present(r):
            m = f(r)
            if isinstance(m, _DeviceValue):
                return field in DEVICE_FIELDS
            if not isinstance(m, Mapping):
                raise EvalError("no such overload")
            return _lookup(m, field) is not _MISSING
        return Node(BOOL, present)

    def bind(self, arg_trees, scope, d, where) -> Node:
        if len(arg_trees) != 3 or not _is_ident(arg_trees[0]):
            self.fail("cel.bind() variable names must be simple identifiers", where)
        name = str(_unwrap(arg_trees[0]).children[0])
        init = self.compile(arg_trees[1], scope, d)
        body = self.compile(arg_trees[2], scope.bind(name, init.type, lazy=True), d)
        inf, bf = init.fn, body.fn

        def bound(r):
            saved = r.vars
            r.vars = {**saved, name: _Lazy(inf, saved)}
            try:
                return bf(r)
            finally:
                r.vars = saved
        return Node(body.type, bound)

    def macro(self, name, target_tree, arg_trees, scope, d, where) -> Node:
        if not _is_ident(arg_trees[0]):
            self.fail("argument must be a simple name", arg_trees[0])
        var = str(_unwrap(arg_trees[0]).children[0])
        target = self.compile(target_tree, scope, d)
        t = target.type
        if t.name == "list":
            elem = t.params[0]
        elif t.name == "map":
            elem = t.params[0]
        elif t == DYN:
            elem = DYN
        else:
            self.fail(f"expression of type '{t}' cannot be range of a comprehension "
                      f"(must be list, map, or dynamic)", target_tree)
        inner = scope.bind(var, elem)
        before, extra_before = self.nodes, self.extra
        steps = [self.compile(a, inner, d) for a in arg_trees[1:]]
        # cel-go expands a macro into a fold whose accumulator steps cost too: per iteration
        # the loop condition and `__result__` (3), for map and filter also the `__result__ +
        # [x]` that builds the list (a list literal's 10); once, the accumulator and result.
        builds = name in ("map", "filter")
        body_cost = self.nodes - before + 1 + (14 if builds else 3)
        self.nodes += 12 if builds else 3
        # The worst case for validation: every element of the largest range the environment
        # allows (a literal's length, a device's 32 attributes), each iteration at its worst.
        elements = target.size if target.size is not None else CEL_SELECTOR_EXPRESSION_MAX_LENGTH
        self.extra = extra_before + elements * (body_cost + self.extra - extra_before)
        for step, step_tree, kind_ in zip(steps, arg_trees[1:], ("filter" if len(steps) == 2 else name,) + ("map",)):
            if kind_ in ("all", "exists", "exists_one", "filter") and not assignable(BOOL, step.type):
                self.fail(f"expected type 'bool' but found '{step.type}'", step_tree)
        tf = target.fn
        fns = [s.fn for s in steps]
        run = _COMPREHENSIONS[name]
        if name == "map":
            result = list_of(steps[-1].type)
        elif name == "filter":
            result = list_of(elem)
        else:
            result = BOOL

        def comprehension(r):
            target = tf(r)
            items = _range(target)
            saved = r.vars
            r.vars = dict(saved)
            try:
                return run(r, items, var, fns, body_cost, isinstance(target, Mapping))
            finally:
                r.vars = saved
        return Node(result, comprehension, size=target.size if result.name == "list" else None)


_STANDARD = frozenset({"matches", "startsWith", "endsWith", "contains", "size"})


def _result_size(name: str, args: list[Node]) -> int | None:
    if name in ("split", "findAll") and args[0].size is not None:
        return args[0].size + 1
    if name in ("lowerAscii", "upperAscii", "trim", "substring") and args[0].size is not None:
        return args[0].size
    return None


def _range(v: Any) -> tuple:
    if isinstance(v, tuple):
        return v
    if isinstance(v, Mapping):
        # Go's map order is random; a sorted order makes every answer reproducible.
        return tuple(sorted(v, key=lambda k: (str(kind(k)), k)))
    raise EvalError("no such overload")


def _quantified(decisive: bool):
    """all() (decisive False) and exists() (decisive True): the first element whose predicate gives
    ``decisive`` ends the loop with it; errors on other elements are raised only when none does, as
    cel-go's macros absorb them."""
    def loop(r, items, var, fns, cost, from_map=False):
        (pred,) = fns
        error = None
        for done, item in enumerate(items, 1):
            r.charge(cost)
            r.vars[var] = item
            try:
                v = pred(r)
            except AbortError:
                raise
            except EvalError as err:
                error = error or err
                continue
            if v is decisive:
                if from_map:
                    # Go visits a map in random order: upstream may meet this element last, so
                    # the rest is charged, keeping the cost at least upstream's in any order.
                    r.charge(cost * (len(items) - done))
                return decisive
            if v is not (not decisive):
                error = error or EvalError("no such overload")
        if error:
            raise error
        return not decisive
    return loop


_all, _exists = _quantified(False), _quantified(True)


def _exists_one(r, items, var, fns, cost, from_map=False):
    (pred,) = fns
    count = 0
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        v = pred(r)
        if not isinstance(v, bool):
            raise EvalError("no such overload")
        count += v
    return count == 1


def _map(r, items, var, fns, cost, from_map=False):
    out = []
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        if len(fns) == 2:
            keep = fns[0](r)
            if not isinstance(keep, bool):
                raise EvalError("no such overload")
            if not keep:
                continue
        out.append(fns[-1](r))
    return tuple(out)


def _filter(r, items, var, fns, cost, from_map=False):
    (pred,) = fns
    out = []
    for item in items:
        r.charge(cost)
        r.vars[var] = item
        keep = pred(r)
        if not isinstance(keep, bool):
            raise EvalError("no such overload")
        if keep:
            out.append(item)
    return tuple(out)


_COMPREHENSIONS = {"all": _all, "exists": _exists, "exists_one": _exists_one, "map": _map, "filter": _filter}
_MACROS = frozenset(_COMPREHENSIONS)

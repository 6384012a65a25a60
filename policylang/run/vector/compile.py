"""vcompile: an IR node to its vector form, ``f(venv, n) -> value``.

An expression whose free variables are all the same for every node runs once, through the
reference interpreter (or, holding a long comprehension, part by part so that the
comprehension runs as a batch); one that reads only nodes is looked up in the node cache;
the rest runs in its vector form, or node by node through the reference interpreter.
"""

from __future__ import annotations

from typing import Callable

from ... import plan as P
from ..interpret import compile_ir
from .analysis import _cheap, _has_long_comprehension, _params_only, _reads, node_local
from .cache import _cache_key
from .forms import FORMS, _var
from .lift import _lifted
from .values import VARYING, VFn, node_by_node


@P.by_identity
def vcompile(ir) -> VFn:
    """The vector form of an expression (one per IR object: inlined defs share theirs)."""
    # A variable or a constant is its value, varying or not: nothing to decide per call.
    if isinstance(ir, P.Var):
        return _var(ir)
    if isinstance(ir, P.Const):
        value = ir.value
        return lambda venv, n: value
    ref = compile_ir(ir)
    names = P.free_vars(ir)
    if _params_only(ir):
        return _once_per_params(ref)
    free = tuple(sorted(names))
    special = FORMS.get(type(ir))
    vec = special(ir, vcompile) if special is not None else None
    # A def applied to variables is its body under other names: the body's entry is enough.
    renaming = isinstance(ir, P.Bind) and all(isinstance(v, P.Var) for v in ir.values)
    local = node_local(ir) if not (renaming or _cheap(ir)) else None
    reads = _reads(ir)
    token = object()     # this expression, in cache keys
    lift = _lifted(ir, vcompile) if isinstance(ir, P.Comp) else None
    # Holding a comprehension over what may be a long list, the expression is evaluated part
    # by part even when nothing varies, so that the comprehension can run as a batch.
    structural = vec is not None and _has_long_comprehension(ir)

    def run(venv: dict, n: int):
        for name in free:
            if isinstance(venv.get(name), VARYING):
                break
        else:   # the same on every node
            if lift is not None:
                return lift(venv, ref)
            return vec(venv, n) if structural else ref(venv)
        cache = venv.get("$cache")
        if local is not None and cache is not None and token not in cache.uncacheable:
            key = _cache_key(token, reads, venv, cache.frozen)
            if key is not None:
                # Over a value that depends on the pods on a node, a value does too.
                dynamic = local == "dynamic" or any(isinstance(k, int) and k < 0 for k in key)
                return cache.lookup(key, dynamic, venv, n, vec or by_node, by_node, names)
        return vec(venv, n) if vec is not None else by_node(venv, n)

    def by_node(venv: dict, n: int):
        return node_by_node(ref, venv, [name for name in free if isinstance(venv.get(name), VARYING)], n)
    return run


def _once_per_params(ref: Callable) -> VFn:
    """ref's value, computed once per params object (an error is raised again each time)."""
    memo: list = [_UNSET, None]    # params, value

    def run(venv: dict, n: int):
        params = venv.get("params")
        if memo[0] is not params:
            memo[1] = ref(venv)
            memo[0] = params
        return memo[1]
    return run


_UNSET = object()

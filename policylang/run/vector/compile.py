"""vcompile: an IR node to its vector form, ``f(venv, n) -> value``.

The passes (``passes.py``) have decided what an expression is; here its form is built from
those facts as a core wrapped in decorators, as cel-go's interpreter wraps its planned nodes:

- the core: the node's vector form (``forms.py``), or the reference interpreter node by node;
- ``cached``: the core's value looked up in the node cache, by what the expression reads;
- ``per_batch``: when nothing the expression reads varies by node, its value computed once:
  by the reference interpreter, part by part (``batched``) or, for a comprehension, as a batch
  of its members (``lift.py``); else the (cached) core.
"""

from __future__ import annotations

from typing import Callable

from ... import plan as P
from ..interpret import compile_ir
from .cache import cache_key
from .forms import FORMS, var_form
from .lift import lifted_form
from .passes import Facts, annotate
from .values import VARYING, VFn, node_by_node


@P.by_identity
def vcompile(ir) -> VFn:
    """The vector form of an expression (one per IR object: inlined defs share theirs)."""
    # A variable or a constant is its value, varying or not: nothing to decide per call.
    if isinstance(ir, P.Var):
        return var_form(ir)
    if isinstance(ir, P.Const):
        value = ir.value
        return lambda venv, n: value
    facts = annotate(ir)
    ref = compile_ir(ir)
    if facts.params_only:
        return _once_per_params(ref)
    special = FORMS.get(type(ir))
    vec = special(ir, vcompile) if special is not None else None
    by_node = _node_by_node(ref, facts.free)
    core = vec if vec is not None else by_node
    if facts.cached:
        core = cached(core, by_node, facts)
    if facts.lifted:
        return per_batch(facts.free, lifted_form(ir, vcompile, ref), core)
    if facts.batched and vec is not None:
        return per_batch(facts.free, vec, core)
    return per_batch_by_reference(facts.free, ref, core)


def vcompile_lazily(ir) -> VFn:
    """vcompile(ir) on the form's first call: a plan's expressions are compiled as the pods
    evaluated reach them (a pod without volumes never runs the volume plugins' node steps), so
    `policylang eval` does not pay ~1 s up front for the whole profile. A failure to compile is
    an internal error, never one of the policy errors the batch hands to the reference."""
    form = None

    def run(venv: dict, n: int):
        nonlocal form
        if form is None:
            try:
                form = vcompile(ir)
            except Exception as err:  # noqa: BLE001 - re-raised as what it is: a bug
                raise RuntimeError(f"internal error: the vector form of {type(ir).__name__}: {err!r}") from err
        return form(venv, n)
    return run


def per_batch(free: tuple, uniform: VFn, varying: VFn) -> VFn:
    """``uniform`` when none of the free variables varies by node, else ``varying``."""
    def run(venv: dict, n: int):
        for name in free:
            if isinstance(venv.get(name), VARYING):
                return varying(venv, n)
        return uniform(venv, n)
    return run


def per_batch_by_reference(free: tuple, ref: Callable, varying: VFn) -> VFn:
    """per_batch with the reference interpreter's closure as the uniform form (one call less)."""
    def run(venv: dict, n: int):
        for name in free:
            if isinstance(venv.get(name), VARYING):
                return varying(venv, n)
        return ref(venv)
    return run


def cached(form: VFn, by_node: VFn, facts: Facts) -> VFn:
    """form's value kept in the batch's node cache, keyed by what the expression reads (none
    kept where the batch has no cache, or the key would be too large)."""
    token = object()     # this expression, in cache keys
    reads, free = facts.reads, frozenset(facts.free)
    static = facts.locality == "static"

    def run(venv: dict, n: int):
        cache = venv.get("$cache")
        if cache is not None and token not in cache.uncacheable:
            key = cache_key(token, reads, venv, cache.frozen)
            if key is not None:
                # Over a value that depends on the pods on a node, a value does too.
                dynamic = not static or any(isinstance(k, int) and k < 0 for k in key)
                return cache.lookup(key, dynamic, venv, n, form, by_node, free)
        return form(venv, n)
    return run


def _node_by_node(ref: Callable, free: tuple) -> VFn:
    def by_node(venv: dict, n: int):
        return node_by_node(ref, venv, [name for name in free if isinstance(venv.get(name), VARYING)], n)
    return by_node


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

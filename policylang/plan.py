"""The evaluation plan: what `compile` produces and every executor runs.

A Plan is pure data (frozen attrs) and prints readably (``policylang plan``). Each
statement is placed in the stage its dependencies allow:

- ``pod``: depends only on the pod, the cluster and params: evaluated once per pod
  (kube-scheduler's PreFilter / PreScore);
- ``feasible``: also reads the list of feasible nodes: once per pod, after filtering;
- ``node``: evaluated for every node (Filter / Score);
- normalisation sees every scored node at once.
"""

from __future__ import annotations

from typing import Union

import attrs

from .frozen import frozen
from .source import NO_SPAN, Span
from .target import DEFAULT as DEFAULT_TARGET, Target


def _origin():
    return attrs.field(default=NO_SPAN, eq=False, repr=False, kw_only=True)


# ---- expressions: names resolved, defs inlined, aggregates unified ------------------

class _Memos:
    """A slot for what ``by_identity`` functions answered about this node, outside its
    attrs fields (so not in equality, hashing, repr or evolve)."""
    __slots__ = ("_memos",)


@frozen
class Const(_Memos):
    value: object


@frozen
class Var(_Memos):
    """A scope (pod, node, cluster, params, feasible, score, scores) or a local (unique name)."""
    name: str


@frozen
class GetField(_Memos):
    target: "IR"
    name: str  # the API field name


@frozen
class GetIndex(_Memos):
    target: "IR"
    key: "IR"


@frozen
class Op(_Memos):
    op: str
    left: "IR"
    right: "IR"


@frozen
class Not(_Memos):
    operand: "IR"


@frozen
class Neg(_Memos):
    operand: "IR"


@frozen
class Cond(_Memos):
    cond: "IR"
    then: "IR"
    else_: "IR"


@frozen
class MakeList(_Memos):
    items: tuple


@frozen
class MakeMap(_Memos):
    keys: tuple
    values: tuple


@frozen
class Format(_Memos):
    """String interpolation: parts are str or IR."""
    parts: tuple


@frozen
class Comp(_Memos):
    """kind ∈ list any all count sum min max first group, over ``source`` binding ``var``."""
    kind: str
    var: str
    source: "IR"
    element: "IR | None" = None
    where: "IR | None" = None
    by: "IR | None" = None


@frozen
class Fold(_Memos):
    acc: str
    init: "IR"
    var: str
    source: "IR"
    body: "IR"


@frozen
class CallBuiltin(_Memos):
    name: str
    args: tuple


@frozen
class Bind(_Memos):
    """An inlined def: its parameters (renamed to be unique) bound to the arguments."""
    names: tuple
    values: tuple
    body: "IR"
    def_name: str = ""


IR = Union[Const, Var, GetField, GetIndex, Op, Not, Neg, Cond, MakeList, MakeMap, Format, Comp, Fold, CallBuiltin, Bind]
IR_TYPES = IR.__args__


# ---- walking expressions -----------------------------------------------------------------

def by_identity(fn):
    """fn memoised per IR object (and per value of any further, hashable arguments): each is
    asked about once per subtree that holds it. The answers are kept on the object itself
    (``_Memos``), so they live exactly as long as it: a plan compiled and dropped takes its
    answers with it, however many plans a process compiles."""
    def run(ir, *more):
        key = (run, *more) if more else run
        try:
            memo = ir._memos
        except AttributeError:      # not yet asked about anything (or not a plan node)
            if not isinstance(ir, _Memos):
                return fn(ir, *more)
            memo = {}
            object.__setattr__(ir, "_memos", memo)
        try:
            return memo[key]
        except KeyError:
            out = memo[key] = fn(ir, *more)
            return out
    return run


def parts(ir) -> list:
    """Every sub-expression directly under ir, binders' included."""
    out = []
    for f in attrs.fields(type(ir)):
        v = getattr(ir, f.name)
        if isinstance(v, IR_TYPES):
            out.append(v)
        elif isinstance(v, tuple):
            out += [x for x in v if isinstance(x, IR_TYPES)]
    return out


@by_identity
def free_vars(ir) -> frozenset:
    """The variables an expression reads that it does not bind itself."""
    if isinstance(ir, Var):
        return frozenset((ir.name,))
    if isinstance(ir, Comp):
        inner = frozenset().union(*(free_vars(x) for x in (ir.element, ir.where, ir.by) if x is not None))
        return free_vars(ir.source) | (inner - {ir.var})
    if isinstance(ir, Fold):
        return free_vars(ir.init) | free_vars(ir.source) | (free_vars(ir.body) - {ir.acc, ir.var})
    if isinstance(ir, Bind):
        return frozenset().union(*map(free_vars, ir.values)) | (free_vars(ir.body) - set(ir.names))
    return frozenset().union(*map(free_vars, parts(ir)))


def field_path(ir) -> "tuple[str, ...] | None":
    """("pod", "spec", "nodeName") for ``pod.spec.nodeName``; ("pod",) for ``pod``; None for
    anything but a variable's field chain."""
    if isinstance(ir, Var):
        return (ir.name,)
    if isinstance(ir, GetField):
        inner = field_path(ir.target)
        return None if inner is None else inner + (ir.name,)
    return None


@by_identity
def free_paths(ir) -> frozenset:
    """What of its free variables an expression reads, as field paths: only
    ("pod", "spec", "nodeName") when it reads nothing else of pod, ("pod",) when it reads pod
    as a whole. A value computed from the free paths' values alone can be kept by them."""
    path = field_path(ir)
    if path is not None:
        return frozenset((path,))

    def unbound(x, names) -> frozenset:
        return frozenset(p for p in free_paths(x) if p[0] not in names)

    if isinstance(ir, Comp):
        inner = [unbound(x, {ir.var}) for x in (ir.element, ir.where, ir.by) if x is not None]
        return free_paths(ir.source).union(*inner)
    if isinstance(ir, Fold):
        return free_paths(ir.init) | free_paths(ir.source) | unbound(ir.body, {ir.acc, ir.var})
    if isinstance(ir, Bind):
        return frozenset().union(*map(free_paths, ir.values)) | unbound(ir.body, set(ir.names))
    return frozenset().union(*map(free_paths, parts(ir)))


def hoisted(ir, varying: frozenset) -> "tuple[IR, tuple]":
    """ir with each largest sub-expression that reads none of ``varying`` (nor a variable ir
    binds to what varies) replaced by a variable ``$invariant#k``, and those sub-expressions
    as (name, IR): what a loop that changes only ``varying`` can evaluate once, on first use
    (so that an error stays where it was)."""
    found: list = []

    def walk(x, bound: frozenset):
        if not isinstance(x, (Const, Var)) and not free_vars(x) & bound:
            found.append((f"$invariant#{len(found)}", x))
            return Var(found[-1][0])
        if isinstance(x, Comp):
            inner = bound | {x.var}
            return attrs.evolve(x, source=walk(x.source, bound),
                                **{k: walk(getattr(x, k), inner) for k in ("element", "where", "by")
                                   if getattr(x, k) is not None})
        if isinstance(x, Fold):
            return attrs.evolve(x, init=walk(x.init, bound), source=walk(x.source, bound),
                                body=walk(x.body, bound | {x.acc, x.var}))
        if isinstance(x, Bind):     # a parameter varies only if its argument does
            varies = {name for name, v in zip(x.names, x.values) if free_vars(v) & bound}
            return attrs.evolve(x, values=tuple(walk(v, bound) for v in x.values),
                                body=walk(x.body, bound | varies))
        changes = {}
        for f in attrs.fields(type(x)):
            v = getattr(x, f.name)
            if isinstance(v, IR_TYPES):
                changes[f.name] = walk(v, bound)
            elif isinstance(v, tuple):
                changes[f.name] = tuple(walk(p, bound) if isinstance(p, IR_TYPES) else p for p in v)
        return attrs.evolve(x, **changes)

    return walk(ir, frozenset(varying)), tuple(found)


# ---- statements -----------------------------------------------------------------------

@frozen
class LetStep:
    name: str
    expr: IR
    stage: str
    origin: Span = _origin()


@frozen
class SkipStep:
    """The block does not run for this pod when ``cond`` holds (a PreFilter / PreScore Skip)."""
    cond: IR
    origin: Span = _origin()


@frozen
class RejectStep:
    cond: IR
    reason: IR
    code: str
    origin: Span = _origin()


@frozen
class RestrictStep:
    names: IR
    origin: Span = _origin()


@frozen
class FilterPlan:
    """One `filter` block. ``pod_steps`` run once per pod (lets, skips, `reject pod`,
    `restrict`), in source order; ``node_steps`` run per node, stopping at the first rejection."""
    name: str
    pod_steps: tuple
    node_steps: tuple
    origin: Span = _origin()


@frozen
class ScorePlan:
    name: str
    pod_steps: tuple
    feasible_steps: tuple
    node_steps: tuple
    value: IR
    normalize: str            # none | max | reverse | minmax | with
    normalize_expr: "IR | None" = None
    origin: Span = _origin()
    value_origin: Span = _origin()    # the `value` statement (the block's span when it has none)


@frozen
class RulePlan:
    """What a `rule` adds to the pods it matches before any plugin looks at them."""
    name: str
    when: "IR | None"
    tolerations: tuple        # api.model.Toleration
    spreads: tuple            # api.model.TopologySpreadConstraint (selector: the pod's own labels)
    origin: Span = _origin()


@frozen
class PluginPlan:
    name: str
    weight: int
    params: object            # dict of param values
    filters: tuple            # of FilterPlan, run in order
    score: "ScorePlan | None"
    postfilter: bool = False  # it implements postFilter, run by its companion (run/companions.py)
    rules: tuple = ()         # of RulePlan
    origin: Span = _origin()


@frozen
class Plan:
    profile: str
    plugins: tuple
    percentage_of_nodes_to_score: "int | None" = None
    origin: Span = _origin()
    # The Kubernetes version and feature gates the plan decides as: `kubernetes.…` in the
    # policies was folded into constants for it when it was compiled.
    target: Target = attrs.field(default=DEFAULT_TARGET, kw_only=True)

    @property
    def filter_plugins(self):
        return tuple(p for p in self.plugins if p.filters)

    @property
    def score_plugins(self):
        return tuple(p for p in self.plugins if p.score is not None)

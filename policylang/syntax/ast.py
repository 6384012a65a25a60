"""The surface language's syntax tree: frozen attrs nodes, each with the span it came from.

Spans are excluded from equality so that ``parse(fmt(tree)) == tree`` can hold.
Behaviour lives in the stages (check, compile, format), not on the nodes.
"""

from __future__ import annotations

from typing import Union

import attrs

from ..frozen import frozen
from ..vocabulary import PRECEDENCE  # noqa: F401  (the syntax's; format.py reads it here)
from ..source import NO_SPAN, Span


def _span():
    return attrs.field(default=NO_SPAN, eq=False, repr=False, kw_only=True)


# ---- expressions ------------------------------------------------------------

# Aggregates over a list, `sum(x in xs where …)` or `sum(xs)`; a comprehension may also `group`.
AGGREGATES = ("sum", "any", "all", "count", "first", "min", "max")


class NodeMap:
    """What a stage found about nodes of a tree (the checker's dependencies, the loader's `use`
    targets), by node identity: nodes are values, equal when they read alike, so two equal `let`s
    in different blocks are two keys here. The map holds its nodes, so no identity it knows can
    become another node's while it lives; a node it was never told about is a KeyError, never a
    default."""
    __slots__ = ("_facts",)

    def __init__(self):
        self._facts: dict = {}

    def __setitem__(self, node, value) -> None:
        self._facts[id(node)] = (node, value)

    def __getitem__(self, node):
        entry = self._facts.get(id(node))
        if entry is None:
            raise KeyError(f"nothing is known about the {type(node).__name__} at {getattr(node, 'span', '?')}")
        return entry[1]

    def get(self, node, default=None):
        entry = self._facts.get(id(node))
        return default if entry is None else entry[1]

    def __contains__(self, node) -> bool:
        return id(node) in self._facts

    def __len__(self) -> int:
        return len(self._facts)


@frozen
class Literal:
    """A constant. ``kind`` is one of int, float, string, bool, null, quantity, duration."""
    value: object
    kind: str
    text: str = attrs.field(default="", eq=False)  # as written, for the formatter
    span: Span = _span()


@frozen
class Interpolated:
    """A string with ``${expr}`` holes: parts alternate between str and expression."""
    parts: tuple
    span: Span = _span()


@frozen
class Name:
    id: str
    span: Span = _span()


@frozen
class Field:
    target: "Expr"
    name: str
    span: Span = _span()


@frozen
class Index:
    target: "Expr"
    key: "Expr"
    span: Span = _span()


@frozen
class Call:
    """A call of a def, a builtin or an imported def (``module.name``)."""
    func: str
    args: tuple
    func_span: Span = attrs.field(default=NO_SPAN, eq=False, repr=False)
    span: Span = _span()


@frozen
class Unary:
    op: str  # "not" | "-"
    operand: "Expr"
    span: Span = _span()


@frozen
class Binary:
    """Arithmetic, comparison, membership, boolean and null-coalescing operators."""
    op: str  # + - * / % == != < <= > >= in notin and or ??
    left: "Expr"
    right: "Expr"
    span: Span = _span()


@frozen
class If:
    cond: "Expr"
    then: "Expr"
    else_: "Expr"
    span: Span = _span()


@frozen
class ListExpr:
    items: tuple
    span: Span = _span()


@frozen
class MapExpr:
    """``{"a": 1}`` is a map; ``{name: "cpu", weight: 1}`` (bare keys) is a record."""
    keys: tuple
    values: tuple
    record: bool
    span: Span = _span()


@frozen
class Comprehension:
    """``kind(element for var in source where cond by key)``.

    kind is ``list`` for ``[...]`` or an aggregate: any all count sum min max first group.
    ``element`` is None when the short form ``kind(var in source ...)`` was written.
    """
    kind: str
    var: str
    source: "Expr"
    element: "Expr | None" = None
    where: "Expr | None" = None
    by: "Expr | None" = None
    span: Span = _span()


@frozen
class Fold:
    """``fold(acc = init for x in xs: body)``: acc starts at init and becomes body for each
    x in turn; the result is the last acc. Bounded by the list, so the language stays total."""
    acc: str
    init: "Expr"
    var: str
    source: "Expr"
    body: "Expr"
    span: Span = _span()


Expr = Union[Literal, Interpolated, Name, Field, Index, Call, Unary, Binary, If, ListExpr, MapExpr, Comprehension, Fold]


# ---- types --------------------------------------------------------------------

@frozen
class TypeRef:
    """``int``, ``list[string]``, ``map[string, quantity]``."""
    name: str
    args: tuple = ()
    span: Span = _span()


@frozen
class RecordTypeRef:
    """``{name: string, weight: int}``"""
    fields: tuple  # of (name, TypeRef | RecordTypeRef)
    span: Span = _span()


# ---- statements -----------------------------------------------------------------

@frozen
class Skip:
    """``skip when cond``: the block does not run for this pod (PreFilter / PreScore Skip)."""
    cond: Expr
    span: Span = _span()


@frozen
class Let:
    name: str
    value: Expr
    span: Span = _span()


@frozen
class Reject:
    """``reject [pod] when cond reason text [code Code]``.

    ``pod=True`` rejects the pod before any node is looked at (a PreFilter rejection).
    """
    cond: Expr
    reason: Expr
    code: str = "Unschedulable"
    pod: bool = False
    span: Span = _span()


@frozen
class Restrict:
    """``restrict nodes to names``: only these nodes are considered (a PreFilterResult); null means all."""
    names: Expr
    span: Span = _span()


@frozen
class Value:
    expr: Expr
    span: Span = _span()


@frozen
class Normalize:
    """``normalize none|max|reverse|minmax`` or ``normalize with expr``."""
    method: str
    expr: "Expr | None" = None
    span: Span = _span()


# ---- rule statements ------------------------------------------------------------

@frozen
class Tolerate:
    key: str
    operator: str  # Equal | Exists
    value: "Expr | None"
    effect: str
    seconds: "Expr | None" = None
    span: Span = _span()


@frozen
class Require:
    cond: Expr
    span: Span = _span()


@frozen
class Prefer:
    weight: Expr
    cond: Expr
    span: Span = _span()


@frozen
class Spread:
    topology_key: str
    max_skew: Expr
    when_unsatisfiable: str
    span: Span = _span()


# ---- declarations ---------------------------------------------------------------

@frozen
class PolicyDecl:
    """``policy NodeResourcesBalancedAllocation assumes filter NodeResourcesFit``."""
    name: str
    # Extension points declared beyond those the policy's declarations show (``implements score``).
    implements: tuple = ()
    # The plugins whose filters this policy's score assumes have run (``assumes filter``).
    assumes_filter: tuple = ()
    span: Span = _span()


@frozen
class Import:
    """``import k8s`` (a stdlib module) or ``import "./common.sched" as common``."""
    alias: str
    path: "str | None" = None
    span: Span = _span()


@frozen
class Param:
    name: str
    type: "TypeRef | RecordTypeRef"
    default: "Expr | None" = None
    span: Span = _span()


@frozen
class Def:
    name: str
    params: tuple
    body: Expr
    span: Span = _span()


@frozen
class Filter:
    name: str
    body: tuple
    span: Span = _span()


@frozen
class Score:
    name: str
    body: tuple
    span: Span = _span()


@frozen
class Rule:
    name: str
    when: "Expr | None"
    body: tuple
    span: Span = _span()


@frozen
class UseArg:
    name: str
    value: Expr
    span: Span = _span()


@frozen
class Use:
    """``use NodeResourcesFit {args} weight 2 without score when COND`` inside a profile."""
    ref: str
    is_path: bool = False
    args: tuple = ()  # of UseArg
    weight: "Expr | None" = None
    without: tuple = ()
    when: "Expr | None" = None  # a constant over `kubernetes`: the use is there only where it holds
    span: Span = _span()


@frozen
class Profile:
    name: str
    uses: tuple
    percentage_of_nodes_to_score: "Expr | None" = None
    span: Span = _span()


@frozen
class Module:
    """One .sched file."""
    path: str
    decls: tuple
    span: Span = _span()

    def of_type(self, kind):
        return tuple(d for d in self.decls if isinstance(d, kind))

    @property
    def policy(self) -> "PolicyDecl | None":
        found = self.of_type(PolicyDecl)
        return found[0] if found else None

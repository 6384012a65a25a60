"""The passes that annotate an expression before the vector executor compiles it, in order.

As a compiler's stages, each is a named function that writes what it decided into the
expression's ``Facts`` (``annotate``, once per IR object), with a note on what it needs from
the passes before it. ``vcompile`` then builds the expression's form from the facts alone:
which decorators wrap it (``compile.py``) is decided here, not on every call.
``policylang plan --vector`` prints the facts (``describe``).
"""

from __future__ import annotations

import attrs

from ... import plan as P
from ...plan_text import expr_text
from .analysis import field_reads, has_long_comprehension, is_cheap, node_local, reads_params_only


@attrs.define(slots=True)
class Facts:
    """What the passes decided about one expression."""
    free: tuple = ()            # its free variables, sorted
    reads: tuple = ()           # per free variable, the field paths it reads (analysis.field_reads)
    params_only: bool = False   # reads only its plugin's params: once per params object
    locality: "str | None" = None   # "static" (nodes only), "dynamic" (also their pods), None (more)
    renaming: bool = False      # a def applied to variables: its body under other names
    cheap: bool = False         # one numpy operation over numeric columns (analysis.is_cheap)
    long: bool = False          # holds a comprehension over what may be a long list
    cached: bool = False        # its value is kept per node in the node cache
    lifted: bool = False        # a comprehension that runs as a batch of its members when nothing varies
    batched: bool = False       # when nothing varies, evaluated part by part (for its long comprehension)


def free_paths(ir, facts: Facts) -> None:
    """What of its variables an expression reads: whether anything it reads varies by node,
    and what a cached value is keyed by. Needs nothing."""
    facts.free = tuple(sorted(P.free_vars(ir)))
    facts.reads = field_reads(ir)


def params_only(ir, facts: Facts) -> None:
    """An expression of its plugin's params alone is the same for every pod. Needs nothing."""
    facts.params_only = reads_params_only(ir)


def node_locality(ir, facts: Facts) -> None:
    """Whether it reads nothing of the cluster but the nodes it is given ("static") and the
    pods on them ("dynamic"), from its builtins' declared reads. Needs nothing."""
    facts.locality = node_local(ir)


def cheapness(ir, facts: Facts) -> None:
    """Arithmetic, comparisons, logic and cheap builtins cost less than a cache look-up; a def
    applied to variables is its body, whose own entry is enough. Needs nothing."""
    facts.cheap = is_cheap(ir)
    facts.renaming = isinstance(ir, P.Bind) and all(isinstance(v, P.Var) for v in ir.values)


def long_comprehensions(ir, facts: Facts) -> None:
    """Whether it holds a comprehension over a list not read from the pod or params alone.
    Needs nothing."""
    facts.long = has_long_comprehension(ir)


def caching(ir, facts: Facts) -> None:
    """Kept in the node cache: node-local, and neither cheap nor a renaming. Needs
    node_locality and cheapness (and free_paths for its keys)."""
    facts.cached = facts.locality is not None and not facts.cheap and not facts.renaming


def lifting(ir, facts: Facts) -> None:
    """When nothing it reads varies: a comprehension runs as a batch of its members (see
    lift.py); another expression holding a long comprehension is evaluated part by part so that
    the comprehension can; the rest once, by the reference interpreter. Needs
    long_comprehensions."""
    facts.lifted = isinstance(ir, P.Comp)
    facts.batched = not facts.lifted and facts.long


PASSES = (
    ("free_paths", free_paths),
    ("params_only", params_only),
    ("node_locality", node_locality),
    ("cheapness", cheapness),
    ("long_comprehensions", long_comprehensions),
    ("caching", caching),
    ("lifting", lifting),
)


@P.by_identity
def annotate(ir) -> Facts:
    """The facts of an expression: every pass, in order, once per IR object."""
    facts = Facts()
    for _, run in PASSES:
        run(ir, facts)
    return facts


def summary(ir, per_node: bool = True) -> str:
    """One line of what the passes decided about an expression, evaluated for every node
    (``per_node``) or once per pod."""
    if isinstance(ir, (P.Var, P.Const)):
        return "its value"
    facts = annotate(ir)
    if facts.params_only:
        return "once per params"
    uniform = ("lifted, its members one batch when many" if facts.lifted and facts.long else
               "part by part, for its long comprehensions" if facts.batched else "once, by the reference interpreter")
    if not per_node:
        return uniform
    if facts.cached:
        until = "until its nodes' pods change" if facts.locality == "dynamic" else "for good"
        varying = f"kept per node {until}, by {_keys_text(ir) or 'nothing'}"
    elif facts.locality is None:
        varying = "reads the cluster: computed for every batch"
    elif facts.cheap:
        varying = "cheap: computed, not kept"
    elif facts.renaming:
        varying = "its def's body, kept as that"
    else:
        varying = "computed"
    return varying + (f"; when nothing varies, {uniform}" if facts.long else "")


def _keys_text(ir) -> str:
    """The field paths a kept value is keyed by (each variable's outermost reads)."""
    paths = P.free_paths(ir)
    kept = sorted(p for p in paths if not any(p[:k] in paths for k in range(1, len(p))))
    return ", ".join(".".join((p[0].split("#", 1)[0], *p[1:])) for p in kept)


def describe(ir, per_node: bool = True) -> "list[str]":
    """What the passes decided about an expression and the parts of it worth naming: the
    largest kept parts (evaluated per node) and the long comprehensions, each with its summary.
    Once per pod, the parts of what the reference interpreter runs whole are not looked into."""
    lines = [summary(ir, per_node)]
    seen: set = set()

    def walk(x, under_kept: bool):
        if not per_node and not isinstance(x, (P.Var, P.Const)):
            facts = annotate(x)
            if facts.params_only or not (facts.batched or (facts.lifted and facts.long)):
                return
        for part in P.parts(x):
            if isinstance(part, (P.Var, P.Const)) or id(part) in seen:
                continue
            seen.add(id(part))
            facts = annotate(part)
            named = (per_node and facts.cached and not under_kept) or (isinstance(part, P.Comp) and facts.long)
            if named and not facts.params_only:
                text = expr_text(part)
                lines.append(f"{text if len(text) <= 60 else text[:57] + '…'}: {summary(part, per_node)}")
            walk(part, under_kept or facts.cached)
    walk(ir, per_node and not isinstance(ir, (P.Var, P.Const)) and annotate(ir).cached)
    return lines

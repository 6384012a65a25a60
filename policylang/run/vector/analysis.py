"""What the vector executor asks of an expression before it runs it.

(The questions, one function each; ``passes.py`` puts them in order and records the answers.)
"""

from __future__ import annotations

from ... import builtins as bi
from ... import plan as P
from ...types import DERIVED
from ..interpret import _ARITH, field_reader
from .values import NUMPY_COMPARE


def reads_params_only(ir) -> bool:
    """Whether an expression reads nothing but its plugin's params (a check of its args, a
    default list of resources): its value is the same for every pod."""
    return P.free_vars(ir) <= {"params"} and not _reads_state(ir)


@P.by_identity
def _reads_state(ir) -> bool:
    if isinstance(ir, P.CallBuiltin) and bi.REGISTRY[ir.name].needs_state:
        return True
    if isinstance(ir, P.GetField) and ir.name in NODE_DERIVED:
        return True
    return any(_reads_state(part) for part in P.parts(ir))


def is_cheap(ir) -> bool:
    """Arithmetic, comparisons, logic and number conversions: over numeric and boolean columns
    one numpy operation, cheaper than looking its value up (and than recomputing it on the
    nodes whose pods changed). Such a value is not kept, its parts that are not cheap are."""
    if isinstance(ir, P.Op):
        return ir.op in NUMPY_COMPARE or ir.op in _ARITH or ir.op in ("and", "or")
    if isinstance(ir, P.CallBuiltin):
        return bi.REGISTRY[ir.name].cheap
    return isinstance(ir, (P.Not, P.Neg))


NODE_DERIVED = frozenset(DERIVED["Node"])


@P.by_identity
def node_local(ir) -> "str | None":
    """Whether an expression reads nothing but its variables and, through them, nodes:
    "static" (node objects only), "dynamic" (also the pods on a node), or None (it reads the
    wider cluster state)."""
    found = "static"
    reads = bi.REGISTRY[ir.name].reads if isinstance(ir, P.CallBuiltin) else None
    if reads == "cluster":
        return None
    if reads == "pods":
        found = "dynamic"
    elif isinstance(ir, P.GetField) and ir.name in NODE_DERIVED:
        found = "dynamic"
    elif isinstance(ir, P.Var) and ir.name == "cluster":
        return None
    for part in P.parts(ir):
        inner = node_local(part)
        if inner is None:
            return None
        if inner == "dynamic":
            found = "dynamic"
    return found


def field_reads(ir) -> tuple:
    """Per free variable of ir: (name, paths), the paths as readers of the fields ir reads of
    it, none when it reads the value whole (see plan.free_paths)."""
    by_var: dict = {}
    for path in P.free_paths(ir):
        by_var.setdefault(path[0], set()).add(path[1:])
    out = []
    for name, paths in sorted(by_var.items()):
        kept = () if () in paths else sorted(p for p in paths if not any(p[:k] in paths for k in range(1, len(p))))
        out.append((name, tuple(tuple(map(field_reader, p)) for p in kept)))
    return tuple(out)


POD_SIZED = frozenset({"pod", "params"})     # what lists read from are as long as a pod spec


@P.by_identity
def has_long_comprehension(ir) -> bool:
    """Whether ir holds a comprehension over a list that may be long: one neither written out
    nor read from the pod or params alone (a pod's terms, containers, tolerations), or from
    members of such lists. Comprehensions over those are the reference's to run."""
    return _long_within(ir, POD_SIZED)


@P.by_identity
def _long_within(ir, short: frozenset) -> bool:
    """has_long_comprehension, with the variables in ``short`` known to be pod-sized."""
    if isinstance(ir, P.Comp):
        sized = _pod_sized(ir.source, short)
        inner = short | {ir.var} if sized else short - {ir.var}
        return (not sized and not isinstance(ir.source, P.MakeList)) or _long_within(ir.source, short) \
            or any(_long_within(x, inner) for x in (ir.element, ir.where, ir.by) if x is not None)
    if isinstance(ir, P.Bind):
        inner = (short - set(ir.names)) | {name for name, v in zip(ir.names, ir.values) if _pod_sized(v, short)}
        return any(_long_within(v, short) for v in ir.values) or _long_within(ir.body, inner)
    if isinstance(ir, P.Fold):
        return _long_within(ir.init, short) or _long_within(ir.source, short) \
            or _long_within(ir.body, short - {ir.acc, ir.var})
    return any(_long_within(part, short) for part in P.parts(ir))


def _pod_sized(ir, short: frozenset) -> bool:
    return P.free_vars(ir) <= short and not _reads_state(ir)


def is_arithmetic(ir) -> bool:
    """Numbers, variables, fields and arithmetic on them only: nothing that is costly or could
    mean anything but a number."""
    if isinstance(ir, (P.Const, P.Var)):
        return True
    if isinstance(ir, P.GetField):
        return is_arithmetic(ir.target)
    if isinstance(ir, P.Op) and ir.op not in _ARITH:
        return False
    return is_cheap(ir) and all(is_arithmetic(part) for part in P.parts(ir))

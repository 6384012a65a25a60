"""Vector forms of builtins: over columns, one numpy operation or one look-up for the batch
instead of a call per node. A builtin names its form where it is declared
(``@builtin(..., vector="length")`` in policylang/builtins.py); every form here is named by
one. ``form(venv, args, n)`` returns None where it has no answer for these arguments; the
builtin then runs node by node."""

from __future__ import annotations

import numpy as np

from ... import builtins as bi
from ...api.model import Node
from .cache import is_batch_nodes
from .comprehension import aggregate
from .values import INT_LIMIT, VARYING, Col, Seq, array_of, col_of, comparable, num_kind


def length(venv, args, n):
    (x,) = args
    if isinstance(x, Seq):
        return aggregate("count", [(None, m) for m in x.masks], n)
    return None


def to_float(venv, args, n):
    (x,) = args
    if not isinstance(x, Col):
        return None
    if num_kind(x) == "float":
        return x
    if num_kind(x) == "int":
        return Col(x.a.astype(np.float64))
    return None


def to_int(venv, args, n):
    (x,) = args
    if not isinstance(x, Col):
        return None
    if num_kind(x) == "int":
        return x
    if num_kind(x) == "float" and np.isfinite(x.a).all() and np.abs(x.a).max(initial=0) < INT_LIMIT:
        return Col(np.trunc(x.a).astype(np.int64))
    return None


def absolute(venv, args, n):
    (x,) = args
    return Col(np.abs(x.a)) if isinstance(x, Col) and num_kind(x) in ("int", "float") else None


def square_root(venv, args, n):
    (x,) = args
    if isinstance(x, Col) and num_kind(x) == "float" and (x.a >= 0).all():
        return Col(np.sqrt(x.a))
    return None


def _min_max(pick):
    def run(venv, args, n):
        if len(args) == 2 and any(isinstance(a, Col) for a in args) and comparable(*args) and num_kind(args[0]) in ("int", "float"):
            a, b = args
            # Python's min/max return the first argument on ties; same kind, same value.
            return Col(np.asarray(pick(array_of(a), array_of(b))))
        return None
    return run


def _quantity_amount(convert):
    def run(venv, args, n):
        (x,) = args
        if isinstance(x, Col) and x.a.dtype == object:
            return col_of([convert(q) for q in x.a.tolist()])
        return None
    return run


def count_on_node(venv, args, n):
    nodes, namespace, selector = args
    if not isinstance(nodes, Col) or isinstance(namespace, VARYING) or isinstance(selector, VARYING):
        return None
    state = venv.get("$state")
    if is_batch_nodes(nodes):     # the batch's nodes: their counts read at their positions
        return Col(state.count_matching_by_position(namespace, selector)[venv["$pos"]])
    each = nodes.a.tolist()
    if set(map(type, each)) != {Node}:
        return None
    counts = state.count_matching(namespace, selector)    # asked once, not once per node
    return Col(np.fromiter((counts.get(x.metadata.name, 0) for x in each), dtype=np.int64, count=n))


def has_image(venv, args, n):
    nodes, name = args
    if not is_batch_nodes(nodes) or isinstance(name, VARYING):
        return None
    return Col(venv["$state"].image_holder_mask(name)[venv["$pos"]])


def node_named(venv, args, n):
    (names,) = args
    if not isinstance(names, Col):
        return None
    return Col(np.fromiter(map(venv["$state"].nodes.get, names.a.tolist()), dtype=object, count=n))


minimum = _min_max(np.minimum)
maximum = _min_max(np.maximum)
milli = _quantity_amount(bi.milli)
value = _quantity_amount(bi.value)

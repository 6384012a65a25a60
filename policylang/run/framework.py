"""The scheduling framework's vocabulary, shared by both executors and every plugin's engine code.

As kube-scheduler's ``pkg/scheduler/framework``: a plugin's verdict is a ``Status`` with a code,
scores are normalised to ``[0, MAX_NODE_SCORE]`` (``DefaultNormalizeScore``), and when no node fits
the message is ``FitError``'s "0/N nodes are available: …". ``Executor`` is what the cycle in
``schedule.py`` asks of an executor (the reference's node-by-node loops, ``reference.py``, or the
vector executor's batches, ``batch.py``); neither is named there.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

import attrs
import numpy as np

from ..builtins import POLICY_ERRORS, error_text
from ..cost import CostExceeded
from ..frozen import frozen
from ..vocabulary import NORMALIZERS
from ..source import Span

# ---- Status ------------------------------------------------------------------------------------

SUCCESS = "Success"
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
ERROR = "Error"


@frozen
class Status:
    """A plugin's verdict, as kube-scheduler's framework.Status."""
    code: str
    reasons: tuple = ()
    plugin: str = ""
    # The `reject` statement that decided it, for explanations and coverage.
    origin: "Span | None" = attrs.field(default=None, eq=False, repr=False)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)


def reasons_of(value) -> tuple:
    """A `reason` expression's value (null, a string, or a list) as a Status's reasons."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


class PlanRuntimeError(Exception):
    """A policy failed while running (the framework's Error status): scheduling stops.
    ``detail`` is the plugin's own error, without the framework's words around it."""

    def __init__(self, message: str, detail: "str | None" = None):
        super().__init__(message)
        self.detail = detail


def truthy(v) -> bool:
    return v is not None and v is not False


# The framework's words for a plugin's Error status at each extension point
# (pkg/scheduler/framework/runtime/framework.go), which become the pod's message.
ERROR_AT = {
    "PreFilter": 'running PreFilter plugin "{plugin}": {error}',
    "filter": 'running "{plugin}" filter plugin: {error}',
    "PreScore": 'running PreScore plugin "{plugin}": {error}',
    "Score": 'running Score plugins: plugin "{plugin}" failed with: {error}',
    "NormalizeScore": 'running Normalize on Score plugins: plugin "{plugin}" failed with: {error}',
}


def call(fn, env, plugin: str, point: str):
    """A compiled expression run at an extension point; a policy error becomes the Error status."""
    try:
        return fn(env)
    except POLICY_ERRORS as err:
        words = ERROR_AT.get(point, 'running {point} of plugin "{plugin}": {error}')
        text = error_text(err)
        raise PlanRuntimeError(words.format(point=point, plugin=plugin, error=text), text) from None
    except CostExceeded as err:
        err.plugin = err.plugin or plugin
        raise


@frozen
class PostFilterOutcome:
    """What the PostFilter plugins made of a pod that fits nowhere."""
    message: str = ""
    nominated: "str | None" = None
    victims: tuple = ()
    # An Error status: RunPostFilterPlugins returns it alone, dropping earlier plugins' reasons.
    error: bool = False
    # (namespace, name) of the ResourceClaims DynamicResources' PostFilter deallocated (an API
    # call upstream, made whatever the later plugins do): simulate carries it out.
    deallocate: tuple = ()


# ---- NormalizeScore --------------------------------------------------------------------------------

MAX_NODE_SCORE = 100


def default_normalize_score(raws: np.ndarray, reverse: bool) -> np.ndarray:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores), over int64 raws or (when they
    may overflow it) Python ints in an object array. Go's integer division truncates toward zero."""
    top = max(0, int(raws.max(initial=0)))
    if top == 0:
        return np.full(len(raws), MAX_NODE_SCORE if reverse else 0, dtype=raws.dtype)
    v = np.where(raws >= 0, MAX_NODE_SCORE * raws // top, -((MAX_NODE_SCORE * -raws) // top))
    return MAX_NODE_SCORE - v if reverse else v


def min_max_normalize(raws: np.ndarray) -> np.ndarray:
    """The lowest raw score becomes 0 and the highest MAX_NODE_SCORE, in float64 and truncated."""
    lo, hi = (int(raws.min()), int(raws.max())) if len(raws) else (0, 0)
    if hi == lo:
        return np.zeros(len(raws), dtype=np.int64)
    return np.trunc(float(MAX_NODE_SCORE) * ((raws - lo).astype(np.float64) / float(hi - lo))).astype(np.int64)


def normalize_named(method: str, raws: np.ndarray) -> np.ndarray:
    """One of NORMALIZERS over a column of raw scores."""
    if method == "none":
        return raws
    if method == "minmax":
        return min_max_normalize(raws)
    return default_normalize_score(raws, reverse=method == "reverse")


# ---- FitError --------------------------------------------------------------------------------------

def fit_error_text(num_nodes: int, statuses: dict[str, Status], absent: "Status | None",
                   prefilter_msg: str | None) -> str:
    """framework.FitError.Error() without the PostFilter part: a histogram of every rejected
    node's reasons, each entry "<count> <reason>", sorted as strings."""
    text = f"0/{num_nodes} nodes are available:"
    if prefilter_msg:
        return text + f" {prefilter_msg}."
    counts: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    if absent is not None and len(statuses) < num_nodes:
        for reason in absent.reasons:
            counts[reason] = counts.get(reason, 0) + num_nodes - len(statuses)
    histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
    if histogram:
        text += f" {', '.join(histogram)}."
    return text


def restricted_text(plugins: Iterable[str]) -> str:
    """The reason of the nodes a PreFilter's `restrict nodes to` left out."""
    return f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]"


# ---- the executor interface ------------------------------------------------------------------------

class Executor(Protocol):
    """How Filter and Score run over the nodes; the cycle (schedule.py) is the same for both."""
    name: str

    def compile(self, ir) -> tuple:
        """(closure over one env, vector form or None) of an IR expression."""

    def compile_vector(self, ir) -> Any:
        """The vector form of an expression the cycle only runs over nodes (None: it has none)."""

    def filter_in_order(self, exe, state, pod, pre, order: list, sampling) -> Iterable[tuple]:
        """(nodes, their statuses, which passed, their positions in the state or None) in visit
        order, a chunk at a time, as far as the caller reads."""

    def scorer(self, exe, pre, feasible: list):
        """A function (plugin, env) → (raw scores, normalised scores) over the feasible nodes."""

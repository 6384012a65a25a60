"""How a builtin is declared: the @builtin decorator and REGISTRY, what a builtin may read
(READS), and the errors a policy's evaluation raises (EvalError, 64-bit overflow)."""

from __future__ import annotations

from typing import Callable

from ..api.quantity import MAX_MILLI, Quantity
from ..frozen import frozen
from ..types import ANY, Type, compatible, unify

class EvalError(Exception):
    """A runtime failure inside a policy (division by zero, a bad conversion)."""


# Integers are 64-bit, as the Go scheduler's int64 and CEL's ints are, and quantities hold at most
# 2^63-1 milli-units, as resource.Quantity requires (api/quantity.py): a result past either is
# an error where Go would wrap, never a number that grows without bound (a fold that squares).
INT64 = 2**63
MAX_QUANTITY_NANOS = MAX_MILLI * 10**6


class IntegerOverflow(EvalError):
    """An integer result past the 64 bits (or a quantity past its range). ``origin``, the statement
    it happened in, is set by the executable that runs the statement."""

    def __init__(self, message: str):
        super().__init__(message)
        self.origin = None

    def __str__(self) -> str:
        return f"{self.origin}: {self.args[0]}" if self.origin is not None else self.args[0]


def in_range(result, words: str, *args):
    """``result``, unless an integer past the 64 bits or a quantity past its range: then the error,
    saying what overflowed with ``words`` filled in with ``args`` (formatted only then)."""
    t = type(result)
    if t is int:
        if -INT64 <= result < INT64:
            return result
    elif t is not Quantity or -MAX_QUANTITY_NANOS <= result.nanos <= MAX_QUANTITY_NANOS:
        return result
    kind = "a quantity's 64-bit count of milli-units" if t is Quantity else "the 64-bit integers"
    raise IntegerOverflow(f"integer overflow: {words.format(*args)} leaves {kind}")


# What evaluating a policy raises when the policy, not the engine, fails: reported as the
# policy's error. AttributeError: a builtin given null, or a record literal, where it reads a
# cluster object's field.
POLICY_ERRORS = (EvalError, TypeError, ValueError, ArithmeticError, AttributeError)


def error_text(err: Exception) -> str:
    """A policy error as its message says it."""
    return f"a builtin cannot read its argument ({err})" if isinstance(err, AttributeError) else str(err)


# What a builtin reads besides its arguments (tests/test_builtins.py checks each declaration
# against what the builtin does read):
READS = (
    "nothing",  # its arguments only: impl(*args)
    "node",     # of the cluster state, only what belongs to the node it is given (its images,
                # say), which no bind changes: impl(state, *args); executors keep its value per node
    "pods",     # of the cluster state, only what the pods on the node it is given make (their
                # requests, their counts): impl(state, *args); kept per node until its pods change
    "cluster",  # anything of the cluster state: impl(state, *args); computed afresh every time
)


@frozen
class Builtin:
    name: str
    params: tuple                 # parameter types; ANY accepts anything
    result: object                # a Type, or a function of the argument types
    impl: Callable
    doc: str
    reads: str = "nothing"        # one of READS
    variadic: bool = False        # the last parameter repeats
    # Over numeric columns one numpy operation, cheaper than looking its value up: the vector
    # executor does not keep it in its node cache (only the parts of its arguments that are not cheap).
    cheap: bool = False
    # The name of its vector form in policylang/run/vector/builtin_forms.py (over a batch of nodes
    # at once), or None: it then runs node by node.
    vector: "str | None" = None
    # Whether it counts as the plan's target counts (a pod being resized in place): the compiler
    # passes the target's api.requests.Counting, as its key, as a last argument the policy
    # does not write (it is the target's, as `kubernetes` is).
    counting: bool = False

    @property
    def needs_state(self) -> bool:
        """Whether impl is given the cluster state first."""
        return self.reads != "nothing"

    def result_type(self, args: list[Type]) -> Type:
        return self.result(args) if callable(self.result) else self.result


REGISTRY: dict[str, Builtin] = {}


def builtin(name, params, result, doc, *, reads="nothing", variadic=False, cheap=False, vector=None, counting=False):
    """Declare a builtin: its name in policies, parameter and result types, what it reads
    (READS), and how executors may run it (cheap, vector)."""
    if reads not in READS:
        raise ValueError(f"builtin {name}: reads must be one of {READS}, not {reads!r}")

    def register(fn):
        REGISTRY[name] = Builtin(name, tuple(params), result, fn, doc, reads, variadic, cheap, vector, counting)
        return fn
    return register


def _elem(args):
    t = args[0]
    return t.args[0] if t.kind == "list" else ANY


def _same(args):
    out = args[0]
    for t in args[1:]:
        out = unify(out, t) or ANY
    return out


def check_call(name: str, arg_types: list[Type]) -> tuple[Type | None, str | None]:
    """The result type of a builtin call, or an error message."""
    b = REGISTRY[name]
    n = len(arg_types)
    if b.variadic:
        if n < len(b.params):
            return None, f"{name}() takes at least {len(b.params)} arguments, got {n}"
        params = list(b.params) + [b.params[-1]] * (n - len(b.params))
    else:
        if n != len(b.params):
            return None, f"{name}() takes {len(b.params)} argument{'s' if len(b.params) != 1 else ''}, got {n}"
        params = list(b.params)
    for i, (want, got) in enumerate(zip(params, arg_types)):
        if not compatible(want, got) and not (want.kind == got.kind and want.kind in ("list", "map")):
            return None, f"argument {i + 1} of {name}() must be {want}, not {got}"
    return b.result_type(arg_types), None

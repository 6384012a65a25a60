"""The evaluation cost budget (issue 29), in the spirit of CEL's in Kubernetes: each pod's
scheduling may take at most ``limit`` steps, and a whole evaluation (every pod of one command
run, or one request of `policylang serve`) at most ``total_limit``, where a step is one item a
comprehension or a fold goes through (on one node), one number ``range`` makes, or one step of the
DRA allocator's search (dra/search.py: a search call, a device looked at). Both executors
count the same things: the reference interpreter per comprehension it runs, the vector executor
per member it runs over its batch of nodes. Counting per comprehension, not per operation, keeps
it free.

The two limits share one counter: a pod starts with the smaller of its own limit and what is left
of the evaluation's, so ``charge`` checks one number whichever runs out, and the steps a pod took
are taken from the evaluation's when the next pod starts.

A policy that runs out raises CostExceeded; the executable names the statement it was in, the
cycle the pod, and the CLI prints it (exit 2): a budget is a bound on hostile input, not a
verdict on the pod.

A deadline (``deadline``, for `policylang serve`'s requests) is kept by the same counting: while
one is set the pod's steps are handed out in slices of SLICE, and each time a slice runs out the
clock is read, so the hot paths stay one subtraction and one comparison.
"""

from __future__ import annotations

import contextlib
import time

from .diagnostics import PolicylangError

# The stdlib's default profile takes at most about 100,000 steps for a pod at 5,000 nodes and
# 50,000 pods (bench/generate.py's cluster, its pending pods of every kind; both executors
# count within 10% of each other): a hundred times that. It also bounds memory: range's list
# is at most this long.
DEFAULT_MAX_COST = 10_000_000
# A whole evaluation: simulate of bench's largest workload (1,000 pending pods of every kind on
# 5,000 nodes and 50,000 pods, bench/run.py) takes 4,000,000 steps, and 12,200,000 scoring every
# node (15,000 nodes: 9,000,000): eighty times the most, so that a capacity search of thousands of
# trial pods fits too, while a policy near the per-pod budget on every pod stops after a hundred.
DEFAULT_MAX_TOTAL_COST = 1_000_000_000
_STEPS = "comprehension items, fold items, range numbers and device allocation steps"


class CostExceeded(PolicylangError):
    def __init__(self, limit: int, whole: bool = False):
        super().__init__(limit)
        self.limit = limit
        self.whole = whole      # the evaluation's budget ran out, not the pod's
        self.origin = None      # the statement's Span, set by the executable
        self.plugin = None
        self.pod = None

    def _where(self) -> tuple[str, str, str]:
        where = f"{self.origin}: " if self.origin is not None else ""
        plugin = f" in plugin {self.plugin}" if self.plugin else ""
        pod = f" at pod {self.pod}" if self.whole and self.pod else f" for pod {self.pod}" if self.pod else ""
        return where, pod, plugin

    def __str__(self) -> str:
        where, pod, plugin = self._where()
        if self.whole:
            return (f"{where}evaluation ran past its total cost budget of {self.limit:,} steps (every pod of the "
                    f"run together){pod}{plugin} ({_STEPS}); --max-total-cost raises it")
        return f"{where}evaluation ran past its cost budget of {self.limit:,} steps{pod}{plugin} ({_STEPS}); " \
               f"--max-cost raises it"


class DeadlinePassed(CostExceeded):
    """The work ran past its deadline (a CostExceeded, so that every executor names the statement,
    the plugin and the pod as it does for the step budget)."""

    def __init__(self, seconds: float):
        super().__init__(0)
        self.seconds = seconds

    def __str__(self) -> str:
        where, pod, plugin = self._where()
        return f"{where}evaluation ran past its deadline of {self.seconds:g}s{pod}{plugin}"


# Steps between looks at the clock while a deadline is set: a few milliseconds of the slowest
# comprehensions (the reference interpreter's, node by node).
SLICE = 10_000


class Budget:
    """The steps a pod may take and an evaluation may take, and what is left of each. An Engine
    owns one; the one in force is BUDGET's contents (``using``)."""
    __slots__ = ("limit", "left", "banked", "start", "total_limit", "total_left", "deadline", "seconds")

    def __init__(self, limit: "int | None" = None, total_limit: "int | None" = None):
        self.limit = DEFAULT_MAX_COST if limit is None else limit
        self.total_limit = max(DEFAULT_MAX_TOTAL_COST, self.limit) if total_limit is None else total_limit
        self.deadline = None    # time.monotonic() by which the work must be done, if any
        self.seconds = 0.0
        self.reset()

    def reset(self) -> None:
        self.total_left = self.total_limit
        self.give(min(self.limit, self.total_left))

    def give(self, steps: int) -> None:
        """The pod's allowance: ``steps``, a slice of them in ``left`` when a deadline is set."""
        self.start = steps
        self.refill(steps)

    def refill(self, steps: int) -> None:
        self.left = steps if self.deadline is None else min(steps, SLICE)
        self.banked = steps - self.left     # the steps left beyond the current slice

    def exceeded(self) -> CostExceeded:
        # A pod given less than its own limit was given what the evaluation had left.
        return CostExceeded(self.total_limit, whole=True) if self.start < self.limit else CostExceeded(self.limit)


# The budget in force. The executors' hot paths read and charge this one object (a lookup of a
# module global and a slot), so an owner's budget is put in force by exchanging contents with it.
BUDGET = Budget()
_IN_FORCE: list = []     # the budgets put in force by ``using``, innermost last


def _exchange(a: Budget, b: Budget) -> None:
    for slot in Budget.__slots__:
        va, vb = getattr(a, slot), getattr(b, slot)
        setattr(a, slot, vb)
        setattr(b, slot, va)


@contextlib.contextmanager
def using(budget: Budget):
    """Run what is inside with ``budget`` in force, and keep what it spent in it (an Engine's
    budget spans its life: every pod it decides draws on the same total). Re-entrant: a verb
    that calls another stays on the same budget."""
    if _IN_FORCE and _IN_FORCE[-1] is budget:
        yield
        return
    _exchange(BUDGET, budget)
    _IN_FORCE.append(budget)
    try:
        yield
    finally:
        _IN_FORCE.pop()
        _exchange(BUDGET, budget)


def charge(steps: int) -> None:
    BUDGET.left -= steps
    if BUDGET.left < 0:
        overdrawn()


def overdrawn() -> None:
    """The slice ran out: past the deadline, or past the budget, or on to the next slice."""
    b = BUDGET
    if b.deadline is not None and time.monotonic() > b.deadline:
        raise DeadlinePassed(b.seconds)
    steps = b.left + b.banked
    if steps < 0:
        raise b.exceeded()
    b.refill(steps)


def start_pod() -> None:
    """Every pod's cycle starts with its whole budget, or what the evaluation has left if less;
    what the pod before took is taken from the evaluation's."""
    b = BUDGET
    b.total_left -= b.start - (b.left + b.banked)
    b.give(min(b.limit, b.total_left))


def spent() -> int:
    """The steps the evaluation has taken so far."""
    b = BUDGET
    return b.total_limit - b.total_left + b.start - (b.left + b.banked)


@contextlib.contextmanager
def deadline(seconds: "float | None"):
    """What runs inside is one evaluation, with both budgets whole, that stops with DeadlinePassed
    at the first charge after ``seconds`` of wall-clock time (None: no deadline, the budgets
    alone)."""
    b = BUDGET
    before = b.deadline, b.seconds
    b.deadline = None if seconds is None else time.monotonic() + seconds
    b.seconds = seconds or 0.0
    b.reset()
    try:
        yield
    finally:
        b.deadline, b.seconds = before
        b.reset()


@contextlib.contextmanager
def max_cost(limit: "int | None", total: "int | None" = None):
    """The budgets, per pod and per evaluation, for what runs inside (None: the default, for the
    evaluation at least the pod's); the evaluation's starts whole."""
    before = BUDGET.limit, BUDGET.total_limit
    BUDGET.limit = limit if limit is not None else DEFAULT_MAX_COST
    BUDGET.total_limit = total if total is not None else max(DEFAULT_MAX_TOTAL_COST, BUDGET.limit)
    BUDGET.reset()
    try:
        yield
    finally:
        BUDGET.limit, BUDGET.total_limit = before
        BUDGET.reset()

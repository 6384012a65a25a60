"""The evaluation cost budget (issue 29), in the spirit of CEL's in Kubernetes: each pod's
scheduling may take at most ``limit`` steps, where a step is one item a comprehension or a fold
goes through (on one node) or one number ``range`` makes, and one step of the DRA allocator's
search (dra/structured.py: a search call, a device looked at). Both executors count the same things:
the reference interpreter per comprehension it runs, the vector executor per member it runs
over its batch of nodes. Counting per comprehension, not per operation, keeps it free.

A policy that runs out raises CostExceeded; the executable names the statement it was in, the
cycle the pod, and the CLI prints it (exit 2): a budget is a bound on hostile input, not a
verdict on the pod.

A deadline (``deadline``, for `policylang serve`'s requests) is kept by the same counting: while
one is set the budget is handed out in slices of SLICE steps, and each time a slice runs out the
clock is read, so the hot paths stay one subtraction and one comparison.
"""

from __future__ import annotations

import contextlib
import time

# The stdlib's default profile takes at most about 100,000 steps for a pod at 5,000 nodes and
# 50,000 pods (bench/generate.py's cluster, its pending pods of every kind; both executors
# count within 10% of each other): a hundred times that. It also bounds memory: range's list
# is at most this long.
DEFAULT_MAX_COST = 10_000_000


class CostExceeded(Exception):
    def __init__(self, limit: int):
        super().__init__(limit)
        self.limit = limit
        self.origin = None      # the statement's Span, set by the executable
        self.plugin = None
        self.pod = None

    def __str__(self) -> str:
        where = f"{self.origin}: " if self.origin is not None else ""
        plugin = f" in plugin {self.plugin}" if self.plugin else ""
        pod = f" for pod {self.pod}" if self.pod else ""
        return (f"{where}evaluation ran past its cost budget of {self.limit:,} steps{pod}{plugin} "
                f"(comprehension items, fold items, range numbers and device allocation steps); "
                f"--max-cost raises it")


class DeadlinePassed(CostExceeded):
    """The work ran past its deadline (a CostExceeded, so that every executor names the statement,
    the plugin and the pod as it does for the step budget)."""

    def __init__(self, seconds: float):
        super().__init__(0)
        self.seconds = seconds

    def __str__(self) -> str:
        where = f"{self.origin}: " if self.origin is not None else ""
        plugin = f" in plugin {self.plugin}" if self.plugin else ""
        pod = f" for pod {self.pod}" if self.pod else ""
        return f"{where}evaluation ran past its deadline of {self.seconds:g}s{pod}{plugin}"


# Steps between looks at the clock while a deadline is set: a few milliseconds of the slowest
# comprehensions (the reference interpreter's, node by node).
SLICE = 10_000


class _Budget:
    __slots__ = ("limit", "left", "banked", "deadline", "seconds")

    def __init__(self, limit: int):
        self.limit = self.left = limit
        self.banked = 0         # the steps left beyond the current slice (``left``)
        self.deadline = None    # time.monotonic() by which the work must be done, if any
        self.seconds = 0.0

    def refill(self, steps: int) -> None:
        """``steps`` left in all: a slice of them in ``left`` when a deadline is set."""
        self.left = steps if self.deadline is None else min(steps, SLICE)
        self.banked = steps - self.left


BUDGET = _Budget(DEFAULT_MAX_COST)


def charge(steps: int) -> None:
    BUDGET.left -= steps
    if BUDGET.left < 0:
        _overdrawn()


def _overdrawn() -> None:
    """The slice ran out: past the deadline, or past the whole budget, or on to the next slice."""
    if BUDGET.deadline is not None and time.monotonic() > BUDGET.deadline:
        raise DeadlinePassed(BUDGET.seconds)
    steps = BUDGET.left + BUDGET.banked
    if steps < 0:
        raise CostExceeded(BUDGET.limit)
    BUDGET.refill(steps)


def start_pod() -> None:
    """Every pod's cycle starts with the whole budget."""
    BUDGET.refill(BUDGET.limit)


@contextlib.contextmanager
def deadline(seconds: "float | None"):
    """What runs inside starts with the whole budget and stops, with DeadlinePassed, at the first
    charge after ``seconds`` of wall-clock time (None: no deadline, the budget alone)."""
    before = BUDGET.deadline, BUDGET.seconds, BUDGET.left, BUDGET.banked
    BUDGET.deadline = None if seconds is None else time.monotonic() + seconds
    BUDGET.seconds = seconds or 0.0
    start_pod()
    try:
        yield
    finally:
        BUDGET.deadline, BUDGET.seconds, BUDGET.left, BUDGET.banked = before


@contextlib.contextmanager
def max_cost(limit: "int | None"):
    """The budget per pod for what runs inside (None: the default)."""
    before = BUDGET.limit
    BUDGET.limit = limit if limit is not None else DEFAULT_MAX_COST
    BUDGET.refill(BUDGET.limit)
    try:
        yield
    finally:
        BUDGET.limit = before
        BUDGET.refill(before)

"""The evaluation cost budget (issue 29), in the spirit of CEL's in Kubernetes: each pod's
scheduling may take at most ``limit`` steps, where a step is one item a comprehension or a fold
goes through (on one node) or one number ``range`` makes, and one step of the DRA allocator's
search (dra/structured.py: a search call, a device looked at). Both executors count the same things:
the reference interpreter per comprehension it runs, the vector executor per member it runs
over its batch of nodes. Counting per comprehension, not per operation, keeps it free.

A policy that runs out raises CostExceeded; the executable names the statement it was in, the
cycle the pod, and the CLI prints it (exit 2): a budget is a bound on hostile input, not a
verdict on the pod.
"""

from __future__ import annotations

import contextlib

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


class _Budget:
    __slots__ = ("limit", "left")

    def __init__(self, limit: int):
        self.limit = self.left = limit


BUDGET = _Budget(DEFAULT_MAX_COST)


def charge(steps: int) -> None:
    BUDGET.left -= steps
    if BUDGET.left < 0:
        raise CostExceeded(BUDGET.limit)


def start_pod() -> None:
    """Every pod's cycle starts with the whole budget."""
    BUDGET.left = BUDGET.limit


@contextlib.contextmanager
def max_cost(limit: "int | None"):
    """The budget per pod for what runs inside (None: the default)."""
    before = BUDGET.limit
    BUDGET.limit = BUDGET.left = limit if limit is not None else DEFAULT_MAX_COST
    try:
        yield
    finally:
        BUDGET.limit = BUDGET.left = before

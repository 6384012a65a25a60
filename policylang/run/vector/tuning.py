"""The vector executor's tuning constants, in one place.

None of them changes a decision, only how much work is done and kept: the executor tests run
every case again with the thresholds at their smallest (``tests/test_executors.py``), and
``docs/benchmarks.md`` records the values tried. Modules read them as ``tuning.NAME`` at the
time of use, so that a test can patch them here.
"""

# ---- choosing the executor (executable.auto_executor)
# `--executor auto` runs the reference interpreter when nodes × pods is below this: it is done
# before the vector executor has compiled the expressions the pods reach (~0.25 s for the default
# profile; docs/benchmarks.md, "Start-up"), and both decide alike (tests/test_executors.py).
AUTO_REFERENCE_WORK = 256

# ---- comprehensions (comprehension.py, lift.py)
LIFT_MIN = 16       # a pod-stage comprehension over at least this many members runs as a batch of them
EXPLODE_MIN = 16    # lists per node with at least this many members in all are one batch

# ---- the node cache (cache.py)
FREEZE_BUDGET = 64  # values larger than this, all free variables together, are not keys
FROZEN_MAX = 8_192      # frozen values remembered per object before the memo starts afresh (each keeps
                        # its object alive: a few cycles' worth, not a long-lived process's every value)
# Cached values in all, across entries, at 12 bytes each (a value or reference, a version):
# up to ~550 MiB, room for the ~2,000 entries of the default profile on 15,000 nodes.
MAX_VALUES = 48_000_000
ONE_OFF_KEYS = 16   # see NodeCache._one_off
MET_AGAIN_ONE_IN = 4
FEW_NODES = 8       # missing values of at most this many nodes are computed node by node
FEW_CHANGED = 16    # an entry that was in sync is checked again at the nodes changed since, up to this many
FEW_DISTINCT = 64   # kept columns with at most this many distinct values are looked up per value

"""The vector executor: plan expressions evaluated for a batch of nodes at once.

Each IR node compiles to ``f(venv, n) -> value`` where a value is either the same for every
node of the batch (a plain Python value, as the reference interpreter has it) or varies by
node (``values``: Col, Rec, Seq). An expression whose free variables are all the same for
every node runs once, through the reference interpreter; numbers and booleans are numpy
operations; what has no vector form runs node by node through the reference interpreter.

Where the reference would not evaluate an expression on a node (the right of ``and``, a
branch of ``if``, a comprehension item its ``where`` leaves out) neither does this: such
expressions run on the sub-batch of nodes that reach them. Any policy error is re-raised
for the caller to decide the pod with the reference interpreter, so errors are the
reference's errors.

Two things save repeated work: the node cache keeps, per node of a cluster state, the values
of expressions that read nothing but nodes (and plain values), across pods; and a long
comprehension that is the same for every node (a pass over ``cluster.nodes`` in PreFilter)
is "lifted": its members become a batch of their own.

The modules, in the order they build on each other:

- ``tuning``: the thresholds that decide how much work is done and kept (never a decision);
- ``values``: Col, Rec, Seq, and taking them apart and together over sub-batches;
- ``analysis``: what is asked of an expression before it runs (free paths, node-locality,
  long comprehensions, cheapness);
- ``passes``: those questions as an ordered list of named passes, whose answers (``Facts``)
  decide how an expression is compiled, and which ``policylang plan --vector`` prints;
- ``cache``: the node cache and its keys;
- ``comprehension``: comprehension strategies (member by member, until decided, per node,
  exploded into one batch of every node's members);
- ``lift``: long comprehensions that are the same for every node, as a batch of their members;
- ``builtin_forms``: builtins over columns;
- ``forms``: the vector form of each IR node;
- ``compile``: ``vcompile``, which builds each form from its facts: a core wrapped in the
  ``cached`` and ``per_batch`` decorators.
"""

from ...builtins import POLICY_ERRORS
from .cache import NODES_KEY, NodeCache, by_position, node_positions
from .compile import vcompile, vcompile_lazily
from .values import INT_LIMIT, Col, Rec, Seq, member_codes, plain_members, restrict, truth, values_of

__all__ = ["INT_LIMIT", "NODES_KEY", "POLICY_ERRORS", "Col", "NodeCache", "Rec", "Seq", "by_position", "member_codes",
           "node_positions", "plain_members", "restrict", "truth", "values_of", "vcompile", "vcompile_lazily"]

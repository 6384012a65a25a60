"""How a policy talks to the people who read its results."""

from __future__ import annotations

import re

from ...syntax import ast
from ..registry import rule

VAGUE_REASON = rule(
    "S305", "vague-reason", "style", "warning",
    summary="A `reason` that is empty or does not say what failed (\"failed\", \"rejected\", \"no\").",
    rationale="""The reason is what `kubectl describe pod` shows in `0/N nodes are available: 3 <reason>`,
    the only explanation an application team gets for a Pending pod. \"rejected\" or \"failed\" tells
    them nothing they can act on; say what about the node did not suit the pod, in the scheduler's
    own style (`node(s) didn't have free ports for the requested pod ports`).""",
    bad="""
policy P
filter gpu_only {
    reject when not ("nvidia.com/gpu" in node.status.allocatable) reason "rejected"
}""",
    good="""
policy P
filter gpu_only {
    reject when not ("nvidia.com/gpu" in node.status.allocatable) reason "node(s) had no GPUs"
}""")

# Words that say only that something failed, and words that do not say what.
GENERIC = frozenset("""failed fail failure rejected reject no error denied deny invalid not allowed
    ok nope false bad filtered mismatch match fit fits does doesnt didnt unavailable refused
    blocked wrong condition unsuitable""".split())
FILLER = frozenset("node nodes s the was were is has have been filter check policy pod this a".split())


def vague(text: str) -> bool:
    words = [w for w in re.sub(r"[^a-z ]", "", text.lower().replace("'", "")).split() if w not in FILLER]
    return all(w in GENERIC for w in words)


@VAGUE_REASON.on("sched")
def _vague_reasons(ctx):
    for f in ctx.module.of_type(ast.Filter):
        for s in f.body:
            if not isinstance(s, ast.Reject):
                continue
            texts = [s.reason] if not isinstance(s.reason, ast.ListExpr) else list(s.reason.items)
            for t in texts:
                if isinstance(t, ast.Literal) and t.kind == "string" and vague(t.value):
                    what = "is empty" if not t.value.strip() else f"'{t.value}' does not say what failed"
                    yield VAGUE_REASON.finding(f"this reason {what}", t.span,
                                               "help: say what about the node did not suit the pod, e.g. "
                                               "\"node(s) had no free GPUs\"")

"""DynamicResources' engine code: its PostFilter (deallocating claims: nothing to do for the pods
without claims that the policy models)."""

from __future__ import annotations

from ..run.framework import PostFilterOutcome


def postfilter(exe, state, pod, pre, statuses, *, plugin, preemption: bool, rng=None):
    if plugin.name not in pre.reached:
        # Its PreFilter never ran (an earlier PreFilter rejected the pod), so it has no state.
        return PostFilterOutcome("not found", error=True)
    return PostFilterOutcome("no new claims to deallocate")

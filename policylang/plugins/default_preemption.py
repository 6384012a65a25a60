"""DefaultPreemption's engine code: its PostFilter, the dry run of run/postfilter.py, which
re-runs the profile's own filters without the would-be victims."""

from __future__ import annotations

from ..run.postfilter import preempt


def postfilter(exe, state, pod, pre, statuses, *, plugin, preemption: bool, rng=None):
    if not preemption:
        return None
    return preempt(exe, state, pod, statuses, rng=rng, args=plugin.params)

"""VolumeBinding's engine code: its Reserve (binder.AssumePodVolumes), before simulate binds a pod."""

from __future__ import annotations

from ..plan import LetStep
from ..run.phases import base_env, run_filters, run_prefilter

# The lets through which the policy's filter hands Reserve its decision for the chosen node.
RESERVE_LETS = ("reserved_bindings", "reserved_provisions")


def reserve(exe, state, pod, node_name: str, plugin) -> None:
    """The filter, run again for the chosen node, leaves `reserved_bindings` ({claim, pv} per claim
    matched to an existing volume) and `reserved_provisions` (claims to provision there) in its
    environment; the state assumes them, as the scheduler's assume caches do, so the next pod
    sees those volumes taken (ClusterState.assume_volumes)."""
    if not any(v.persistent_volume_claim or v.ephemeral for v in pod.spec.volumes):
        return
    if not any(isinstance(step, LetStep) and step.name.split("#")[0] == RESERVE_LETS[0]
               for f in plugin.filters for step in f.node_steps):
        return
    pod = exe.apply_rules(state, state.with_priority(pod))
    pre = run_prefilter(exe, state, pod, base_env(state, pod))
    if pre.status is not None or run_filters(exe, pre, state.nodes[node_name]) is not None:
        return
    if not pre.active.get(plugin.name):
        return
    lets = {key.split("#")[0]: value for key, value in pre.envs[plugin.name].items()}
    state.assume_volumes(lets.get(RESERVE_LETS[0]) or [], lets.get(RESERVE_LETS[1]) or [], node_name)

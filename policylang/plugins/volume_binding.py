"""VolumeBinding's engine code: its Reserve (binder.AssumePodVolumes), before simulate binds a pod."""

from __future__ import annotations

from ..run.phases import filter_lets_on

# The lets through which the policy's filter hands Reserve its decision for the chosen node.
RESERVE_LETS = ("reserved_bindings", "reserved_provisions")


def reserve(exe, state, pod, node_name: str, plugin) -> None:
    """The filter, run again for the chosen node, leaves `reserved_bindings` ({claim, pv} per claim
    matched to an existing volume) and `reserved_provisions` (claims to provision there) in its
    environment; the state assumes them, as the scheduler's assume caches do, so the next pod
    sees those volumes taken (ClusterState.assume_volumes)."""
    if not any(v.persistent_volume_claim or v.ephemeral for v in pod.spec.volumes):
        return
    lets = filter_lets_on(exe, state, pod, node_name, plugin, RESERVE_LETS[0])
    if lets is not None:
        state.assume_volumes(lets.get(RESERVE_LETS[0]) or [], lets.get(RESERVE_LETS[1]) or [], node_name)

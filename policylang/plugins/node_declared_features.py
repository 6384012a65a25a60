"""NodeDeclaredFeatures' explain companion: which feature the rejected nodes do not declare, and
what the pod would have to drop not to need it.

A node declares its features itself (its kubelet writes status.declaredFeatures): no user edit of
the node is offered. The fixer offers the pod without the fields that make it need a feature the
node does not declare, one feature at a time, then all of them; explain runs the plan again on
each, so only a change that schedules the pod is shown. What decides is the policy
(stdlib_policies/node_declared_features.sched); ``USES`` here only finds the fields to name and
drop, feature by feature, as component-helpers' nodedeclaredfeatures/features/*/ read them.
"""

from __future__ import annotations

from typing import Callable, Iterator

import attrs

from ..api.model import Container, Pod
from .edits import Change, with_spec

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def _restarts_all(c: Container) -> bool:
    return any(r.action == "RestartAllContainers" for r in c.restart_policy_rules)


def _binds_with_options(c: Container) -> bool:
    return any(m.bind_mount_options for m in c.volume_mounts)


def _containers(pod: Pod, test: Callable[[Container], bool], ephemeral: bool = False) -> list[str]:
    groups = [pod.spec.containers, pod.spec.init_containers] + ([pod.spec.ephemeral_containers] if ephemeral else [])
    return [c.name for group in groups for c in group if test(c)]


def _uses(pod: Pod) -> dict[str, str]:
    """feature → the pod's fields that make it need the feature (restart_all_containers.go,
    user_namespaces_host_network.go, volumebindmountoptions/feature.go)."""
    found = {}
    names = _containers(pod, _restarts_all)
    if names:
        found[RESTART_ALL] = f"a RestartAllContainers restart rule in container(s) {', '.join(names)}"
    if pod.spec.host_network and pod.spec.host_users is False:
        found[USERNS_HOST_NETWORK] = "hostNetwork with hostUsers: false"
    names = _containers(pod, _binds_with_options, ephemeral=True)
    if names:
        found[BIND_MOUNT_OPTIONS] = f"bindMountOptions on volume mounts of container(s) {', '.join(names)}"
    return found


def _without_restart_all(c: Container) -> Container:
    rules = tuple(r for r in c.restart_policy_rules if r.action != "RestartAllContainers")
    return attrs.evolve(c, restart_policy_rules=rules) if rules != c.restart_policy_rules else c


def _without_bind_options(c: Container) -> Container:
    if not _binds_with_options(c):
        return c
    return attrs.evolve(c, volume_mounts=tuple(attrs.evolve(m, bind_mount_options=()) for m in c.volume_mounts))


def _dropped(pod: Pod, feature: str) -> Pod:
    """The pod without what makes it need ``feature``."""
    spec = pod.spec
    if feature == RESTART_ALL:
        return with_spec(pod, containers=tuple(map(_without_restart_all, spec.containers)),
                         init_containers=tuple(map(_without_restart_all, spec.init_containers)))
    if feature == USERNS_HOST_NETWORK:
        return with_spec(pod, host_users=None)
    return with_spec(pod, containers=tuple(map(_without_bind_options, spec.containers)),
                     init_containers=tuple(map(_without_bind_options, spec.init_containers)),
                     ephemeral_containers=tuple(map(_without_bind_options, spec.ephemeral_containers)))


def _drop_text(pod: Pod, feature: str) -> str:
    if feature == RESTART_ALL:
        return f"drop the RestartAllContainers restart rules of container(s) {', '.join(_containers(pod, _restarts_all))}"
    if feature == USERNS_HOST_NETWORK:
        return "drop `hostUsers: false` (or hostNetwork)"
    return ("drop the bindMountOptions of container(s) "
            + ", ".join(_containers(pod, _binds_with_options, ephemeral=True)))


def _missing(pod: Pod, node) -> list[str]:
    declared = set(node.status.declared_features)
    return [f for f in _uses(pod) if f not in declared]


def fix(state, pod, node, status) -> Iterator[Change]:
    # The same change for another node has the same text: explain shows it once, with both nodes.
    missing = _missing(pod, node)
    for feature in missing:
        yield Change(f"{_drop_text(pod, feature)} (the pod then needs no {feature} from the node's kubelet)",
                     _dropped(pod, feature), state)
    if len(missing) > 1:
        changed = pod
        for feature in missing:
            changed = _dropped(changed, feature)
        yield Change("; ".join(_drop_text(pod, f) for f in missing)
                     + f" (the pod then needs none of {', '.join(missing)} from the node's kubelet)", changed, state)


def detail(state, pod, reason: str, node_names) -> "str | None":
    """Which features the pod needs that these nodes' kubelets do not declare, and why it needs them
    (upstream's reason since v1.36 names none)."""
    uses = _uses(pod)
    parts = []
    for feature, why in uses.items():
        lacking = [n for n in sorted(node_names) if feature not in state.nodes[n].status.declared_features]
        if lacking:
            parts.append(f"needs {feature} ({why}), not declared by {_few(lacking)}")
    return "; ".join(parts) or None


def _few(names: list[str], shown: int = 3) -> str:
    more = f" … and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more

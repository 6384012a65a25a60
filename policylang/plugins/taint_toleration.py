"""TaintToleration's explain fixer: tolerate the taints the pod does not."""

from __future__ import annotations

from ..api.model import Toleration
from .edits import Change, with_spec

# Taints the cluster's own machinery sets, which a workload should almost never tolerate to get
# scheduled: the node lifecycle's (k8s.io/api core/v1 well_known_taints.go), the control plane's
# (kubeadm's constants.go), the cloud provider's, the autoscalers' and a simulator's fake nodes.
INFRASTRUCTURE_TAINTS = frozenset({
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/network-unavailable", "node.kubernetes.io/out-of-service",
    "node.cloudprovider.kubernetes.io/uninitialized", "node.cloudprovider.kubernetes.io/shutdown",
    "node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master",
    "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler", "karpenter.sh/disrupted",
    "kwok.x-k8s.io/node",
})


def fix(state, pod, node, status):
    from ..api.selectors import tolerates
    missing = [t for t in node.spec.taints if t.effect in ("NoSchedule", "NoExecute")
               and not any(tolerates(tol, t) for tol in pod.spec.tolerations)]
    if missing:
        added = tuple(Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect) for t in missing)
        text = ", ".join(f"`{t.key}={t.value}:{t.effect}`" if t.value else f"`{t.key}:{t.effect}`" for t in missing)
        yield Change(f"add toleration {text}",
                     with_spec(pod, tolerations=pod.spec.tolerations + added), state,
                     infrastructure=any(t.key in INFRASTRUCTURE_TAINTS for t in missing))

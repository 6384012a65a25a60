"""TaintToleration's explain fixer: tolerate the taints the pod does not."""

from __future__ import annotations

from ..cluster.model import Toleration
from .edits import with_spec


def fix(state, pod, node, status):
    from ..builtins import tolerates
    missing = [t for t in node.spec.taints if t.effect in ("NoSchedule", "NoExecute")
               and not any(tolerates(tol, t) for tol in pod.spec.tolerations)]
    if missing:
        added = tuple(Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect) for t in missing)
        text = ", ".join(f"`{t.key}={t.value}:{t.effect}`" if t.value else f"`{t.key}:{t.effect}`" for t in missing)
        yield f"add toleration {text} (for {node.metadata.name})", with_spec(pod, tolerations=pod.spec.tolerations + added), state

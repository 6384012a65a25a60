"""How many bound pods mount each claim (NodeInfo.PVCRefCounts): claim_in_use."""

from __future__ import annotations


class ClaimUsers:
    def __init__(self, state) -> None:
        self.users: dict[tuple[str, str], int] = {}     # (namespace, claim name) → pods

    def arrive(self, pod, node: str) -> None:
        ns = pod.metadata.namespace
        for claim in claim_names(pod):
            self.users[(ns, claim)] = self.users.get((ns, claim), 0) + 1

    def leave(self, pod, node: str) -> None:
        ns = pod.metadata.namespace
        for claim in claim_names(pod):
            left = self.users.get((ns, claim), 0) - 1
            if left > 0:
                self.users[(ns, claim)] = left
            else:
                self.users.pop((ns, claim), None)


def claim_names(pod) -> list[str]:
    return [v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim is not None]

"""The storage look-ups of the scheduler's listers and assume caches: PersistentVolumes by
storage class, VolumeAttachments by node, and VolumeBinding's Reserve (assume_volumes), which
changes the PVs and claims the state holds. From storage objects alone: no pod hooks."""

from __future__ import annotations

import attrs

from ...api import model


class Storage:
    def __init__(self, state) -> None:
        self.state = state
        self._pvs_by_class: dict[str, list[model.PersistentVolume]] | None = None
        self._attachments_by_node: dict[str, list[model.VolumeAttachment]] | None = None

    def arrive(self, pod, node: str) -> None:
        pass

    def forget(self) -> None:
        """The PVs were replaced (a savepoint rolled back): what was derived from them goes."""
        self._pvs_by_class = None

    def leave(self, pod, node: str) -> None:
        pass

    def persistent_volumes_of_class(self, class_name: str) -> list[model.PersistentVolume]:
        """The PV assume cache's ListPVs: the PVs of a storage class (the beta annotation wins
        over spec.storageClassName), in name order (upstream's index order is a map's)."""
        if self._pvs_by_class is None:
            by_class: dict[str, list[model.PersistentVolume]] = {}
            for pv in self.state.persistent_volumes.values():
                by_class.setdefault(volume_class(pv), []).append(pv)
            self._pvs_by_class = by_class
        return self._pvs_by_class.get(class_name, [])

    def volume_attachments_on(self, node_name: str) -> list[model.VolumeAttachment]:
        """The VolumeAttachments whose spec.nodeName is the node (NodeVolumeLimits' index)."""
        if self._attachments_by_node is None:
            by_node: dict[str, list[model.VolumeAttachment]] = {}
            for va in self.state.volume_attachments:
                by_node.setdefault(va.spec.node_name, []).append(va)
            self._attachments_by_node = by_node
        return self._attachments_by_node.get(node_name, [])

    def assume_volumes(self, bindings, provisions, node_name: str) -> None:
        """VolumeBinding's Reserve (binder.AssumePodVolumes) as the scheduler's assume caches then
        hold it, until the PV controller completes the binding: each chosen PV ({claim, pv} in
        `bindings`) gets a claimRef to its claim and, unless it was pre-bound to it, the
        bound-by-controller annotation (volume.GetBindVolumeToClaim); each claim to provision
        gets the selected-node annotation."""
        state = self.state
        for b in bindings:
            pv, pvc = b["pv"], b["claim"]
            meta, ref, claim = pv.metadata, pv.spec.claim_ref, pvc.metadata
            pre_bound = ref is not None and ref.name == claim.name and ref.namespace == claim.namespace \
                and (not ref.uid or ref.uid == claim.uid)
            spec = pv.spec
            if ref is None or (ref.name, ref.namespace, ref.uid) != (claim.name, claim.namespace, claim.uid):
                spec = attrs.evolve(spec, claim_ref=model.ObjectReference(
                    kind="PersistentVolumeClaim", api_version="v1", namespace=claim.namespace, name=claim.name,
                    uid=claim.uid))
            if not pre_bound and "pv.kubernetes.io/bound-by-controller" not in meta.annotations:
                meta = attrs.evolve(meta, annotations={**meta.annotations,
                                                       "pv.kubernetes.io/bound-by-controller": "yes"})
            state.persistent_volumes[meta.name] = attrs.evolve(pv, metadata=meta, spec=spec)
        for pvc in provisions:
            meta = pvc.metadata
            annotations = {**meta.annotations, "volume.kubernetes.io/selected-node": node_name}
            state.claims[(meta.namespace, meta.name)] = attrs.evolve(
                pvc, metadata=attrs.evolve(meta, annotations=annotations))
        self._pvs_by_class = None


def volume_class(pv: model.PersistentVolume) -> str:
    """storagehelpers.GetPersistentVolumeClass: the beta annotation wins over spec.storageClassName."""
    return pv.metadata.annotations.get("volume.beta.kubernetes.io/storage-class", pv.spec.storage_class_name)

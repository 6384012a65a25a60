"""DefaultStorageClass (plugin/pkg/admission/storage/storageclass/setdefault/admission.go): a
claim created without a class gets the cluster's default StorageClass."""

from __future__ import annotations

from typing import Iterable, Optional

from ..api import model

# pkg/volume/util/storageclass.go: the annotations that make a class the default.
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
# helper.PersistentVolumeClaimHasClass: a claim with this annotation asked for a class.
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def default_class(classes: Iterable[model.StorageClass]) -> Optional[str]:
    """util.GetDefaultClass: among the classes annotated as default, the newest (by
    creationTimestamp), then the first by name; None when there is none."""
    defaults = [c for c in classes if any(c.metadata.annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)]
    if not defaults:
        return None
    # RFC 3339 timestamps of one form order as strings; a class without one is the oldest.
    newest = max(c.metadata.creation_timestamp for c in defaults)
    return min(c.metadata.name for c in defaults if c.metadata.creation_timestamp == newest)


def with_default_class(claim: dict, classes: Iterable[model.StorageClass]) -> dict:
    """The claim (as the API's JSON) as admission leaves it: a spec without storageClassName, and
    no beta class annotation, names the default class, if the cluster has one. An explicit empty
    class ("") is a request for no class and stays."""
    spec = claim.get("spec")
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if not isinstance(spec, dict) or "storageClassName" in spec or BETA_CLASS_ANNOTATION in annotations:
        return claim
    name = default_class(classes)
    return claim if name is None else {**claim, "spec": {**spec, "storageClassName": name}}

"""Redacting a dump for a bug report (`policylang snapshot --redact`): names, namespaces, label
values and images are replaced by stand-ins, so that the dump can be shared while every
scheduling decision on it stays the same, up to the renaming.

Decisions compare these strings for equality (a selector and a label, a pod's nodeName and a
node, a hostname label and a node's name) and, for ties, for order (the smallest node name
wins). So one mapping serves every place a name or label value can appear, and it keeps order:
the distinct strings are sorted and the k-th becomes ``n<k>`` (zero-padded). A string that is a
whole integer is kept, everywhere: node affinity's Gt and Lt compare label values as numbers.
Images become hashes of their repository and their tag or digest, after the :latest a
tagless image is pulled as (ImageLocality matches ``nginx`` and ``nginx:latest``). Annotations
are dropped: nothing the scheduler decides reads them. Label keys, taints, tolerations, resource
amounts and topology keys are kept; they are what the decisions are about.

The input is `dump.dump_state`'s document (only the fields the model has), not an arbitrary object.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable

# Fields whose string value (or list of strings) is a name of some object.
NAME_FIELDS = frozenset({"namespace", "nodeName", "nominatedNodeName", "priorityClassName", "claimName",
                         "volumeName", "storageClassName", "persistentVolumeName", "namespaces",
                         # DRA: a pod's claims and templates, a request's class, a result's pool
                         "resourceClaimName", "resourceClaimTemplateName", "deviceClassName", "pool"})
# Fields that are a map of label (or selector) keys to values.
LABEL_MAPS = frozenset({"labels", "matchLabels", "nodeSelector", "selector"})
# Lists of objects whose "name" is the name of an object (an owner, a claim's volume).
NAMED_PARENTS = frozenset({"metadata", "ownerReferences", "claimRef", "pool"})
CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})
_INTEGER = re.compile(r"-?[0-9]+")


def redact(doc: dict) -> dict:
    """The dump with every name, label value and image replaced (see the module's docstring)."""
    mapping = renaming(doc)
    return _walk(doc, None, lambda s: mapping.get(s, s), redact_image)


def renaming(doc: dict) -> dict[str, str]:
    """Each name and label value of the dump → its stand-in, in the same order."""
    names: set[str] = set()
    _walk(doc, None, lambda s: names.add(s), lambda s: s)
    renamed = sorted(n for n in names if n and not _INTEGER.fullmatch(n))
    width = len(str(len(renamed)))
    return {name: f"n{k:0{width}d}" for k, name in enumerate(renamed)}


def redact_image(image: str) -> str:
    if not image:
        return image
    if image.rfind(":") <= image.rfind("/"):
        image += ":latest"
    at = image.find("@")
    cut = at if at >= 0 else image.rfind(":")
    repo, rest = image[:cut], image[cut:]
    return f"img-{_hash(repo)}{rest[0]}{_hash(rest[1:])}"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _walk(value: Any, key: "str | None", name: Callable[[str], Any], image: Callable[[str], str],
          parent: "str | None" = None) -> Any:
    """A copy of ``value`` (found under ``key``, inside ``parent``) with ``name`` applied to each
    name and label value, and ``image`` to each image."""
    if isinstance(value, dict):
        if ("operator" in value or key == "matchLabelExpressions") and isinstance(value.get("values"), list):
            # A selector requirement: its values are label values (or, in matchFields, node names).
            value = {**value, "values": [name(v) if isinstance(v, str) else v for v in value["values"]]}
            return {k: v if k == "values" else _walk(v, k, name, image, key) for k, v in value.items()}
        if key in LABEL_MAPS and all(isinstance(v, str) for v in value.values()):
            return {k: name(v) for k, v in value.items()}
        out = {}
        for k, v in value.items():
            if k == "annotations" and key == "metadata":
                continue
            if isinstance(v, str) and (k in NAME_FIELDS or (k == "name" and key in NAMED_PARENTS)):
                out[k] = name(v)
            elif isinstance(v, str) and k == "image" and key in CONTAINER_LISTS:
                out[k] = image(v)
            elif k == "names" and key == "images" and isinstance(v, list):
                out[k] = [image(i) if isinstance(i, str) else i for i in v]
            elif k == "namespaces" and isinstance(v, list):
                out[k] = [name(i) if isinstance(i, str) else i for i in v]
            else:
                out[k] = _walk(v, k, name, image, key)
        return out
    if isinstance(value, list):
        # Items of a list are found under the list's own key (a container under "containers").
        return [_walk(v, key, name, image, parent) for v in value]
    return value

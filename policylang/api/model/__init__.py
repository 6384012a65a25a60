"""Typed cluster objects, shaped as the Kubernetes API prints them.

Attribute names are the API's field names in snake_case; policies use the API's own
camelCase names (``pod.spec.nodeSelector``), mapped by ``api_name``. Defaults are the
API server's defaults, so a manifest that was never submitted reads like a stored object.

One module per family of kinds, each building on the ones before it:

    meta.py       ObjectMeta, label and node selectors, api_name
    nodes.py      Node
    pods.py       Pod, with its containers, affinity, tolerations and volume sources
    workloads.py  Namespace, PriorityClass, Service, Workload, PodDisruptionBudget
    storage.py    PersistentVolume(Claim), StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
                  VolumeAttachment
    resource.py   resource.k8s.io/v1: DeviceClass, ResourceClaim(Template), ResourceSlice

Callers import every kind from here (``from policylang.api.model import Pod``). The whole
of each module is re-exported, the names its annotations use included (``Optional``,
``Quantity``, ``ResourceList``): ``types.py`` reads the classes and their type hints in this
namespace (``vars(model)``, after ``load_all()``).

storage.py and resource.py (61 classes, half the time the model takes to build) are imported
on the first use of a name they define: a cluster without volumes or devices never uses one.
"""

import importlib

from .meta import *  # noqa: F401,F403
from .nodes import *  # noqa: F401,F403
from .pods import *  # noqa: F401,F403
from .workloads import *  # noqa: F401,F403

_ON_FIRST_USE = (".storage", ".resource")


def load_all() -> None:
    """Import the modules built on first use, their names joining this namespace."""
    for name in _ON_FIRST_USE:
        module = importlib.import_module(name, __name__)
        globals().update({k: v for k, v in vars(module).items() if not k.startswith("_")})   # as `import *`


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    load_all()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

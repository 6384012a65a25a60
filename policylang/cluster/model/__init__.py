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

Callers import every kind from here (``from policylang.cluster.model import Pod``). The whole
of each module is re-exported, the names its annotations use included (``Optional``,
``Quantity``, ``ResourceList``): ``types.py`` reads the classes and their type hints in this
namespace (``vars(model)``).
"""

from .meta import *  # noqa: F401,F403
from .nodes import *  # noqa: F401,F403
from .pods import *  # noqa: F401,F403
from .workloads import *  # noqa: F401,F403
from .storage import *  # noqa: F401,F403
from .resource import *  # noqa: F401,F403

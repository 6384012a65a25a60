"""The indexes ClusterState keeps beside its objects, one object per index, each in its own
module, registered in ``INDEXES``.

An index is made from the state once its nodes are known (``Index(state)``) and is told of
every pod that arrives on a node (``arrive(pod, node_name)``: bound, or bound when the state
was built) and that leaves one (``leave(pod, node_name)``: removed, evicted), after the state's
core (its pods, pods_by_node and the node's version) has changed. The state calls them in the
order of ``INDEXES``; an index that reads another says so below.
"""

from __future__ import annotations

from .affinity import PodsWithAffinity
from .claims import ClaimUsers
from .counts import SelectorCounts
from .domains import DomainCounts
from .dra import DeviceAllocations
from .images import Images
from .labels import LabelPools
from .placed_terms import PlacedTerms
from .requested import Requested
from .storage import Storage

INDEXES = (
    ("requested", Requested),           # NodeInfo.Requested / NonZeroRequested per node
    ("labels", LabelPools),             # bound pods by namespace and label: pods_matching
    ("counts", SelectorCounts),         # per node, the pods a selector selects (reads labels)
    ("domains", DomainCounts),          # those counts per topology domain (after counts: reads what it changed)
    ("affinity", PodsWithAffinity),     # NodeInfo.PodsWithAffinity / PodsWithRequiredAntiAffinity
    ("placed_terms", PlacedTerms),      # the bound pods' pod (anti-)affinity terms, grouped by term
    ("claims", ClaimUsers),             # NodeInfo.PVCRefCounts: bound pods per claim
    ("storage", Storage),               # PVs by class, attachments by node, VolumeBinding's Reserve (no hooks)
    ("images", Images),                 # the nodes holding each image (node objects only: no hooks)
    ("devices", DeviceAllocations),     # DRA: slices by node, devices in use, DynamicResources' Reserve (no hooks)
)

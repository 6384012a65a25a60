"""Hypothesis strategies for clusters large enough that node sampling (percentageOfNodesToScore)
changes which nodes a scheduling cycle visits: tests/test_oracle_sampling.py.

kube-scheduler stops filtering once it has found numFeasibleNodesToFind feasible nodes, and only
from 100 nodes on (minFeasibleNodesToFind, pkg/scheduler/schedule_one.go), so these clusters
have from just under 100 nodes to a few hundred. It walks the nodes in its node tree's order
(pkg/scheduler/backend/cache/node_tree.go): zones in the order each first reached the cache, one
node of each zone in turn, nodes within a zone in arrival order. So the nodes here arrive
shuffled (their names do not sort as they arrived), spread over zones keyed by every label
utilnode.GetZoneKey reads (component-helpers node/topology/helpers.go: the beta
failure-domain labels before topology.kubernetes.io, region and zone), some with none.

Nodes are copies of a few drawn pools (kept cheap: a 300-node cluster is drawn in milliseconds),
renamed; the arrival order and the pool and zone of each node come from one drawn seed.
"""

from __future__ import annotations

import random
from functools import lru_cache

from hypothesis import strategies as st

import strategies as S

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
REGION = "topology.kubernetes.io/region"

# Zone labels a node can carry: none, the stable zone, zone and region, the deprecated beta
# labels (which win over the stable ones in GetZoneKey, even when they say something else), and
# a region alone (a zone key of its own).
ZONE_LABELS = [
    {},
    {S.ZONE_KEY: "zone-a"},
    {S.ZONE_KEY: "zone-b"},
    {S.ZONE_KEY: "zone-c", REGION: "r1"},
    {S.ZONE_KEY: "zone-a", REGION: "r2"},
    {BETA_ZONE: "zone-b", S.ZONE_KEY: "zone-a"},
    {REGION: "r1"},
]


# A node most pods fit: without it, pools that all refuse a pod would leave nothing to sample.
ROOMY = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "roomy", "labels": {}}, "spec": {},
         "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}


def _placed(pool: dict, name: str, zone: dict) -> dict:
    """A copy of ``pool`` named ``name`` in ``zone``; its spec and status are the pool's own
    (shared, not copied: nothing changes them, and Cluster.objects copies before typing)."""
    labels = {k: v for k, v in pool["metadata"]["labels"].items()
              if k not in (S.ZONE_KEY, BETA_ZONE, REGION, BETA_REGION)}
    return {**pool, "metadata": {"name": name, "labels": {**labels, **zone, S.HOSTNAME_KEY: name}}}


_POOLS = st.lists(S.nodes("pool"), min_size=1, max_size=3)
_ZONE_CHOICES = st.lists(st.sampled_from(range(len(ZONE_LABELS))), min_size=1, max_size=4, unique=True)


@lru_cache(maxsize=None)
@st.composite
def sampled_clusters(draw, min_nodes: int = 90, max_nodes: int = 300, max_pods: int = 3) -> S.Cluster:
    """A cluster of ``min_nodes``..``max_nodes`` nodes (copies of a roomy node and of one to
    three drawn pools, so that most pods fit many of them, more than the search wants), in a
    shuffled arrival order over one to four zone keys, and a few pods bound to them."""
    count = draw(S.integers(min_nodes, max_nodes))
    pools = [ROOMY, *draw(_POOLS)]
    zones = draw(_ZONE_CHOICES)
    rng = random.Random(draw(S.integers(0, 2**32 - 1)))
    names = [f"node-{i}" for i in range(count)]
    rng.shuffle(names)
    node_dicts = [_placed(rng.choice(pools), name, ZONE_LABELS[rng.choice(zones)]) for name in names]
    hosts = tuple(names[:max_pods])     # a few nodes (names shuffled) run the bound pods
    pod_dicts = [draw(S.pods(f"running-{i}", hosts, bound=True))
                 for i in range(draw(S.integers(0, max_pods)))]
    return S.Cluster(tuple(node_dicts), tuple(pod_dicts))


# 0: adaptive; 100: every node. For a batch, None is the profile's (the default profile has
# none, so adaptive); for one cycle policylang's eval and the oracle read None as every node.
PERCENTAGES = [0, 1, 5, 10, 30, 50, 70, 100]


@lru_cache(maxsize=None)
def percentages(profile: bool = False) -> st.SearchStrategy:
    return st.sampled_from([None, *PERCENTAGES] if profile else PERCENTAGES)


def widely_fitting(pod: dict) -> dict:
    """``pod`` without what rules most nodes out (a nodeSelector, required node affinity and
    inter-pod affinity, hard spread constraints), so that it fits more nodes than a sampled
    search wants; its preferences stay, and with them the scores of the nodes it visits."""
    spec = {k: v for k, v in pod["spec"].items() if k != "nodeSelector"}
    affinity = {k: v for k, v in spec.get("affinity", {}).items() if k == "nodeAffinity"}
    preferred = affinity.get("nodeAffinity", {}).get("preferredDuringSchedulingIgnoredDuringExecution")
    spec.pop("affinity", None)
    if preferred:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    spread = [c for c in spec.pop("topologySpreadConstraints", []) if c["whenUnsatisfiable"] == "ScheduleAnyway"]
    if spread:
        spec["topologySpreadConstraints"] = spread
    return {**pod, "spec": spec}


@lru_cache(maxsize=None)
@st.composite
def sampled_pods(draw, name: str) -> dict:
    """A pending pod (tests/strategies.py's), half the time one that fits widely."""
    pod = draw(S.pods(name, ()))
    return widely_fitting(pod) if draw(st.booleans()) else pod

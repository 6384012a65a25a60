"""Hypothesis strategies for storage: StorageClasses, PersistentVolumes and their claims,
CSINodes and CSIDrivers, and pods that use them (claims, generic ephemeral volumes, inline
in-tree and CSI volumes), for tests/test_oracle_volumes.py, where the four volume plugins
(VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits) decide beside upstream's.

Every object is one the API server accepts (pkg/apis/core/validation, pkg/apis/storage/
validation), so that what is compared is what a real cluster can hold; the test checks it with
policylang's transcription of that validation (policylang.cluster.load.problems). In particular:
a PersistentVolume has exactly one source, and a `local` one has node affinity; a claim asks for
storage and at least one access mode; ReadWriteOncePod is never combined with another mode;
volume names in a pod are distinct DNS labels. A StorageClass without volumeBindingMode is
defaulted to Immediate by the API server (as by policylang's loader and the oracle's decoder):
the PreFilter error upstream gives for a class without a mode cannot be reached from a dump.

Small vocabularies again: two CSI drivers, two in-tree plugins migrated to them, three
classes, a handful of volumes and claims, so that claims find (or miss) volumes, volumes collide
on a node, and attach limits are reached.

:func:`volume_clusters` is the strategy; the functions it calls draw with its ``draw`` (plain
helpers, not composites: see tests/strategies.py's note on strategies built once), from
strategies built once (module constants, and ``S.sampled``/``S.integers`` for the
parametrised ones).
"""

from __future__ import annotations

from functools import lru_cache

from hypothesis import strategies as st

import strategies as S

CSI_DRIVER = "csi.example.com"
EBS_DRIVER = "ebs.csi.aws.com"
PD_DRIVER = "pd.csi.storage.gke.io"
# In-tree plugins and the CSI drivers they migrate to (k8s.io/csi-translation-lib plugins/).
EBS_PLUGIN = "kubernetes.io/aws-ebs"
PD_PLUGIN = "kubernetes.io/gce-pd"
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"
NO_PROVISIONER = "kubernetes.io/no-provisioner"

CLASSES = ["sc-0", "sc-1", "sc-2"]
EPHEMERAL_CLASS = "sc-0"    # WaitForFirstConsumer: generic ephemeral volumes' claims are bound here
MODES = ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"]
SIZES = ["1Gi", "2Gi", "5Gi", "10Gi"]
NAMESPACE = "default"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


@lru_cache(maxsize=None)
def access_modes() -> st.SearchStrategy[list]:
    """One or more of RWO/ROX/RWX, or ReadWriteOncePod alone (validation refuses it with others)."""
    return st.one_of(st.lists(st.sampled_from(MODES), min_size=1, max_size=2, unique=True),
                     st.just(["ReadWriteOncePod"]))


@lru_cache(maxsize=None)
def _some(values: tuple) -> st.SearchStrategy[list]:
    """One or two of ``values``, distinct."""
    return st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True)


_MIGRATED_PLUGINS = st.lists(st.sampled_from([EBS_PLUGIN, PD_PLUGIN]), max_size=2, unique=True)


def _zone_terms(draw) -> list:
    return [{"matchLabelExpressions": [{"key": S.ZONE_KEY, "values": draw(_some(tuple(S.ZONES)))}]}]


def storage_classes(draw, name: str, delayed: bool = False) -> dict:
    """A StorageClass: a CSI or in-tree provisioner, or none (static volumes only); Immediate,
    WaitForFirstConsumer or unset (the API's default, Immediate); sometimes allowedTopologies."""
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
          "provisioner": draw(S.sampled((CSI_DRIVER, EBS_DRIVER, EBS_PLUGIN, NO_PROVISIONER)))}
    mode = ("WaitForFirstConsumer" if delayed
            else draw(S.sampled((None, "Immediate", "WaitForFirstConsumer", "WaitForFirstConsumer"))))
    if mode is not None:
        sc["volumeBindingMode"] = mode
    if S.maybe(draw, 1, 4):
        sc["allowedTopologies"] = _zone_terms(draw)
    return sc


def node_selector(draw, node_names: tuple) -> dict:
    """A PersistentVolume's required node affinity: by zone, or by hostname."""
    if node_names and draw(st.booleans()):
        values = draw(_some(tuple(node_names)))
        term = {"matchExpressions": [{"key": S.HOSTNAME_KEY, "operator": "In", "values": values}]}
    else:
        term = {"matchExpressions": [{"key": S.ZONE_KEY, "operator": "In", "values": draw(_some(tuple(S.ZONES)))}]}
    return {"required": {"nodeSelectorTerms": [term]}}


def persistent_volumes(draw, name: str, node_names: tuple) -> dict:
    """A PersistentVolume of one source (CSI, migrated in-tree EBS or GCE PD, local, hostPath),
    a class (or none), sometimes node affinity and zone labels (VolumeZone reads those)."""
    source = draw(S.sampled(("csi", "csi", "csi", "ebs", "pd", "local", "hostPath")))
    spec = {"capacity": {"storage": draw(S.sampled(tuple(SIZES)))}, "accessModes": draw(access_modes()),
            "persistentVolumeReclaimPolicy": "Retain"}
    if source == "csi":
        spec["csi"] = {"driver": draw(S.sampled((CSI_DRIVER, EBS_DRIVER))), "volumeHandle": f"h-{name}"}
    elif source == "ebs":
        spec["awsElasticBlockStore"] = {"volumeID": f"vol-{name}"}
    elif source == "pd":
        spec["gcePersistentDisk"] = {"pdName": f"pd-{name}"}
    elif source == "local":
        spec["local"] = {"path": f"/mnt/{name}"}
    else:
        spec["hostPath"] = {"path": f"/data/{name}"}
    if source == "local" or S.maybe(draw, 1, 3):
        spec["nodeAffinity"] = node_selector(draw, node_names)
    cls = draw(S.sampled((*CLASSES, "")))
    if cls:
        spec["storageClassName"] = cls
    labels = {}
    if S.maybe(draw, 1, 3):
        zones = draw(_some(tuple(S.ZONES)))
        labels[draw(S.sampled((S.ZONE_KEY, BETA_ZONE)))] = "__".join(zones)  # LabelZonesToSet's separator
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": {"phase": "Available"}}


def claims(draw, name: str, node_names: tuple) -> dict:
    """A PersistentVolumeClaim (unbound: binding is done by :func:`storage`): a class of the
    vocabulary, none (""), unset, or one that does not exist; sometimes a selected node."""
    spec = {"accessModes": draw(access_modes()),
            "resources": {"requests": {"storage": draw(S.sampled(tuple(SIZES[:3])))}}}
    cls = draw(S.sampled((*CLASSES, *CLASSES, "", None, "gone")))
    if cls is not None:
        spec["storageClassName"] = cls
    if S.maybe(draw, 1, 6):     # a label selector over the volumes' (zone) labels
        spec["selector"] = {"matchExpressions": [{"key": S.ZONE_KEY,
                                                  "operator": draw(S.sampled(("Exists", "DoesNotExist")))}]}
    metadata = {"name": name, "namespace": NAMESPACE}
    if node_names and S.maybe(draw, 1, 8):
        metadata["annotations"] = {SELECTED_NODE: draw(S.sampled(tuple(node_names)))}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec,
            "status": {"phase": "Pending"}}


def bind(claim: dict, volume: dict) -> tuple:
    """The claim and the volume bound to each other, as the PV controller leaves them."""
    claim = {**claim, "metadata": {**claim["metadata"], "annotations": {
        **claim["metadata"].get("annotations", {}), BIND_COMPLETED: "yes"}},
             "spec": {**claim["spec"], "volumeName": volume["metadata"]["name"]},
             "status": {"phase": "Bound", "accessModes": volume["spec"]["accessModes"],
                        "capacity": volume["spec"]["capacity"]}}
    volume = {**volume, "spec": {**volume["spec"], "claimRef": {
        "kind": "PersistentVolumeClaim", "namespace": NAMESPACE, "name": claim["metadata"]["name"]}},
              "status": {"phase": "Bound"}}
    return claim, volume


def csi_nodes(draw, node: str) -> dict:
    """A node's CSINode: some of the drivers with an attach limit (or none), and sometimes the
    in-tree plugins it lists as migrated (VolumeBinding then checks their bound volumes as CSI
    translates them; NodeVolumeLimits counts AWS EBS and GCE PD volumes against their CSI
    driver's limit on any node with a CSINode, annotation or not)."""
    drivers = [d for d in (CSI_DRIVER, EBS_DRIVER, PD_DRIVER) if S.maybe(draw, 2, 3)]
    spec_drivers = []
    for d in drivers:
        entry = {"name": d, "nodeID": f"{node}-{d}"}
        if S.maybe(draw, 3, 4):
            entry["allocatable"] = {"count": draw(S.integers(0, 2))}
        spec_drivers.append(entry)
    metadata = {"name": node}
    migrated = draw(_MIGRATED_PLUGINS)
    if migrated:
        metadata["annotations"] = {MIGRATED: ",".join(migrated)}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": metadata,
            "spec": {"drivers": spec_drivers}}


def csi_drivers(draw, name: str) -> dict:
    """A CSIDriver: whether it needs attaching, and whether it publishes storage capacity (then
    VolumeBinding provisions a claim of its classes only where a CSIStorageCapacity has room)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
            "spec": {"attachRequired": draw(st.booleans()), "storageCapacity": S.maybe(draw, 1, 2)}}


def storage_capacities(draw, name: str, node_names: tuple) -> dict:
    """A CSIStorageCapacity of one class, for the nodes of a zone or one node (or all nodes,
    no topology), with its capacity and sometimes a maximum volume size."""
    cap = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
           "metadata": {"name": name, "namespace": NAMESPACE}, "storageClassName": draw(S.sampled(tuple(CLASSES))),
           "capacity": draw(S.sampled(("500Mi", *SIZES)))}
    topology = draw(S.sampled(("zone", "host", "none")))
    if topology == "zone":
        cap["nodeTopology"] = {"matchLabels": {S.ZONE_KEY: draw(S.sampled(tuple(S.ZONES)))}}
    elif topology == "host" and node_names:
        cap["nodeTopology"] = {"matchLabels": {S.HOSTNAME_KEY: draw(S.sampled(tuple(node_names)))}}
    if S.maybe(draw, 1, 4):
        cap["maximumVolumeSize"] = draw(S.sampled(tuple(SIZES[:2])))
    return cap


def storage(draw, node_names: tuple) -> list:
    """Classes, volumes and claims, CSINodes for some nodes, CSIDrivers for some drivers, storage
    capacities and attachments: the cluster's storage objects. Most claims of an Immediate
    class (or of none) are bound, to a volume made for them (an unbound one stops the pod in
    PreFilter, so no node is looked at); claims of a WaitForFirstConsumer class are mostly left
    for the scheduler to bind."""
    classes = [storage_classes(draw, name, delayed=name == EPHEMERAL_CLASS) for name in CLASSES]
    delayed = {c["metadata"]["name"] for c in classes if c.get("volumeBindingMode") == "WaitForFirstConsumer"}
    volumes = [persistent_volumes(draw, f"pv-{i}", node_names) for i in range(draw(S.integers(0, 3)))]
    pvcs = []
    for i in range(draw(S.integers(0, 4)) if S.maybe(draw, 1, 5) else draw(S.integers(1, 4))):
        claim = claims(draw, f"claim-{i}", node_names)
        cls = claim["spec"].get("storageClassName")
        if S.maybe(draw, 1, 4) if cls in delayed else S.maybe(draw, 11, 12):
            volume = persistent_volumes(draw, f"pv-for-{i}", node_names)
            volume["spec"]["accessModes"] = claim["spec"]["accessModes"]
            volume["spec"].pop("storageClassName", None)
            if cls:
                volume["spec"]["storageClassName"] = cls
            claim, volume = bind(claim, volume)
            volumes.append(volume)
        elif S.maybe(draw, 1, 6):    # a volume pre-bound to the claim (claimRef), the claim still unbound
            volume = persistent_volumes(draw, f"pv-for-{i}", node_names)
            volume["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": NAMESPACE,
                                          "name": claim["metadata"]["name"]}
            volumes.append(volume)
        pvcs.append(claim)
    nodes = [csi_nodes(draw, n) for n in node_names if S.maybe(draw, 3, 4)]
    drivers = [csi_drivers(draw, d) for d in (CSI_DRIVER, EBS_DRIVER) if S.maybe(draw, 1, 2)]
    capacities = [storage_capacities(draw, f"cap-{i}", node_names) for i in range(draw(S.integers(0, 2)))]
    attachments = [volume_attachment(v, draw(S.sampled(tuple(node_names)))) for v in volumes
                   if "csi" in v["spec"] and node_names and S.maybe(draw, 1, 4)]
    return [*classes, *volumes, *pvcs, *nodes, *drivers, *capacities, *attachments]


def volume_attachment(volume: dict, node: str) -> dict:
    """A CSI volume attached to a node (NodeVolumeLimits counts it there even without a pod)."""
    name = volume["metadata"]["name"]
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": f"va-{name}"},
            "spec": {"attacher": volume["spec"]["csi"]["driver"], "nodeName": node,
                     "source": {"persistentVolumeName": name}},
            "status": {"attached": True}}


def pod_volumes(draw, pod_name: str, claim_names: tuple) -> list:
    """A pod's volumes: claims (of the cluster's, or one that does not exist), a generic ephemeral
    volume, inline in-tree EBS and GCE PD disks (VolumeRestrictions: one disk, two pods), an
    inline CSI volume, and volumes no plugin looks at."""
    out = []
    for i in range(draw(S.integers(0, 3)) if S.maybe(draw, 1, 5) else draw(S.integers(1, 3))):
        kind = draw(S.sampled(("claim", "claim", "claim", "claim", "ephemeral", "ebs", "pd", "csi",
                                     "emptyDir")))
        name = f"v{i}"
        if kind == "claim" and not claim_names and not S.maybe(draw, 1, 5):
            kind = "ephemeral"
        if kind == "claim":
            claim = (draw(S.sampled(tuple(claim_names))) if claim_names and not S.maybe(draw, 1, 12)
                     else "missing")
            vol = {"persistentVolumeClaim": {"claimName": claim}}
            if S.maybe(draw, 1, 4):
                vol["persistentVolumeClaim"]["readOnly"] = True
        elif kind == "ephemeral":
            vol = {"ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": EPHEMERAL_CLASS,
                "resources": {"requests": {"storage": "1Gi"}}}}}}
        elif kind == "ebs":
            vol = {"awsElasticBlockStore": {"volumeID": draw(S.sampled(("vol-a", "vol-b")))}}
        elif kind == "pd":
            vol = {"gcePersistentDisk": {"pdName": draw(S.sampled(("pd-a", "pd-b"))),
                                         "readOnly": draw(st.booleans())}}
        elif kind == "csi":
            vol = {"csi": {"driver": draw(S.sampled((CSI_DRIVER, EBS_DRIVER)))}}
        else:
            vol = {"emptyDir": {}}
        out.append({"name": name, **vol})
    return out


def ephemeral_claim(pod: dict, volume: dict) -> dict:
    """The claim the ephemeral volume controller creates for a pod's generic ephemeral volume:
    named <pod>-<volume>, controlled by the pod."""
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"{meta['name']}-{volume['name']}", "namespace": meta["namespace"],
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                              "uid": meta["uid"], "controller": True}]},
            "spec": volume["ephemeral"]["volumeClaimTemplate"]["spec"], "status": {"phase": "Pending"}}


def simple_pod(name: str, volumes: list, node: "str | None" = None) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}], "volumes": volumes},
           "status": {"phase": "Pending"}}
    if node is not None:
        pod["spec"]["nodeName"] = node
        pod["status"]["phase"] = "Running"
    return pod


@lru_cache(maxsize=None)
@st.composite
def volume_clusters(draw, pending: int = 1) -> tuple:
    """(objects, pending pods): nodes (tests/strategies.py's, in zones, untainted), the storage objects,
    pods bound to the nodes that use volumes, and ``pending`` pods with volumes of their own;
    the claims of some generic ephemeral volumes exist (created for their pod), others not yet."""
    cluster = draw(S.clusters(min_nodes=1, max_nodes=4, max_pods=2, affinity=False))
    # Without taints and cordons, which would rule out most nodes before the volume plugins.
    cluster = cluster.evolve(nodes=[{**n, "spec": {}} for n in cluster.nodes])
    names = tuple(cluster.node_names)
    stored = storage(draw, names)
    claim_names = tuple(o["metadata"]["name"] for o in stored if o["kind"] == "PersistentVolumeClaim")
    bound = [simple_pod(f"user-{i}", pod_volumes(draw, f"user-{i}", claim_names), draw(S.sampled(tuple(names))))
             for i in range(draw(S.integers(0, 3)))]
    pods = []
    for i in range(pending):
        volumes = pod_volumes(draw, f"pending-{i}", claim_names)
        if S.maybe(draw, 1, 3):     # with tests/strategies.py's constraints; else only its volumes
            pod = draw(S.pods(f"pending-{i}", (), affinity=False, namespace=NAMESPACE))
            pod["metadata"]["uid"] = f"uid-pending-{i}"
            pod["spec"]["volumes"] = volumes
        else:
            pod = simple_pod(f"pending-{i}", volumes)
        pods.append(pod)
    ephemeral = [ephemeral_claim(p, v) for p in [*bound, *pods] for v in p["spec"]["volumes"]
                 if "ephemeral" in v and S.maybe(draw, 7, 8)]
    return [*cluster.nodes, *stored, *ephemeral, *cluster.pods, *bound], pods

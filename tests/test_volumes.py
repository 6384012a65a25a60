"""Storage: the loader's storage kinds and defaults, the volume plugins through the default
profile, paths upstream's test tables leave out (facts from the plugins' source, see
notes in tests/conformance/volume_*.yaml), and simulate's VolumeBinding Reserve."""

import json

import yaml

from policylang import load_cluster, load_plans
from policylang.cli import main
from policylang.cluster.load import structure_object
from policylang.run.schedule import Executable, schedule
from policylang.forecast.simulate import simulate


def node(name, **labels):
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name, *claims, node=None, ephemeral=()):
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    volumes += [{"name": e, "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "local"}}}}
                for e in ephemeral]
    p = {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
         "spec": {"containers": [{"name": "c", "image": "app"}], "volumes": volumes}}
    if node:
        p["spec"]["nodeName"] = node
        p["status"] = {"phase": "Running"}
    return p


def claim(name, size="1Gi", storage_class="local", modes=("ReadWriteOnce",), volume=None, **meta):
    c = {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default", **meta},
         "spec": {"storageClassName": storage_class, "accessModes": list(modes),
                  "resources": {"requests": {"storage": size}}}}
    if volume:
        c["spec"]["volumeName"] = volume
        c["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
    return c


def local_pv(name, host, size="10Gi", storage_class="local", **labels):
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": labels},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}},
            "status": {"phase": "Available"}}


WAIT = {"kind": "StorageClass", "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"}


def state_of(tmp_path, items):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"kind": "List", "items": items}))
    return load_cluster([path])


def decide(tmp_path, items, incoming):
    state = state_of(tmp_path, items)
    exe = Executable(load_plans()["default-scheduler"])
    return schedule(exe, state, structure_object(incoming, "<pod>"))


# ---- loading -----------------------------------------------------------------------------

def test_storage_kinds_load_with_the_api_servers_defaults(tmp_path):
    state = state_of(tmp_path, [
        {"kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p"},
        {"kind": "PersistentVolume", "metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"}}},
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "c"}},
        {"kind": "CSIDriver", "metadata": {"name": "d"}},
        {"kind": "CSINode", "metadata": {"name": "n"}, "spec": {"drivers": [{"name": "d", "nodeID": "i-1",
                                                                              "allocatable": {"count": 3}}]}},
        {"kind": "CSIStorageCapacity", "metadata": {"name": "cap"}, "storageClassName": "sc", "capacity": "5Gi"},
        {"kind": "VolumeAttachment", "metadata": {"name": "va"},
         "spec": {"attacher": "d", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}},
    ])
    sc = state.storage_classes["sc"]
    assert (sc.volume_binding_mode, sc.reclaim_policy) == ("Immediate", "Delete")
    pv = state.persistent_volumes["pv"]
    assert (pv.spec.volume_mode, pv.spec.persistent_volume_reclaim_policy, pv.status.phase) == \
        ("Filesystem", "Retain", "Pending")
    c = state.claims[("default", "c")]
    assert (c.spec.volume_mode, c.status.phase) == ("Filesystem", "Pending")
    assert state.csi_drivers["d"].spec.storage_capacity is False and state.csi_drivers["d"].spec.attach_required
    assert state.csi_nodes["n"].spec.drivers[0].node_id == "i-1"
    assert state.csi_storage_capacities[0].metadata.namespace == "default"
    assert [va.metadata.name for va in state.volume_attachments_on("n")] == ["va"]


def test_written_state_keeps_storage(tmp_path, capsys):
    items = [node("n1"), WAIT, local_pv("pv-1", "n1"), claim("data")]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"kind": "List", "items": items}))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(pod("web", "data")))
    out = tmp_path / "after.yaml"
    main(["simulate", "--cluster", str(tmp_path / "c.yaml"), "--pods", str(tmp_path / "p.yaml"),
          "--write-state", str(out), "-o", "json"])
    capsys.readouterr()
    after = load_cluster([out])
    assert after.persistent_volumes["pv-1"].spec.claim_ref.name == "data"
    assert after.storage_classes["local"].volume_binding_mode == "WaitForFirstConsumer"


# ---- the default profile -------------------------------------------------------------------

def test_bound_volume_keeps_the_pod_on_its_node(tmp_path):
    items = [node("a"), node("b"), WAIT, local_pv("pv-a", "a"), claim("data", volume="pv-a")]
    d = decide(tmp_path, items, pod("web", "data"))
    assert d.selected == "a"
    assert d.fit_error is None
    b = next(n for n in d.nodes if n.name == "b")
    assert (b.failure.plugin, b.failure.reasons) == ("VolumeBinding",
                                                   ("node(s) didn't match PersistentVolume's node affinity",))


def test_volume_zone_message_in_the_fit_error(tmp_path):
    zoned = {"kind": "PersistentVolume", "metadata": {"name": "pv-z", "labels": {"topology.kubernetes.io/zone": "z1"}},
             "spec": {"capacity": {"storage": "1Gi"}, "storageClassName": "local"}, "status": {"phase": "Bound"}}
    items = [node("a", **{"topology.kubernetes.io/zone": "z2"}), WAIT, zoned, claim("data", volume="pv-z")]
    d = decide(tmp_path, items, pod("web", "data"))
    assert d.fit_error == "0/1 nodes are available: 1 node(s) had no available volume zone."


def test_missing_claim_stops_the_pod_in_prefilter(tmp_path):
    d = decide(tmp_path, [node("a"), WAIT], pod("web", "nope"))
    # VolumeRestrictions' PreFilter runs first and finds the claim missing.
    assert d.fit_error == '0/1 nodes are available: persistentvolumeclaim "nope" not found.'


def test_volume_zone_facts_beyond_upstream_tables(tmp_path):
    """volume_zone.go: a claim or volume that is missing stops the pod; a label value with an
    empty zone in its "__" list is ignored ("z1____z3": a valid label value, as the API server
    requires, whose list is z1, "" and z3)."""
    items = [node("a", **{"topology.kubernetes.io/zone": "z2"}), WAIT,
             claim("gone", volume="no-such-pv"),
             {"kind": "PersistentVolume", "metadata": {"name": "pv-bad",
                                                       "labels": {"topology.kubernetes.io/zone": "z1____z3"}},
              "spec": {"storageClassName": "local"}},
             claim("bad-label", volume="pv-bad")]
    d = decide(tmp_path, items, pod("web", "gone"))
    assert d.fit_error == '0/1 nodes are available: persistentvolume "no-such-pv" not found.'
    d = decide(tmp_path, items, pod("web", "bad-label"))
    assert d.selected == "a"


# ---- simulate: VolumeBinding's Reserve -------------------------------------------------------

def _simulate(tmp_path, items, pods):
    state = state_of(tmp_path, items)
    exe = Executable(load_plans()["default-scheduler"])
    placements = simulate({"default-scheduler": exe}, state, [structure_object(p, "<pod>") for p in pods])
    return state, placements


def test_reserve_takes_the_smallest_volume_and_the_next_pod_sees_it_taken(tmp_path):
    items = [node("a"), node("b"), WAIT, local_pv("pv-small", "a", "5Gi"), local_pv("pv-big", "a", "20Gi"),
             claim("c1"), claim("c2"), claim("c3")]
    pods = [pod("p1", "c1"), pod("p2", "c2"), pod("p3", "c3")]
    state, placements = _simulate(tmp_path, items, pods)
    assert [p.node for p in placements] == ["a", "a", None]
    assert state.persistent_volumes["pv-small"].spec.claim_ref.name == "c1"
    assert state.persistent_volumes["pv-big"].spec.claim_ref.name == "c2"
    assert state.persistent_volumes["pv-small"].metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert placements[2].message.startswith(
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.")


def test_reserve_marks_claims_to_provision_with_the_node(tmp_path):
    dynamic = {"kind": "StorageClass", "metadata": {"name": "local"}, "provisioner": "csi.example.com",
               "volumeBindingMode": "WaitForFirstConsumer"}
    items = [node("a"), node("b"), dynamic, claim("shared", modes=("ReadWriteMany",))]
    state, placements = _simulate(tmp_path, items, [pod("p1", "shared"), pod("p2", "shared")])
    first = placements[0].node
    assert state.claims[("default", "shared")].metadata.annotations["volume.kubernetes.io/selected-node"] == first
    # The claim now waits for its volume on that node: the second pod can only go there.
    assert placements[1].node == first


def test_a_read_write_once_pod_claim_is_used_once(tmp_path):
    items = [node("a"), node("b"), WAIT, local_pv("pv-a", "a"),
             claim("solo", modes=("ReadWriteOncePod",), volume="pv-a")]
    state, placements = _simulate(tmp_path, items, [pod("p1", "solo"), pod("p2", "solo")])
    assert placements[0].node == "a" and placements[1].node is None
    assert "2 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use " \
           "by another pod" in placements[1].message


def test_generic_ephemeral_volume_uses_the_pods_claim(tmp_path):
    owned = claim("web-scratch", ownerReferences=[{"kind": "Pod", "name": "web", "uid": "uid-web", "controller": True}])
    items = [node("a"), node("b"), WAIT, local_pv("pv-b", "b"), owned]
    d = decide(tmp_path, items, pod("web", ephemeral=("scratch",)))
    assert d.selected == "b"
    d = decide(tmp_path, [node("a"), WAIT], pod("web", ephemeral=("scratch",)))
    assert d.fit_error == ('0/1 nodes are available: waiting for ephemeral volume controller to create the '
                           'persistentvolumeclaim "web-scratch".')


def test_eval_json_names_the_volume_plugin(tmp_path, capsys):
    items = [node("a"), WAIT, claim("c1")]
    (tmp_path / "c.json").write_text(json.dumps({"kind": "List", "items": items}))
    (tmp_path / "p.json").write_text(json.dumps(pod("web", "c1")))
    code = main(["eval", "--cluster", str(tmp_path / "c.json"), "--pod", str(tmp_path / "p.json"), "-o", "json"])
    result = json.loads(capsys.readouterr().out)["results"][0]
    assert code == 1
    assert result["nodes"][0]["failure"] == {"plugin": "VolumeBinding", "code": "UnschedulableAndUnresolvable",
                                             "reasons": ["node(s) didn't find available persistent volumes to bind"]}

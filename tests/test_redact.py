"""snapshot --redact (policylang/cluster/redact.py): what it replaces and keeps, that its table
classifies every field of the model, that no marker planted in a field it hashes or drops is
left, and that every decision on a redacted dump is the original's, up to the renaming."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given

from policylang.cluster.dump import dump_state
from policylang.cluster.load import load_documents
from policylang.diagnostics import InputError
from policylang.cluster import redact as R
from policylang.cluster.redact import redact, redact_image, renaming
from policylang.pending import is_pending
from policylang.report.decisions import eval_json
from policylang.run.schedule import schedule
import strategies as S
from test_properties import default_profile, scheduling_cases


def _node(name, labels, images=()):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels,
                                                             "annotations": {"secret": "s3cr3t"}},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}, "images": [{"names": list(images),
                                                                               "sizeBytes": 1000}]}}


def _doc(*objects):
    return dump_state(load_documents("<test>", [{"kind": "List", "items": list(objects)}]))


def test_names_label_values_and_images_are_replaced_and_the_rest_kept():
    doc = _doc(_node("worker-b", {"kubernetes.io/hostname": "worker-b", "cores": "64"}, ["nginx:latest"]),
               {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
                "spec": {"nodeName": "worker-b", "containers": [{"name": "c", "image": "nginx"}],
                         "tolerations": [{"key": "gpu", "operator": "Equal", "value": "yes"}],
                         "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                             "nodeSelectorTerms": [{"matchExpressions": [
                                 {"key": "cores", "operator": "Gt", "values": ["32"]}],
                                 "matchFields": [{"key": "metadata.name", "operator": "In",
                                                  "values": ["worker-b"]}]}]}}}}})
    out = redact(doc)
    node, pod = out["items"][0], out["items"][-1]
    mapping = renaming(doc)
    assert node["metadata"]["name"] == mapping["worker-b"] == node["metadata"]["labels"]["kubernetes.io/hostname"]
    assert node["metadata"]["labels"]["cores"] == "64"            # integers: Gt and Lt compare them
    assert "annotations" not in node["metadata"]
    assert pod["metadata"] == {"name": mapping["web"], "namespace": mapping["shop"],
                               "labels": {"app": mapping["web"]}}
    assert pod["spec"]["nodeName"] == mapping["worker-b"]
    # A toleration's value is renamed as the taint's it tolerates would be.
    assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Equal", "value": mapping["yes"]}]
    assert pod["spec"]["containers"][0]["name"] == mapping["c"]
    term = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["values"] == ["32"]
    assert term["matchFields"][0]["values"] == [mapping["worker-b"]]
    # nginx is pulled as nginx:latest: both become the same stand-in, which names nothing.
    assert pod["spec"]["containers"][0]["image"] == node["status"]["images"][0]["names"][0]
    assert "nginx" not in str(out) and "worker" not in str(out) and "shop" not in str(out)


def test_stand_ins_keep_the_order_of_the_names():
    doc = _doc(*(_node(n, {}) for n in ("zeta", "alpha", "mid")))
    mapping = renaming(doc)
    assert sorted(mapping, key=mapping.get) == ["alpha", "mid", "zeta"]


def test_image_stand_ins_keep_repository_and_tag_apart():
    assert redact_image("nginx") == redact_image("nginx:latest") != redact_image("nginx:1.27")
    assert redact_image("reg:5000/app@sha256:ab").split("@")[0] == redact_image("reg:5000/app:v1").split(":")[0]


def _renamed(value, mapping):
    if isinstance(value, dict):
        return {_renamed(k, mapping): _renamed(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, mapping) for v in value]
    if isinstance(value, str):
        if "/" in value and value.count("/") == 1:
            ns, name = value.split("/")
            if ns in mapping and name in mapping:
                return f"{mapping[ns]}/{mapping[name]}"
        if value in mapping:
            return mapping[value]
        # A message quotes names as Go's %q does: pod "ml/train-b", persistentvolumeclaim "data";
        # v1.37's CEL errors name a claim and a device bare: claim ns/name, device driver/pool/device.
        value = re.sub(r'"([^"]*)"', lambda m: f'"{_renamed(m.group(1), mapping)}"', value)
        # (a device's driver is kept, as everywhere).
        value = re.sub(r"(?<=claim )[^\s:]+", lambda m: "/".join(mapping.get(p, p) for p in m.group(0).split("/")),
                       value)
        return re.sub(r"(?<=device )([^\s/:]+)/([^\s:]+)",
                      lambda m: m.group(1) + "/" + "/".join(mapping.get(p, p) for p in m.group(2).split("/")), value)
    return value


def _decision_json(doc):
    state = load_documents("<test>", [doc])
    (pod,) = [p for p in state.pods if is_pending(p)]
    return json.loads(eval_json([schedule(default_profile(), state.without([pod]), pod)]))


@given(scheduling_cases())
def test_decisions_on_the_redacted_dump_are_the_originals_up_to_renaming(case):
    cluster, pod = case
    pod = {**pod, "spec": {k: v for k, v in pod["spec"].items() if k != "nodeName"}}   # pending in the dump
    try:
        doc = _doc(*cluster.nodes, *cluster.pods, pod)
    except InputError:
        # The generator makes some objects the API server would refuse (two spread constraints
        # alike); no dump holds those, so there is nothing to redact.
        assume(False)
    assert _decision_json(redact(doc)) == _renamed(_decision_json(doc), renaming(doc))


def test_a_dra_dump_decides_alike_once_redacted():
    # Claims, templates and classes are found by name, allocation results name their pool (often
    # the node's name): each is renamed where it is defined and wherever it is named.
    from pathlib import Path

    import yaml

    dra = Path(__file__).parent.parent / "examples" / "dra"
    cluster = yaml.safe_load((dra / "cluster.yaml").read_text())["items"]
    for name in ("notebook-1", "train-b"):
        pending = yaml.safe_load((dra / "pods" / f"{name}.yaml").read_text())
        if name == "train-b":   # its claim made, as the resourceclaim controller makes it
            pending["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": "train-b-gpus"}]
            claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": "train-b-gpus", "namespace": "ml", "ownerReferences": [
                         {"apiVersion": "v1", "kind": "Pod", "name": "train-b", "uid": "uid-train-b",
                          "controller": True}]},
                     "spec": next(o for o in cluster if o["metadata"]["name"] == "two-big-gpus")["spec"]["spec"]}
            doc = _doc(*cluster, claim, pending)
        else:
            doc = _doc(*cluster, pending)
        original = _decision_json(doc)
        assert original["results"][0]["selected"] is not None
        assert _decision_json(redact(doc)) == _renamed(original, renaming(doc))
        assert "gpu-node" not in json.dumps(redact(doc))


# ---- the table: every field of the model, each kept, hashed or dropped --------------------------

def _classified_classes() -> set[str]:
    """The model classes a dump can hold objects of, through the fields the table goes into."""
    from policylang.cluster.load import KINDS

    shapes, seen, todo = R.shapes(), set(), list(dict.fromkeys(KINDS.values()))
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            todo += [shape[0] for field, shape in shapes[cls].items()
                     if shape is not None and isinstance(R.TABLE.get(cls, {}).get(field), R.Into)]
    return seen


def test_the_table_classifies_every_field_of_every_kind_the_loader_reads():
    shapes, classes = R.shapes(), _classified_classes()
    assert sorted(classes - set(R.TABLE)) == [], "model classes redact.TABLE has no row for"
    assert sorted(set(R.TABLE) - classes) == [], "rows of redact.TABLE for classes no dump holds"
    unclassified = [f"{c}.{f}" for c in sorted(classes) for f in shapes[c] if f not in R.TABLE[c]]
    assert unclassified == [], "a new field of the model: classify it in redact.TABLE (keep, hash or drop)"
    stale = [f"{c}.{f}" for c in sorted(classes) for f in R.TABLE[c] if f not in shapes[c]]
    assert stale == []
    rules = {R.KEEP, R.DROP, R.ANNOTATIONS, *R.HASHED}
    for cls in classes:
        for field, rule in R.TABLE[cls].items():
            where = f"{cls}.{field}"
            if shapes[cls][field] is None:      # strings, numbers, quantities, maps of them
                assert rule in rules and not isinstance(rule, R.Into), where
            else:                               # objects of a model class: gone into, or dropped whole
                assert isinstance(rule, R.Into) or rule == R.DROP, where
                if isinstance(rule, R.Into):
                    assert set(rule.overrides) <= set(shapes[shapes[cls][field][0]]), where
    assert [f"{c}.{f}" for c in classes for f, r in R.TABLE[c].items() if r == R.ANNOTATIONS] == \
        ["ObjectMeta.annotations"]


def test_a_field_the_table_does_not_classify_is_an_error(monkeypatch):
    doc = _doc({**_node("n", {}), "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}})
    monkeypatch.delitem(R.TABLE["Taint"], "value")
    with pytest.raises(ValueError, match=r"Taint\.value is not in redact\.TABLE"):
        redact(doc)


def test_strings_the_scheduler_takes_apart_are_renamed_part_by_part():
    zone, region = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
    template = {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}
    doc = _doc(_node("node-1", {zone: "eu-west-1a", region: "eu-west-1"}),
               {"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": "pv", "labels": {zone: "eu-west-1a__eu-west-1b"}},
                "spec": {"awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/vol-0abc"}}},
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"containers": [{"name": "c", "image": "nginx",
                                         "ports": [{"containerPort": 80, "hostPort": 80, "hostIP": "0.0.0.0"},
                                                   {"containerPort": 81, "hostPort": 81, "hostIP": "10.0.0.7"}]}],
                         "volumes": [{"name": "scratch", "ephemeral": template},
                                     {"name": "disk", "awsElasticBlockStore": {"volumeID": "vol-0abc"}}]}})
    out, m = redact(doc), renaming(doc)
    node, pv, pod = out["items"][0], out["items"][1], out["items"][-1]
    # Zones keep their {locale}-{region}-{zone} parts, so a zone's region is still the same one;
    # VolumeZone reads a volume's zones off a "__"-joined list.
    zone_a, zone_b = m["eu-west-1a"], m["eu-west-1b"]
    assert zone_a.count("-") == 2 and zone_a.startswith("z") and zone_a.rsplit("-", 1)[0] == zone_b.rsplit("-", 1)[0]
    assert node["metadata"]["labels"][region] == m["eu-west-1"] == zone_a.rsplit("-", 1)[0] + "-1"
    assert pv["metadata"]["labels"][zone] == f"{zone_a}__{zone_b}"
    # The claim of a generic ephemeral volume is named <pod>-<volume>, and looked up so.
    assert m["web-scratch"] == f"{m['web']}-{m['scratch']}"
    # An EBS volume ID is the same bare or in an aws:// URL.
    bare = pod["spec"]["volumes"][1]["awsElasticBlockStore"]["volumeID"]
    assert bare.startswith("vol-") and pv["spec"]["awsElasticBlockStore"]["volumeID"] == f"aws://{zone_a}/{bare}"
    # NodePorts compares host IPs with the unspecified address.
    assert [p.get("hostIP") for p in pod["spec"]["containers"][0]["ports"]] == ["0.0.0.0", m["10.0.0.7"]]
    assert "0abc" not in json.dumps(out) and "eu-west" not in json.dumps(out)


# ---- markers planted in every field the table hashes or drops ----------------------------------

EXAMPLES = Path(__file__).parent.parent / "examples"
PLANTED = Path(__file__).parent / "fixtures" / "redact" / "every_field.yaml"
MARKER = re.compile(r"mk[0-9]{3}q")


def _planted_dump() -> dict:
    """examples/cluster.yaml and examples/dra/cluster.yaml with their pending pods, and an object
    of every kind with a marker in every field redact.TABLE hashes or drops."""
    paths = [EXAMPLES / "cluster.yaml", EXAMPLES / "dra" / "cluster.yaml", PLANTED,
             *sorted((EXAMPLES / "pods").glob("*.yaml")), *sorted((EXAMPLES / "dra" / "pods").glob("*.yaml"))]
    return dump_state(load_documents("<test>", [d for p in paths for d in yaml.safe_load_all(p.read_text())]))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _hidden(rule, value) -> list[str]:
    """The strings of a field's value that its rule hides (a label map's keys are kept, ...)."""
    if rule == R.LABELS:
        return list(value.values())
    if rule == R.HASH_KEYS:
        return list(value)
    if rule == R.ANNOTATIONS:
        return [s for k, v in value.items() for s in ([k, v] if k not in R.ANNOTATIONS_READ else
                                                       [] if R.ANNOTATIONS_READ[k] == R.KEEP else [v])]
    return list(_strings(value))


def test_no_marker_planted_in_a_field_the_table_hashes_or_drops_is_left():
    doc = _planted_dump()
    planted, kept, covered = set(), set(), set()
    for cls, field, rule, value in R.fields(doc):
        if isinstance(rule, R.Into):
            continue                    # its fields come one by one
        if rule == R.KEEP:
            kept |= {m for s in _strings(value) for m in MARKER.findall(s)}
            continue
        markers = {m for s in _hidden(rule, value) for m in MARKER.findall(s)}
        planted |= markers
        if markers:
            covered.add(f"{cls}.{field}")
    wanted = {f"{c}.{f}" for c, row in R.TABLE.items() for f, r in row.items()
              if r != R.KEEP and not isinstance(r, R.Into)}
    assert sorted(wanted - covered) == [], f"fields {PLANTED.name} has no marker in"
    assert not kept, "the fixture plants markers only where the table hashes or drops"
    text = json.dumps(redact(doc))
    assert sorted(set(MARKER.findall(text))) == []
    assert len(planted) > 100


def test_the_planted_dump_redacted_loads_and_decides_alike():
    doc = _planted_dump()

    def decisions(d):
        state = load_documents("<test>", [d])
        return [json.loads(eval_json([schedule(default_profile(), state.without([p]), p)]))["results"][0]
                for p in state.pods if is_pending(p)]

    original = decisions(doc)
    # What every_field.yaml's pending pods are there to show (see its comment).
    assert {r["pod"]["name"]: r["selected"] for r in original if r["pod"]["namespace"] == "mk110q"} == {
        "mk300q-vol": "mk101q-node", "mk390q-dra": None, "mk520q-wffc": None, "mk542q-sel": "mk101q-node",
        "mk550q-ebs": "mk101q-node"}
    assert any(r["selected"] for r in original if r["pod"]["namespace"] != "mk110q")     # the examples' own
    redacted = redact(doc)
    assert decisions(redacted) == _renamed(original, renaming(doc))
    assert not MARKER.search(json.dumps(decisions(redacted)))

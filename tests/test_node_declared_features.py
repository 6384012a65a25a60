"""NodeDeclaredFeatures across the versions: the fields it reads, loaded as each version's API
server stores them; the plugin in the default profile only where its gate is on; explain naming the
feature a node does not declare and what the pod would drop. The plugin's own decisions are the
conformance cases (tests/conformance/node_declared_features.yaml) and the oracle's
(tests/test_oracle_node_declared_features.py)."""

from __future__ import annotations

import json

import pytest

from policylang import load_plans
from policylang.cli import main
from policylang.cluster.load import structure_object
from policylang.cluster.validation.core import admitted_as
from policylang.diagnostics import InputError
from policylang.target import make_target

RULE = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}


def _pod(**spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "ml"},
            "spec": {"containers": [{"name": "worker", "image": "trainer:1",
                                     "resources": {"requests": {"cpu": "1"}}}], **spec}}


def _restart_all_pod():
    pod = _pod()
    pod["spec"]["containers"][0].update(restartPolicy="Never", restartPolicyRules=[RULE])
    return pod


def _node(name, features=None):
    status = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    if features is not None:
        status["declaredFeatures"] = features
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": status}


def _load(raw, version, gates=None):
    with admitted_as(make_target(version, gates)):
        return structure_object(raw, "f.yaml")


# ---- the API model --------------------------------------------------------------------------------

# pkg/registry/core/node/strategy.go dropDisabledFields: declaredFeatures kept only with the gate
# (v1.34's API has no such field).
@pytest.mark.parametrize("version, gates, kept", [
    ("1.34", None, False), ("1.35", None, False), ("1.35", "NodeDeclaredFeatures=true", True),
    ("1.36", None, True), ("1.37", None, True),
])
def test_declared_features_are_stored_only_where_the_gate_is_on(version, gates, kept):
    node = _load(_node("n", ["RestartAllContainersOnContainerExits"]), version, gates)
    assert node.status.declared_features == (("RestartAllContainersOnContainerExits",) if kept else ())


# pkg/apis/core/validation/validation_test.go TestValidateNodeDeclaredFeatures (v1.37.2): its cases,
# with the messages validateNodeDeclaredFeatures writes.
NAME_RULE = ("must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature "
             "or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes")


@pytest.mark.parametrize("features, error", [
    ([], None),
    (["AnotherFeature", "MyFeature", "MyFeature/SubFeature"], None),
    (["MyFeature", "MyFeature"], 'field status.declaredFeatures[1]: Duplicate value: "MyFeature"'),
    (["MyFeature", "AnotherFeature"],
     'field status.declaredFeatures[1]: Invalid value: "AnotherFeature": list must be sorted alphabetically'),
    (["AnotherFeature", "invalid", "MyFeature"],
     f'field status.declaredFeatures[1]: Invalid value: "invalid": invalid feature name "invalid": {NAME_RULE}'),
    (["myFeature"], f'field status.declaredFeatures[0]: Invalid value: "myFeature": invalid feature name '
                    f'"myFeature": {NAME_RULE}'),
    (["Feature-name"], "invalid feature name"),
    (["FeatureA/"], "invalid feature name"),
    (["F" + "e" * 253], "must be no more than 253 characters"),
])
def test_declared_features_are_validated_as_the_api_server_does(features, error):
    if error is None:
        assert _load(_node("n", features), "1.37").status.declared_features == tuple(features)
        return
    with pytest.raises(InputError) as err:
        _load(_node("n", features), "1.37")
    assert error in str(err.value)


# pkg/api/pod/util.go (dropContainerRestartRules: ContainerRestartRules alpha, off, in v1.34) and
# validation.go validateContainerRestartPolicy (the RestartAllContainers action only with
# RestartAllContainersOnContainerExits: alpha, off, in v1.35; beta, on, in v1.36).
@pytest.mark.parametrize("version, gates, outcome", [
    ("1.34", None, "dropped"),
    ("1.35", None, 'field spec.containers[0].restartPolicyRules[0].action: Unsupported value: '
                   '"RestartAllContainers": supported values: "Restart"'),
    ("1.35", "NodeDeclaredFeatures=true,RestartAllContainersOnContainerExits=true", "kept"),
    ("1.36", None, "kept"),
    ("1.37", None, "kept"),
])
def test_a_restart_all_containers_rule_is_stored_as_each_version_stores_it(version, gates, outcome):
    try:
        pod = _load(_restart_all_pod(), version, gates)
    except InputError as err:
        assert outcome in str(err)
        return
    rules = pod.spec.containers[0].restart_policy_rules
    assert [r.action for r in rules] == ([] if outcome == "dropped" else ["RestartAllContainers"])


def test_a_sidecar_has_restart_rules_only_with_restart_all_containers():
    pod = _pod(initContainers=[{"name": "side", "image": "s:1", "restartPolicy": "Always",
                                "restartPolicyRules": [{"action": "Restart",
                                                        "exitCodes": {"operator": "In", "values": [1]}}]}])
    assert _load(pod, "1.36").spec.init_containers[0].restart_policy_rules
    with pytest.raises(InputError, match="restartPolicyRules are not allowed for init containers with restart "
                                         "policy Always"):
        _load(pod, "1.35")


# validateHostUsers: hostNetwork with hostUsers false only with UserNamespacesHostNetworkSupport (alpha, off).
def test_host_network_in_a_user_namespace_needs_its_gate():
    pod = _pod(hostNetwork=True, hostUsers=False)
    with pytest.raises(InputError, match="field spec.hostNetwork: Forbidden: when `hostUsers` is false"):
        _load(pod, "1.37")
    assert _load(pod, "1.37", "UserNamespacesHostNetworkSupport=true").spec.host_users is False


# bindMountOptions: new in v1.37 behind VolumeBindMountOptions (alpha, off); validateBindMountOptions.
@pytest.mark.parametrize("version, gates, options, outcome", [
    ("1.36", None, ["noexec"], ()),
    ("1.37", None, ["noexec"], ()),
    ("1.37", "VolumeBindMountOptions=true", ["noexec"], ("noexec",)),
    ("1.37", "VolumeBindMountOptions=true", ["exec"],
     'bindMountOptions[0]: Unsupported value: "exec": supported values: "nodev", "noexec", "nosuid"'),
    ("1.37", "VolumeBindMountOptions=true", ["nodev", "nodev"], 'bindMountOptions[1]: Duplicate value: "nodev"'),
])
def test_bind_mount_options_are_stored_only_in_1_37_with_their_gate(version, gates, options, outcome):
    pod = _pod()
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/v", "bindMountOptions": options}]
    try:
        loaded = _load(pod, version, gates)
    except InputError as err:
        assert outcome in str(err)
        return
    assert loaded.spec.containers[0].volume_mounts[0].bind_mount_options == outcome


# ---- the default profile ------------------------------------------------------------------------

# apis/config/v1/default_plugins.go applyFeatureGates: appended last with the gate on.
@pytest.mark.parametrize("version, gates, present", [
    ("1.34", None, False), ("1.35", None, False), ("1.35", "NodeDeclaredFeatures=true", True),
    ("1.36", None, True), ("1.37", None, True),
])
def test_the_default_profile_has_the_plugin_last_where_its_gate_is_on(version, gates, present):
    plugins = [p.name for p in load_plans(target=make_target(version, gates))["default-scheduler"].plugins]
    assert ("NodeDeclaredFeatures" in plugins) == present
    if present:
        assert plugins[-1] == "NodeDeclaredFeatures"


# ---- eval and explain ---------------------------------------------------------------------------

@pytest.fixture
def cluster(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                "items": [_node("old-a"), _node("old-b", ["UserNamespacesHostNetworkSupport"]),
                                          _node("new", ["RestartAllContainersOnContainerExits"])]}))
    return path


def _run(capsys, *args):
    code = main(list(map(str, args)))
    return code, capsys.readouterr()


def test_eval_places_the_pod_on_the_node_that_declares_its_feature(capsys, tmp_path, cluster):
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(_restart_all_pod()))
    code, out = _run(capsys, "eval", "--cluster", cluster, "--pod", pod, "--kubernetes-version", "1.37", "-o", "json")
    [result] = json.loads(out.out)["results"]
    assert code == 0 and result["selected"] == "new" and result["feasible"] == ["new"]
    failures = {n["name"]: n["failure"] for n in result["nodes"] if n["failure"]}
    assert failures == {name: {"plugin": "NodeDeclaredFeatures", "code": "UnschedulableAndUnresolvable",
                               "reasons": ["node(s) didn't match Pod's required features"]}
                        for name in ("old-a", "old-b")}


def test_explain_names_the_missing_feature_and_what_the_pod_would_drop(capsys, tmp_path, cluster):
    pod = tmp_path / "pod.json"
    only_old = json.loads(cluster.read_text())
    only_old["items"] = only_old["items"][:2]
    cluster.write_text(json.dumps(only_old))
    pod.write_text(json.dumps(_restart_all_pod()))
    code, out = _run(capsys, "explain", "--cluster", cluster, "--pod", pod, "--kubernetes-version", "1.37", "-o", "json")
    [result] = json.loads(out.out)["results"]
    assert code == 1 and result["selected"] is None
    assert result["message"].startswith("0/2 nodes are available: 2 node(s) didn't match Pod's required features.")
    [cause] = result["causes"]
    assert cause["plugin"] == "NodeDeclaredFeatures" and cause["nodes"] == ["old-a", "old-b"]
    assert cause["detail"] == ("needs RestartAllContainersOnContainerExits (a RestartAllContainers restart rule in "
                               "container(s) worker), not declared by old-a, old-b")
    [fix] = result["suggestions"]
    assert fix["change"] == ("drop the RestartAllContainers restart rules of container(s) worker (the pod then needs "
                             "no RestartAllContainersOnContainerExits from the node's kubelet)")
    assert fix["verified"] and fix["nodes"] == ["old-a", "old-b"] and not fix["infrastructure"]


def test_v1_35_with_the_gate_names_the_missing_feature_in_its_reason(capsys, tmp_path, cluster):
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(_restart_all_pod()))
    code, out = _run(capsys, "eval", "--cluster", cluster, "--pod", pod, "--kubernetes-version", "1.35",
                     "--feature-gates", "NodeDeclaredFeatures=true,RestartAllContainersOnContainerExits=true",
                     "-o", "json")
    [result] = json.loads(out.out)["results"]
    reasons = {n["name"]: n["failure"]["reasons"] for n in result["nodes"] if n["failure"]}
    assert code == 0 and result["selected"] == "new"
    assert reasons["old-a"] == ["node declared features check failed - unsatisfied requirements: "
                                "RestartAllContainersOnContainerExits"]


@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_before_1_36_no_output_mentions_the_plugin(capsys, tmp_path, cluster, version):
    # Upstream's v1.34/v1.35 default profile has no NodeDeclaredFeatures: explain's per-node filters
    # (where a plugin that skips shows as Skip) do not list it, and the nodes' declared features are
    # dropped as those API servers drop them.
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(_pod()))
    code, out = _run(capsys, "explain", "--cluster", cluster, "--pod", pod, "--kubernetes-version", version,
                     "-o", "json")
    [result] = json.loads(out.out)["results"]
    assert code == 0 and sorted(result["feasible"]) == ["new", "old-a", "old-b"]
    assert all("NodeDeclaredFeatures" not in n["filters"] for n in result["nodes"])
    assert "DynamicResources" in result["nodes"][0]["filters"]      # a plugin that skips is listed

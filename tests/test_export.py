"""`policylang export`: the KubeSchedulerConfiguration read back with `--config` gives the same
plan as the profile's stdlib part; team policies become the extender stanza, rules the webhook."""

from __future__ import annotations

import pytest
import yaml

from policylang import load_plans
from policylang.cli import main
from policylang.serve.export import decision_key, export, extender_weight, stdlib_plan, team_plan
from policylang.target import make_target

EXAMPLES = "examples/policies"

PROFILES = {
    "the default profile is an empty diff": "profile default-scheduler {\n" + "".join(
        f"    use {line}\n" for line in (
            "NodeUnschedulable", "NodeName", "TaintToleration weight 3", "NodeAffinity weight 2", "NodePorts",
            "NodeResourcesFit weight 1", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
            "PodTopologySpread weight 2", "InterPodAffinity weight 2", "DynamicResources weight 2",
            "DefaultPreemption", "NodeResourcesBalancedAllocation weight 1", "ImageLocality weight 1")) + "}\n",
    "weights changed, plugins dropped, args given": (
        "profile tuned {\n    use NodeUnschedulable\n    use TaintToleration weight 5\n"
        "    use NodeResourcesFit {scoringStrategy: {type: \"MostAllocated\", resources: [{name: \"cpu\", weight: 2}]}}"
        " weight 4\n    use DefaultPreemption {minCandidateNodesAbsolute: 10}\n    use ImageLocality weight 1\n"
        "    percentage_of_nodes_to_score 30\n}\n"),
    "a filter without its score, and no preemption": (
        "profile lean {\n    use NodeName\n    use TaintToleration without score\n    use NodeAffinity weight 2\n"
        "    use NodeResourcesFit weight 1\n}\n"),
    "an order kube-scheduler's merge cannot give": (
        "profile reordered {\n    use NodeResourcesFit weight 1\n    use NodeName\n    use TaintToleration weight 3\n}\n"),
}


def _round_trip(plans: dict, tmp_path) -> dict:
    out = tmp_path / "config.yaml"
    out.write_text(yaml.safe_dump(export(plans, url="http://127.0.0.1:1").scheduler_config))
    return load_plans(config=str(out))


@pytest.mark.parametrize("case", sorted(PROFILES))
def test_exported_config_reads_back_as_the_same_plan(case, tmp_path):
    source = tmp_path / "profile.sched"
    source.write_text(PROFILES[case])
    plans = load_plans(str(source))
    back = _round_trip(plans, tmp_path)
    assert {n: decision_key(p) for n, p in back.items()} == {n: decision_key(stdlib_plan(p)) for n, p in plans.items()}


def test_the_default_profile_exports_as_no_change_at_all():
    config = export(load_plans("default-scheduler")).scheduler_config
    assert config["profiles"] == [{"schedulerName": "default-scheduler"}]
    assert "extenders" not in config


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37"])
def test_the_default_profile_of_each_version_exports_as_no_change(version):
    # NodeDeclaredFeatures is in kube-scheduler's defaults only where its gate is on (1.36+): the
    # default profile, which has it only there, is no change on any version.
    config = export(load_plans("default-scheduler", target=make_target(version))).scheduler_config
    assert config["profiles"] == [{"schedulerName": "default-scheduler"}]


def test_team_policies_go_to_the_extender_and_the_stdlib_part_reads_back(tmp_path):
    plans = load_plans(f"{EXAMPLES}/team.sched")
    config = export(plans, url="https://serve.example:8443").scheduler_config
    assert config["extenders"] == [{
        "urlPrefix": "https://serve.example:8443", "filterVerb": "filter", "preemptVerb": "preempt",
        "prioritizeVerb": "prioritize", "weight": 2, "enableHTTPS": True, "httpTimeout": "5s",
        "nodeCacheCapable": True, "managedResources": [], "ignorable": False}]
    assert [p.name for p in team_plan(plans["team-scheduler"]).plugins] == ["GpuIsolation"]
    assert extender_weight(plans["team-scheduler"]) == 2
    back = _round_trip(plans, tmp_path)
    assert decision_key(back["team-scheduler"]) == decision_key(stdlib_plan(plans["team-scheduler"]))
    assert "GpuIsolation" not in {p.name for p in back["team-scheduler"].plugins}


def test_rules_produce_a_mutating_webhook_configuration(tmp_path):
    (tmp_path / "spread.sched").write_text(
        "policy SpreadWeb\n\nrule spread_web when pod.metadata.labels[\"app\"] == \"web\" {\n"
        "    spread by \"topology.kubernetes.io/zone\" max_skew 1 when_unsatisfiable DoNotSchedule\n}\n")
    (tmp_path / "profile.sched").write_text(
        "profile ruled {\n    use NodeName\n    use PodTopologySpread weight 2\n    use \"./spread.sched\"\n}\n")
    result = export(load_plans(str(tmp_path / "profile.sched")), url="https://serve.example:8443", ca_bundle=b"PEM")
    (hook,) = result.webhook_config["webhooks"]
    assert hook["clientConfig"] == {"url": "https://serve.example:8443/mutate", "caBundle": "UEVN"}
    assert hook["rules"][0]["resources"] == ["pods"] and hook["rules"][0]["operations"] == ["CREATE"]
    assert hook["admissionReviewVersions"] == ["v1"] and hook["sideEffects"] == "None"
    assert "extenders" not in result.scheduler_config      # rules alone need no extender


def test_cli_export_writes_the_file_and_plan_reads_it(tmp_path, capsys):
    out = tmp_path / "config.yaml"
    assert main(["export", f"{EXAMPLES}/team.sched", "-o", str(out), "--url", "http://127.0.0.1:9"]) == 0
    doc = yaml.safe_load(out.read_text())
    assert doc["kind"] == "KubeSchedulerConfiguration" and doc["extenders"][0]["enableHTTPS"] is False
    assert main(["plan", "--config", str(out)]) == 0


def test_cli_export_refuses_a_profile_and_a_config(capsys):
    assert main(["export", "default-scheduler", "--config", "x.yaml"]) == 2
    assert "not both" in capsys.readouterr().err


GOLDEN = __import__("pathlib").Path(__file__).parent / "fixtures" / "export"


def test_cli_export_of_the_team_profile_with_a_rule_is_the_golden_text(tmp_path, capsys, golden):
    """What a user reads: the KubeSchedulerConfiguration and, after `---`, the webhook."""
    for name in ("team.sched", "gpu_isolation.sched"):
        (tmp_path / name).write_text((__import__("pathlib").Path(EXAMPLES) / name).read_text())
    (tmp_path / "spread.sched").write_text(
        "policy SpreadWeb\n\nrule spread_web when pod.metadata.labels[\"app\"] == \"web\" {\n"
        "    spread by \"topology.kubernetes.io/zone\" max_skew 1 when_unsatisfiable ScheduleAnyway\n}\n")
    team = tmp_path / "team.sched"
    team.write_text(team.read_text().replace("    use DefaultPreemption\n",
                                             "    use DefaultPreemption\n    use \"./spread.sched\"\n"))
    assert main(["export", str(team), "--url", "https://policylang.policylang-system.svc:8443"]) == 0
    golden(GOLDEN / "team-with-rule.yaml", capsys.readouterr().out)

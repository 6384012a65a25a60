"""Rules: what a `rule` adds to matching pods behaves as if it were written in their spec."""

from pathlib import Path

import attrs

from policylang import Executable, check, compile_profile, load_cluster, load_objects, load_program, schedule
from policylang.api.model import Toleration

EXAMPLES = Path(__file__).parent.parent / "examples"

RULES = """
policy MlRules

rule ml_gpu when pod.metadata.namespace == "ml" {
    tolerate "nvidia.com/gpu" = "present" : NoSchedule
    require node.metadata.labels["gpu-model"] in ["a100", "h100"]
    prefer weight 80 node.metadata.labels["topology.kubernetes.io/zone"] == "eu-west-1a"
}

profile ml {
    use NodeUnschedulable
    use TaintToleration weight 3
    use NodeResourcesFit
    use "./rules.sched" weight 2
}
"""

PLAIN = """
profile plain {
    use NodeUnschedulable
    use TaintToleration weight 3
    use NodeResourcesFit
}
"""


def _exe(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(text)
    return Executable(compile_profile(check(load_program(path))))


def _pod(namespace):
    pod = load_objects(EXAMPLES / "pods" / "web.yaml")[0]
    return attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, namespace=namespace))


def test_rule_applies_only_to_matching_pods(tmp_path):
    exe = _exe(tmp_path, RULES, "rules.sched")
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    ml = schedule(exe, state, _pod("ml"))
    assert ml.feasible == ("gpu-a1",)
    rejected = {n.name: n.failure for n in ml.nodes if n.failure}
    assert rejected["worker-a1"].reasons == ("node(s) didn't satisfy rule ml_gpu",)
    shop = schedule(exe, state, _pod("shop"))
    assert "gpu-a1" not in shop.feasible
    assert all("MlRules" not in (n.scores or {}) for n in shop.nodes)


def test_rule_toleration_equals_writing_it_into_the_pod(tmp_path):
    rules = _exe(tmp_path, RULES.replace('    require node.metadata.labels["gpu-model"] in ["a100", "h100"]\n', "")
                 .replace('    prefer weight 80 node.metadata.labels["topology.kubernetes.io/zone"] == "eu-west-1a"\n',
                          ""), "rules.sched")
    plain = _exe(tmp_path, PLAIN, "plain.sched")
    state = load_cluster([EXAMPLES / "cluster.yaml"])
    pod = _pod("ml")
    written = attrs.evolve(pod, spec=attrs.evolve(pod.spec, tolerations=(
        Toleration(key="nvidia.com/gpu", operator="Equal", value="present", effect="NoSchedule"),)))
    a, b = schedule(rules, state, pod), schedule(plain, state, written)
    assert a.feasible == b.feasible and a.selected == b.selected
    assert [n.total for n in a.nodes] == [n.total for n in b.nodes]

"""KubeSchedulerConfiguration read as kube-scheduler v1.35 reads it (policylang/config/: read.py,
schema.py, validation.py): each bad configuration under
tests/fixtures/errors/config/ names the upstream test case it models in its first comment, and
its error text is pinned in the golden file beside it (`pytest --update-golden` rewrites them);
upstream's good configurations load without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

from policylang import load_plans
from policylang.config.read import config_source, is_configuration, read_configuration
from policylang.diagnostics import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "errors" / "config"
BAD = sorted(FIXTURES.glob("*.yaml"))
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _target_of(path: Path):
    """A fixture read as another version says so in its header: `# Kubernetes: 1.36`."""
    from policylang.target import make_target
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if line.startswith("# Kubernetes: "):
            return make_target(line.removeprefix("# Kubernetes: ").strip())
    return None


def _error_text(path: Path) -> str:
    with pytest.raises(InputError) as err:
        read_configuration(path, _target_of(path))
    return err.value.render().replace(str(FIXTURES) + "/", "") + "\n"


def test_there_are_enough_cases_and_each_names_its_upstream_case():
    assert len(BAD) >= 30
    for path in BAD:
        assert path.read_text().startswith("# Models "), f"{path.name}: name the upstream case it models"


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_configurations_are_refused_in_kube_schedulers_words(path, golden):
    golden(path.with_suffix(".yaml.err"), _error_text(path))


# Good configurations: upstream's docs (kubernetes.io "Scheduler Configuration": profiles, multiPoint,
# pluginConfig) and the valid rows of validation_test.go / validation_pluginargs_test.go.
GOOD = {
    "docs: two profiles": HEAD + """profiles:
- schedulerName: default-scheduler
- schedulerName: no-scoring-scheduler
  plugins:
    preScore:
      disabled: [{name: '*'}]
    score:
      disabled: [{name: '*'}]
""",
    "docs: multiPoint": HEAD + """profiles:
- schedulerName: multipoint-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: ImageLocality
        weight: 3
""",
    "docs: MostAllocated bin packing": HEAD + """profiles:
- pluginConfig:
  - args:
      scoringStrategy:
        resources:
        - name: cpu
          weight: 1
        type: MostAllocated
    name: NodeResourcesFit
""",
    "docs: RequestedToCapacityRatio": HEAD + """profiles:
- pluginConfig:
  - args:
      scoringStrategy:
        resources:
        - name: intel.com/foo
          weight: 3
        - name: intel.com/bar
          weight: 3
        requestedToCapacityRatio:
          shape:
          - utilization: 0
            score: 0
          - utilization: 100
            score: 10
        type: RequestedToCapacityRatio
    name: NodeResourcesFit
""",
    "docs: PodTopologySpread List defaulting": HEAD + """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
      defaultingType: List
""",
    "pluginargs: DefaultPreemption valid args (default), with apiVersion and kind": HEAD + """profiles:
- pluginConfig:
  - name: DefaultPreemption
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: DefaultPreemptionArgs
      minCandidateNodesPercentage: 10
      minCandidateNodesAbsolute: 100
""",
    "pluginargs: InterPodAffinity valid args, VolumeBinding zero timeout": HEAD + """profiles:
- pluginConfig:
  - {name: InterPodAffinity, args: {hardPodAffinityWeight: 10}}
  - {name: VolumeBinding, args: {bindTimeoutSeconds: 0}}
  - {name: NodeResourcesBalancedAllocation, args: {resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]}}
""",
    "pluginargs: NodeAffinity valid added affinity": HEAD + """profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: label-1, operator: In, values: [label-1-val]}]
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference:
            matchFields: [{key: metadata.name, operator: In, values: [node-1]}]
""",
    "validation: the good config's top-level fields (v1)": HEAD + """parallelism: 8
percentageOfNodesToScore: 35
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
clientConnection: {acceptContentTypes: application/json, contentType: application/json, qps: 10, burst: 10}
leaderElection: {leaderElect: true, resourceLock: leases, leaseDuration: 30s, renewDeadline: 15s, retryPeriod: 5s,
                 resourceNamespace: name, resourceName: name}
extenders:
- {urlPrefix: "http://127.0.0.1:8081/extender", prioritizeVerb: prioritize, weight: 1}
""",
    "an empty configuration (every default)": HEAD,
}


@pytest.mark.parametrize("text", list(GOOD.values()), ids=list(GOOD))
def test_good_configurations_load_without_a_word(text, tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert load_plans(config=str(path))
    assert capsys.readouterr() == ("", "")


def test_a_configuration_is_found_by_content_json_or_in_a_config_map(tmp_path):
    import json
    as_json = tmp_path / "scheduler.conf"
    as_json.write_text(json.dumps({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                   "profiles": [{"schedulerName": "json-scheduler"}]}))
    assert is_configuration(as_json)
    assert "profile json-scheduler {" in config_source(as_json)
    held = tmp_path / "cm.yaml"
    held.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  config.yaml: |\n"
                    + "".join(f"    {line}\n" for line in (HEAD + "profiles:\n- schedulerName: cm\n").splitlines()))
    assert is_configuration(held)
    assert "profile cm {" in config_source(held)
    policy = tmp_path / "team.yaml"
    policy.write_text("kind: Pod\nmetadata: {name: p}\n")
    assert not is_configuration(policy)


def test_a_configuration_error_never_points_into_the_generated_source(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text((FIXTURES / "scoring_strategy_type.yaml").read_text())
    with pytest.raises(InputError) as err:
        load_plans(config=str(path))
    assert ".sched" not in str(err.value)
    assert str(err.value).startswith(f"{path}:11:15: ")


# ---- hostile or odd input: an InputError, never a traceback ------------------------------------------

from hypothesis import example, given, settings, strategies as st  # noqa: E402

from policylang.config.schema import CONFIGURATION, Args, ListOf, Obj, plugin_args  # noqa: E402

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False),
                     st.sampled_from(["", "*", "MostAllocated", "System", "List", "10s", "-1s", "NodeResourcesFit",
                                      "default-scheduler", "DoNotSchedule", "zone", "x y"]))


def _values(schema, depth=0):
    """Values shaped like the schema most of the time (so many reach validation and the generated
    source), anything some of the time."""
    if depth > 6:
        return _SCALARS
    if isinstance(schema, Obj):
        keys = st.sampled_from(sorted(schema.fields) + ["typo"])
        pairs = keys.flatmap(lambda k: st.tuples(st.just(k), _field(schema, k, depth)))
        return st.one_of(_SCALARS, st.lists(pairs, max_size=4).map(dict))
    if isinstance(schema, ListOf):
        return st.one_of(_SCALARS, st.lists(_values(schema.item, depth + 1), max_size=3))
    return _SCALARS


def _field(schema: Obj, key: str, depth: int):
    t = schema.fields.get(key)
    if isinstance(t, Args):
        return st.one_of(*(_values(a, depth + 1) for a in plugin_args().values()))
    return _values(t, depth + 1) if t is not None else _SCALARS


@settings(max_examples=60, deadline=None)
@given(_values(CONFIGURATION))
@example({"profiles": [None]})     # a null list item is Go's zero value: an empty profile
def test_any_configuration_is_read_or_refused_with_an_input_error(tmp_path_factory, value):
    import yaml
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           **(value if isinstance(value, dict) else {"profiles": value})}
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    try:
        read_configuration(path)
    except InputError as err:
        assert err.render().startswith(f"error: {path}")
        return
    assert load_plans(config=str(path))     # what is read compiles: its generated source checks


def _filters_and_scores(plan) -> tuple:
    return ([p.name for p in plan.plugins if p.filters],
            sorted((p.name, p.weight) for p in plan.plugins if p.score is not None))


def test_each_version_decodes_the_extension_points_it_has(tmp_path):
    """config/v1 Plugins gained placementGenerate and placementScore in v1.36 and
    podGroupPostFilter in v1.37 (kube-scheduler@v0.36.3, v0.37.2 types.go): each version's reader
    takes its own and refuses the later ones as unknown fields, as strict decoding does; a
    configuration naming them (to disable '*') schedules single pods as without them."""
    from policylang.target import make_target

    path = tmp_path / "c.yaml"
    for point, since in (("placementScore", "1.36"), ("placementGenerate", "1.36"), ("podGroupPostFilter", "1.37")):
        path.write_text(HEAD + f"profiles:\n- plugins:\n    {point}:\n      disabled: [{{name: '*'}}]\n")
        for version in ("1.35", "1.36", "1.37"):
            if version < since:
                with pytest.raises(InputError, match=f'unknown field "{point}"'):
                    read_configuration(path, make_target(version))
            else:
                read_configuration(path, make_target(version))
                plans = load_plans(config=str(path), target=make_target(version))
                ours = load_plans(target=make_target(version))["default-scheduler"]
                # The same filters in the same order, and the same scores with the same weights.
                assert _filters_and_scores(plans["default-scheduler"]) == _filters_and_scores(ours)

"""Cluster objects validated as the API server validates the fields the scheduler reads
(policylang/cluster/validation/, run by the loader): each bad object under
tests/fixtures/errors/objects/ names the upstream case it models in its first comment, and the
error (file, line:col, object, field, the API server's words) is pinned in the golden file
beside it (`pytest --update-golden` rewrites them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policylang import load_objects
from policylang.cluster.load import structure_object
from policylang.diagnostics import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "errors" / "objects"
BAD = sorted(FIXTURES.glob("*.yaml"))
EXAMPLES = Path(__file__).parent.parent / "examples"


def test_each_case_names_its_upstream_case():
    assert len(BAD) >= 20
    for path in BAD:
        assert path.read_text().startswith("# Models "), f"{path.name}: name the upstream case it models"


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_objects_are_refused_naming_file_line_object_and_field(path, golden):
    with pytest.raises(InputError) as err:
        load_objects(path)
    assert err.value.line is not None and err.value.field is not None
    golden(path.with_suffix(".yaml.err"), err.value.render().replace(str(FIXTURES) + "/", "") + "\n")


def test_the_examples_are_valid_objects():
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        text = path.read_text()
        if "kind: Node" in text or "kind: Pod" in text or "kind: List" in text:
            load_objects(path)


def test_upstream_plugin_tables_may_build_what_the_api_server_refuses():
    # An empty topologyKey: upstream's InterPodAffinity tests build such pods directly.
    raw = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"a": "b"}}}]}}}}
    assert structure_object(raw, "<case>", validate=False).spec.affinity.pod_affinity is not None
    with pytest.raises(InputError, match="topologyKey: Required value: can not be empty"):
        structure_object(raw, "<case>")


def test_int_or_string_fields_take_a_number_or_a_string(tmp_path):
    path = tmp_path / "pdb.yaml"
    path.write_text("kind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {minAvailable: 2}\n---\n"
                    "kind: PodDisruptionBudget\nmetadata: {name: q}\nspec: {maxUnavailable: 50%}\n")
    p, q = load_objects(path)
    assert (p.spec.min_available, q.spec.max_unavailable) == (2, "50%")

"""editors/: the TextMate grammar and the VS Code extension. The grammar is generated from the
language's own definitions (editors/generate_grammar.py), so its keywords cannot drift from the
Lark grammar's: a keyword added to grammar.lark fails here until the grammar is regenerated."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from policylang.syntax.grammar import keywords

EDITORS = Path(__file__).resolve().parent.parent / "editors"
VSCODE = EDITORS / "vscode"
KEYWORD_RULES = ("keyword-declaration", "keyword-operator", "keyword-control", "constant")


def _generator():
    spec = importlib.util.spec_from_file_location("generate_grammar", EDITORS / "generate_grammar.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grammar(path: Path = EDITORS / "sched.tmLanguage.json") -> dict:
    return json.loads(path.read_text())


def _words(regex: str) -> set[str]:
    m = re.fullmatch(r"\\b\(\?:([a-z_|]+)\)\\b", regex)
    assert m, f"a keyword rule is a plain list of words: {regex}"
    return set(m.group(1).split("|"))


@pytest.mark.parametrize("path", [EDITORS / "sched.tmLanguage.json", VSCODE / "syntaxes" / "sched.tmLanguage.json"],
                         ids=["editors", "vscode"])
def test_the_committed_grammar_is_what_the_generator_writes(path):
    assert path.read_text() == _generator().text(), "stale: run python editors/generate_grammar.py"


def test_the_grammar_highlights_every_keyword_of_the_lark_grammar_and_no_other():
    repository = _grammar()["repository"]
    by_rule = {name: _words(repository[name]["match"]) for name in KEYWORD_RULES}
    highlighted = [w for ws in by_rule.values() for w in ws]
    assert sorted(highlighted) == sorted(set(highlighted)), "a keyword is in two rules"
    assert set(highlighted) - set(keywords()) == set(), "the grammar invents keywords"
    assert set(keywords()) - set(highlighted) == set(), "the grammar misses keywords"
    assert {"reject", "normalize", "when_unsatisfiable", "percentage_of_nodes_to_score"} <= by_rule["keyword-control"]
    assert by_rule["constant"] == {"true", "false", "null"}


def test_every_rule_is_a_regex_and_the_rules_read_a_policy_as_meant():
    grammar = _grammar()
    rules = grammar["repository"]
    for rule in rules.values():
        for key in ("match", "begin", "end"):
            if key in rule:
                re.compile(rule[key])
    line = '    reject when node.metadata.labels["zone"] != null and not tolerates(t, x) reason "no ${x}"'

    def first(rule: str, text: str) -> str:
        m = re.search(rules[rule]["match"], text)
        return m.group(0) if m else ""
    assert first("keyword-control", line) == "reject"
    assert first("scope", line) == "node"
    assert first("builtin", line) == "tolerates"
    assert first("constant", line) == "null"
    assert first("number", "value 500m + 1Gi") == "500m"
    assert re.match(rules["declaration"]["match"], "filter reserve_gpu_nodes {").groups() == \
        ("filter", "reserve_gpu_nodes")
    assert re.match(rules["profile"]["match"], "profile default-scheduler {").group(2) == "default-scheduler"


def test_the_vscode_extension_names_files_that_exist_and_the_grammars_scope():
    manifest = json.loads((VSCODE / "package.json").read_text())
    assert (VSCODE / manifest["main"]).is_file()
    language, = manifest["contributes"]["languages"]
    assert language["extensions"] == [".sched"]
    json.loads((VSCODE / language["configuration"]).read_text())
    grammar, = manifest["contributes"]["grammars"]
    assert grammar["language"] == language["id"]
    assert grammar["scopeName"] == _grammar(VSCODE / grammar["path"])["scopeName"] == "source.sched"
    assert "policylang.cluster" in manifest["contributes"]["configuration"]["properties"]
    assert "vscode-languageclient" in manifest["dependencies"]
    source = (VSCODE / manifest["main"]).read_text()
    assert '"server.command", ["policylang", "lsp"]' in source   # the verb the CLI has (tests/test_cli.py)


def test_the_extension_script_is_valid_javascript():
    import shutil
    import subprocess
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    subprocess.run([node, "--check", str(VSCODE / "extension.js")], check=True)


def test_the_api_docs_are_upstreams_words_for_the_models_own_fields():
    from policylang.types import model_schema, record_fields
    docs = json.loads((EDITORS.parent / "policylang" / "lsp" / "api_docs.json").read_text())
    assert docs.pop("_source").startswith("k8s.io/api and k8s.io/apimachinery v0.37.2")
    extractor = _extractor()
    assert set(docs) == set(model_schema()) - set(extractor.NOT_API_TYPES)
    for kind, fields in docs.items():
        assert fields.get(""), f"{kind} has no description of its own"
        assert set(fields) - {""} <= set(record_fields(kind)), f"{kind}: docs for fields the model lacks"
    assert docs["Taint"]["effect"].startswith("Required. The effect of the taint on pods")
    assert docs["ObjectMeta"]["labels"].startswith("Map of string keys and values")


def test_the_extractor_reads_gos_generated_swagger_docs():
    source = ('var map_Taint = map[string]string{\n'
              '\t"":    "The node this Taint is attached to has the \\"effect\\" on any pod.",\n'
              '\t"key": "Required. The taint key to be applied to a node.",\n'
              '}\n\nfunc (Taint) SwaggerDoc() map[string]string {\n\treturn map_Taint\n}\n')
    assert _extractor().parse_swagger_docs(source) == {"Taint": {
        "": 'The node this Taint is attached to has the "effect" on any pod.',
        "key": "Required. The taint key to be applied to a node."}}


def _extractor():
    spec = importlib.util.spec_from_file_location("extract_api_docs", EDITORS / "extract_api_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

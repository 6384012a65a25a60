"""The generated references of the documentation site (docs/hooks.py, issue 45): the language
reference names every builtin and every keyword, the CLI reference has every verb's real help,
and both are the same text every time. The hook's functions are called directly: no mkdocs."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

from policylang.builtins import REGISTRY
from policylang.syntax.grammar import keywords

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"


def _load_hooks():
    spec = importlib.util.spec_from_file_location("policylang_docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _load_hooks()


@pytest.fixture(scope="module")
def language() -> str:
    return hooks.generate("language")


@pytest.fixture(scope="module")
def cli() -> str:
    return hooks.generate("cli")


def _sections(markdown: str) -> dict[str, str]:
    """The CLI reference's ``## `policylang VERB` `` sections by verb."""
    parts = re.split(r"^## `policylang ?([a-z-]*)`\n", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_language_reference_names_every_builtin(language):
    missing = [name for name in REGISTRY if f"`{name}(" not in language]
    assert not missing, f"builtins missing from the language reference: {missing}"
    for b in REGISTRY.values():
        row = next(line for line in language.splitlines() if line.startswith(f"| `{b.name}("))
        assert " ".join(b.doc.split()).replace("|", "\\|") in row
        assert f"| {b.reads} |" in row
    assert set(REGISTRY) <= set(hooks._declarations()), "a builtin declared outside a family's heading"


def test_language_reference_names_every_keyword(language):
    words = set(re.findall(r"`([a-z_]+)`", language))
    missing = [k for k in keywords() if k not in words]
    assert not missing, f"keywords missing from the language reference: {missing}"


def test_language_reference_has_every_declaration_and_the_grammar(language):
    for decl in ("policy", "import", "param", "def", "filter", "score", "rule", "profile"):
        assert f"### `{decl}`" in language
    for heading in ("## Keywords", "## Declarations", "## Types", "## Expressions", "## Builtins",
                    "## The grammar"):
        assert heading in language
    assert hooks.grammar_text().rstrip("\n") in language    # the normative text, verbatim


def test_cli_reference_has_every_verb_with_its_real_help(cli):
    from policylang.cli import _parser
    every = hooks._subparsers(_parser(None)).choices
    sections = _sections(cli)
    assert set(every) <= set(sections), f"verbs without a section: {sorted(set(every) - set(sections))}"
    assert list(sections) == ["", *every]                     # the top-level help, then the verbs in order
    leads = dict(hooks.verbs())
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(hooks.HELP_WIDTH)
    try:
        for verb in every:
            parser = hooks._subparsers(_parser(verb)).choices[verb]   # as `policylang VERB --help` builds it
            real = parser.format_help().rstrip("\n")
            assert real in sections[verb], f"{verb}: the section is not its --help"
            assert real.startswith(f"usage: policylang {verb}")
            assert leads[verb] and leads[verb][:1].upper() + leads[verb][1:] in sections[verb]
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def test_generation_is_deterministic(language, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "37")                       # a narrow terminal changes nothing
    assert hooks.generate("language") == language
    assert hooks.generate("cli") == cli
    assert _load_hooks().generate("cli") == cli


def test_pages_carry_the_markers_and_the_hook_replaces_them():
    for page, marker in (("language.md", "language"), ("cli.md", "cli")):
        text = (REFERENCE / page).read_text()
        assert f"<!-- generated: {marker} -->" in text
        out = hooks.replace_markers(text, page)
        assert "<!-- generated:" not in out
        assert out.startswith(text.split("<!-- generated:")[0])          # the hand-written intro kept
        assert hooks.generate(marker).rstrip("\n") in out
    with pytest.raises(ValueError, match="unknown marker"):
        hooks.replace_markers("<!-- generated: nothing -->\n", "x.md")


def test_api_page_documents_the_public_api():
    text = (REFERENCE / "api.md").read_text()
    for target in ("policylang.engine.Engine", "policylang.engine.Fork", "policylang.run.decision.Decision",
                   "policylang.pending.Held", "policylang.diagnostics.PolicylangError",
                   "policylang.diagnostics.PolicyError", "policylang.diagnostics.InputError",
                   "policylang.cost.CostExceeded"):
        assert f"::: {target}\n" in text
        module, _, name = target.rpartition(".")
        assert hasattr(importlib.import_module(module), name)
    assert "](../api.md)" in text


def test_the_versions_page_lists_the_modelled_gates_from_the_code():
    """docs/versions.md's gate table is generated from policylang/target.py and feature_gates.json."""
    from policylang.target import MODELLED, VERSIONS
    text = (REFERENCE.parent / "versions.md").read_text()
    assert "<!-- generated: gates -->" in text
    table = hooks.generate("gates")
    assert all(f"| {gate} |" in table for gate in MODELLED)
    assert table.splitlines()[0] == "| Gate | " + " | ".join(VERSIONS) + " |"

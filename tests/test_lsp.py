"""`policylang lsp` through the real protocol: one server process for the module, driven over a
pipe by pytest-lsp's client as an editor drives it. Each feature is checked on the stdlib, on
examples/policies/ and on a file that does not parse; where the CLI says the same thing (check,
lint, fmt, eval) the server's answer is compared with the CLI's."""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from policylang.check import check, check_all
from policylang.cli import main
from policylang.diagnostics import PolicyError
from policylang.syntax.format import format_source
from policylang.lint.edits import apply as apply_edits
from policylang.syntax.parse import parse
from policylang.program import load_program, stdlib_dir

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ROOT / "examples" / "policies"
TEAM = POLICIES / "team.sched"
GPU = POLICIES / "gpu_isolation.sched"
DUMP = ROOT / "examples" / "pending-dump.yaml"
S301 = ROOT / "tests" / "fixtures" / "lint" / "rules" / "S301_bad.sched"

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "policylang.cli", "lsp", "--stdio"],   # as VS Code starts it
    server_env={**os.environ, "POLICYLANG_LSP_DEBOUNCE": "0.05"}))
async def client(lsp_client: LanguageClient):
    lsp_client.set_configuration({"policylang": {"cluster": "examples/pending-dump.yaml"}})
    lsp_client.code_lens_refreshes = 0

    @lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(client: LanguageClient, params: None) -> None:   # VS Code asks for the lenses again
        client.code_lens_refreshes += 1

    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        root_uri=ROOT.as_uri(), workspace_folders=[lsp.WorkspaceFolder(uri=ROOT.as_uri(), name="policylang")]))
    yield
    await lsp_client.shutdown_session()


_versions: dict[str, int] = {}


async def _open(client: LanguageClient, path: Path, text: str | None = None) -> list[lsp.Diagnostic]:
    """Open ``path`` (with ``text``, or its contents) and wait for its diagnostics."""
    uri = path.as_uri()
    text = path.read_text() if text is None else text
    if uri in _versions:  # opened by an earlier test: start from this text again
        return await _change(client, path, [lsp.TextDocumentContentChangeWholeDocument(text=text)])
    _versions[uri] = 1
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="sched", version=1, text=text)))
    return await _diagnostics(client, uri)


async def _change(client: LanguageClient, path: Path, changes: list) -> list[lsp.Diagnostic]:
    uri = path.as_uri()
    _versions[uri] += 1
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=_versions[uri]),
        content_changes=changes))
    return await _diagnostics(client, uri)


async def _diagnostics(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    while uri not in client.diagnostics:
        await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


def _at(text: str, needle: str, offset: int = 0) -> lsp.Position:
    """The position of ``needle`` (plus ``offset`` characters) in ``text``."""
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    return lsp.Position(line=line, character=index - (text.rfind("\n", 0, index) + 1))


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def _doc(path: Path) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=path.as_uri())


# ---- diagnostics -------------------------------------------------------------------------------

async def test_the_stdlib_and_the_examples_check_clean(client: LanguageClient):
    for path in [*sorted(stdlib_dir().glob("*.sched")), GPU, TEAM]:
        found = await _open(client, path)
        assert [d for d in found if d.severity == lsp.DiagnosticSeverity.Error] == [], path.name


async def test_a_type_error_is_reported_with_the_checkers_code_message_and_span(client: LanguageClient, capsys):
    path = POLICIES / "typo.sched"  # not on disk: the editor's text is what is checked
    text = GPU.read_text().replace("p.spec.containers", "p.spec.containerz")
    found = await _open(client, path, text)
    path.write_text(text)
    try:
        assert main(["check", str(path)]) == 2
    finally:
        path.unlink()
    cli_head = capsys.readouterr().err.splitlines()[0]   # "…:7:29: error[P012]: PodSpec has no field …"
    assert [(d.code, d.severity) for d in found] == [("P012", lsp.DiagnosticSeverity.Error)]
    d = found[0]
    assert cli_head.endswith(f":{d.range.start.line + 1}:{d.range.start.character + 1}: error[P012]: "
                             f"{d.message.splitlines()[0]}")
    assert "help: did you mean 'containers'?" in d.message


async def test_lint_findings_read_as_the_clis(client: LanguageClient):
    found = await _open(client, S301)
    _, out = _cli("lint", str(S301))
    heads = [line for line in out.splitlines() if "warning[S301]" in line]
    assert [f"{S301}:{d.range.start.line + 1}:{d.range.start.character + 1}: warning[{d.code}]: "
            f"{d.message.splitlines()[0]}" for d in found] == heads
    assert {d.severity for d in found} == {lsp.DiagnosticSeverity.Warning}


async def test_a_file_that_does_not_parse_gets_its_syntax_error_and_keeps_working(client: LanguageClient):
    path = POLICIES / "broken.sched"
    text = GPU.read_text().replace("reject when node.metadata", "reject when when node.metadata")
    found = await _open(client, path, text)
    with pytest.raises(PolicyError) as err:
        parse(text, str(path))
    expected, = err.value.diagnostics
    assert [(d.code, d.range.start.line + 1, d.range.start.character + 1, d.message) for d in found] == \
        [(expected.code, expected.span.line, expected.span.column, "\n".join([expected.message, *expected.notes]))]
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=_doc(path)))
    names = [(s.name, s.kind) for s in symbols]
    assert names == [("GpuIsolation", lsp.SymbolKind.Class), ("gpuLabel", lsp.SymbolKind.Property),
                     ("preferredModels", lsp.SymbolKind.Property), ("wants_gpu", lsp.SymbolKind.Function),
                     ("reserve_gpu_nodes", lsp.SymbolKind.Method), ("prefer_new_gpus", lsp.SymbolKind.Method)]
    assert symbols[4].detail == "filter (does not parse)"
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=_doc(path), position=_at(text, "node.metadata.labels[params.gpuLabel] in", 15)))
    assert "(field) ObjectMeta.labels: map[string, string]" in hover.contents.value  # in a declaration that parses
    assert await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        text_document=_doc(path), options=lsp.FormattingOptions(tab_size=4, insert_spaces=True))) is None


async def test_an_error_in_a_used_file_is_shown_on_the_use_that_reaches_it(client: LanguageClient, tmp_path):
    (tmp_path / "bad.sched").write_text("policy Bad\n\nfilter f {\n    reject when when\n}\n")
    text = 'profile p {\n    use TaintToleration\n    use "./bad.sched" weight 2\n}\n'
    found = await _open(client, tmp_path / "p.sched", text)
    d, = found
    assert (d.code, d.range.start.line) == ("P001", 2)
    bad = tmp_path.resolve() / "bad.sched"
    assert d.message.startswith(f"in {bad}:5:1: unexpected '}}'")
    link, = d.related_information
    assert (link.location.uri, link.location.range.start) == (bad.as_uri(), lsp.Position(line=4, character=0))


async def test_incremental_edits_are_applied_and_rechecked(client: LanguageClient):
    path = POLICIES / "edited.sched"
    text = GPU.read_text()
    assert await _open(client, path, text) == []
    where = _at(text, "!= null")
    broken = await _change(client, path, [lsp.TextDocumentContentChangePartial(
        range=lsp.Range(start=where, end=lsp.Position(line=where.line, character=where.character + 2)), text="+")])
    program = load_program(str(path), text=text.replace("!= null", "+ null", 1))
    expected = [d for d in check_all(program)[1]]
    assert expected and [(d.code, d.range.start.line + 1, d.message.splitlines()[0]) for d in broken] == \
        [(e.code, e.span.line, e.message) for e in expected]
    # Edits in quick succession (typing "!" then "=" over the "+"): one analysis, of the final text.
    _versions[path.as_uri()] += 1
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=_versions[path.as_uri()]),
        content_changes=[lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=where, end=lsp.Position(line=where.line, character=where.character + 1)), text="!")]))
    fixed = await _change(client, path, [lsp.TextDocumentContentChangePartial(
        range=lsp.Range(start=lsp.Position(line=where.line, character=where.character + 1),
                        end=lsp.Position(line=where.line, character=where.character + 1)), text="=")])
    assert fixed == []


# ---- hover -----------------------------------------------------------------------------------------

async def _hover(client: LanguageClient, path: Path, needle: str, offset: int = 0) -> str:
    text = path.read_text()
    await _open(client, path)
    found = await client.text_document_hover_async(lsp.HoverParams(text_document=_doc(path),
                                                                    position=_at(text, needle, offset)))
    assert found is not None, needle
    return found.contents.value


async def test_hover_on_a_use_shows_the_plugins_header_comment_and_params(client: LanguageClient):
    text = await _hover(client, TEAM, "TaintToleration")
    assert "policy TaintToleration" in text
    assert "Upstream: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go" in text
    fit = await _hover(client, TEAM, "NodeResourcesFit")
    assert "`scoringStrategy: " in fit and "`ignoredResources: list[string] = []`" in fit
    arg = await _hover(client, TEAM, "scoringStrategy")
    assert arg.startswith("```sched\nparam scoringStrategy: {type: string, ")


async def test_hover_on_a_field_shows_its_api_path_type_and_default(client: LanguageClient):
    text = await _hover(client, GPU, "labels[params.gpuLabel] !=")
    assert "(field) ObjectMeta.labels: map[string, string]" in text
    assert "API field `Node.metadata.labels`" in text
    toleration = await _hover(client, stdlib_dir() / "taint_toleration.sched", "pod.spec.tolerations", 9)
    assert "(field) PodSpec.tolerations: list[Toleration]" in toleration
    assert "If specified, the pod's tolerations." in toleration   # k8s.io/api's own field doc
    assert "Toleration has `key`, `operator`, `value`, `effect`, `tolerationSeconds`" in toleration


async def test_hover_on_a_builtin_a_def_and_a_param(client: LanguageClient):
    from policylang.builtins import REGISTRY
    builtin = await _hover(client, stdlib_dir() / "taint_toleration.sched", "tolerates_taint(tol")
    assert ("tolerates_taint(Toleration, Taint, bool) -> bool" in builtin
            and REGISTRY["tolerates_taint"].doc in builtin)
    assert "def wants_gpu(p)" in await _hover(client, GPU, "wants_gpu(pod)")
    aggregate = await _hover(client, GPU, "any(c in p.spec")
    assert aggregate.startswith("```sched\nany: bool\n```") and "whether c holds for some x of xs" in aggregate
    assert 'param gpuLabel: string = "gpu-model"' in await _hover(client, GPU, "gpuLabel] !=")


# ---- definition ---------------------------------------------------------------------------------

async def _definition(client: LanguageClient, path: Path, needle: str, offset: int = 0) -> lsp.Location:
    text = path.read_text()
    await _open(client, path)
    found = await client.text_document_definition_async(lsp.DefinitionParams(
        text_document=_doc(path), position=_at(text, needle, offset)))
    assert isinstance(found, lsp.Location), needle
    return found


async def test_definition_goes_from_a_use_into_the_stdlib_and_the_teams_file(client: LanguageClient):
    stdlib = await _definition(client, TEAM, "TaintToleration")
    target = stdlib_dir() / "taint_toleration.sched"
    assert stdlib.uri == target.resolve().as_uri()
    assert stdlib.range.start == _at(target.read_text(), "policy TaintToleration")
    team = await _definition(client, TEAM, "./gpu_isolation.sched")
    assert team.uri == GPU.as_uri() and team.range.start.line == 1
    fit = stdlib_dir() / "node_resources_fit.sched"
    arg = await _definition(client, TEAM, "scoringStrategy")
    assert arg.uri == fit.resolve().as_uri() and arg.range.start == _at(fit.read_text(), "scoringStrategy:")


async def test_definition_of_a_def_a_param_and_a_let(client: LanguageClient):
    text = GPU.read_text()
    d = await _definition(client, GPU, "wants_gpu(pod)")
    assert d.range.start == _at(text, "wants_gpu(p)")
    p = await _definition(client, GPU, "gpuLabel] !=")
    assert p.range.start == _at(text, "gpuLabel:")
    path = stdlib_dir() / "taint_toleration.sched"
    stdlib = path.read_text()
    let = await _definition(client, path, "tolerations\n                                      where tolerates", 0)
    assert let.range.start == _at(stdlib, "tolerations = pod.spec.tolerations")


# ---- completion ---------------------------------------------------------------------------------

async def _complete(client: LanguageClient, path: Path, text: str, needle: str) -> dict[str, lsp.CompletionItem]:
    await _open(client, path, text)
    found = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=_doc(path), position=_at(text, needle, len(needle))))
    items = found.items if isinstance(found, lsp.CompletionList) else found
    return {i.label: i for i in items}


async def test_completion_of_fields_while_the_file_does_not_parse(client: LanguageClient):
    path = POLICIES / "typing.sched"
    text = GPU.read_text().replace("skip when not wants_gpu(pod)",
                                   "skip when not wants_gpu(pod) or any(c in pod.spec.containers where c.res")
    items = await _complete(client, path, text, "where c.res")
    assert {"name", "image", "resources", "ports"} <= set(items)
    assert items["resources"].kind == lsp.CompletionItemKind.Field
    assert items["resources"].detail == "Container.resources: ResourceRequirements"
    spec = await _complete(client, path, text.replace("where c.res", "where pod.spec."), "where pod.spec.")
    assert {"tolerations", "nodeSelector", "affinity", "containers"} <= set(spec)
    params = await _complete(client, path, text.replace("where c.res", "where params."), "where params.")
    assert set(params) == {"gpuLabel", "preferredModels"}


async def test_completion_of_plugins_params_keywords_and_builtins(client: LanguageClient):
    path = POLICIES / "profile.sched"
    text = TEAM.read_text().replace("    use NodeName\n", "    use Node\n")
    plugins = await _complete(client, path, text, "use Node\n"[:-1])
    assert {"NodeName", "NodeAffinity", "TaintToleration", "GpuIsolation"} <= set(plugins)
    args = await _complete(client, path, text.replace("    use Node\n", "    use NodeResourcesFit {\n"),
                           "use NodeResourcesFit {")
    assert {"scoringStrategy", "ignoredResources", "ignoredResourceGroups"} == set(args)
    anywhere = await _complete(client, GPU, GPU.read_text(), "    value ")
    assert {"reject", "normalize", "requests", "tolerates", "pod", "node", "wants_gpu"} <= set(anywhere)
    assert anywhere["requests"].detail == "requests(Pod) -> map[string, quantity]"


# ---- formatting and code actions ---------------------------------------------------------------

async def test_formatting_gives_the_formatters_text(client: LanguageClient):
    path = POLICIES / "messy.sched"
    messy = GPU.read_text().replace("    reject when", "  reject   when").replace(" = [\"a100\"", " =[\"a100\"")
    await _open(client, path, messy)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        text_document=_doc(path), options=lsp.FormattingOptions(tab_size=4, insert_spaces=True)))
    assert len(edits) == 1 and edits[0].new_text == format_source(messy, str(path)) == GPU.read_text()
    assert edits[0].range.start == lsp.Position(line=0, character=0)
    for canonical in (GPU, TEAM):   # already formatted: nothing to change
        await _open(client, canonical)
        assert list(await client.text_document_formatting_async(lsp.DocumentFormattingParams(
            text_document=_doc(canonical), options=lsp.FormattingOptions(tab_size=4, insert_spaces=True)))) == []


async def test_code_actions_apply_lints_certain_fixes(client: LanguageClient):
    text = S301.read_text()
    await _open(client, S301)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=_doc(S301), range=lsp.Range(start=lsp.Position(line=3, character=0),
                                                  end=lsp.Position(line=3, character=0)),
        context=lsp.CodeActionContext(diagnostics=[])))
    quick = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix]
    assert [a.title for a in quick] == ["Fix S301: 'zone' is never used (unused-let)"]
    edit, = quick[0].edit.changes[S301.as_uri()]
    assert (edit.range.start, edit.range.end, edit.new_text) == (lsp.Position(line=3, character=0),
                                                                lsp.Position(line=4, character=0), "")
    fix_all, = [a for a in actions if a.kind == lsp.CodeActionKind.SourceFixAll]
    whole, = fix_all.edit.changes[S301.as_uri()]
    from policylang.lint.runner import sched_findings
    program = load_program(str(S301))
    assert whole.new_text == apply_edits(text, [e for f in sched_findings(str(S301), text, program, check(program))
                                                for e in f.edits])
    assert "let zone" not in whole.new_text and "let unused_here" not in whole.new_text


async def test_every_fixable_lint_rule_offers_its_fix_as_a_quick_fix(client: LanguageClient):
    from policylang.lint import all_rules
    # The language server serves .sched files: the rules that fix them (S115/S116 fix YAML).
    fixable = [r.code for r in all_rules() if r.fixable and "sched" in r.checks]
    assert fixable, "the catalogue has rules with certain fixes"
    for code in fixable:
        path = ROOT / "tests" / "fixtures" / "lint" / "rules" / f"{code}_bad.sched"
        found = await _open(client, path)
        flagged = [d for d in found if d.code == code]
        assert flagged, code
        actions = await client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=_doc(path), range=lsp.Range(start=lsp.Position(line=0, character=0),
                                                      end=lsp.Position(line=10_000, character=0)),
            context=lsp.CodeActionContext(diagnostics=[])))
        quick = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix and a.title.startswith(f"Fix {code}:")]
        assert len(quick) == len(flagged), code
        assert all(a.edit.changes[path.as_uri()] for a in quick), code


# ---- symbols and the evaluate lens ----------------------------------------------------------------

async def test_document_symbols_of_a_profile(client: LanguageClient):
    await _open(client, TEAM)
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=_doc(TEAM)))
    profile, = symbols
    assert (profile.name, profile.kind, profile.range.start.line) == ("team-scheduler", lsp.SymbolKind.Object, 2)
    assert [c.name for c in profile.children][:3] == ["NodeUnschedulable", "NodeName", "TaintToleration"]
    assert profile.children[6].name == "./gpu_isolation.sched"


async def test_the_evaluate_lens_runs_the_profile_on_the_dump_as_eval_does(client: LanguageClient):
    await _open(client, TEAM)
    lens, = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=_doc(TEAM)))
    assert lens.command.title == "▶ evaluate on examples/pending-dump.yaml" and lens.range.start.line == 2
    result = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command=lens.command.command, arguments=lens.command.arguments))
    code, out = _cli("eval", "--profile", str(TEAM), "--cluster", str(DUMP))
    heads = [line for line in out.splitlines() if line.startswith("Pod ")]
    assert result["summary"].splitlines() == heads
    assert result["text"].strip() == out.strip()
    assert result["ok"] is (code == 0)
    assert client.messages[-1].message == result["summary"]


async def test_a_settings_change_names_the_new_dump_and_a_missing_one_is_a_clear_error(client: LanguageClient):
    await _open(client, TEAM)
    refreshes = client.code_lens_refreshes
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"policylang": {"cluster": ["examples/no-such-dump.yaml"]}}))
    try:
        lens, = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=_doc(TEAM)))
        assert lens.command.title == "▶ evaluate on examples/no-such-dump.yaml"
        result = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command=lens.command.command, arguments=lens.command.arguments))
        assert result["error"].endswith("no-such-dump.yaml: no such file or directory")
        assert client.messages[-1].type == lsp.MessageType.Error
        assert client.code_lens_refreshes > refreshes
    finally:
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
            settings={"policylang": {"cluster": "examples/pending-dump.yaml"}}))


async def test_an_imported_def_is_found_hovered_and_completed_through_its_alias(client: LanguageClient, tmp_path):
    common = tmp_path / "common.sched"
    common.write_text("# Shared helpers.\n\n# Whether the node carries the team's label.\n"
                      "def labelled(n, key) = key in n.metadata.labels\n")
    text = ('policy Team\n\nimport "./common.sched" as c\n\nfilter f {\n'
            '    reject when not c.labelled(node, "team") reason "node(s) have no team label"\n}\n')
    path = tmp_path / "team.sched"
    assert await _open(client, path, text) == []
    found = await client.text_document_definition_async(lsp.DefinitionParams(
        text_document=_doc(path), position=_at(text, "labelled(node", 3)))
    assert found.uri == common.resolve().as_uri() and found.range.start == _at(common.read_text(), "labelled(n,")
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=_doc(path), position=_at(text, "labelled(node", 3)))
    assert "def c.labelled(n, key)" in hover.contents.value
    assert "Whether the node carries the team's label." in hover.contents.value
    imported = await client.text_document_definition_async(lsp.DefinitionParams(
        text_document=_doc(path), position=_at(text, "./common.sched")))
    assert imported.uri == common.resolve().as_uri()
    typing = text.replace("not c.labelled(node, \"team\")", "not c.")
    items = await _complete(client, path, typing, "not c.")
    assert set(items) == {"labelled"} and items["labelled"].detail == "def c.labelled(n, key)"

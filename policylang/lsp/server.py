"""`policylang lsp`: the language server, over stdio, on pygls.

Wiring only: each LSP request turns positions into 1-based lines and columns, asks the pure
feature modules (analysis, hover, definition, completion, symbols, actions, evaluate) and turns
their answer back into LSP types.

Documents are synced incrementally (pygls applies each change to its copy). A change schedules
an analysis after a short quiet time, so typing re-checks once per pause, not per key; a request
made meanwhile analyses the current text first. Analyses run one at a time on a worker thread,
off the loop that reads messages, so a cancel or the next change is read while one runs, and an
analysis whose text is already stale by the time it ends is not published.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from lsprotocol import types as lsp
from pygls import uris
from pygls.lsp.server import LanguageServer
from pygls.workspace.position_codec import ServerTextPosition

from ..diagnostics import InputError, PolicyError
from . import actions as actions_mod
from . import completion as completion_mod
from . import definition as definition_mod
from . import evaluate as evaluate_mod
from . import hover as hover_mod
from . import symbols as symbols_mod
from .analysis import Analysis, analyse, with_lint
from .incremental import IncrementalParser

DEBOUNCE_SECONDS = float(os.environ.get("POLICYLANG_LSP_DEBOUNCE", "0.3"))
EVALUATE = "policylang.evaluate"
SETTINGS = "policylang"
SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
            "info": lsp.DiagnosticSeverity.Information}
COMPLETION_KIND = {"field": lsp.CompletionItemKind.Field, "function": lsp.CompletionItemKind.Function,
                   "keyword": lsp.CompletionItemKind.Keyword, "variable": lsp.CompletionItemKind.Variable,
                   "module": lsp.CompletionItemKind.Module, "class": lsp.CompletionItemKind.Class,
                   "property": lsp.CompletionItemKind.Property, "value": lsp.CompletionItemKind.EnumMember}
SYMBOL_KIND = {"class": lsp.SymbolKind.Class, "module": lsp.SymbolKind.Module, "property": lsp.SymbolKind.Property,
               "function": lsp.SymbolKind.Function, "method": lsp.SymbolKind.Method, "event": lsp.SymbolKind.Event,
               "object": lsp.SymbolKind.Object, "variable": lsp.SymbolKind.Variable}

log = logging.getLogger(__name__)


class PolicyServer(LanguageServer):
    def __init__(self):
        from importlib.metadata import PackageNotFoundError, version
        try:
            ver = version("policylang")
        except PackageNotFoundError:
            ver = "0"
        super().__init__("policylang", ver, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}
        self.parsers: dict[str, IncrementalParser] = {}
        self.scheduled: dict[str, asyncio.Task] = {}
        self.clusters: tuple[str, ...] = ()        # the dumps the evaluate lens reads, resolved
        self.cluster_names: tuple[str, ...] = ()   # as the settings name them
        # One analysis at a time: the checker's caches are shared, and two at once only slow both.
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="policylang-analysis")

    async def work(self, fn, *args):
        """Run ``fn(*args)`` on the worker, with this context's settings (--allow-root, the
        input size limit: context variables a plain executor would not carry over)."""
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self.worker, context.run, fn, *args)

    # ---- analysis -------------------------------------------------------------------------
    async def current(self, uri: str, lint: bool = False) -> Analysis:
        """The analysis of the document's text as it is now (made now if the last is stale);
        with lint's findings when ``lint`` (diagnostics and code actions need them, hover and
        completion do not, and lint takes longer than the checker on a large file)."""
        text = self.workspace.get_text_document(uri).source
        found = self.analyses.get(uri)
        if found is None or found.text != text:
            found = await self.work(analyse, _path(uri), text, False, self.parser(uri))
        if lint and not found.linted:
            found = await self.work(with_lint, found)
        if self.workspace.get_text_document(uri).source == text:
            self.analyses[uri] = found
        return found

    def parser(self, uri: str) -> IncrementalParser:
        return self.parsers.setdefault(uri, IncrementalParser())

    def schedule(self, uri: str, delay: float) -> None:
        """Publish diagnostics once the document has been quiet for ``delay`` seconds."""
        old = self.scheduled.pop(uri, None)
        if old is not None:
            old.cancel()
        self.scheduled[uri] = asyncio.get_running_loop().create_task(self._publish_later(uri, delay))

    async def _publish_later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        doc = self.workspace.get_text_document(uri)
        version = doc.version
        found = await self.current(uri, lint=True)
        if found.text != self.workspace.get_text_document(uri).source:
            return  # edited meanwhile: the next scheduled analysis publishes
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[_diagnostic(self, uri, found, p) for p in found.problems]))

    # ---- positions ---------------------------------------------------------------------------
    def range(self, text: str, span) -> lsp.Range:
        lines = _lines(text)
        codec = self.workspace.position_codec
        return lsp.Range(codec.position_to_client_units(lines, ServerTextPosition(max(span.line - 1, 0),
                                                                                 max(span.column - 1, 0))),
                         codec.position_to_client_units(lines, ServerTextPosition(max(span.end_line - 1, 0),
                                                                                 max(span.end_column - 1, 0))))

    def position(self, uri: str, position: lsp.Position) -> tuple[int, int]:
        """An LSP position as the 1-based line and column (in characters) spans use."""
        doc = self.workspace.get_text_document(uri)
        p = doc.position_from_client_units(position)
        return p.line + 1, p.character + 1


@lru_cache(maxsize=8)
def _lines(text: str) -> list[str]:
    """A text's lines, kept for the few texts being answered about (ranges convert through them)."""
    return text.splitlines(keepends=True)


def _path(uri: str) -> str:
    return uris.to_fs_path(uri) or uri


def _diagnostic(ls: PolicyServer, uri: str, a: Analysis, p) -> lsp.Diagnostic:
    message = "\n".join([p.message, *p.notes])
    related = None
    if p.elsewhere is not None:  # the problem is in a file this one reaches: link to the place
        text = a.program.sources.get(p.elsewhere.path, "") if a.program is not None else _source(p.elsewhere.path)
        related = [lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=uris.from_fs_path(p.elsewhere.path) or p.elsewhere.path,
                                  range=ls.range(text, p.elsewhere)),
            message=p.message)]
    return lsp.Diagnostic(range=ls.range(a.text, p.span), message=message, severity=SEVERITY[p.severity],
                          code=p.code, source="policylang", related_information=related)


def _source(path: str) -> str:
    from ..inputs import read_text
    try:
        return read_text(path)
    except (InputError, OSError):
        return ""


server = PolicyServer()


# ---- lifecycle and settings ---------------------------------------------------------------------

@server.feature(lsp.INITIALIZE)
def initialize(ls: PolicyServer, params: lsp.InitializeParams) -> None:
    _settings(ls, params.initialization_options)


@server.feature(lsp.INITIALIZED)
async def initialized(ls: PolicyServer, params: lsp.InitializedParams) -> None:
    caps = ls.client_capabilities.workspace
    if caps is not None and caps.configuration:
        try:
            found = await ls.workspace_configuration_async(lsp.ConfigurationParams(
                items=[lsp.ConfigurationItem(section=SETTINGS)]))
        except Exception as err:  # noqa: BLE001 - a client that cannot answer keeps the initial settings
            log.warning("workspace/configuration failed: %s", err)
            return
        if found:
            _settings(ls, found[0])


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: PolicyServer, params: lsp.DidChangeConfigurationParams) -> None:
    _settings(ls, params.settings)
    caps = ls.client_capabilities.workspace
    if caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support:
        ls.workspace_code_lens_refresh(None)


def _settings(ls: PolicyServer, raw) -> None:
    """`policylang.cluster`: a dump (or a list of them), relative to the workspace's root."""
    if not isinstance(raw, dict):
        return
    section = raw.get(SETTINGS, raw)
    if not isinstance(section, dict) or "cluster" not in section:
        return
    value = section["cluster"]
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    root = ls.workspace.root_path
    ls.cluster_names = tuple(v for v in items if isinstance(v, str) and v)
    ls.clusters = tuple(str(Path(root or ".", v)) for v in ls.cluster_names)


# ---- documents ---------------------------------------------------------------------------------

@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: PolicyServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: PolicyServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: PolicyServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.analyses.clear()  # another open document may import this one
    for uri in list(ls.workspace.text_documents):
        ls.schedule(uri, 0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: PolicyServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.scheduled.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.analyses.pop(uri, None)
    ls.parsers.pop(uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


# ---- features ----------------------------------------------------------------------------------

@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def hover(ls: PolicyServer, params: lsp.HoverParams) -> lsp.Hover | None:
    a = await ls.current(params.text_document.uri)
    found = hover_mod.hover(a, *ls.position(params.text_document.uri, params.position))
    if found is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=found.markdown),
                     range=ls.range(a.text, found.span))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
async def definition(ls: PolicyServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    a = await ls.current(params.text_document.uri)
    span = definition_mod.definition(a, *ls.position(params.text_document.uri, params.position))
    if span is None:
        return None
    if span.path == a.path:
        return lsp.Location(uri=params.text_document.uri, range=ls.range(a.text, span))
    text = a.program.sources.get(span.path, "") if a.program is not None else ""
    return lsp.Location(uri=uris.from_fs_path(span.path) or span.path, range=ls.range(text, span))


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                lsp.CompletionOptions(trigger_characters=[".", "{", ","]))
async def completion(ls: PolicyServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    uri = params.text_document.uri
    a = await ls.current(uri)
    line, column = ls.position(uri, params.position)
    items = await ls.work(completion_mod.complete, a, line, column, ls.parser(uri))
    return lsp.CompletionList(is_incomplete=False, items=[
        lsp.CompletionItem(label=i.label, kind=COMPLETION_KIND[i.kind], detail=i.detail or None,
                           documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=i.doc)
                           if i.doc else None)
        for i in items])


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def document_symbol(ls: PolicyServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
    a = await ls.current(params.text_document.uri)

    def convert(s) -> lsp.DocumentSymbol:
        return lsp.DocumentSymbol(name=s.name, kind=SYMBOL_KIND[s.kind], detail=s.detail,
                                  range=ls.range(a.text, s.span), selection_range=ls.range(a.text, s.selection),
                                  children=[convert(c) for c in s.children] or None)
    return [convert(s) for s in symbols_mod.symbols(a.module, a.text)]


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
async def formatting(ls: PolicyServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
    from ..syntax.format import format_source

    a = await ls.current(params.text_document.uri)
    try:
        formatted = await ls.work(format_source, a.text, a.path)
    except PolicyError:
        return None  # as `policylang fmt`: a file that does not parse is left untouched
    if formatted == a.text:
        return []
    return [lsp.TextEdit(range=ls.range(a.text, actions_mod.whole_document(a.path, a.text)), new_text=formatted)]


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
    code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll]))
async def code_action(ls: PolicyServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    a = await ls.current(uri, lint=True)
    first, _ = ls.position(uri, params.range.start)
    last, _ = ls.position(uri, params.range.end)
    only = params.context.only
    out = []
    for action in actions_mod.actions(a, first, last):
        kind = lsp.CodeActionKind.QuickFix if action.kind == "quickfix" else lsp.CodeActionKind.SourceFixAll
        if only and not any(kind.value.startswith(k) for k in only):
            continue
        edits = [lsp.TextEdit(range=ls.range(a.text, span), new_text=text) for span, text in action.changes]
        out.append(lsp.CodeAction(title=action.title, kind=kind,
                                  diagnostics=[_diagnostic(ls, uri, a, p) for p in action.problems],
                                  edit=lsp.WorkspaceEdit(changes={uri: edits}),
                                  is_preferred=action.kind == "quickfix" or None))
    return out


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
async def code_lens(ls: PolicyServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    uri = params.text_document.uri
    a = await ls.current(uri)
    return [lsp.CodeLens(range=ls.range(a.text, lens.span),
                         command=lsp.Command(title=lens.title, command=EVALUATE, arguments=[uri, lens.profile]))
            for lens in evaluate_mod.lenses(a, ls.cluster_names)]


@server.command(EVALUATE)
async def evaluate(ls: PolicyServer, *args) -> dict:
    """Run the profile and show eval's first line per pod; the whole output goes to the log.
    Returns {"summary", "text", "ok"} (or {"error"}) for clients that show it themselves."""
    uri, profile = (list(args) + [None, None])[:2]
    if not isinstance(uri, str) or not isinstance(profile, str):
        return {"error": "policylang.evaluate takes the document's URI and a profile name"}
    a = await ls.current(uri)
    try:
        result = await ls.work(evaluate_mod.evaluate, a, profile, ls.clusters)
    except (InputError, PolicyError) as err:   # where eval exits 2: said as eval says it
        message = err.render() if isinstance(err, PolicyError) else str(err)
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"policylang: {message}"))
        return {"error": message}
    ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=result.text))
    ls.window_show_message(lsp.ShowMessageParams(
        type=lsp.MessageType.Info if result.ok else lsp.MessageType.Warning, message=result.summary))
    return {"summary": result.summary, "text": result.text, "ok": result.ok}


def main() -> int:
    server.start_io()
    return 0

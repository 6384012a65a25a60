"""The language server's incremental parser (policylang/lsp/incremental.py): after any edits it
gives what parsing the whole text gives: the same tree with the same spans when the text parses,
and the CLI's first syntax error first when it does not."""

from __future__ import annotations

import attrs
from hypothesis import given, note, settings
from hypothesis import strategies as st

import strategies as S
from policylang.diagnostics import PolicyError
from policylang.lsp.incremental import IncrementalParser
from policylang.syntax.parse import parse
from policylang.program import stdlib_dir
from policylang.source import Span

FILES = sorted(stdlib_dir().glob("*.sched"))


def _spans(node) -> list:
    """Every span in a tree, in field order (spans are left out of the nodes' equality)."""
    if isinstance(node, Span):
        return [node]
    if isinstance(node, tuple):
        return [s for n in node for s in _spans(n)]
    if attrs.has(type(node)):
        return [s for f in attrs.fields(type(node)) for s in _spans(getattr(node, f.name))]
    return []


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FILES).flatmap(lambda f: st.tuples(st.just(f.read_text()), S.mutated(f.read_text()))))
def test_after_edits_the_incremental_parse_is_the_whole_files(texts):
    before, after = texts
    note(after)
    parser = IncrementalParser()
    parser.parse(before, "p.sched")
    module, diagnostics = parser.parse(after, "p.sched")
    try:
        whole = parse(after, "p.sched")
    except PolicyError as err:
        assert diagnostics[:len(err.diagnostics)] == err.diagnostics
        return
    assert diagnostics == ()
    assert module.decls == whole.decls
    assert _spans(module.decls) == _spans(whole.decls)


def test_a_broken_declaration_keeps_the_others_and_reports_each_broken_one():
    text = (stdlib_dir() / "taint_toleration.sched").read_text()
    broken = text.replace("reason \"node(s) had untolerated taint(s)\"", "reason").replace("normalize reverse",
                                                                                         "normalize (")
    module, diagnostics = IncrementalParser().parse(broken, "t.sched")
    assert [type(d).__name__ for d in module.decls] == ["PolicyDecl"]
    assert [d.code for d in diagnostics] == ["P001", "P001"]
    assert diagnostics[0].span.line < diagnostics[1].span.line

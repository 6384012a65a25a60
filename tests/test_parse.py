"""Parser: golden syntax trees for fixture programs, and positions on every node."""

from pathlib import Path

import attrs
import pytest

from policylang.syntax import ast
from policylang.api.quantity import Quantity
from policylang.syntax.parse import parse, parse_expr

FIXTURES = Path(__file__).parent / "fixtures" / "parse"
STDLIB = Path(__file__).parent.parent / "stdlib_policies"


def dump(node, indent=0) -> str:
    """An indented, span-free rendering of a tree (the golden format)."""
    pad = "  " * indent
    if isinstance(node, tuple):
        if not node:
            return pad + "()"
        return "\n".join(dump(n, indent) for n in node)
    if not attrs.has(type(node)) or isinstance(node, Quantity):
        return pad + repr(node)
    fields = [f for f in attrs.fields(type(node)) if f.name not in ("span", "func_span", "text")]
    simple = [(f.name, getattr(node, f.name)) for f in fields
              if isinstance(getattr(node, f.name), Quantity)
              or not attrs.has(type(getattr(node, f.name))) and not isinstance(getattr(node, f.name), tuple)]
    nested = [(f.name, getattr(node, f.name)) for f in fields if (f.name, getattr(node, f.name)) not in simple]
    head = pad + type(node).__name__ + "".join(f" {k}={v!r}" for k, v in simple)
    lines = [head]
    for k, v in nested:
        if isinstance(v, tuple) and not v:
            continue
        lines.append(f"{pad}  .{k}")
        lines.append(dump(v, indent + 2))
    return "\n".join(lines)


@pytest.mark.parametrize("source", sorted(FIXTURES.glob("*.sched")), ids=lambda p: p.stem)
def test_golden_tree(source, golden):
    module = parse(source.read_text(), source.name)
    golden(source.with_suffix(".tree"), dump(module.decls) + "\n")


@pytest.mark.parametrize("source", sorted(STDLIB.glob("*.sched")), ids=lambda p: p.stem)
def test_stdlib_parses(source):
    parse(source.read_text(), str(source))


def test_every_expression_has_a_span():
    module = parse('policy P\nfilter f {\n  reject when count(t in node.spec.taints where t.key == "a") > 1\n'
                   '    reason "has ${count(node.spec.taints)} taints"\n}\n', "p.sched")
    seen = []

    def walk(node):
        if isinstance(node, tuple):
            for n in node:
                walk(n)
        elif attrs.has(type(node)):
            if isinstance(node, (ast.Name, ast.Field, ast.Call, ast.Binary, ast.Comprehension)):
                seen.append(node)
                assert node.span.line > 0, node
            for f in attrs.fields(type(node)):
                walk(getattr(node, f.name))
    walk(module.decls)
    assert len(seen) > 5
    interpolated = [n for n in seen if isinstance(n, ast.Call) and n.func == "count" and n.span.line == 4]
    assert interpolated and interpolated[0].span.column == 19


@pytest.mark.parametrize("text, kind, value", [
    ("500m", "quantity", "500m"), ("1Gi", "quantity", "1Gi"), ("2e3", "quantity", "2e3"),
    ("300s", "duration", 300), ("1h", "duration", 3600), ("42", "int", 42), ("2.5", "float", 2.5),
])
def test_number_literals(text, kind, value):
    lit = parse_expr(text)
    assert lit.kind == kind
    assert (str(lit.value) if kind == "quantity" else lit.value) == value


def test_operators_bind_as_documented():
    e = parse_expr("a + b * c > d and not e or f ?? g == h")
    assert e.op == "or"
    assert e.left.op == "and" and e.left.left.op == ">"
    assert e.left.left.left.op == "+" and e.left.left.left.right.op == "*"
    assert e.right.op == "==" and e.right.left.op == "??"


def test_keywords_are_field_names_after_a_dot():
    e = parse_expr("taint.value == x.code")
    assert e.left.name == "value" and e.right.name == "code"


def test_fold_builds_step_by_step(tmp_path):
    from policylang import check, load_program
    from policylang.run.interpret import evaluate
    from policylang.compile import _Compiler

    e = parse_expr("fold(acc = [] for x in [3, 1, 2]: acc + [len(acc) * 10 + x])")
    assert isinstance(e, ast.Fold) and e.acc == "acc" and e.var == "x"
    source = tmp_path / "p.sched"
    source.write_text("def steps() = fold(acc = [] for x in [3, 1, 2]: acc + [len(acc) * 10 + x])\n")
    checked = check(load_program(source))
    body = checked.program.root_module.decls[0].body
    assert evaluate(_Compiler(checked).expr(body, str(source), {}), {}) == [3, 11, 22]


@pytest.mark.parametrize("text, message", [
    ("9223372036854775808", "integer '9223372036854775808' is out of range"),
    ("1" * 5000, "is out of range (at most 9223372036854775807"),
    ("1" * 400 + ".5", "is out of range"),
    ("1e999999999", "quantity '1e999999999' is out of range"),
    ("9" * 5000 + "s", "is out of range (at most 9223372036854775807 seconds)"),
    ("2562047788015216h", "is out of range"),
])
def test_number_literals_beyond_int64_are_diagnostics(text, message):
    import time

    from policylang.diagnostics import PolicyError
    started = time.monotonic()
    with pytest.raises(PolicyError) as err:
        parse_expr(text)
    assert time.monotonic() - started < 1
    assert [d.code for d in err.value.diagnostics] == ["P009"]
    assert message in err.value.diagnostics[0].message
    assert len(err.value.diagnostics[0].message) < 200


def test_the_largest_int64_literal_parses():
    assert parse_expr("9223372036854775807").value == 2**63 - 1


def test_keywords_are_the_grammars_words():
    from policylang.syntax.grammar import keywords
    words = keywords()
    assert {"policy", "filter", "reject", "when", "reason", "normalize", "true", "null", "in", "fold"} <= set(words)
    assert "NAME" not in words and "(" not in words and list(words) == sorted(set(words))


def test_declaration_pieces_cut_before_each_declaration_and_keep_the_text():
    from policylang.syntax.parse import declaration_pieces, parse_piece
    text = (Path(__file__).parent.parent / "stdlib_policies" / "taint_toleration.sched").read_text()
    pieces = declaration_pieces(text)
    assert "".join(p for _, p in pieces) == text
    assert pieces[0][1].startswith("# TaintToleration")   # the header comment, before the first declaration
    assert [p.split(None, 2)[:2] for _, p in pieces[1:]] == [["policy", "TaintToleration"],
                                                              ["filter", "untolerated_taints"],
                                                              ["score", "prefer_no_schedule"]]
    decls = [d for before, piece in pieces for d in parse_piece(piece, before, "t.sched")]
    whole = parse(text, "t.sched").decls
    assert decls == list(whole) and [d.span for d in decls] == [d.span for d in whole]

"""The formatter: golden output, idempotence, the tree unchanged, comments kept, and
files that do not parse left alone."""

from pathlib import Path

import pytest

from policylang.cli import main
from policylang.format import format_source
from policylang.parse import parse

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "format"
SOURCES = sorted(FIXTURES.glob("*.sched")) + sorted((ROOT / "stdlib_policies").glob("*.sched")) + \
    sorted((ROOT / "examples").rglob("*.sched")) + sorted((Path(__file__).parent / "fixtures" / "parse").glob("*.sched"))


@pytest.mark.parametrize("source", sorted(FIXTURES.glob("*.sched")), ids=lambda p: p.stem)
def test_golden(source, golden):
    golden(source.with_suffix(".sched.formatted"), format_source(source.read_text(), source.name))


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_formatting_keeps_the_tree_and_is_idempotent(source):
    text = source.read_text()
    once = format_source(text, source.name)
    assert parse(once, source.name).decls == parse(text, source.name).decls
    assert format_source(once, source.name) == once


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_every_comment_survives(source):
    text = source.read_text()
    comments = [line.split("#", 1)[1].strip() for line in text.splitlines() if line.lstrip().startswith("#")]
    once = format_source(text, source.name)
    for c in comments:
        assert c in once


def test_fmt_never_touches_a_file_it_cannot_parse(tmp_path, capsys):
    broken = tmp_path / "broken.sched"
    broken.write_text("policy P\nfilter f {\n  reject when\n")
    before = broken.read_bytes()
    assert main(["fmt", str(broken)]) == 2
    assert broken.read_bytes() == before
    assert "error[P001]" in capsys.readouterr().err


def test_fmt_check_and_write(tmp_path, capsys):
    f = tmp_path / "p.sched"
    f.write_text("policy   P\n")
    assert main(["fmt", "--check", str(f)]) == 1
    assert f.read_text() == "policy   P\n"
    assert main(["fmt", str(tmp_path)]) == 0
    assert f.read_text() == "policy P\n"
    assert main(["fmt", "--check", str(f)]) == 0


def test_shipped_policies_are_formatted():
    for source in sorted((ROOT / "stdlib_policies").glob("*.sched")) + sorted((ROOT / "examples").rglob("*.sched")):
        assert format_source(source.read_text(), source.name) == source.read_text(), f"run policylang fmt {source}"

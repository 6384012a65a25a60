"""The formatter: golden output, idempotence, the tree unchanged, comments kept, and
files that do not parse left alone."""

from pathlib import Path

import pytest

from policylang.cli import main
from policylang.syntax.format import format_source
from policylang.syntax.parse import parse

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


def test_fmt_keeps_crlf_line_endings_mode_and_symlinks(tmp_path, capsys):
    real = tmp_path / "real.sched"
    real.write_bytes(b"policy   P\r\n\r\nfilter f {\r\n  reject when true reason \"x\"\r\n}\r\n")
    real.chmod(0o640)
    link = tmp_path / "link.sched"
    link.symlink_to(real)
    assert main(["fmt", str(link)]) == 0
    assert link.is_symlink()
    assert real.read_bytes() == b"policy P\r\n\r\nfilter f {\r\n    reject when true\r\n        reason \"x\"\r\n}\r\n"
    assert (real.stat().st_mode & 0o777) == 0o640
    assert main(["fmt", "--check", str(real)]) == 0  # CRLF is not a change to make


def test_fmt_refuses_a_read_only_file_and_leaves_it(tmp_path, capsys):
    f = tmp_path / "p.sched"
    f.write_text("policy   P\n")
    f.chmod(0o444)
    assert main(["fmt", str(f)]) == 2
    assert "cannot write: the file is read-only" in capsys.readouterr().err
    assert f.read_text() == "policy   P\n"


def test_a_comment_on_a_blocks_header_line_is_kept(tmp_path, capsys):
    text = ('policy P\n\nfilter f {  # why\n    reject when true\n        reason "x"\n}\n\n'
            'score s {  # because\n    value 1\n}\n\nprofile p {  # mine\n    use TaintToleration\n}\n')
    f = tmp_path / "p.sched"
    f.write_text(text.replace("{  # why", "{      # why"))
    assert main(["fmt", str(f)]) == 0
    assert f.read_text() == text
    assert main(["fmt", "--check", str(f)]) == 0

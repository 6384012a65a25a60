"""write.py: how fmt, lint --fix and simulate --write-state replace a user's file (issue 29)."""

import os
import stat

import pytest

from policylang.diagnostics import InputError
from policylang.write import write_atomic


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "real.sched"
    target.write_text("old\n")
    link = tmp_path / "link.sched"
    link.symlink_to(target)
    write_atomic(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"


def test_the_mode_is_kept_and_a_new_file_gets_the_umask_default(tmp_path):
    kept = tmp_path / "kept.sched"
    kept.write_text("old\n")
    kept.chmod(0o640)
    write_atomic(kept, "new\n")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.sched", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.sched").stat().st_mode) == 0o640


def test_crlf_is_written_when_asked(tmp_path):
    f = tmp_path / "crlf.sched"
    write_atomic(f, "a\nb\n", "\r\n")
    assert f.read_bytes() == b"a\r\nb\r\n"


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "read-only", "read-only directory",
                                  "missing directory"])
def test_what_is_not_a_writable_regular_file_is_refused_and_left_alone(tmp_path, monkeypatch, kind):
    path = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":      # as root, a device node was replaced by a regular file
        if os.geteuid() != 0:
            pytest.skip("only root makes device nodes")
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))     # /dev/null's numbers
    elif kind == "directory":
        path.mkdir()
    elif kind == "read-only":
        path.write_text("keep\n")
        path.chmod(0o444)
    elif kind == "read-only directory":
        # The temporary file cannot be made there (as root it can, so the refusal is simulated).
        path.write_text("keep\n")

        def refused(*args, **kw):
            raise PermissionError(13, "Permission denied", str(tmp_path))
        monkeypatch.setattr("tempfile.mkstemp", refused)
    else:
        path = tmp_path / "nope" / "target"
    with pytest.raises(InputError, match="cannot write"):
        write_atomic(path, "new\n")
    if kind == "fifo":
        assert stat.S_ISFIFO(path.stat().st_mode)
    if kind == "device":
        assert stat.S_ISCHR(path.stat().st_mode)
    if kind == "read-only directory":
        assert path.read_text() == "keep\n"
    if kind == "read-only":
        assert path.read_text() == "keep\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_an_interrupted_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    f = tmp_path / "f.yaml"
    f.write_text("old\n")

    def interrupted(*_args):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(f, "new\n")
    assert f.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.yaml"]

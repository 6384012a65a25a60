"""oracle/build.sh and kube/build.sh take turns on a cache entry (issue 46): two builds at once
(two checkouts, CI beside a developer) used to write the same partial file, and one failed. Here
`go` is a fake first on PATH (the scripts find go there), whose `build` logs each run and holds
until the test opens a gate: the first build is caught inside the lock, the second is seen waiting
for it, and then finds the first's binaries instead of building them again."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("flock") is None, reason="flock(1) (util-linux) is not installed")

FAKE_GO = r"""#!/bin/sh
# A stand-in for go: `go version`, and `go build ... -o OUT ...` writing a script to OUT.
case "$1" in
version) echo "go version go0.0-fake linux/amd64" ;;
build)
    out=""
    while [ $# -gt 0 ]; do
        if [ "$1" = -o ]; then out=$2; shift; fi
        shift
    done
    echo "start $(basename "$out")" >> "$FAKE_GO_LOG"
    i=0
    while [ ! -e "$FAKE_GO_GATE" ]; do
        sleep 0.05; i=$((i + 1))
        if [ $i -gt 600 ]; then echo "fake go: the gate never opened" >&2; exit 3; fi
    done
    if [ -n "${FAKE_GO_FAIL:-}" ]; then echo "fake go: build failed" >&2; exit 1; fi
    printf '#!/bin/sh\necho fake\n' > "$out"
    chmod +x "$out"
    ;;
*) echo "fake go: unexpected $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def fake(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "FAKE_GO_LOG": str(tmp_path / "go.log"), "FAKE_GO_GATE": str(tmp_path / "gate")}
    return tmp_path, env


def _start(script: str, env: dict, tmp_path: Path, name: str) -> tuple[subprocess.Popen, Path]:
    err = tmp_path / f"{name}.err"
    proc = subprocess.Popen(["bash", str(ROOT / script)], env=env, stdout=subprocess.PIPE,
                            stderr=err.open("w"), text=True)
    return proc, err


def _until(check, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _log(tmp_path: Path) -> list[str]:
    log = tmp_path / "go.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("script, binaries", [("oracle/build.sh", ["oracle.partial"]),
                                              ("kube/build.sh", ["etcd.partial", "kube-apiserver.partial",
                                                                 "kube-scheduler.partial"])])
def test_a_second_build_waits_for_the_first_and_uses_its_result(fake, script, binaries):
    tmp_path, env = fake
    first, first_err = _start(script, env, tmp_path, "first")
    _until(lambda: _log(tmp_path), "the first build to start")
    second, second_err = _start(script, env, tmp_path, "second")
    _until(lambda: "waiting for another build into" in second_err.read_text(), "the second build to wait")
    assert second.poll() is None
    (tmp_path / "gate").touch()
    out1, _ = first.communicate(timeout=60)
    out2, _ = second.communicate(timeout=60)
    assert (first.returncode, second.returncode) == (0, 0), first_err.read_text() + second_err.read_text()
    # The same entry printed by both, each binary built once (by the first), none left partial.
    assert out1 == out2 and out1.strip().startswith(str(tmp_path / "cache" / "policylang"))
    assert [line.split(".partial.")[0] for line in _log(tmp_path)] == \
        [f"start {b.removesuffix('.partial')}" for b in binaries]
    entry = Path(out1.strip())
    entry = entry if entry.is_dir() else entry.parent
    assert not [p for p in entry.iterdir() if ".partial" in p.name]
    assert "building" not in second_err.read_text()
    for b in binaries:
        binary = entry / b.removesuffix(".partial")
        assert subprocess.run([str(binary)], capture_output=True, text=True).stdout == "fake\n"


@pytest.mark.parametrize("script", ["oracle/build.sh", "kube/build.sh"])
def test_a_failed_build_leaves_no_partial_file_and_releases_the_lock(fake, script):
    tmp_path, env = fake
    (tmp_path / "gate").touch()
    failed = subprocess.run(["bash", str(ROOT / script)], env={**env, "FAKE_GO_FAIL": "1"}, capture_output=True,
                            text=True, timeout=60)
    assert failed.returncode != 0 and "fake go: build failed" in failed.stderr
    assert not [p for p in (tmp_path / "cache").rglob("*") if ".partial" in p.name]
    again = subprocess.run(["bash", str(ROOT / script)], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "waiting" not in again.stderr, again.stderr

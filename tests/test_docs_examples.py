"""Every console example in the README and the site runs: each `policylang …` command of a
```sh / ```console / ```bash block in README.md and docs/**/*.md is executed against a copy of
examples/ (so a command that writes, `fmt` or `--write-state`, changes nothing of ours), and must
exit as a user would expect it to (0, or 1 for a verdict: a pod that does not fit, findings) with no
traceback. The docs cannot rot.

What is not run, and why, is decided here, not guessed per block:
- a command that reads a live cluster (--kubeconfig, --context, --in-cluster) or starts a server
  (serve, lsp, mcp), and kubectl's plugin: they need what the live-cluster and serve tests start;
- a block right after `<!-- not run: REASON -->` (placeholder files a reader substitutes, say);
- a command whose line says the exit code it expects (`# exit 2`) is held to that code instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(sh|console|bash|shell)\s*$")
NOT_RUN = re.compile(r"<!--\s*not run:")
LIVE = ("--kubeconfig", "--context", "--in-cluster")
SERVERS = ("serve", "lsp", "mcp")


def _commands(page: Path) -> list[tuple[str, int, str]]:
    """(page, line, command) for each policylang command of the page's console blocks."""
    out = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        if not FENCE.match(lines[i]):
            i += 1
            continue
        skipped = i > 0 and any(NOT_RUN.search(lines[j]) for j in range(max(0, i - 2), i))
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            start, text = i, lines[i].removeprefix("$ ").strip()
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            if not skipped and text.startswith("policylang "):
                out.append((str(page.relative_to(ROOT)), start + 1, text))
            i += 1
        i += 1
    return out


CASES = [c for page in PAGES for c in _commands(page)]


def _why_not_run(command: str) -> "str | None":
    words = command.split()
    if any(w in words or any(x.startswith(w + "=") for x in words) for w in LIVE):
        return "reads a live cluster"
    if len(words) > 1 and words[1] in SERVERS:
        return "starts a server"
    return None


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A copy of examples/, the stdlib and the lint fixtures the pages name, to run the commands in."""
    where = tmp_path_factory.mktemp("docs")
    for name in ("examples", "stdlib_policies", "tests/fixtures/lint"):
        shutil.copytree(ROOT / name, where / name)
    return where


def test_the_pages_have_examples():
    assert len(CASES) >= 20, CASES


@pytest.mark.parametrize("page, line, command", CASES, ids=[f"{p}:{n}" for p, n, _ in CASES])
def test_a_documented_command_runs(workdir, page, line, command):
    why = _why_not_run(command)
    if why:
        pytest.skip(f"{page}:{line}: {why}")
    expected = re.search(r"#\s*exit\s+(\d)", command)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "NO_COLOR": "1", "COLUMNS": "100"}
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    shown = f"{page}:{line}: {command}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr, shown
    if expected:
        assert done.returncode == int(expected.group(1)), shown
    else:
        assert done.returncode in (0, 1), shown

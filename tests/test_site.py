"""The documentation site (mkdocs.yml, docs/) builds with `mkdocs build --strict`, which fails on
any broken link, missing anchor or page left out of the nav, and every nav entry is a page of the
built site. The Getting started page shows the files of examples/getting-started/ exactly as they
are, and what it says they do, they do: check, lint, fmt --check, test and eval, with eval's
output as the page prints it.

The build needs the docs extra (`make install` installs it, so CI runs it); without mkdocs those
tests skip. The Getting started tests need only policylang."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLE = ROOT / "examples" / "getting-started"
GETTING_STARTED = DOCS / "getting-started.md"


def _nav_pages(nav) -> list[str]:
    """Every page a nav (mkdocs.yml's list of titles and pages, nested) names."""
    out = []
    for item in nav:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                out.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return out


def _built_path(site: Path, page: str) -> Path:
    """Where mkdocs (with its default use_directory_urls) writes a page: x.md → x/index.html,
    index.md and README.md → the directory's index.html."""
    p = Path(page)
    if p.stem in ("index", "README"):
        return site / p.parent / "index.html"
    return site / p.parent / p.stem / "index.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the site needs the docs extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def _config() -> dict:
    # mkdocs.yml holds no Python tags (!!python/name), so the safe loader reads it.
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_the_site_builds_strict_and_every_nav_entry_is_a_page(site):
    pages = _nav_pages(_config()["nav"])
    assert len(pages) >= 20, pages
    missing = [p for p in pages if not _built_path(site, p).is_file()]
    assert not missing, f"nav entries with no built page: {missing}"
    # Every markdown page of docs/ is in the nav (strict's omitted_files check says so too).
    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert on_disk <= set(pages), f"pages left out of the nav: {sorted(on_disk - set(pages))}"


def test_the_api_reference_names_the_engine_and_fork(site):
    if not (DOCS / "reference" / "api.md").is_file():
        pytest.skip("docs/reference/api.md (the Python API reference) is not written yet")
    html = _built_path(site, "reference/api.md").read_text()
    assert "Engine" in html
    assert "fork" in html


def test_the_readme_fits_on_a_few_screens():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)


def _blocks(page: Path) -> list[str]:
    """The text of each fenced block of a page."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", page.read_text(), re.S | re.M)


@pytest.mark.parametrize("name", ["frontend.sched", "profile.sched", "pods/frontend.yaml", "frontend_test.yaml"])
def test_getting_started_shows_the_example_files_exactly(name):
    assert (EXAMPLE / name).read_text() in _blocks(GETTING_STARTED), \
        f"docs/getting-started.md does not show examples/getting-started/{name} as it is"


def _policylang(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "policylang.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _console(command: str) -> str:
    """The output the page shows under `$ COMMAND` in its console blocks."""
    for block in _blocks(GETTING_STARTED):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line == f"$ {command}":
                shown = []
                for rest in lines[i + 1:]:
                    if rest.startswith("$ "):
                        break
                    shown.append(rest)
                return "\n".join(shown).strip()
    raise AssertionError(f"docs/getting-started.md does not show `$ {command}`")


@pytest.mark.parametrize("command", [
    "policylang check examples/getting-started/frontend.sched examples/getting-started/profile.sched",
    "policylang lint examples/getting-started/",
    "policylang fmt --check examples/getting-started/",
    "policylang test examples/getting-started",
    "policylang eval --cluster examples/cluster.yaml --profile examples/getting-started/profile.sched "
    "--pod examples/getting-started/pods/frontend.yaml",
])
def test_getting_started_commands_print_what_the_page_shows(command):
    done = _policylang(*command.split()[1:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == _console(command), done.stdout

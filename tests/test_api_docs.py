"""docs/api.md's examples run as one program from the repository's root, in order: the page a
new user learns the Python API from cannot drift from what the API does."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api.md"


def test_the_api_page_runs():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) >= 5
    namespace: dict = {}
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            for i, block in enumerate(blocks):
                exec(compile(block, f"{PAGE}:block {i + 1}", "exec"), namespace)
    finally:
        os.chdir(here)
    printed = out.getvalue()
    # What the page's comments say those lines print.
    assert printed.splitlines()[0] == "worker-c1"
    assert "Insufficient cpu" in printed
    assert "no profile named 'no-such-profile'" in printed

"""The public Python API type-checks as the docs show it: mypy accepts tests/typing/api_usage.py
(a caller of Engine, Fork, Decision, Held and the error family) and policylang/engine.py itself.
A change to the surface that would break a caller's types fails here, before a release."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_public_api_type_checks():
    pytest.importorskip("mypy", reason="mypy is in the test extra")
    run = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
                          "--no-incremental", "--python-version", "3.11",
                          "tests/typing/api_usage.py", "policylang/engine.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

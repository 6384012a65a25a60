#!/usr/bin/env python3
"""Coverage-guided fuzzing of loading and checking a policy with atheris:

    python fuzz/check.py -max_total_time=60 fuzz/corpus/check

New inputs that reach new code are added to the corpus directory; tests/test_fuzz.py replays the
committed corpus through the same entry point (fuzz/targets.py), so CI covers it without atheris."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]   # fuzz/check.py is not a module to import
sys.path.insert(0, os.path.dirname(HERE))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["policylang"]):
    # The entry points import policylang lazily: import what they reach here, to instrument it.
    import policylang.check, policylang.cluster.load, policylang.syntax.format, policylang.program  # noqa: E401,F401
    from fuzz.targets import ENTRIES  # noqa: E402

if __name__ == "__main__":
    atheris.Setup(sys.argv, ENTRIES["check"])
    atheris.Fuzz()

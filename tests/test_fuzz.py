"""Adversarial tests (issue 29): every command, on mutated real inputs, ends within its limits with
exit 0, 1 or 2 and no traceback — policies, cluster dumps, pods and workloads, scheduler
configurations, test files and lint settings. The mutations (fuzz/mutate.py) start from the files
in examples/, stdlib_policies/ and tests/fixtures/; the contract is checked in fuzz/targets.py.

Seeded and derandomized, a few examples per kind so the module takes about 20 s; look harder with
POLICYLANG_FUZZ_EXAMPLES=500. Each command must end within POLICYLANG_FUZZ_SECONDS (60) or it is a
crash, so a mutation that hangs fails CI instead of hanging it. The committed atheris corpus (fuzz/corpus/, found by fuzz/*.py) is
replayed through the same entry points, so CI covers it without atheris."""

import os
from pathlib import Path
import re

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from fuzz import mutate, targets
from fuzz.seeds import seeds
from policylang.lint.settings import _glob, glob_match

EXAMPLES = int(os.environ.get("POLICYLANG_FUZZ_EXAMPLES", "3"))
SEEDS = seeds()
CORPUS = Path(__file__).parent.parent / "fuzz" / "corpus"
STRUCTURED = {"cluster", "pods", "config", "test_file", "settings"}

fuzz_settings = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("target", sorted(SEEDS))
def test_every_command_survives_mutated_inputs(target):
    @fuzz_settings
    @given(rng=st.randoms(use_true_random=False), seed=st.sampled_from(SEEDS[target]))
    def check(rng, seed):
        targets.TARGETS[target](mutate.mutate(rng, seed.read_bytes(), target in STRUCTURED))
    check()


def _corpus(kind: str) -> list[Path]:
    return sorted((CORPUS / kind).iterdir())


@pytest.mark.parametrize("kind", sorted(targets.ENTRIES))
def test_the_committed_fuzzing_corpus_replays_without_a_crash(kind):
    files = _corpus(kind)
    assert files, f"fuzz/corpus/{kind} is empty"
    for f in files:
        targets.ENTRIES[kind](f.read_bytes())


def test_the_committed_policy_corpus_through_the_cli():
    # A sample of it through every policy command: the CLI's own paths (lint, fmt, plan) as well.
    for f in _corpus("parse")[::max(1, len(_corpus("parse")) // 2)][:2]:
        targets.policy(f.read_bytes())


# ---- the mutations themselves ------------------------------------------------------------------

def test_mutations_are_deterministic_per_seed_and_change_the_input():
    import random
    data = (Path(__file__).parent.parent / "examples" / "pods" / "web.yaml").read_bytes()
    first = [mutate.mutate(random.Random(i), data, True) for i in range(10)]
    assert first == [mutate.mutate(random.Random(i), data, True) for i in range(10)]
    assert sum(m != data for m in first) >= 9


# ---- lint settings' globs: linear, and as the regex translation had them -----------------------

def _regex(pattern: str) -> re.Pattern:
    """The translation the matcher replaced (it backtracked exponentially on `**`-heavy patterns)."""
    out, i = [], 0
    while i < len(pattern):
        for glob, rx in (("**/", "(?:.*/)?"), ("**", ".*"), ("*", "[^/]*"), ("?", "[^/]")):
            if pattern.startswith(glob, i):
                out.append(rx)
                i += len(glob)
                break
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


@settings(max_examples=150, derandomize=True, deadline=None)
@given(pattern=st.lists(st.sampled_from(["a", "b", "/", "*", "**", "**/", "?"]), max_size=7).map("".join),
       path=st.text("ab/", max_size=8))
def test_glob_matching_agrees_with_the_regex_translation(pattern, path):
    assert glob_match(_glob(pattern), path) == bool(_regex(pattern).fullmatch(path))


def test_every_diagnostic_code_is_documented():
    root = Path(__file__).parent.parent
    used = {c for f in (root / "policylang").rglob("*.py") for c in re.findall(r"\"(P0\d\d)\"", f.read_text())}
    listed = set(re.findall(r"^\| (P\d{3}) \|", (root / "docs" / "diagnostics.md").read_text(), re.MULTILINE))
    assert "P063" in listed
    assert used == listed, (sorted(used - listed), sorted(listed - used))


def test_a_command_that_does_not_end_in_time_is_a_crash(monkeypatch):
    """The fuzzing contract's bound on time: a command past SECONDS is reported, not waited for."""
    import time

    monkeypatch.setattr(targets, "SECONDS", 0.2)
    monkeypatch.setattr("policylang.cli.main", lambda argv: time.sleep(5) or 0)
    started = time.monotonic()
    with pytest.raises(targets.Crash, match=r"policylang check x ran past 0.2s"):
        targets.run_cli("check", "x")
    assert time.monotonic() - started < 3

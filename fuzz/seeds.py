"""The real files the mutation fuzzing starts from, per target (see fuzz/targets.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _files(*globs: str) -> list[Path]:
    return sorted(p for g in globs for p in ROOT.glob(g) if p.is_file())


def seeds() -> dict[str, list[Path]]:
    return {
        "policy": _files("examples/policies/*.sched", "stdlib_policies/*.sched", "tests/fixtures/lint/rules/*.sched",
                         "tests/fixtures/format/*.sched", "tests/fixtures/parse/*.sched"),
        "cluster": _files("examples/cluster.yaml", "examples/pending-dump.yaml", "tests/fixtures/lint/rules/S1*.yaml"),
        "pods": _files("examples/pods/*.yaml", "tests/fixtures/workloads/*.yaml"),
        "config": _files("tests/fixtures/workloads/most-allocated.yaml", "tests/fixtures/lint/rules/S10[5-7]*.yaml"),
        "test_file": _files("examples/policies/*_test.yaml"),
        "settings": _files("tests/fixtures/lint/.policylang.yaml"),
        "pyproject": _files("pyproject.toml"),
    }

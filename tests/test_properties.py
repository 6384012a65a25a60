"""Invariants that hold for every cluster and every policy, checked with Hypothesis.

Each test states its invariant in its docstring. Strategies live in tests/strategies.py;
settings profiles (`ci`, the default, and `thorough`) in tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import tempfile
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import attrs
import pytest
from hypothesis import assume, example, given, note, settings
from hypothesis import strategies as st

import strategies as S
from policylang import Executable, check, compile_all, load_plans, load_program, schedule, stdlib_dir
from policylang.ast import Module
from policylang.builtins import tolerates
from policylang.cli import main
from policylang.cluster.model import Taint, Toleration
from policylang.cluster.quantity import Quantity, format_quantity, parse_quantity
from policylang.diagnostics import InputError, PolicyError
from policylang.format import format_module, format_source
from policylang.parse import parse

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
STDLIB = sorted(stdlib_dir().glob("*.sched"))


# ---- syntax: the formatter and the parser agree --------------------------------------------------

@given(S.modules())
def test_parse_of_format_is_the_tree(module):
    """For every syntax tree the parser can produce, parsing its formatted text gives the same
    tree back: the formatter never drops, adds or regroups anything (spans aside)."""
    text = format_module(module)
    note(text)
    assert parse(text, "<generated>").decls == module.decls


@given(S.modules())
def test_format_is_idempotent(module):
    """Formatting formatted text changes nothing."""
    text = format_module(module)
    note(text)
    assert format_source(text, "<generated>") == text


@given(st.sampled_from(STDLIB + sorted(EXAMPLES.rglob("*.sched"))).flatmap(
    lambda p: S.mutated(p.read_text()).map(lambda t: (p.name, t))))
def test_formatting_a_real_file_keeps_its_tree_and_comments(named):
    """For any text that parses (here: stdlib and example policies with random edits, comments
    and blank lines included), formatting keeps the tree, every comment, and is idempotent;
    text that does not parse is refused with a PolicyError, never anything else."""
    name, text = named
    try:
        tree = parse(text, name)
    except PolicyError:
        with pytest.raises(PolicyError):
            format_source(text, name)
        return
    once = format_source(text, name)
    note(once)
    assert parse(once, name).decls == tree.decls
    assert format_source(once, name) == once

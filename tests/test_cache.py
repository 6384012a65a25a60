"""The on-disk cache (policylang/cache.py): a hit gives what a rebuild would, a changed input
misses, and a corrupt, truncated, hostile or mistyped entry is ignored and rebuilt."""

from __future__ import annotations

import os
import pickle
import stat

import pytest

import policylang
from policylang import cache
from policylang.diagnostics import PolicyError
from policylang.syntax.parse import parse, parse_file

POLICY = """policy Mine

filter no_gpu {
    reject when node.metadata.labels["gpu"] == "true"
        reason "node(s) had a GPU"
}
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("POLICYLANG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("POLICYLANG_NO_CACHE", raising=False)
    return tmp_path / "xdg" / "policylang" / "cache"


def _entries(cache_dir, kind):
    return sorted((cache_dir / kind).iterdir()) if (cache_dir / kind).exists() else []


def test_an_ast_read_back_equals_a_fresh_parse(cache_dir, tmp_path):
    first = parse_file(POLICY, "mine.sched")
    (entry,) = _entries(cache_dir, "ast")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE((cache_dir / "ast").stat().st_mode) == 0o700
    again = parse_file(POLICY, "mine.sched")
    assert again == first == parse(POLICY, "mine.sched")
    assert again is not first


def test_the_stdlib_plans_read_back_equal_a_fresh_compile(cache_dir, monkeypatch):
    cached = policylang.load_plans()
    assert _entries(cache_dir, "plans")
    again = policylang.load_plans()
    monkeypatch.setenv("POLICYLANG_NO_CACHE", "1")
    assert again == cached == policylang.load_plans()


def test_the_record_types_read_back_equal_the_models(cache_dir):
    # What `check` reads instead of building the model's classes (types.model_schema).
    from policylang import types

    types.model_schema.cache_clear()
    first = types.model_schema()
    assert _entries(cache_dir, "schema")
    types.model_schema.cache_clear()
    again = types.model_schema()
    types.model_schema.cache_clear()
    assert again == first == types._schema_of_model()
    assert again["PodSpec"]["nodeSelector"] == types.FieldInfo(types.map_of(types.STRING, types.STRING), "node_selector")


def test_a_changed_file_that_the_key_does_not_name_misses(cache_dir, tmp_path):
    (tmp_path / "mine.sched").write_text(POLICY)
    profile = tmp_path / "team.sched"
    profile.write_text('profile team {\n    use "./mine.sched" weight 1\n}\n')
    before = policylang.load_plans(str(profile))
    plugin = before["team"].plugins[0]
    assert plugin.filters[0].node_steps[0].reason.value == "node(s) had a GPU"
    (tmp_path / "mine.sched").write_text(POLICY.replace("had a GPU", "had a gpu"))
    after = policylang.load_plans(str(profile))
    assert after["team"].plugins[0].filters[0].node_steps[0].reason.value == "node(s) had a gpu"


def test_check_file_remembers_a_clean_file_and_rechecks_an_edited_one(cache_dir, tmp_path):
    path = tmp_path / "mine.sched"
    path.write_text(POLICY)
    policylang.check_file(path)
    assert _entries(cache_dir, "checked")
    policylang.check_file(path)                       # from the cache
    path.write_text(POLICY.replace('== "true"', '== 1 +'))
    with pytest.raises(PolicyError):
        policylang.check_file(path)
    path.write_text(POLICY.replace("node.metadata", "node.metadatta"))
    with pytest.raises(PolicyError) as err:
        policylang.check_file(path)
    assert "P012" in err.value.render()


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.parametrize("damage", ["truncated", "garbage", "wrong checksum", "hostile pickle", "wrong type",
                                    "a directory", "empty"])
def test_a_bad_entry_is_ignored_and_rebuilt(cache_dir, damage):
    parse_file(POLICY, "mine.sched")
    (entry,) = _entries(cache_dir, "ast")
    data = entry.read_bytes()
    head = data[:len(cache._MAGIC)]
    if damage == "truncated":
        entry.write_bytes(data[:len(data) // 2])
    elif damage == "garbage":
        entry.write_bytes(os.urandom(len(data)))
    elif damage == "wrong checksum":
        entry.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    elif damage in ("hostile pickle", "wrong type"):
        import hashlib
        payload = pickle.dumps(_Boom() if damage == "hostile pickle" else {"not": "a module"})
        entry.write_bytes(head + hashlib.sha256(payload).digest() + payload)
    elif damage == "a directory":
        entry.unlink()
        entry.mkdir()
    else:
        entry.write_bytes(b"")
    assert parse_file(POLICY, "mine.sched") == parse(POLICY, "mine.sched")


def test_the_unpickler_names_no_function_or_builtin():
    import io

    for obj in (_Boom(), os.system, print, policylang.load_plans):
        with pytest.raises(pickle.UnpicklingError):
            cache._Unpickler(io.BytesIO(pickle.dumps(obj)), cache._policylang_data).load()


def test_a_cache_directory_others_may_write_is_not_used(cache_dir):
    parse_file(POLICY, "mine.sched")
    os.chmod(cache_dir / "ast", 0o777)
    try:
        assert cache.load("ast", cache.key("ast", "mine.sched", POLICY), object) is None
    finally:
        os.chmod(cache_dir / "ast", 0o700)
    assert cache.load("ast", cache.key("ast", "mine.sched", POLICY), object) is not None


def test_an_unwritable_cache_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("POLICYLANG_CACHE_DIR", str(blocker / "cache"))   # under a file, not a directory
    assert parse_file(POLICY, "mine.sched") == parse(POLICY, "mine.sched")


def test_policylang_no_cache_writes_nothing(cache_dir, monkeypatch):
    monkeypatch.setenv("POLICYLANG_NO_CACHE", "1")
    parse_file(POLICY, "mine.sched")
    policylang.load_plans()
    assert not cache_dir.exists()


def test_old_entries_are_pruned(cache_dir, monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3)
    for i in range(6):
        parse_file(POLICY + f"# {i}\n", "mine.sched")
    assert len(_entries(cache_dir, "ast")) == 3

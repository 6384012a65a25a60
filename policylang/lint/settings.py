"""Which rules run on which files: `[tool.policylang.lint]` in pyproject.toml or `lint:` in
.policylang.yaml, found by walking up from the linted file, plus --select/--ignore.

    [tool.policylang.lint]
    select = ["all"]                 # codes (S101), code prefixes (S1, S30), categories, "all"
    ignore = ["S306"]
    [tool.policylang.lint.per-path."legacy/**"]
    select = ["correctness"]         # replaces the selection for matching files
    ignore = ["S104"]                # adds to the ignored rules

Patterns are relative to the directory of the file that declares them; `**` crosses
directories, `*` does not, and a pattern without `/` also matches a file's name.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..diagnostics import InputError
from ..frozen import frozen
from ..inputs import read_text, yaml_document
from .catalogue import all_rules
from .model import CATEGORIES, Rule

FILES = (".policylang.yaml", "pyproject.toml")


@frozen
class PathOverride:
    pattern: str
    select: tuple[str, ...] | None
    ignore: tuple[str, ...]


@frozen
class Settings:
    source: str | None = None        # the file the settings came from
    root: Path | None = None         # per-path patterns are relative to this directory
    select: tuple[str, ...] = ("all",)
    ignore: tuple[str, ...] = ()
    per_path: tuple[PathOverride, ...] = ()

    def enabled(self, rule: Rule, path: str, cli_select=None, cli_ignore=()) -> bool:
        select, ignore = (tuple(cli_select) if cli_select else self.select), self.ignore
        for o in self.per_path:
            if self.root is not None and _matches(o.pattern, path, self.root):
                if o.select is not None:
                    select = o.select
                ignore = ignore + o.ignore
        return selects(select, rule) and not selects(ignore, rule) and not selects(tuple(cli_ignore), rule)


def selects(tokens, rule: Rule) -> bool:
    return any(t == "all" or t == rule.category or t == rule.name or rule.code.startswith(t) for t in tokens)


def validate_tokens(tokens, where: str, field: str | None = None) -> tuple[str, ...]:
    """``field``: the setting the tokens came from, named in the error."""
    at = f"{field}: " if field else ""
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        raise InputError(f"{at}expected a list of rule codes, prefixes or categories", path=where)
    rules = all_rules()
    for t in tokens:
        if not (t == "all" or t in CATEGORIES or any(r.name == t or r.code.startswith(t) for r in rules)):
            raise InputError(f"{at}'{t}' is not a rule code, prefix, name or category "
                             f"(categories: {', '.join(CATEGORIES)})", path=where)
    return tuple(tokens)


def _matches(pattern: str, path: str, root: Path) -> bool:
    try:
        rel = Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return False
    tokens = _glob(pattern.rstrip("/") + ("/**" if pattern.endswith("/") else ""))
    return glob_match(tokens, rel) or ("/" not in pattern and glob_match(tokens, rel.rsplit("/", 1)[-1]))


# A pattern compiles to tokens matched by simulating all positions in the pattern at once (an NFA),
# so the time is linear in the path for any pattern: a regex of `**`s backtracks exponentially
# (issue 29: `**a**a**…b` took minutes).
_ANY, _SEGMENT, _ONE, _DIRS = "**", "*", "?", "**/"


@lru_cache(maxsize=256)
def _glob(pattern: str) -> tuple[str, ...]:
    out, i = [], 0
    while i < len(pattern):
        token = next((t for t in (_DIRS, _ANY, _SEGMENT, _ONE) if pattern.startswith(t, i)), pattern[i])
        out.append(token)
        i += len(token)
    return tuple(out)


def glob_match(tokens: tuple[str, ...], text: str) -> bool:
    """Whether ``text`` matches the whole glob: `**/` is `(.*/)?` (zero or more directories),
    `**` anything, `*` anything but `/`, `?` one character but `/`. A state is a position in
    ``tokens``, or ``~s`` for "inside the `**/` at s, before its `/`"."""
    end = len(tokens)
    states = _closure(tokens, {0})
    for ch in text:
        after = set()
        for s in states:
            if s < 0:                                   # inside a `**/`
                after.add(s)
                if ch == "/":
                    after.add(~s + 1)
                continue
            if s == end:
                continue
            t = tokens[s]
            if t == _ANY or (t == _SEGMENT and ch != "/"):
                after.add(s)
            elif t == _DIRS:
                after.add(~s)
                if ch == "/":
                    after.add(s + 1)
            elif (t == _ONE and ch != "/") or t == ch:
                after.add(s + 1)
        states = _closure(tokens, after)
        if not states:
            return False
    return end in states


def _closure(tokens, states: set[int]) -> set[int]:
    """The states also reached without reading a character: a star or `**/` matching nothing."""
    todo, seen = list(states), set(states)
    while todo:
        s = todo.pop()
        if 0 <= s < len(tokens) and tokens[s] in (_ANY, _SEGMENT, _DIRS) and s + 1 not in seen:
            seen.add(s + 1)
            todo.append(s + 1)
    return seen


def _from_table(table, source: Path) -> Settings:
    where = str(source)
    if not isinstance(table, dict):
        raise InputError("the lint settings must be a table/mapping", path=where)
    unknown = set(table) - {"select", "ignore", "per-path"}
    if unknown:
        raise InputError(f"unknown lint setting(s): {', '.join(sorted(unknown))} "
                         "(settings are select, ignore and per-path)", path=where)
    overrides = []
    per_path = table.get("per-path", {})
    if not isinstance(per_path, dict):
        raise InputError("per-path maps glob patterns to {select, ignore}", path=where)
    for pattern, o in per_path.items():
        if not isinstance(o, dict) or set(o) - {"select", "ignore"}:
            raise InputError(f"per-path '{pattern}' takes select and ignore", path=where)
        overrides.append(PathOverride(pattern,
                                      validate_tokens(o["select"], where, f"per-path '{pattern}' select")
                                      if "select" in o else None,
                                      validate_tokens(o.get("ignore", []), where, f"per-path '{pattern}' ignore")))
    return Settings(where, source.parent.resolve(), validate_tokens(table.get("select", ["all"]), where, "select"),
                    validate_tokens(table.get("ignore", []), where, "ignore"), tuple(overrides))


def _toml_type(value) -> str:
    return {str: "a string", bool: "a boolean", int: "an integer", float: "a float", list: "an array"}.get(
        type(value), type(value).__name__)


def _read(candidate: Path):
    """The lint table of one settings file, or None when it has none."""
    text = read_text(candidate)
    if candidate.name == "pyproject.toml":
        return _pyproject_table(text, candidate)
    doc = yaml_document(text, str(candidate)) or {}     # (which reports bad YAML itself, naming the place)
    return doc.get("lint") if isinstance(doc, dict) else None


def _pyproject_table(text: str, candidate: Path):
    # A Python project's pyproject.toml seldom has a policylang table; one that does names it
    # (only a key spelt with escapes would not), so the others are not parsed: importing tomllib
    # is ~15 ms of each `lint`.
    if "policylang" not in text:
        return None
    import tomllib

    try:
        table, where = tomllib.loads(text), []
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"cannot read lint settings: {err}", path=str(candidate)) from None
    for key in ("tool", "policylang", "lint"):
        table, where = table.get(key), [*where, key]
        if table is None:
            return None
        if not isinstance(table, dict):
            raise InputError(f"[{'.'.join(where)}] must be a table, not {_toml_type(table)}", path=str(candidate))
    return table


@lru_cache(maxsize=None)
def settings_for_dir(directory: Path) -> Settings:
    for d in (directory, *directory.parents):
        for name in FILES:
            candidate = d / name
            if candidate.is_file():
                table = _read(candidate)
                if table is not None:
                    return _from_table(table, candidate)
    return Settings()


def settings_for(path: str) -> Settings:
    p = Path(path).resolve()
    return settings_for_dir(p if p.is_dir() else p.parent)

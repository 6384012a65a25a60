"""Reading the files a user names — policies, cluster dumps, pods, scheduler configurations,
test files, lint settings — when whoever wrote them may be hostile (a pull request in CI).

Only regular files are read (never a FIFO, a device, a socket, or anything under /proc, /sys
or /dev), and ``-``, standard input, once; at most ``max_input_size()`` bytes of them, as UTF-8,
or UTF-16 as PowerShell writes it (a byte-order mark is dropped). Every refusal is an
InputError naming the file.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path
import stat
import sys

from .diagnostics import InputError

STDIN = "-"
_STDIN_READ: contextvars.ContextVar[bool] = contextvars.ContextVar("stdin_read", default=False)

DEFAULT_MAX_INPUT_SIZE = 256 * 1024 * 1024
_MAX_INPUT_SIZE: contextvars.ContextVar[int] = contextvars.ContextVar("max_input_size",
                                                                       default=DEFAULT_MAX_INPUT_SIZE)
# Pseudo-file systems whose "files" are endless, block, or disclose the process (environ).
_SPECIAL_TREES = ("/proc", "/sys", "/dev")


@contextlib.contextmanager
def stdin_unread():
    """Within the block (one command), ``-`` may be read once."""
    token = _STDIN_READ.set(False)
    try:
        yield
    finally:
        _STDIN_READ.reset(token)


def max_input_size() -> int:
    return _MAX_INPUT_SIZE.get()


@contextlib.contextmanager
def input_size_limit(limit: int | None):
    """Within the block, files up to ``limit`` bytes are read (``--max-input-size``)."""
    token = _MAX_INPUT_SIZE.set(limit if limit is not None else DEFAULT_MAX_INPUT_SIZE)
    try:
        yield
    finally:
        _MAX_INPUT_SIZE.reset(token)


def read_bytes(path: str | Path) -> bytes:
    """The contents of the regular file ``path``, refusing special files and files past the limit."""
    name = str(path)
    if name == STDIN:
        return _read_stdin()
    resolved = os.path.realpath(name)
    if any(resolved == tree or resolved.startswith(tree + os.sep) for tree in _SPECIAL_TREES):
        raise InputError("not a regular file (a special file under /proc, /sys or /dev)", path=name)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError("no such file or directory", path=name) from None
    except IsADirectoryError:
        raise InputError("is a directory", path=name) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=name) from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError("is a directory", path=name)
        if not stat.S_ISREG(mode):
            raise InputError("not a regular file (a FIFO, a device or a socket)", path=name)
        limit = max_input_size()
        too_large = InputError(f"larger than the input size limit of {limit} bytes (raise it with "
                               "--max-input-size)", path=name)
        if os.fstat(fd).st_size > limit:    # not read at all
            raise too_large
        data = _read_at_most(f, limit + 1)  # one byte past the limit tells that it grew since
    if len(data) > limit:
        raise too_large
    return data


def _read_stdin() -> bytes:
    """Standard input, bounded like a file; a second ``-`` is refused (it would read nothing)."""
    if _STDIN_READ.get():
        raise InputError("standard input was already read: give - once", path="<stdin>")
    _STDIN_READ.set(True)
    limit = max_input_size()
    data = _read_at_most(sys.stdin.buffer, limit + 1)
    if len(data) > limit:
        raise InputError(f"larger than the input size limit of {limit} bytes (raise it with --max-input-size)",
                         path="<stdin>")
    return data


def _read_at_most(f, n: int) -> bytes:
    """Up to n bytes, in chunks: f.read(n) would allocate all n at once (the limit is 256 MiB)."""
    chunks, left = [], n
    while left > 0:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def decode(data: bytes, path: str) -> str:
    """UTF-8 text without a leading byte-order mark, or UTF-16 with one, or without one when the
    first character is ASCII (PowerShell's `>` writes UTF-16); line endings are kept as they are."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) > 1 and (data[0] == 0) != (data[1] == 0)):
        encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else (
            "utf-16-le" if data[1] == 0 else "utf-16-be")
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as err:
            raise InputError(f"not valid UTF-16 (byte {err.start})", path=path) from None
        return text[1:] if text.startswith("\ufeff") else text
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"not valid UTF-8 (byte {err.start}, line {line})", path=path) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | Path) -> str:
    """The file's text as ``Path.read_text`` gives it (line endings made ``\\n``), read safely."""
    return universal_newlines(decode(read_bytes(path), str(path)))


def read_source(path: str | Path) -> tuple[str, str]:
    """A file to be rewritten: its text with ``\\n`` line endings, and the ending it used
    (``\\r\\n`` or ``\\n``), to write it back with."""
    raw = decode(read_bytes(path), str(path))
    return universal_newlines(raw), newline_of(raw)


def universal_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def newline_of(text: str) -> str:
    """The line ending a file uses: CRLF when its first line ends so, else LF."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


# ---- YAML and JSON, bounded ---------------------------------------------------------------------
# yaml is imported where a YAML text is read (`import yaml` costs a command that reads none, such
# as `policylang fmt`, a tenth of its start-up).

import json  # noqa: E402
import re  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    import yaml

# Deeper than any Kubernetes object (a Pod with affinity terms is about 12 levels).
MAX_DEPTH = 100
# Nodes a document may reach through aliases beyond its own: an alias bomb (`&a [*b, *b, …]`
# nested nine deep, 823 bytes) would expand to hundreds of millions.
MAX_ALIAS_NODES = 100_000
# Where an alias (`*name`) may stand: at the start, or after white space or a flow or value
# indicator. A text with no such `*` has no alias, so its node graph is a tree (kubectl's dumps
# never have one); a `*` in a quoted string may match too, which only costs the full check.
_MAYBE_ALIAS = re.compile(r"(?:\A|[\s\[\]{},:?-])\*")


def may_have_aliases(text: str) -> bool:
    return _MAYBE_ALIAS.search(text) is not None


def _children(node: yaml.Node, mapping, sequence):
    if isinstance(node, mapping):
        return [n for pair in node.value for n in pair]
    if isinstance(node, sequence):
        return node.value
    return ()


def check_node_graph(root: yaml.Node, path: str, tree_size: int | None = None) -> bool:
    """Refuse a composed document nested deeper than MAX_DEPTH, expanding past MAX_ALIAS_NODES
    through aliases, containing itself, or with a duplicate mapping key; without recursion, in
    time linear in its nodes. ``tree_size``: the length of a text that holds no alias
    (``may_have_aliases``), whose graph is then a tree of fewer collections than that; a leaner
    walk checks it (and hands over to the full one should it meet more). True when the document
    was found to be such a tree."""
    if tree_size is not None and _check_tree(root, path, tree_size):
        return True
    yaml = _yaml()
    mapping, sequence = yaml.MappingNode, yaml.SequenceNode
    size: dict[int, int] = {}
    on_path: set[int] = set()
    depth: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node, mapping, sequence)
            if isinstance(node, mapping):
                check_duplicate_keys(node, path)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if depth[key] > MAX_DEPTH:
                raise InputError(f"nested more than {MAX_DEPTH} levels deep at line {node.start_mark.line + 1}",
                                 path=path, **_place(node))
            continue
        if key in size:
            continue
        if key in on_path:
            raise InputError(f"an alias at line {node.start_mark.line + 1} refers to a node containing it",
                             path=path, **_place(node))
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node, mapping, sequence) if id(k) not in size)
    if size[id(root)] - len(size) > MAX_ALIAS_NODES:
        raise InputError(f"aliases expand to more than {MAX_ALIAS_NODES} nodes (a YAML alias bomb?)", path=path)
    return False


def _check_tree(root: yaml.Node, path: str, budget: int) -> bool:
    """check_node_graph for a tree: depth and duplicate keys, scalars not visited one by one (a
    quarter of the full walk's time on a kubectl dump). False when it meets more collections than
    ``budget`` (an alias the pattern missed): the full check then decides."""
    yaml = _yaml()
    mapping, sequence, scalar = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode
    stack = [(root, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, level = pop()
        budget -= 1
        if budget < 0:
            return False
        if level > MAX_DEPTH:
            raise InputError(f"nested more than {MAX_DEPTH} levels deep at line {node.start_mark.line + 1}",
                             path=path, **_place(node))
        kind = type(node)
        if kind is mapping:
            pairs = node.value
            if len(pairs) > 1 and len({k.value for k, _ in pairs if type(k) is scalar}) != len(pairs):
                check_duplicate_keys(node, path)
            for k, v in pairs:
                if type(v) is not scalar:
                    push((v, level + 1))
                if type(k) is not scalar:
                    push((k, level + 1))
        elif kind is sequence:
            for v in node.value:
                if type(v) is not scalar:
                    push((v, level + 1))
    return True


def _yaml():
    import yaml
    return yaml


_LOADER: list = []


def _bounded_loader():
    """BoundedLoader, made on first use (it subclasses libyaml's loader)."""
    if not _LOADER:
        yaml = _yaml()

        class BoundedLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            """SafeLoader (libyaml's when available) that checks each document's node graph first
            (`check_node_graph`: depth, aliases, and duplicate keys, which the API server's strict
            decoding refuses too)."""

            input_path = "<input>"
            tree_size = None     # the text's length when it holds no alias

            def construct_document(self, node):
                if check_node_graph(node, self.input_path, self.tree_size):
                    try:
                        return construct_tree(self, node)
                    except NotPlain:
                        pass
                return super().construct_document(node)

        _LOADER.append(BoundedLoader)
    return _LOADER[0]


_TAG = "tag:yaml.org,2002:"
# The scalars SafeConstructor builds by a function of its own (a string is its text as it is).
_SCALAR_TAGS = frozenset(_TAG + t for t in ("null", "bool", "int", "float", "binary", "timestamp"))
_STR, _MAP, _SEQ, _MERGE = _TAG + "str", _TAG + "map", _TAG + "seq", _TAG + "merge"


class NotPlain(Exception):
    """A document the plain builder leaves to PyYAML's constructor (a merge key, a set, a tag)."""


def construct_tree(loader, root: yaml.Node):
    """What SafeConstructor makes of a document whose nodes form a tree (no alias: every kubectl
    dump), built in one recursion of our own: mappings as dicts, sequences as lists, strings as
    their text, other scalars by SafeConstructor's own functions. PyYAML's generic constructor
    spends ~60% of loading a dump on its per-node bookkeeping (generators for deep construction,
    the object memo), which a tree needs none of. Raises NotPlain for a document with anything
    else (a merge key, a complex key, a set, an unknown tag): PyYAML then builds it, errors
    included. Depth is bounded by check_node_graph first."""
    yaml = _yaml()
    mapping, sequence, scalar = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode
    constructors = loader.yaml_constructors

    def build(node):
        tag = node.tag
        if tag == _STR:
            return node.value
        kind = type(node)
        if kind is mapping and tag == _MAP:
            out = {}
            for k, v in node.value:
                if type(k) is not scalar or k.tag == _MERGE:
                    raise NotPlain
                out[build(k)] = build(v)
            return out
        if kind is sequence and tag == _SEQ:
            return [build(v) for v in node.value]
        if kind is scalar and tag in _SCALAR_TAGS:
            return constructors[tag](loader, node)
        raise NotPlain

    return build(root)


def check_duplicate_keys(node: yaml.MappingNode, path: str) -> None:
    yaml = _yaml()
    seen: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        line = key.start_mark.line + 1
        if key.value in seen:
            raise InputError(f"duplicate key {_short(key.value)!r} at line {line} (first at line {seen[key.value]})",
                             path=path, **_place(key))
        seen[key.value] = line


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


def _number_problem(err: ValueError) -> str:
    text = str(err)
    return "a number has more than 4300 digits" if "4300" in text else _short(text, 120)


def yaml_error(err: Exception, path: str) -> InputError:
    """What a YAMLError (or a RecursionError in composing) means, naming the place."""
    if isinstance(err, RecursionError):
        return InputError(f"nested more than {MAX_DEPTH} levels deep", path=path)
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
    problem = getattr(err, "problem", None) or str(err)
    place = {"line": mark.line + 1, "column": mark.column + 1} if mark else {}
    return InputError(f"invalid YAML{where}: {problem}", path=path, **place)


def _place(node) -> dict:
    """The line and column of a YAML node, as InputError takes them."""
    return {"line": node.start_mark.line + 1, "column": node.start_mark.column + 1}


def yaml_documents(text: str, path: str) -> list:
    """Every document of a YAML text, bounded; malformed YAML is an InputError naming the place."""
    yaml = _yaml()
    loader = _bounded_loader()(text)
    loader.input_path = path
    loader.tree_size = None if may_have_aliases(text) else len(text) + 1
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    except (yaml.YAMLError, RecursionError) as err:
        raise yaml_error(err, path) from None
    except ValueError as err:  # an integer of more than 4,300 digits
        raise InputError(f"invalid YAML: {_number_problem(err)}", path=path) from None
    finally:
        loader.dispose()


def yaml_document(text: str, path: str):
    """The one document of a YAML text (None when empty), bounded as `yaml_documents`."""
    docs = yaml_documents(text, path)
    if len(docs) > 1:
        raise InputError("expected one YAML document, found several", path=path)
    return docs[0] if docs else None


def json_document(text: str, path: str):
    """A JSON text's value, bounded in nesting (MAX_DEPTH) and in the digits of its numbers."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}", path=path,
                         line=err.lineno, column=err.colno) from None
    except RecursionError:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path) from None
    except ValueError as err:  # an integer of more than 4,300 digits
        raise InputError(f"invalid JSON: {_number_problem(err)}", path=path) from None
    stack = [(doc, 1)]
    while stack:
        value, level = stack.pop()
        if level > MAX_DEPTH:
            raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path)
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, level + 1) for v in value)
    return doc

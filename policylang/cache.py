"""The on-disk cache of work that depends only on its inputs: Lark's parser tables, each .sched
file's AST, and compiled plans (the stdlib's and a user's profile). A command line run pays
for parsing and compiling the stdlib once per version of policylang, not on every run.

Where: ``${XDG_CACHE_HOME:-~/.cache}/policylang/cache/<kind>/<key>`` (or
``$POLICYLANG_CACHE_DIR/<kind>/<key>``), one file per entry, written atomically
(``write.write_bytes_atomic``) with mode 0600. ``POLICYLANG_NO_CACHE=1`` turns it off. A key is a SHA-256 over what the value is made from: the kind, the content
of its inputs, the Python version and the code of policylang itself (``code_fingerprint``:
every module's and the grammar's size and modification time, as Python's own .pyc check,
so a newer policylang, or an edited checkout, never reads an older one's entries).

Why pickle, and why that is safe enough here: the values are trees of frozen attrs objects
(ASTs, plans) and Lark's tables, which pickle rebuilds ten times faster than we could parse
and check them again, and which no JSON form would carry without a second model of every
node. The cache directory is the user's own (like ~/.bashrc, which runs code anyway), but an
entry is still treated as untrusted input:

- it is read only from a directory owned by the user and not writable by others (a shared
  or planted ``XDG_CACHE_HOME`` is not used), and only up to ``MAX_ENTRY_SIZE`` bytes;
- its payload must match the SHA-256 stored with it (a truncated or corrupt file is a miss);
- unpickling resolves only attrs classes and enums defined in policylang's own modules
  (``_Unpickler.find_class``): no function, no builtin, nothing that could run code, can be
  named, so a hostile entry can at most build policylang data objects;
- the value must be of the expected type; anything else, and any exception while reading,
  is a miss: the value is rebuilt and the entry rewritten. A cache never decides an outcome.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
import pickle
import stat
import sys
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    import lark

T = TypeVar("T")

MAX_ENTRY_SIZE = 64 * 2**20
# Entries kept per kind; older ones (by modification time) are removed when one is written.
MAX_ENTRIES = 512
_MAGIC = b"policylang-cache 1\n"
_PACKAGE = Path(__file__).resolve().parent


def enabled() -> bool:
    return os.environ.get("POLICYLANG_NO_CACHE", "") in ("", "0")


def cache_root() -> Path:
    """``POLICYLANG_CACHE_DIR`` (the test suite's own, for one run), else the user's cache."""
    if os.environ.get("POLICYLANG_CACHE_DIR"):
        return Path(os.environ["POLICYLANG_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "policylang" / "cache"


_FINGERPRINT: list = []


def code_fingerprint() -> str:
    """What of policylang's own code a cached value depends on: every module's (and the
    grammar's) path, size and modification time, and the Python version."""
    if not _FINGERPRINT:
        h = hashlib.sha256(sys.version.encode())
        for relative, st in sorted(_code_files(str(_PACKAGE), "")):
            h.update(f"{relative}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _code_files(directory: str, prefix: str):
    """(path relative to the package, stat) of every module and grammar under ``directory``:
    os.scandir, since every run of every command pays for this walk (pathlib's took ~25 ms)."""
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                yield from _code_files(entry.path, f"{prefix}{entry.name}/")
        elif entry.name.endswith((".py", ".lark")):
            yield f"{prefix}{entry.name}", entry.stat()


def key(kind: str, *parts: "str | bytes") -> str:
    """The key of a value made by ``kind`` from ``parts`` (texts, paths, options)."""
    h = hashlib.sha256(f"{kind}\0{code_fingerprint()}\0".encode())
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def cached(kind: str, key_: str, build: Callable[[], T], expect: "type | tuple[type, ...]",
           allow: "Callable[[type], bool] | None" = None) -> T:
    """The value stored under ``key_``, or ``build()`` stored there. ``expect``: the type the
    value must have; ``allow``: which classes an entry may name (default: policylang's attrs
    classes and enums)."""
    if not enabled():
        return build()
    value = load(kind, key_, expect, allow)
    if value is not None:
        return value
    value = build()
    store(kind, key_, value)
    return value


def cached_with_inputs(kind: str, key_: str, build: "Callable[[], tuple[T, dict[str, str]]]",
                       expect: "type | tuple[type, ...]") -> T:
    """``cached`` for a value made from more files than its key names: ``build()`` returns the
    value and the texts it read, by path; the entry is used only while each of those files
    reads the same (compared by SHA-256)."""
    if not enabled():
        return build()[0]
    entry = load(kind, key_, tuple)
    if entry is not None and len(entry) == 2 and isinstance(entry[1], expect) and _unchanged(entry[0]):
        return entry[1]
    value, texts = build()
    store(kind, key_, (tuple((path, _digest(text)) for path, text in sorted(texts.items())), value))
    return value


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _unchanged(inputs) -> bool:
    from .inputs import read_text

    try:
        return all(_digest(read_text(path)) == digest for path, digest in inputs)
    except Exception:  # noqa: BLE001 - a file gone or unreadable: the value is rebuilt
        return False


def _usable_dir(path: Path, create: bool) -> bool:
    """Whether ``path`` is a directory of this user's that no one else may write to."""
    try:
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        return False
    return True


def load(kind: str, key_: str, expect, allow=None):
    """The value stored under the key, or None (a miss: absent, unreadable, corrupt, hostile)."""
    directory = cache_root() / kind
    if not _usable_dir(directory, create=False):
        return None
    try:
        fd = os.open(directory / key_, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_SIZE:
                return None
            data = f.read(MAX_ENTRY_SIZE + 1)
        head, digest, payload = data[:len(_MAGIC)], data[len(_MAGIC):len(_MAGIC) + 32], data[len(_MAGIC) + 32:]
        if head != _MAGIC or hashlib.sha256(payload).digest() != digest:
            return None
        value = _Unpickler(io.BytesIO(payload), allow or _policylang_data).load()
    except Exception:  # noqa: BLE001 - whatever a bad entry raises (RecursionError too), it is a miss, rebuilt
        return None
    return value if isinstance(value, expect) else None


def store(kind: str, key_: str, value: Any) -> None:
    """Keep ``value`` under the key; a failure to write (read-only home, full disk) is ignored."""
    from .write import write_bytes_atomic

    directory = cache_root() / kind
    if not _usable_dir(directory, create=True):
        return
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a value that cannot be pickled is simply not kept
        return
    if len(payload) > MAX_ENTRY_SIZE:
        return
    try:
        write_bytes_atomic(directory / key_, _MAGIC + hashlib.sha256(payload).digest() + payload, mode=0o600)
        _prune(directory)
    except Exception:  # noqa: BLE001 - the cache is an optimisation, never a reason to fail
        return


def _prune(directory: Path) -> None:
    entries = [e for e in os.scandir(directory) if e.is_file(follow_symlinks=False) and not e.name.startswith(".")]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
    for e in entries[:len(entries) - MAX_ENTRIES]:
        try:
            os.unlink(e.path)
        except OSError:
            pass


def _policylang_data(cls) -> bool:
    """policylang's own data classes: attrs classes and enums defined in its modules."""
    import enum

    import attrs

    return (isinstance(cls, type) and cls.__module__.split(".")[0] == "policylang"
            and (attrs.has(cls) or issubclass(cls, enum.Enum)))


def nothing(cls) -> bool:
    """For values of plain containers, strings and numbers only (Lark's tables)."""
    return False


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, allow: Callable[[type], bool]):
        super().__init__(f)
        self._allow = allow

    def find_class(self, module: str, name: str):
        if module.split(".")[0] == "policylang" and "." not in name:
            obj = super().find_class(module, name)
            if self._allow(obj):
                return obj
        raise pickle.UnpicklingError(f"a cache entry names {module}.{name}, which it may not")


def cached_lark(grammar: str, options: dict) -> "lark.Lark":
    """A Lark parser of ``grammar`` (the language's, syntax/grammar.py; CEL's, dra/cel.py).
    Building LALR tables takes ~0.3 s, so they are kept here by the grammar's text, the options
    and Lark's version; Lark's own ``cache=`` option is not used because it writes
    non-atomically and unpickles whatever it finds, where this cache checks an entry before
    trusting it."""
    import lark

    key_ = key("lark", grammar, lark.__version__, repr(sorted(options.items())))

    def tables() -> dict:
        out = io.BytesIO()
        lark.Lark(grammar, **options).save(out)
        return pickle.loads(out.getvalue())

    # Lark's saved form is plain dicts, lists, strings and numbers: no class may be named.
    data = cached("lark", key_, tables, dict, allow=nothing)
    try:
        return lark.Lark.__new__(lark.Lark)._load(data)
    except Exception:  # noqa: BLE001 - tables that do not load are rebuilt, never trusted
        return lark.Lark(grammar, **options)

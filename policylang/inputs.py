"""Reading the files a user names — policies, cluster dumps, pods, scheduler configurations,
test files, lint settings — when whoever wrote them may be hostile (a pull request in CI).

Only regular files are read (never a FIFO, a device, a socket, or anything under /proc, /sys
or /dev), at most ``max_input_size()`` bytes of them, as UTF-8 (a byte-order mark is
dropped). Every refusal is an InputError naming the file.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path
import stat

from .diagnostics import InputError

DEFAULT_MAX_INPUT_SIZE = 256 * 1024 * 1024
_MAX_INPUT_SIZE: contextvars.ContextVar[int] = contextvars.ContextVar("max_input_size",
                                                                       default=DEFAULT_MAX_INPUT_SIZE)
# Pseudo-file systems whose "files" are endless, block, or disclose the process (environ).
_SPECIAL_TREES = ("/proc", "/sys", "/dev")


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
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"larger than the input size limit of {limit} bytes (raise it with --max-input-size)",
                         path=name)
    return data


def decode(data: bytes, path: str) -> str:
    """UTF-8 text without a leading byte-order mark; line endings are kept as they are."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"not valid UTF-8 (byte {err.start}, line {line})", path=path) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | Path) -> str:
    """The file's text as ``Path.read_text`` gives it (line endings made ``\\n``), read safely."""
    return universal_newlines(decode(read_bytes(path), str(path)))


def universal_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def newline_of(text: str) -> str:
    """The line ending a file uses: CRLF when its first line ends so, else LF."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"

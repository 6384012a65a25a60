"""Writing files a user owns (`fmt`, `lint --fix`, `simulate --write-state`): the one place
that does it, so every writer gets the same care.

- A symlink is written through: its target gets the new text and the link stays a link.
- Only regular files are replaced: a FIFO, a device or a directory is refused, and so is a
  read-only file (its mode says it is not to be rewritten).
- The file keeps its mode; a new file gets the umask's default (0666 less the umask), as
  any editor would create it.
- The text is written to a temporary file in the same directory and renamed over the
  target, so a crash or Ctrl-C leaves the old file whole, never half a file.
- ``newline="\\r\\n"`` writes CRLF line endings (the caller's text uses ``\\n``).
"""

from __future__ import annotations

import os
from pathlib import Path
import stat
import tempfile

from .diagnostics import InputError


def writable_target(path: str | Path) -> Path:
    """The file that writing ``path`` would replace (symlinks followed), checked before any
    work is done: its directory exists and it is a regular file that is not read-only, or
    does not exist yet."""
    target = Path(os.path.realpath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise InputError(f"cannot write: {err.strerror or err}", path=str(path)) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise InputError("cannot write: is a directory", path=str(path))
        if not stat.S_ISREG(st.st_mode):
            raise InputError("cannot write: not a regular file (a FIFO, a device or a socket)", path=str(path))
        if not st.st_mode & 0o222:
            raise InputError("cannot write: the file is read-only", path=str(path))
    if not target.parent.is_dir():
        raise InputError(f"cannot write: directory {target.parent} does not exist", path=str(path))
    return target


def write_atomic(path: str | Path, text: str, newline: str = "\n") -> None:
    if newline != "\n":
        text = text.replace("\n", newline)
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | Path, data: bytes, mode: int | None = None) -> None:
    """``data`` written as write_atomic writes text; ``mode``, when given, for the file instead
    of the one it had (the cache's entries are 0600)."""
    target = writable_target(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as err:
        raise InputError(f"cannot write: {err.strerror or err}", path=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is None:
            try:
                mode = os.stat(target).st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask

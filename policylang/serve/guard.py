"""What keeps `policylang serve` answering when its clients misbehave (issue 46): the connection
limits under uvicorn, and the log lines about them at most once a second each.

- **The header timeout** (``--header-timeout``, ``GuardedProtocol``): the request line and headers
  must be complete within it, counted from the connection's opening (a kept-alive connection: from
  its next request's first byte; its idle time before that is uvicorn's keep-alive timeout). uvicorn
  has none: httptools' and h11's protocols arm no timer until a response is complete, so a client
  that sends half its headers holds its connection, and its file, for ever. Past it the connection
  gets a 408 (nothing if it sent nothing) and is closed. The request line and headers are also
  limited to ``HEADER_LIMIT`` bytes (431), which llhttp does not limit.
- **The connection cap** (``--max-connections``, ``Connections`` and ``Listener``): the listening
  socket's ``accept`` is the one place every connection comes through (asyncio's accept loop calls
  it), so that is where connections are counted: at the cap, the connection that has waited on its
  client the longest (idle, in its headers or its body, or not reading its answer: "stalled") is
  aborted to make room, and only when none is stalled (every one is being answered) is the new one
  closed. The cap is also held under the open-files limit (``fd_budget``), so that accepting never
  runs out of files while a stalled connection could be shed instead.
- **Out of files anyway** (another process' files, TLS handshakes in flight): ``accept`` sheds the
  oldest stalled connection and tries again on the next turn of the loop, instead of asyncio's
  handling (a logged traceback for each of up to 2,048 accept attempts per turn, and no accepting
  for a second: /healthz unanswered), and the event loop's exception handler writes every error it
  is given as one line, at most once a second per kind with a count (``Throttled``).
"""

from __future__ import annotations

import asyncio
import errno
from datetime import datetime, timezone
import json
import os
import socket
import time
import traceback
from typing import Optional

HEADER_LIMIT = 64 * 1024        # request line + headers, bytes (431 past it)
ACCEPTS_PER_TURN = 16           # connections accepted per turn of the event loop, before others run
FD_RESERVE = 32                 # files kept free for everything but connections (reloads, the watch, …)
SHED_LAG = 4 * ACCEPTS_PER_TURN     # files of connections shed but not closed yet, at most (a few turns' worth)
OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def log_line(stream, **fields) -> None:
    """One JSON line, with the time first."""
    if stream is None:
        return
    fields = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **fields}
    try:
        stream.write(json.dumps(fields, separators=(",", ":"), default=str) + "\n")
        stream.flush()
    except (OSError, ValueError):       # a closed or full stderr must not fail a request
        pass


def tracebacks_wanted() -> bool:
    """POLICYLANG_TRACEBACK set: unexpected errors' log lines carry their traceback."""
    return bool(os.environ.get("POLICYLANG_TRACEBACK"))


def error_fields(err: BaseException) -> dict:
    """An unexpected exception as log fields: its type and words, and its traceback if wanted."""
    out = {"error": f"{type(err).__name__}: {err}"}
    if tracebacks_wanted():
        out["traceback"] = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return out


class Throttled:
    """Log lines of one event at most once per ``interval``: the first at once, those after it
    counted and written as one line with the count when the interval is over (``count``: how many
    times the event happened since the last line)."""

    def __init__(self, log, interval: float = 1.0):
        self.log = log
        self.interval = interval
        self._last: dict = {}           # event → when its last line was written
        self._pending: dict = {}        # event → (count, the latest fields)
        self._timer = None

    def note(self, event: str, key: "str | None" = None, **fields) -> None:
        """``event`` happened (``key``: what is throttled, if not the event: a message)."""
        now = time.monotonic()
        key = (event, key)
        last = self._last.get(key)
        if key not in self._pending and (last is None or now - last >= self.interval):
            self._last[key] = now
            log_line(self.log, event=event, count=1, **fields)
            return
        count = self._pending.get(key, (0, None))[0]
        self._pending[key] = (count + 1, fields)
        if len(self._pending) > 1000:       # (keys made of messages: a bound on what is kept)
            self.flush(force=True)
        self._schedule(now)

    def _schedule(self, now: float) -> None:
        if self._timer is not None or not self._pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:            # no loop (a test): written with the next line after the interval
            return
        due = min(self._last.get(e, now) + self.interval for e in self._pending)
        self._timer = loop.call_later(max(0.0, due - now) + 0.001, self.flush)

    def flush(self, force: bool = False) -> None:
        self._timer = None
        now = time.monotonic()
        for key, (count, fields) in list(self._pending.items()):
            if force or now - self._last.get(key, 0.0) >= self.interval:
                del self._pending[key]
                self._last[key] = now
                log_line(self.log, event=key[0], count=count, **fields)
        if len(self._last) > 1000:
            self._last = {k: t for k, t in self._last.items() if now - t < self.interval}
        self._schedule(now)


def fd_budget(max_connections: int, reserve: int = FD_RESERVE) -> tuple[int, Optional[str]]:
    """The connections to allow: ``max_connections``, or fewer when the open-files limit would
    be met first (the files open now and ``reserve`` kept for the rest), and why fewer."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return max_connections, None
    if soft == resource.RLIM_INFINITY:
        return max_connections, None
    try:
        open_now = len(os.listdir("/proc/self/fd"))
    except OSError:
        open_now = 32
    room = max(8, soft - open_now - reserve - SHED_LAG)
    if room >= max_connections:
        return max_connections, None
    return room, f"the open-files limit is {soft} ({open_now} open, {reserve + SHED_LAG} kept free)"


class Connections:
    """The server's connections: those accepted whose protocol has not begun yet (a TLS handshake
    in flight, or the next turn of the loop) and those open (GuardedProtocol); the cap on them,
    and the shedding of the one stalled longest to make room."""

    def __init__(self, limit: int, header_timeout: Optional[float], notes: Throttled):
        self.limit = limit
        self.header_timeout = header_timeout
        self.notes = notes
        self.open: dict = {}        # GuardedProtocol → None, in the order they came
        self.accepted: dict = {}    # fd → (its socket, when accepted), until its protocol's connection_made

    def count(self) -> int:
        if self.accepted:
            # Sockets whose protocol never came (a TLS handshake that failed or timed out, which
            # asyncio has closed) stop counting after the header timeout.
            stale = time.monotonic() - (self.header_timeout or 60.0) - 1.0
            for fd in [fd for fd, (_, at) in self.accepted.items() if at < stale]:
                del self.accepted[fd]
        return len(self.open) + len(self.accepted)

    def oldest_stalled(self) -> "tuple[float, object] | None":
        """(since when, the connection) of the one stalled longest: an open one waiting on its
        client, or one accepted whose protocol has not begun (an fd)."""
        best = next(((at, fd) for fd, (_, at) in self.accepted.items()), None)     # (the oldest accepted)
        for conn in self.open:
            if (best is None or conn.waiting_since < best[0]) and conn.stalled():
                best = (conn.waiting_since, conn)
        return best

    def shed_one(self, why: str) -> bool:
        """Close the connection stalled the longest (its file is closed within a turn or two of
        the loop): an open one aborted, an accepted one shut down (asyncio's transport, or its TLS
        handshake, then sees the end and closes it)."""
        found = self.oldest_stalled()
        if found is None:
            return False
        since, victim = found
        self.notes.note("connection_shed", reason=why, stalled_for=round(time.monotonic() - since, 3),
                        connections=self.count())
        if isinstance(victim, GuardedProtocol):
            victim.shed()
        else:
            sock, _ = self.accepted.pop(victim)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:         # closed already (its fd -1: no other socket's)
                pass
        return True

    def made(self, conn: "GuardedProtocol", fd: Optional[int]) -> None:
        if fd is not None:
            self.accepted.pop(fd, None)
        self.open[conn] = None

    def lost(self, conn: "GuardedProtocol") -> None:
        self.open.pop(conn, None)


class Listener(socket.socket):
    """The listening socket, whose ``accept`` (called by asyncio's accept loop, up to the backlog's
    number of times a turn) keeps the connection cap and handles running out of files."""

    guard: Connections
    _accepted = 0               # accepts (and refusals) this turn of the loop
    _reset_pending = False

    def _new_turn(self) -> None:
        self._accepted, self._reset_pending = 0, False

    def accept(self):
        guard = self.guard
        if not self._reset_pending:
            asyncio.get_running_loop().call_soon(self._new_turn)
            self._reset_pending = True
        while self._accepted < ACCEPTS_PER_TURN:
            self._accepted += 1
            try:
                conn, addr = super().accept()
            except BlockingIOError:
                raise
            except OSError as err:
                if err.errno not in OUT_OF_FILES:
                    raise
                guard.notes.note("accept_failed", error=os.strerror(err.errno), connections=guard.count())
                # The shed connection's file closes on the loop's next turn, and the listening
                # socket stays readable: accepting goes on then (asyncio's own handling would stop
                # it for a second).
                guard.shed_one("out of files")
                raise BlockingIOError(errno.EAGAIN, "out of files: retried on the next turn") from None
            if guard.count() >= guard.limit and not guard.shed_one(f"--max-connections {guard.limit} reached"):
                # Every connection is being answered: the new one is refused (closed at once)
                # rather than the cap overrun.
                conn.close()
                guard.notes.note("connection_refused", reason=f"--max-connections {guard.limit} reached and no "
                                                              f"connection is stalled")
                continue
            guard.accepted.pop(conn.fileno(), None)         # (a stale entry of the same fd: the order is age)
            guard.accepted[conn.fileno()] = (conn, time.monotonic())
            return conn, addr
        raise BlockingIOError(errno.EAGAIN, "accepted enough this turn: the rest on the next")


def listener(address: str, port: int, connections: Connections) -> Listener:
    """A bound socket (raises OSError when the address cannot be had); it listens once serving
    begins (asyncio's create_server calls ``listen``): until then connections are refused, not
    left waiting while the policy and the state load."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = Listener(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    sock.guard = connections
    return sock


_TIMEOUT_408 = b'{"error":"the request line and headers did not arrive within --header-timeout"}'
_TOO_LARGE_431 = b'{"error":"the request line and headers exceed %d bytes"}' % HEADER_LIMIT


def _answer(status: bytes, body: bytes) -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n" % len(body)) + body


class GuardedProtocol:
    """Mixed into uvicorn's HTTP/1.1 protocol (httptools', else h11's; both keep the request in
    ``self.cycle``, which a request whose headers are complete replaces): the header timeout and
    size, the connection's place in ``Connections``, and whether it waits on its client."""

    guard: Connections      # set on the class made by guarded_protocol() (uvicorn's has a "connections")

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.waiting_since = time.monotonic()
        self._header_timer = None
        self._header_bytes = 0
        self._received = False
        sock = transport.get_extra_info("socket")
        self.guard.made(self, sock.fileno() if sock is not None else None)
        self._arm()

    def connection_lost(self, exc) -> None:
        self._disarm()
        self.guard.lost(self)
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        cycle = self.cycle
        return cycle is None or cycle.response_complete

    def stalled(self) -> bool:
        """Waiting on the client: idle, in its headers or body, or not reading its answer (closing
        too: its file is kept until the answer is read)."""
        if self.transport is None:
            return False
        if self.transport.is_closing():
            return self.transport.get_write_buffer_size() > 0
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return True
        return cycle.more_body or self.flow.write_paused

    def shed(self) -> None:
        self.guard.lost(self)
        self._disarm()
        self.transport.abort()

    def _arm(self) -> None:
        timeout = self.guard.header_timeout
        if timeout is not None and self._header_timer is None:
            self._header_timer = self.loop.call_later(timeout, self._header_timeout)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        heading = self._between_requests()
        if heading and self._header_timer is None:
            # A kept-alive connection's next request begins: its headers get the timeout too.
            self._header_bytes = 0
            self._arm()
        super().data_received(data)
        if self.cycle is not cycle:         # the request line and headers are complete
            self._disarm()
            self._header_bytes = 0
            self.waiting_since = time.monotonic()
        elif heading and not self.transport.is_closing():
            self._received = True
            self._header_bytes += len(data)
            if self._header_bytes > HEADER_LIMIT:
                self.guard.notes.note("header_too_large", limit=HEADER_LIMIT)
                self._close_with(_answer(b"431 Request Header Fields Too Large", _TOO_LARGE_431))

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.waiting_since = time.monotonic()
        self._received = False

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self._between_requests():
            return
        self.guard.notes.note("header_timeout", timeout=self.guard.header_timeout,
                                    sent_bytes=self._header_bytes)
        self._close_with(_answer(b"408 Request Timeout", _TIMEOUT_408) if self._received else b"")

    def _close_with(self, answer: bytes) -> None:
        self._disarm()
        if answer:
            self.transport.write(answer)
        if self.transport.get_write_buffer_size():
            self.transport.abort()          # a client that does not read keeps no file
        else:
            self.transport.close()


def guarded_protocol(connections: Connections, base: "type | None" = None) -> type:
    """uvicorn's HTTP/1.1 protocol (as its "auto" picks it) with GuardedProtocol mixed in, bound
    to ``connections``."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol
        base = AutoHTTPProtocol
    return type(f"Guarded{base.__name__}", (GuardedProtocol, base), {"guard": connections})


def exception_handler(notes: Throttled):
    """The event loop's handler of errors no callback caught: one line each, at most once a second
    per message (with a count), instead of asyncio's traceback for each."""
    def handle(loop, context) -> None:
        err = context.get("exception")
        message = context.get("message") or "event loop error"
        fields = error_fields(err) if isinstance(err, BaseException) else {}
        if isinstance(err, OSError) and err.errno in OUT_OF_FILES:
            notes.note("accept_failed" if "accept" in message else "out_of_files", message=message, **fields)
        else:
            notes.note("loop_error", message=message, **fields)
    return handle

"""`policylang serve`: the extender (kube-scheduler's `extenders:`) and the admission webhook over
HTTP(S), on starlette + uvicorn (docs/deploy/README.md).

Every verb runs on the event loop's thread, one request at a time: the cluster state and the
executors' caches are not shared across threads, and the work is CPU-bound in Python anyway, so a
thread pool would only add locking. The policy and a dump are checked for changes every
``reload_interval`` seconds; a changed policy is loaded and checked first, and one with errors is
refused with a log line while the old one keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
from pathlib import Path
import sys
import time
from typing import Callable, Optional

import attrs
import orjson

from ..cost import CostExceeded, deadline
from ..diagnostics import InputError, PolicyError
from .extender import BadRequest, Encoded, Extender, VerbOutcome, PlanFailed
from .guard import (Connections, HEADER_LIMIT, Throttled, error_fields, exception_handler, fd_budget, guarded_protocol,
                    listener, log_line)
from ..frozen import frozen
from ..run.framework import PlanRuntimeError
from ..run.vector import NodeCache
from ..target import DEFAULT as DEFAULT_TARGET, Target

VERBS = ("filter", "prioritize", "preempt", "mutate")
DEFAULT_MAX_REQUEST = 32 * 2**20
# The deadline on each request's own work: under the 5 s that kube-scheduler gives an extender
# call when its config sets no httpTimeout (DefaultExtenderTimeout, pkg/scheduler/extender.go; the
# exported configuration writes 5s) and the webhook's timeoutSeconds (5 in the exported one), so
# that the answer, an error past the deadline, arrives before the caller gives up.
DEFAULT_REQUEST_TIMEOUT = 4.0
# What a client gets to hold a connection with (docs/deploy/README.md, "Limits"): the request line
# and headers within DEFAULT_HEADER_TIMEOUT of the connection's opening (or of its next request's
# first byte), the body within DEFAULT_BODY_TIMEOUT of the headers' end, an idle kept-alive
# connection closed after DEFAULT_KEEP_ALIVE; at most DEFAULT_MAX_CONNECTIONS open (fewer when the
# open-files limit is lower), the longest-stalled one shed for a new one.
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 10.0
DEFAULT_KEEP_ALIVE = 30.0
DEFAULT_MAX_CONNECTIONS = 1000


@frozen
class Options:
    profile: Optional[str] = None
    config: Optional[str] = None
    cluster: tuple = ()
    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    in_cluster: bool = False
    executor: str = "vector"
    max_request_bytes: int = DEFAULT_MAX_REQUEST
    decision_log: Optional[str] = None
    reload_interval: float = 2.0
    request_timeout: Optional[float] = DEFAULT_REQUEST_TIMEOUT    # None: no deadline
    body_timeout: Optional[float] = DEFAULT_BODY_TIMEOUT          # None: none
    target: Target = DEFAULT_TARGET     # the Kubernetes version and feature gates decided as


def _signature(paths) -> tuple:
    """What says a file changed: its path, size and mtime (ns); absent files count too."""
    out = []
    for p in sorted(set(map(str, paths))):
        try:
            st = os.stat(p)
            out.append((p, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((p, None, None))
    return tuple(out)


@frozen
class Policy:
    """A loaded, checked and compiled policy, and the files it came from."""
    name: str
    plans: dict
    extender: Extender
    admission: object
    files: tuple

    @classmethod
    def load(cls, options: Options) -> "Policy":
        """The options' profiles, compiled through the cache, and an Engine of them that decides
        which profile a pod is for as every other front end does."""
        from .admission import Admission
        from ..cluster.state import ClusterState
        from ..engine import Engine

        engine = Engine(state=ClusterState(), profile=options.profile, config=options.config, target=options.target,
                        executor=options.executor)
        return cls(", ".join(engine.plans), engine.plans, Extender(engine.plans, engine.profile_for, options.executor),
                   Admission(engine), _signature(_policy_files(options)))

    def changed(self) -> bool:
        return _signature(p for p, _, _ in self.files) != self.files


def _policy_files(options: Options) -> tuple:
    """The files a change to which reloads the policy: the configuration, or the profile's file and
    every file it imports and uses (the stdlib's own profiles do not change while serving)."""
    if options.config is not None:
        return (options.config,)
    profile = options.profile
    if profile is not None and (profile.endswith(".sched") or Path(profile).is_file()):
        from ..program import load_program
        return tuple(p for p in load_program(profile).sources if not p.startswith("<"))
    return ()


class StateSource:
    """The cluster state the verbs decide in: a dump (reloaded when its files change) or a live
    cluster's watch-backed state (branch live's cluster/watch.py)."""

    def __init__(self, options: Options):
        self.options = options
        self.watched = None
        self.loaded_at = time.monotonic()
        if options.cluster:
            self._files = _signature(options.cluster)
            self._state = self._load_dump()
        else:
            from ..cluster.live import ClusterSource
            from ..cluster.watch import WatchedState
            self.watched = WatchedState(ClusterSource(options.kubeconfig, options.context, options.in_cluster))
            self._state = self.watched.state

    def _load_dump(self):
        from ..cluster.load import load_cluster
        return load_cluster(list(self.options.cluster))

    @property
    def state(self):
        if self.watched is not None:
            if self.watched.apply_events():
                self.loaded_at = time.monotonic()
            return self.watched.state
        return self._state

    def age(self) -> float:
        """Seconds since the state last changed (a dump loaded, a watch event applied)."""
        return time.monotonic() - self.loaded_at

    def reload_if_changed(self) -> bool:
        if self.watched is not None:
            return False
        now = _signature(self.options.cluster)
        if now == self._files:
            return False
        self._files = now
        self._state = self._load_dump()      # raises on a bad dump: the old state keeps serving
        self.loaded_at = time.monotonic()
        return True

    def close(self) -> None:
        if self.watched is not None:
            self.watched.close()


class Metrics:
    """Prometheus metrics, in a registry of their own (one per server)."""

    def __init__(self, state_age: Callable[[], float]):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("policylang_serve_requests", "Requests by verb and HTTP status",
                                ["verb", "code"], registry=self.registry)
        self.latency = Histogram("policylang_serve_request_seconds", "Time to answer a request, by verb", ["verb"],
                                 buckets=(.001, .0025, .005, .01, .015, .025, .05, .1, .25, .5, 1, 2.5, 5),
                                 registry=self.registry)
        self.rejections = Counter("policylang_serve_rejections", "Nodes rejected, by the plugin that rejected them",
                                  ["plugin"], registry=self.registry)
        self.deadlines = Counter("policylang_serve_deadline_exceeded", "Requests whose work ran past "
                                 "--request-timeout, by verb", ["verb"], registry=self.registry)
        self.policy_reloads = Counter("policylang_serve_policy_reloads", "Policy reloads (ok, refused)",
                                      ["result"], registry=self.registry)
        self.state_reloads = Counter("policylang_serve_state_reloads", "Cluster dump reloads (ok, refused)",
                                     ["result"], registry=self.registry)
        age = Gauge("policylang_serve_state_age_seconds", "Seconds since the cluster state last changed",
                    registry=self.registry)
        age.set_function(state_age)

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


_log = log_line


class Server:
    """The policy, the state, the metrics and the logs the HTTP app answers from."""

    def __init__(self, options: Options, policy: Optional[Policy] = None, state: Optional[StateSource] = None,
                 log=sys.stderr):
        self.options = options
        self.policy = policy if policy is not None else Policy.load(options)
        self.source = state if state is not None else StateSource(options)
        self.metrics = Metrics(self.source.age)
        self.log = log
        self.decisions = open(options.decision_log, "a", encoding="utf-8") if options.decision_log else None
        self.shutting_down = False

    def check_reload(self) -> None:
        """Reload a changed policy (checked first; a bad one is refused and the old one kept) and a
        changed dump."""
        if self.policy.changed():
            try:
                policy = Policy.load(self.options)
            except (PolicyError, InputError) as err:
                text = err.render() if isinstance(err, PolicyError) else str(err)
                self.metrics.policy_reloads.labels("refused").inc()
                # Remember the files as they are now, so the same bad edit is refused once.
                self.policy = attrs.evolve(self.policy, files=_signature(p for p, _, _ in self.policy.files))
                _log(self.log, event="policy_reload_refused", error=text)
            else:
                self.policy = policy
                # The state's node cache holds the old plans' values, under keys no new plan makes.
                NodeCache.forget(self.source.state)
                self.metrics.policy_reloads.labels("ok").inc()
                _log(self.log, event="policy_reloaded", profiles=sorted(policy.plans))
        try:
            if self.source.reload_if_changed():
                self.metrics.state_reloads.labels("ok").inc()
                _log(self.log, event="state_reloaded", nodes=len(self.source.state.nodes))
        except InputError as err:
            self.metrics.state_reloads.labels("refused").inc()
            _log(self.log, event="state_reload_refused", error=str(err))

    def answer(self, verb: str, body) -> tuple[object, Optional[VerbOutcome], int]:
        """The verb's JSON answer, its outcome (for the decision log), and how many patch ops.
        The policy's work runs with the step budget (--max-cost) and the deadline
        (--request-timeout) of one pod's cycle."""
        state = self.source.state
        with deadline(self.options.request_timeout):
            if verb == "mutate":
                try:
                    review, ops = self.policy.admission.review(state, body)
                except (PlanRuntimeError, CostExceeded) as err:
                    raise PlanFailed.of(err) from None
                return review, None, ops
            outcome = getattr(self.policy.extender, verb)(state, body)
        if outcome.timed_out:
            self.metrics.deadlines.labels(verb).inc()
        return outcome.body, outcome, 0

    def close(self) -> None:
        if self.decisions is not None:
            self.decisions.close()
        self.source.close()


def decode_json(raw: bytes):
    """The request's JSON. orjson's parser first (a 5,000-node ExtenderArgs decodes ~3× faster);
    what it refuses goes to the stdlib's, whose answer (its error's words, or the few documents
    only it takes: NaN, UTF-16, integers past 64 bits) is the one the server has always given."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def encode_json(answer) -> bytes:
    """The answer as JSON (orjson: ~5× the stdlib's speed on 5,000 node names), or as the verb
    encoded it. What orjson cannot write (an integer past 64 bits, deep nesting: echoed from a
    request only the stdlib's parser took) the stdlib writes."""
    if isinstance(answer, Encoded):
        return answer
    try:
        return orjson.dumps(answer)
    except orjson.JSONEncodeError:
        return json.dumps(answer, separators=(",", ":")).encode()


def error_body(message: str) -> bytes:
    """Every error's body: ``{"error": "…"}`` (a lone surrogate from the request escaped)."""
    try:
        return orjson.dumps({"error": message})
    except orjson.JSONEncodeError:
        return json.dumps({"error": message}).encode()


class BodyTimeout(Exception):
    """The body did not arrive within --body-timeout of the headers' end."""


async def _body(request, limit: int, timeout: Optional[float] = None) -> "bytes | None":
    """The request body, or None when it is larger than ``limit``; BodyTimeout past ``timeout``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None

    async def read():
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    if timeout is None:
        return await read()
    try:
        async with asyncio.timeout(timeout):
            return await read()
    except TimeoutError:
        raise BodyTimeout() from None


class Shielded:
    """The outermost ASGI layer: an exception nothing else caught is one log line (its traceback
    only with POLICYLANG_TRACEBACK set), and a 500 with a JSON body if no answer has begun; never
    uvicorn's traceback."""

    def __init__(self, app, log):
        self.app = app
        self.log = log

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        begun = False

        async def tracked(message):
            nonlocal begun
            begun = begun or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as err:        # (starlette's ServerErrorMiddleware has answered, and re-raises)
            log_line(self.log, event="internal_error", path=scope.get("path"), **error_fields(err))
            if not begun:
                body = error_body(f"internal error ({type(err).__name__}); the server logged it")
                await send({"type": "http.response.start", "status": 500,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})


def build_app(server: Server):
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    def respond(verb: str, code: int, started: float, content: bytes, close: bool = False):
        server.metrics.requests.labels(verb, str(code)).inc()
        server.metrics.latency.labels(verb).observe(time.perf_counter() - started)
        return Response(content, status_code=code, media_type="application/json",
                        headers={"connection": "close"} if close else None)

    def refuse(verb: str, code: int, started: float, message: str, event: str = "bad_request", close: bool = False):
        """A request serve does not answer: the reason as JSON, and one log line."""
        _log(server.log, event=event, verb=verb, code=code, error=message)
        return respond(verb, code, started, error_body(message), close)

    async def handle(verb: str, request, started: float):
        limit = server.options.max_request_bytes
        try:
            raw = await _body(request, limit, server.options.body_timeout)
        except BodyTimeout:
            return refuse(verb, 408, started, f"the request body did not arrive within {server.options.body_timeout}s "
                                              f"(--body-timeout)", "body_timeout", close=True)
        if raw is None:
            # (closed: the rest of the body is not read)
            return refuse(verb, 413, started, f"request body exceeds {limit} bytes (--max-request-size)",
                          "request_too_large", close=True)
        try:
            body = decode_json(raw)
        except (ValueError, UnicodeDecodeError) as err:
            return refuse(verb, 400, started, f"malformed JSON: {err}")
        except RecursionError:      # (Go's decoder stops at 10,000 levels, with these words)
            return refuse(verb, 400, started, "malformed JSON: exceeded max depth")
        try:
            answer, outcome, ops = server.answer(verb, body)
        except BadRequest as err:
            return refuse(verb, 400, started, str(err))
        except InputError as err:       # what the request names cannot be (a PriorityClass that does not exist)
            return refuse(verb, 400, started, str(err))
        except PlanFailed as err:
            if err.deadline:
                server.metrics.deadlines.labels(verb).inc()
            _log(server.decisions, verb=verb, error=str(err))
            # 503 past the deadline (the server's own limit, worth a retry), 500 for a policy
            # that fails; both are the caller's error for the call (prioritize: ignored).
            return respond(verb, 503 if err.deadline else 500, started, error_body(str(err)))
        if outcome is not None:
            for plugin, count in outcome.rejections.items():
                server.metrics.rejections.labels(plugin).inc(count)
            _log(server.decisions, verb=verb, pod=outcome.pod, profile=outcome.profile,
                 kubernetes_version=server.options.target.version, passed=outcome.passed,
                 rejections=outcome.rejections, error=outcome.error or None,
                 ms=round((time.perf_counter() - started) * 1000, 3))
        else:
            _log(server.decisions, verb=verb, patch_ops=ops, ms=round((time.perf_counter() - started) * 1000, 3))
        return respond(verb, 200, started, encode_json(answer))

    def make(verb: str):
        async def endpoint(request):
            started = time.perf_counter()
            try:
                return await handle(verb, request, started)
            except ClientDisconnect:        # gone (shed, or closed its end): no one to answer
                return Response(status_code=400)
            except Exception as err:
                # A bug: one line (the traceback with POLICYLANG_TRACEBACK), a 500 in JSON.
                _log(server.log, event="internal_error", verb=verb, **error_fields(err))
                return respond(verb, 500, started, error_body(f"internal error ({type(err).__name__}); "
                                                              f"the server logged it"))
        return endpoint

    async def healthz(request):
        return PlainTextResponse("ok")

    async def readyz(request):
        if server.shutting_down:
            return PlainTextResponse("shutting down", status_code=503)
        return PlainTextResponse("ok")

    async def metrics(request):
        content, media = server.metrics.render()
        return Response(content, media_type=media)

    async def http_error(request, exc):     # 404, 405: JSON too
        return Response(error_body(exc.detail), status_code=exc.status_code, headers=exc.headers,
                        media_type="application/json")

    async def server_error(request, exc):   # (logged by Shielded, which starlette re-raises it to)
        return Response(error_body(f"internal error ({type(exc).__name__}); the server logged it"), status_code=500,
                        media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async def reload_loop():
            while True:
                await asyncio.sleep(server.options.reload_interval)
                try:
                    server.check_reload()
                except Exception as err:    # a bug, or the files unreadable: the old ones keep serving
                    _log(server.log, event="reload_failed", **error_fields(err))
        task = asyncio.create_task(reload_loop()) if server.options.reload_interval > 0 else None
        try:
            yield
        finally:
            server.shutting_down = True
            if task is not None:
                task.cancel()

    routes = [Route(f"/{verb}", make(verb), methods=["POST"]) for verb in VERBS]
    routes += [Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics)]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, Exception: server_error})
    return Shielded(app, server.log)


@frozen
class Listen:
    address: str = "127.0.0.1"
    port: int = 8443
    tls_cert: Optional[str] = None
    tls_key: Optional[str] = None
    client_ca: Optional[str] = None
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE
    graceful_timeout: int = 10
    header_timeout: Optional[float] = DEFAULT_HEADER_TIMEOUT      # None: none
    max_connections: int = DEFAULT_MAX_CONNECTIONS


def uvicorn_config(app, listen: Listen, http="auto"):
    """uvicorn's configuration: ``http``, the HTTP/1.1 protocol (run's is guard.GuardedProtocol
    over uvicorn's own), on asyncio's loop (whose accept calls guard.Listener's), no WebSockets,
    and uvicorn's logging left to run (one line each, at most once a second)."""
    import ssl

    import uvicorn

    tls = {}
    if listen.tls_cert:
        tls = {"ssl_certfile": listen.tls_cert, "ssl_keyfile": listen.tls_key}
        if listen.client_ca:
            tls.update(ssl_ca_certs=listen.client_ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
    return uvicorn.Config(app, host=listen.address, port=listen.port, log_level="warning", access_log=False,
                          log_config=None, http=http, ws="none", loop="asyncio",
                          h11_max_incomplete_event_size=HEADER_LIMIT,
                          timeout_keep_alive=listen.keep_alive_timeout,
                          timeout_graceful_shutdown=listen.graceful_timeout, lifespan="on", **tls)


def _bind(listen: Listen, connections: Connections):
    """The listening socket; a port that cannot be had is bad input (exit 2), said before
    anything is loaded."""
    try:
        return listener(listen.address, listen.port, connections)
    except OSError as err:
        raise InputError(f"cannot listen on {listen.address}:{listen.port}: {err.strerror or err}") from None


class _UvicornLog(logging.Handler):
    """uvicorn's own warnings and errors (an invalid request, …) as serve's JSON lines, at most one
    a second for each message."""

    def __init__(self, notes: Throttled):
        super().__init__(logging.WARNING)
        self.notes = notes

    def emit(self, record) -> None:
        fields = {"level": record.levelname.lower(), "message": record.getMessage()}
        if record.exc_info and record.exc_info[1] is not None:
            fields.update(error_fields(record.exc_info[1]))
        self.notes.note("uvicorn", key=fields["message"], **fields)


def run(options: Options, listen: Listen, log=sys.stderr) -> int:
    """Serve until SIGTERM or SIGINT, then finish the requests in flight (graceful shutdown)."""
    import uvicorn

    notes = Throttled(log)
    connections = Connections(listen.max_connections, listen.header_timeout, notes)

    class _Uvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            """SIGTERM and SIGINT start the graceful shutdown (uvicorn's own handling re-raises the
            signal afterwards, so the process would die by it instead of exiting 0)."""
            previous = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, handler in previous.items():
                    signal.signal(s, handler)

        async def startup(self, sockets=None):
            """The loop's errors as throttled lines; a TLS handshake gets --header-timeout too
            (asyncio's default is 60 s, during which the connection holds a file)."""
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(exception_handler(notes))
            if not (listen.tls_cert and listen.header_timeout):
                return await super().startup(sockets)
            loop.create_server = functools.partial(loop.create_server, ssl_handshake_timeout=listen.header_timeout)
            try:
                await super().startup(sockets)
            finally:
                del loop.create_server

    sock = _bind(listen, connections)
    uvicorn_logger = logging.getLogger("uvicorn")
    handler, propagate = _UvicornLog(notes), uvicorn_logger.propagate
    try:
        server = Server(options, log=log)
        # (counted once the policy and the state are loaded: the files they keep open count too)
        connections.limit, reduced = fd_budget(listen.max_connections)
        scheme = "https" if listen.tls_cert else "http"
        _log(log, event="serving", url=f"{scheme}://{listen.address}:{listen.port}",
             profiles=sorted(server.policy.plans), nodes=len(server.source.state.nodes),
             kubernetes=options.target.json(),
             limits={"header_timeout": listen.header_timeout, "body_timeout": options.body_timeout,
                     "keep_alive_timeout": listen.keep_alive_timeout, "max_connections": connections.limit,
                     "max_request_bytes": options.max_request_bytes, "request_timeout": options.request_timeout,
                     **({"max_connections_lowered": reduced} if reduced else {})})
        uvicorn_logger.addHandler(handler)
        uvicorn_logger.propagate = False
        try:
            config = uvicorn_config(build_app(server), listen, http=guarded_protocol(connections))
            _Uvicorn(config).run(sockets=[sock])
        finally:
            server.close()
    finally:
        sock.close()
        uvicorn_logger.removeHandler(handler)
        uvicorn_logger.propagate = propagate
        notes.flush(force=True)
    _log(log, event="stopped")
    return 0

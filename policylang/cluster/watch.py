"""A ClusterState kept up to date by watching an API server, for long-lived use (a server that
answers many questions about one cluster).

As an informer does: each kind is listed (`live.Reader.list`), then watched from the list's
resourceVersion; when the server answers 410 Gone (the version is older than it keeps), the kind
is listed again and the state made anew from the fresh list. Watches run on one thread per kind
and only queue what they read; events are applied on the caller's thread, when it asks for
`WatchedState.state`, so a state is never changed while someone reads it. A pod's event changes
the state in place, through `ClusterState.put_pod` / `drop_pod` (the indexes' arrive and leave
hooks, as binding does); an event of any other kind, rarer and touching what every index is
built on, makes the state anew, unless the object's modelled fields did not change (a node's
heartbeat).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Iterable, Optional

from .live import KINDS, ClusterSource, Gone, Kind, Reader, read_cluster
from .load import load_documents, objects_from_documents
from .state import ClusterState

RETRY_SECONDS = 1.0


def _key(obj) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class WatchedState:
    def __init__(self, source: ClusterSource, watch_timeout: int = 300):
        self._reader = Reader(source, pool_size=len(KINDS) + 2)
        self._timeout = watch_timeout
        self._events: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: dict[str, object] = {}      # each kind's watch response, to cut at close
        self._objects: dict[str, dict[str, object]] = {}
        self.relists = 0            # how many times a kind was listed again after 410 Gone
        self.errors: list[str] = []
        read = read_cluster(self._reader)
        self.warnings = read.warnings
        self._state = load_documents(read.host, read.documents())
        for listed in read.listed:
            typed = objects_from_documents(read.host, listed.items)
            self._objects[listed.kind.kind] = {_key(o): o for o in typed}
            self.follow(listed.kind, listed.resource_version)

    @property
    def state(self) -> ClusterState:
        """The state with every event read so far applied."""
        self.apply_events()
        return self._state

    def follow(self, kind: Kind, resource_version: str) -> None:
        """Watch a kind from this resourceVersion on (on a thread of its own)."""
        thread = threading.Thread(target=self._watch, args=(kind, resource_version), daemon=True,
                                  name=f"watch-{kind.plural}")
        self._threads.append(thread)
        thread.start()

    def _watch(self, kind: Kind, version: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self._reader.watch(kind, version, self._timeout, on_open=self._opened):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event.get("type") != "BOOKMARK":
                        self._events.put(("event", kind, event.get("type"), obj))
                    if self._stop.is_set():
                        return
            except Gone:
                listed = self._reader.list(kind)
                version = listed.resource_version
                self._events.put(("relist", kind, None, listed.items))
            except Exception as err:  # noqa: BLE001 - a watch that fails is retried, and the failure kept
                if self._stop.is_set():
                    return
                self._events.put(("error", kind, None, f"{type(err).__name__}: {err}"))
                time.sleep(RETRY_SECONDS)

    def apply_events(self) -> int:
        """Apply the events queued so far; how many there were."""
        applied, rebuild = 0, False
        while True:
            try:
                what, kind, change, payload = self._events.get_nowait()
            except queue.Empty:
                break
            applied += 1
            if what == "error":
                self.errors.append(f"watch of {kind.resource}: {payload}")
            elif what == "relist":
                self.relists += 1
                typed = objects_from_documents(self._reader.host, payload)
                self._objects[kind.kind] = {_key(o): o for o in typed}
                rebuild = True
            else:
                rebuild |= self._apply(kind, change, payload)
        if rebuild:
            self._state = ClusterState.build(self._all_objects())
        return applied

    def _apply(self, kind: Kind, change: str, raw: dict) -> bool:
        """One watch event; whether the state must be made anew."""
        raw = {"apiVersion": kind.group_version, "kind": kind.kind, **raw}
        (obj,) = objects_from_documents(self._reader.host, [raw])
        objects = self._objects.setdefault(kind.kind, {})
        key = _key(obj)
        if change == "DELETED":
            objects.pop(key, None)
            if kind.kind == "Pod":
                self._state.drop_pod(key)
                return False
            return True
        if objects.get(key) == obj:
            return False
        objects.pop(key, None)      # a changed pod comes last, as the state's put_pod places it
        objects[key] = obj
        if kind.kind == "Pod":
            self._state.put_pod(obj)
            return False
        return True

    def _all_objects(self) -> Iterable:
        for kind in KINDS:
            yield from self._objects.get(kind.kind, {}).values()

    def wait_until(self, condition, timeout: float = 30.0) -> bool:
        """Apply events until ``condition(state)`` holds (True) or the timeout passes (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if condition(self.state):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _opened(self, kind: Kind, response) -> None:
        self._open[kind.kind] = response

    def close(self, timeout: Optional[float] = 5.0) -> None:
        """Stop every watch: each blocked read is cut off (a shutdown of its socket)."""
        self._stop.set()
        for response in list(self._open.values()):
            try:
                getattr(response, "shutdown", response.close)()
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout)
        self._reader.close()

    def __enter__(self) -> "WatchedState":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""`policylang mcp`: a Model Context Protocol server over stdio, so that an agent (Claude Desktop,
an IDE's assistant, any MCP client) can ask why a pod is Pending.

The official SDK (PyPI `mcp`, 2.x: ``mcp.server.mcpserver.MCPServer``) speaks the protocol: the
handshake, the JSON-RPC framing on stdin/stdout, the tools' input schemas; this module only
writes the four tools, each a thin front end on one Engine built at start (docs/mcp.md):

    eval      pod     -> where it would go            (Decision.to_json, eval -o json's result)
    explain   pod     -> why it is Pending            (explain -o json's result)
    whatif    events  -> who moves, who is lost       (whatif -o json's document)
    capacity  pod     -> how many more copies fit     (capacity -o json's document)

Bad input to a tool is a tool error (isError) whose text is what the CLI would print for it;
nothing a caller sends makes a traceback or ends the server.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Annotated, Any, Callable, Union

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .cost import CostExceeded
from .diagnostics import InputError, PolicyError

if TYPE_CHECKING:
    from .engine import Engine

INSTRUCTIONS = """\
policylang decides as kube-scheduler does, over one cluster state read when the server started \
(a dump, or a live cluster read once). Use it to find out why a pod is Pending and what would \
change that. Start with `explain` for a Pending pod (its `message` is the FailedScheduling event \
kube-scheduler would write, `causes` say which filter rejected which nodes, `suggestions` are \
verified changes that would let it schedule); `eval` for where a pod would go and each node's \
scores; `capacity` for how many more copies of a pod fit; `whatif` for what cordoning, draining \
or losing nodes would do. No tool changes the cluster or the server's state: each answer is \
about the state as it was read."""

# A pod as an argument: the object, or a pod of the cluster by key.
PodArgument = Annotated[
    Union[dict[str, Any], str],
    Field(description="The pod: either a Pod object as `kubectl get pod -o json` prints it (a pod not yet "
                      "created is fine: metadata and spec are what count), or the string NAMESPACE/NAME "
                      "(or NAME, in the default namespace) of a pod in the cluster."),
]

# NAMESPACE/NAME or NAME: a namespace is a DNS label, a pod's name a DNS subdomain.
_POD_KEY = re.compile(r"(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?/)?[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?")
_FILE_SUFFIXES = (".yaml", ".yml", ".json")

# Anticipated failures: their text is the CLI's message, and the agent's to act on.
_EXPECTED = (InputError, PolicyError, CostExceeded)


def build(engine: "Engine") -> MCPServer:
    """The server of the four tools over ``engine``."""
    server = MCPServer(name="policylang", instructions=INSTRUCTIONS, version=_version())
    tools = _Tools(engine)
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    for fn, title in ((tools.eval, "Where would this pod be scheduled"),
                      (tools.explain, "Why is this pod Pending"),
                      (tools.whatif, "What if nodes are cordoned, drained or lost"),
                      (tools.capacity, "How many more copies of this pod fit")):
        server.add_tool(fn, name=fn.__name__, title=title, annotations=read_only, structured_output=False)
    return server


def run(engine: "Engine") -> int:
    """Serve over stdin and stdout until the client closes them."""
    build(engine).run("stdio")
    return 0


class _Tools:
    """The tools, one method each; their docstrings are the descriptions the agent reads. The
    SDK runs a synchronous tool in a worker thread: one lock keeps the Engine (its savepoints,
    its budget in force) to one call at a time."""

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine
        self._lock = threading.Lock()

    def eval(self, pod: PodArgument) -> CallToolResult:
        """Where kube-scheduler would place this pod, and why not elsewhere: one scheduling cycle of
        the pod's profile over the cluster as it was read.

        Returns policylang's eval result (schema policylang/eval/v1): `selected` (the node chosen,
        null if none), `feasible` (the nodes that passed every filter), `message` (for an
        unschedulable pod, kube-scheduler's FailedScheduling message, e.g. "0/7 nodes are available:
        3 Insufficient cpu, ..."), and `nodes`, one per node with the filter that rejected it
        (`failure`: plugin, code, reasons) or its scores per plugin and `total`. A pod that is not
        scheduled at all (already bound, finished, held by scheduling gates, or for another
        scheduler) has `selected` null and says why (`bound_to`, `phase`, `gates`, ...)."""
        return self._call(lambda engine: engine.evaluate(self._pod(pod)).to_json())

    def explain(self, pod: PodArgument) -> CallToolResult:
        """Why this pod is (or would be) Pending, and what would let it schedule. Use this first for
        a Pending pod.

        Returns policylang's explain result (schema policylang/explain/v1): eval's fields (`message`
        is kube-scheduler's FailedScheduling message, `nodes` each node's verdict with every
        filter's status in `filters`), plus `causes` (each failing filter with the reason and the
        nodes it rejected), `near_misses` (nodes that failed by one filter only), `suggestions`
        (changes to the pod or a node, each verified to make it schedule, with the node it would
        land on in `schedules_on`) and `withheld` (infrastructure changes such as uncordoning, not
        suggested by default). A pod already bound, finished or gated says so instead."""
        def answer(engine: "Engine") -> dict:
            from .explain import FIX_TRIES
            from .report.decisions import explain_json

            explanation = engine.explain(self._pod(pod), fix_tries=FIX_TRIES)
            return json.loads(explain_json([explanation], engine.target))["results"][0]
        return self._call(answer)

    def whatif(self, events: Annotated[list[str], Field(
            min_length=1,
            description="In order, each one of: 'cordon NODE', 'drain NODE', 'taint NODE KEY=VALUE:EFFECT', "
                        "'remove NODE', 'remove zone=ZONE', 'add N nodes like NODE'.")]) -> CallToolResult:
        """What these events would do to the cluster's pods, applied in order to a copy of the state
        (the cluster itself is never touched): which pods move where, which are lost (nowhere else
        fits them), and which drains a PodDisruptionBudget would block.

        Returns policylang's whatif document (schema policylang/whatif/v1): `ok` (false when a pod
        is lost or a drain is blocked), and `events`, one per event, with its `nodes`, `moves`
        (each pod with `from`, `to` (null: lost), `cause`, `fate` and kube-scheduler's `message`)
        and `stays` (pods left where they are, with the reason)."""
        def answer(engine: "Engine") -> dict:
            from .report.whatif import whatif_json

            for event in events:
                words = event.split()
                # `add N nodes like FILE` would read a file: the server reads none an agent names.
                if words[:1] == ["add"] and len(words) == 5 and words[4] not in engine.state.nodes \
                        and (os.path.exists(words[4]) or words[4].endswith(_FILE_SUFFIXES)):
                    raise InputError(f"event {event!r}: no node {words[4]} in the cluster (a template node "
                                     f"must be a node of the cluster here)")
            return json.loads(whatif_json(engine.whatif(events)))
        return self._call(answer)

    def capacity(self, pod: PodArgument) -> CallToolResult:
        """How many more copies of this pod would fit in the cluster, where they would go, and what
        stops the next one (up to 1000 copies).

        Returns policylang's capacity document (schema policylang/capacity/v1, mode headroom):
        `fits` (how many more copies schedule, one after another), `capped` (true if the search
        stopped at the limit rather than at a full cluster), `next_message` (kube-scheduler's
        FailedScheduling message for the copy that does not fit), `nodes` (per node: copies
        `placed` and `why_full`) and `utilisation` before and after."""
        def answer(engine: "Engine") -> dict:
            from .report.capacity import headroom_json

            asked = self._pod(pod)
            result = engine.capacity(asked)
            return headroom_json(result, list(engine.state.nodes))
        return self._call(answer)

    def _call(self, answer: Callable[["Engine"], dict]) -> CallToolResult:
        """The answer as a tool result (the document as JSON text, and as structured content), or
        the tool error the CLI's message makes."""
        with self._lock:
            self.engine.budget.reset()      # each call has the whole --max-total-cost, as one CLI run
            try:
                doc = answer(self.engine)
            except _EXPECTED as err:
                return _error(str(err))
            except Exception as err:  # noqa: BLE001 - a bug in policylang: a one-line error, the server goes on
                if os.environ.get("POLICYLANG_TRACEBACK"):
                    traceback.print_exception(err, file=sys.stderr)
                message = " ".join(str(err).split())[:500]
                return _error(f"internal error (a bug in policylang): {type(err).__name__}: {message}")
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(doc, indent=2))],
                              structured_content=doc)

    def _pod(self, pod: "dict[str, Any] | str"):
        """What the Engine takes as the pod: the object as given, or the cluster's pod of that key.
        A string is only ever a key: the server reads no file an agent names (nor standard
        input, which is the protocol's)."""
        if isinstance(pod, dict):
            return pod
        if not _POD_KEY.fullmatch(pod) or pod.endswith(_FILE_SUFFIXES):
            raise InputError(f"pod {pod!r}: expected a Pod object, or NAMESPACE/NAME of a pod in the cluster")
        from .pending import PodToDecide

        key = pod if "/" in pod else f"{self.engine.namespace}/{pod}"
        found = self.engine.state.pod(key)
        if found is not None:
            return PodToDecide(found, True)
        if os.path.exists(pod):
            raise InputError(f"no pod {key} in the cluster", path=", ".join(self.engine.sources))
        return pod      # the Engine's "no pod ... in the dump", with the names it is close to


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("policylang")
    except PackageNotFoundError:
        return ""

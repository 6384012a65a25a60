"""The verb for agents: mcp (a Model Context Protocol server over stdio, docs/mcp.md)."""

from __future__ import annotations

from ..diagnostics import InputError
from .common import cluster_arguments, engine_for, target_arguments


def register(sub) -> None:
    """mcp."""
    m = sub.add_parser("mcp", help="serve eval, explain, whatif and capacity to an AI agent as a Model Context "
                                   "Protocol server over stdio (see docs/mcp.md)")
    cluster_arguments(m)
    m.add_argument("--profile", metavar="PATH|NAME", help="a .sched file with a profile, or a stdlib profile name "
                                                          "(default: the stdlib default-scheduler profile)")
    m.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file: its profiles, by "
                                                    "schedulerName")
    m.add_argument("-n", "--namespace", help="the namespace of a pod named NAME alone (default: default; from a "
                                             "live cluster, the context's)")
    target_arguments(m)
    m.set_defaults(run=cmd_mcp)


def cmd_mcp(args) -> int:
    try:
        from .. import mcp     # imports the SDK: no other command pays for it
    except ImportError as err:     # the `mcp` extra is not installed (or an SDK of another major version is)
        raise InputError(f"policylang mcp needs the MCP SDK, mcp 2.x (pip install 'policylang[mcp]'): {err}") from None
    engine = engine_for(args)      # once: a bad dump or profile is exit 2 before any client connects
    return mcp.run(engine)

"""The verbs that look ahead: whatif (cordon, drain, taint, lose a node or zone, add nodes) and
capacity (how many more pods fit, or how many nodes to add)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..diagnostics import InputError
from .common import check_report_target, engine_for, load_objects, report_argument, target_arguments, write_report

if TYPE_CHECKING:
    from ..api.model import Pod


def register(sub) -> None:
    """whatif and capacity."""
    w = sub.add_parser("whatif", help="what if we cordon or drain a node, taint it, lose a node or zone, add nodes")
    w.add_argument("--cluster", action="append", required=True, metavar="PATH")
    w.add_argument("--event", action="append", required=True, metavar="EVENT",
                   help="in order, repeatable: 'cordon NODE', 'drain NODE', 'taint NODE key=value:NoExecute', "
                        "'remove NODE', 'remove zone=ZONE', 'add N nodes like NODE|FILE'")
    w.add_argument("--profile", metavar="PATH|NAME")
    w.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    w.add_argument("-o", "--output", choices=("text", "json"), default="text")
    w.add_argument("--no-preemption", action="store_true")
    target_arguments(w)
    w.set_defaults(run=cmd_whatif)

    ca = sub.add_parser("capacity", help="how many more pods fit, where and why not; or how many nodes to add")
    ca.add_argument("--cluster", action="append", required=True, metavar="PATH")
    what = ca.add_mutually_exclusive_group(required=True)
    what.add_argument("--pod", metavar="TEMPLATE", help="a Pod: how many more copies of it fit")
    what.add_argument("--workload", action="append", metavar="FILE[:N]",
                      help="a Deployment, StatefulSet, ReplicaSet or Job (N replicas, default its own count; "
                           "repeatable): how many more copies of the whole set fit")
    what.add_argument("--node-template", metavar="NODE.yaml",
                      help="the fewest nodes like this to add so that --pods (default: the dump's pending pods) schedule")
    ca.add_argument("--pods", action="append", metavar="PATH", help="with --node-template: the pending batch")
    ca.add_argument("--replicas", type=int, metavar="N", help="with --pods: expand workloads into N pods each")
    ca.add_argument("--max", type=int, default=None, metavar="N",
                    help="look no further than N copies (default 1000) or N added nodes (default 100)")
    ca.add_argument("--profile", metavar="PATH|NAME")
    ca.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    ca.add_argument("-o", "--output", choices=("text", "json"), default="text")
    target_arguments(ca)
    ca.set_defaults(run=cmd_capacity)

    for verb in (w, ca):
        report_argument(verb)


def cmd_whatif(args) -> int:
    from ..report.decisions import Style
    from ..forecast.whatif import parse_event
    from ..report.whatif import verdict, whatif_json, whatif_text

    events = [parse_event(e) for e in args.event]
    check_report_target(args)
    outcome = engine_for(args).whatif(events, preemption=not args.no_preemption)
    if args.output == "json":
        print(whatif_json(outcome))
    else:
        print(whatif_text(outcome, Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR"))))

    def page():
        from ..report.html import whatif_page
        return whatif_page(outcome)
    write_report(args, page)
    return 1 if verdict(outcome) else 0


MAX_UNIT_PODS = 10_000     # pods in one copy of --workload's set


def _workload_units(specs: list[str], state) -> list[Pod]:
    """The pods of one copy of every --workload FILE[:N]."""
    from ..cluster.workloads import read_pods_and_workloads

    unit = []
    for spec in specs:
        path, _, count = spec.rpartition(":") if spec.rpartition(":")[2].isdigit() else (spec, "", "")
        pods, owners = read_pods_and_workloads(path, int(count) if count else None, state,
                                               max_pods=MAX_UNIT_PODS - len(unit), plain_pods=False)
        if not pods:
            raise InputError("no workload with replicas found (Deployment, ReplicaSet, ReplicationController, "
                             "StatefulSet, Job, CronJob or DaemonSet)", path=path)
        state.add_workloads(owners)
        unit += pods
    return unit


def cmd_capacity(args) -> int:
    import json

    if args.max is not None and not 0 < args.max <= 100_000:
        raise InputError("--max must be 1 to 100000")
    if args.pods and not args.node_template:
        raise InputError("--pods goes with --node-template")
    check_report_target(args)
    engine = engine_for(args)
    ask = _nodes_question if args.node_template else _headroom_question
    text, doc, page, code = ask(args, engine)
    print(json.dumps(doc, indent=2) if args.output == "json" else text)
    write_report(args, page)
    return code


def _nodes_question(args, engine):
    """capacity --node-template: the fewest such nodes for the batch (--pods, or the dump's pending pods)."""
    from ..report.capacity import nodes_needed_json, nodes_needed_text
    from ..report.html import nodes_needed_page

    found = load_objects(args.node_template, kinds=["Node"])
    if len(found) != 1:
        raise InputError(f"expected one Node, found {len(found)}", path=args.node_template)
    pods = [p.pod for p in engine.pods(args.pods, replicas=args.replicas)] if args.pods else None
    result = engine.nodes_needed(found[0], pods, limit=args.max or 100)
    return (nodes_needed_text(result), nodes_needed_json(result), lambda: nodes_needed_page(result),
            0 if result.count is not None else 1)


def _headroom_question(args, engine):
    """capacity --pod / --workload: how many more copies fit."""
    from ..report.capacity import headroom_json, headroom_text
    from ..report.html import headroom_page

    if args.pod:
        unit = load_objects(args.pod, kinds=["Pod"])
        if len(unit) != 1:
            raise InputError(f"expected one Pod as the template, found {len(unit)}", path=args.pod)
    else:
        unit = _workload_units(args.workload, engine.state)
    result = engine.capacity(*unit, limit=args.max)
    nodes = list(engine.state.nodes)
    return (headroom_text(result, nodes), headroom_json(result, nodes), lambda: headroom_page(result),
            0 if result.fits else 1)

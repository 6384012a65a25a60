"""The verbs that decide: eval (where would these pods go), explain (why is it Pending),
simulate (a batch, one pod after another) and diff (the same batch under two profiles)."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from ..cost import CostExceeded
from ..diagnostics import InputError
from .common import (check_report_target, check_state_target, cluster_arguments, engine_for, executor_argument,
                     narrowed, percentage, pod_arguments, progress_bar, replicas_argument, report_argument,
                     target_arguments, timeout_argument, write_report)
from .common import EXIT_INTERRUPTED, TimedOut


def register(sub) -> None:
    """eval, explain, simulate and diff."""
    e = sub.add_parser("eval", help="where would these pods go, and why not elsewhere")
    cluster_arguments(e)
    pod_arguments(e)
    e.add_argument("--profile", metavar="PATH|NAME", help="a .sched file with a profile, or a stdlib profile name "
                                                          "(default: the stdlib default-scheduler profile)")
    e.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): "
                                                    "its profiles, by schedulerName")
    e.add_argument("-o", "--output", choices=("text", "json"), default="text")
    e.add_argument("--tie-break", choices=("name", "random"), default="name",
                   help="among equally scored nodes pick the smallest name (default) or a seeded random one")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--no-preemption", action="store_true", help="do not run PostFilter's preemption search")
    e.add_argument("--percentage-of-nodes-to-score", type=percentage, metavar="N",
                   help="stop filtering once this share of nodes is feasible, as upstream (0: adaptive); "
                        "default: every node is evaluated")
    executor_argument(e)
    e.set_defaults(run=cmd_eval)

    x = sub.add_parser("explain", help="why a pod is Pending: every failing filter, near misses, what would fit")
    cluster_arguments(x)
    pod_arguments(x)
    x.add_argument("--profile", metavar="PATH|NAME")
    x.add_argument("--config", metavar="PATH")
    x.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text",
                   help="text, or the policylang/explain/v1 document as JSON or YAML")
    x.add_argument("--no-preemption", action="store_true", help="do not run PostFilter's preemption search")
    executor_argument(x)
    x.add_argument("--all", action="store_true", dest="every",
                   help="list every node on its own row, every near miss and every suggestion, and try fixes on "
                        "every near miss (default: nodes that fail alike share a row; the first 5 of each list)")
    x.add_argument("--suggest-infrastructure", action="store_true",
                   help="also suggest uncordoning a node or tolerating a control-plane or node-lifecycle taint")
    x.set_defaults(run=cmd_explain)

    sm = sub.add_parser("simulate", help="schedule a batch of pending pods one by one")
    cluster_arguments(sm)
    sm.add_argument("--pods", "--pod", action="append", required=True, metavar="PATH",
                    help="the pending pods, and workloads to expand into pods (repeatable)")
    sm.add_argument("--profile", metavar="PATH|NAME")
    sm.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    sm.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sm.add_argument("--write-state", metavar="OUT.yaml", help="write the resulting cluster as kubectl-style YAML")
    sm.add_argument("--no-preemption", action="store_true")
    sm.add_argument("--percentage-of-nodes-to-score", type=percentage, metavar="N",
                    help="score only this share of nodes, as upstream (default: the profile's setting, else "
                         "upstream's adaptive default; 100 scores every node)")
    replicas_argument(sm)
    sm.add_argument("--tie-break", choices=("name", "random"), default="name")
    sm.add_argument("--seed", type=int, default=0)
    executor_argument(sm)
    sm.set_defaults(run=cmd_simulate)

    d = sub.add_parser("diff", help="what a policy change does: simulate the same pods under two profiles")
    d.add_argument("--policy", action="append", dest="sides", default=[], metavar="NAME|FILE",
                   type=lambda v: ("policy", v),
                   help="a stdlib profile name, a .sched file with a profile, or a KubeSchedulerConfiguration")
    d.add_argument("--config", action="append", dest="sides", metavar="PATH", type=lambda v: ("config", v),
                   help="a KubeSchedulerConfiguration; --policy and --config together name the two sides, in order")
    cluster_arguments(d)
    d.add_argument("--pods", "--pod", action="append", required=True, metavar="PATH")
    d.add_argument("-o", "--output", choices=("text", "json"), default="text")
    d.add_argument("--no-preemption", action="store_true")
    replicas_argument(d)
    d.set_defaults(run=cmd_diff)

    for verb in (sm, d):
        report_argument(verb)
    for verb in (e, x, sm, d):
        timeout_argument(verb)
        target_arguments(verb)


def cmd_eval(args) -> int:
    from ..report.decisions import Style, eval_json, eval_text
    from ..run.schedule import collector_paused

    engine = engine_for(args, narrowed(args))
    found = engine.pods(args.pod, replicas=args.replicas)
    # One generator of ties for the whole run: the seed gives the run its draws, not each pod.
    ties = random.Random(args.seed) if args.tie_break == "random" else None
    with collector_paused():
        results = [engine.evaluate(target, preemption=not args.no_preemption, as_pending=args.as_pending,
                                   percentage_of_nodes_to_score=args.percentage_of_nodes_to_score, seed=ties,
                                   pods=len(found)) for target in found]
    if args.output == "json":
        print(eval_json(results, engine.target))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(eval_text(results, Style(color)))
    return 0 if all(_placed(r) for r in results) else 1


def _placed(result) -> bool:
    """Exit 0 for a pod scheduled, already bound, finished or left to another scheduler; 1 for one
    unschedulable or gated."""
    from ..pending import Held

    if isinstance(result, Held):
        return not result.gates
    return bool(getattr(result, "decision", result).selected)


def cmd_explain(args) -> int:
    from ..explain import FIX_TRIES
    from ..report.decisions import Style, explain_json, explain_text

    engine = engine_for(args, narrowed(args))
    found = engine.pods(args.pod, replicas=args.replicas)
    progress = progress_bar if sys.stderr.isatty() and args.output == "text" and len(found) > 5 else None
    explanations = []
    for done, target in enumerate(found, 1):
        explanations.append(engine.explain(target, preemption=not args.no_preemption,
                                           infrastructure=args.suggest_infrastructure,
                                           fix_tries=None if args.every else FIX_TRIES, as_pending=args.as_pending,
                                           pods=len(found)))
        if progress:
            progress(done, len(found))
    if progress:
        print(file=sys.stderr)
    if args.output == "json":
        print(explain_json(explanations, engine.target))
    elif args.output == "yaml":
        import json

        import yaml
        print(yaml.safe_dump(json.loads(explain_json(explanations, engine.target)), sort_keys=False, width=120),
              end="")
    else:
        print(explain_text(explanations, Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR")),
                           every=args.every))
    return 0 if all(_placed(e) for e in explanations) else 1


def cmd_simulate(args) -> int:
    from ..cluster.dump import write_state
    from ..forecast.utilisation import utilisation
    from ..report.decisions import Style, simulate_json, simulate_text

    if args.write_state:
        check_state_target(args.write_state, args.cluster or [])
    check_report_target(args)
    engine = engine_for(args)
    state = engine.state
    pods = [p.pod for p in engine.pods(args.pods, replicas=args.replicas)]
    rng = random.Random(args.seed) if args.tie_break == "random" else None
    before = utilisation(state) if args.report else None
    interactive = sys.stderr.isatty() and args.output == "text"
    progress = progress_bar if interactive and len(pods) > 20 else None
    placements = []
    interrupted = False
    try:
        engine.simulate(pods, preemption=not args.no_preemption, seed=rng, progress=progress, into=placements,
                        percentage_of_nodes_to_score=args.percentage_of_nodes_to_score)
    except (KeyboardInterrupt, TimedOut, CostExceeded) as err:
        interrupted = EXIT_INTERRUPTED if isinstance(err, KeyboardInterrupt) else 2
        why = "\ninterrupted" if isinstance(err, KeyboardInterrupt) else f"error: {err}"
        print(f"{why}: showing the pods placed so far"
              + ("; the state was not written" if args.write_state else ""), file=sys.stderr)
    if progress:
        print(file=sys.stderr)
    if args.write_state and not interrupted:
        write_state(state, args.write_state)
    if args.output == "json":
        print(simulate_json(placements, state, engine.target))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(simulate_text(placements, state, Style(color)))
    if not interrupted:
        def page():
            from ..report.html import simulate_page
            return simulate_page(placements, before, utilisation(state))
        write_report(args, page)
    if interrupted:
        return interrupted
    return 0 if all((p.node or p.decision is None) and not p.gates for p in placements) else 1


def cmd_diff(args) -> int:
    from ..config.read import is_configuration
    from ..forecast.diff import changes, diff_json, diff_text
    from ..forecast.utilisation import utilisation
    from ..report.decisions import simulate_summary

    if len(args.sides) != 2:
        raise InputError("name the two sides to compare: --policy and --config, twice in all (before, then after)")
    check_report_target(args)
    runs = []
    live_objects = None     # a live cluster is read once: both sides start from what it read
    for how, policy in args.sides:
        # A KubeSchedulerConfiguration is known by what it holds (YAML or JSON, alone, among other
        # documents or in a ConfigMap), not by its file name.
        is_config = how == "config" or (not policy.endswith(".sched") and Path(policy).is_file()
                                        and is_configuration(policy))
        args.profile, args.config = (None, policy) if is_config else (policy, None)
        engine = engine_for(args) if live_objects is None else _on(live_objects, args)
        if not args.cluster and live_objects is None:
            live_objects = engine.state.objects()
        pods = [p.pod for p in engine.pods(args.pods, replicas=args.replicas)]
        runs.append((engine.simulate(pods, preemption=not args.no_preemption), engine.state))
    (a, state_a), (b, state_b) = runs
    (_, before), (_, after) = args.sides
    found = changes(a, b)
    if args.output == "json":
        print(diff_json(before, after, found, simulate_summary(a), simulate_summary(b)))
    else:
        print(diff_text(before, after, found, simulate_summary(a), simulate_summary(b),
                        utilisation(state_a), utilisation(state_b)))

    def page():
        from ..report.html import diff_page
        return diff_page(before, after, a, b, utilisation(state_a), utilisation(state_b), found)
    write_report(args, page)
    return 0



def _on(objects: list, args):
    """An engine of this side's profiles over a state built from these objects."""
    from ..cluster.state import ClusterState
    from ..engine import Engine

    return Engine(state=ClusterState.build(objects), profile=args.profile, config=args.config,
                  kubernetes_version=args.kubernetes_version, feature_gates=args.feature_gates)

"""The verbs that decide: eval (where would these pods go), explain (why is it Pending),
simulate (a batch, one pod after another) and diff (the same batch under two profiles)."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from .. import load_plans
from ..cost import CostExceeded
from ..diagnostics import InputError
from .common import (check_report_target, check_state_target, claims_made, cluster_arguments, cluster_state,
                     executor_argument, load_cluster, narrowed, percentage, pod_arguments, pods_in, profile_chooser,
                     progress_bar, replicas_argument, report_argument, state_for, target_arguments, target_of,
                     timeout_argument, write_report)
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


def _pods_to_decide(args):
    """What eval and explain read: the version decided for, the profiles' plans, the cluster
    state, the pods named (--pod) and which profile's Executable decides each."""
    from ..pending import targets

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    k8s = target_of(args)
    plans = load_plans(args.profile, args.config, target=k8s)
    state, where, namespace = cluster_state(args, narrowed(args))
    found = targets(args.pod, args.namespace or namespace, state, where, args.replicas)
    profile_for = profile_chooser(plans, every_pod=bool(args.profile), executor=args.executor, state=state,
                                  pods=len(found))
    return k8s, plans, state, found, profile_for


def cmd_eval(args) -> int:
    from ..pending import Held, held
    from ..report import Style, eval_json, eval_text
    from ..run.schedule import Sampling, collector_paused, schedule

    k8s, plans, state, found, profile_for = _pods_to_decide(args)
    rng = random.Random(args.seed) if args.tie_break == "random" else None
    results = []
    with collector_paused():
        for target in found:
            pod = _unless_held(held(target, args.as_pending), profile_for, plans)
            if isinstance(pod, Held):
                results.append(pod)
                continue
            exe = profile_for(pod)
            pod = claims_made(state, pod)
            sampling = (Sampling(args.percentage_of_nodes_to_score)
                        if args.percentage_of_nodes_to_score is not None else None)
            results.append(schedule(exe, state_for(state, pod), pod, rng=rng, preemption=not args.no_preemption,
                                    sampling=sampling))
    if args.output == "json":
        print(eval_json(results, k8s))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(eval_text(results, Style(color)))
    return 0 if all(_placed(r) for r in results) else 1


def _unless_held(pod, profile_for, plans: dict):
    """The pod to schedule, or why it is not scheduled: ``held``'s reasons, or a schedulerName no
    profile has (kube-scheduler leaves such a pod to that scheduler; every verb does the same)."""
    from ..pending import Held

    if isinstance(pod, Held) or profile_for(pod) is not None:
        return pod
    return Held(pod, other_scheduler=pod.spec.scheduler_name, profiles=tuple(sorted(plans)))


def _placed(result) -> bool:
    """Exit 0 for a pod scheduled, already bound, finished or left to another scheduler; 1 for one
    unschedulable or gated."""
    from ..pending import Held

    if isinstance(result, Held):
        return not result.gates
    return bool(getattr(result, "decision", result).selected)


def cmd_explain(args) -> int:
    import attrs

    from ..explain import FIX_TRIES, explain
    from ..pending import Held, held, ungated
    from ..report import Style, explain_json, explain_text

    k8s, plans, state, found, profile_for = _pods_to_decide(args)
    options = {"preemption": not args.no_preemption, "infrastructure": args.suggest_infrastructure,
               "fix_tries": None if args.every else FIX_TRIES}
    progress = progress_bar if sys.stderr.isatty() and args.output == "text" and len(found) > 5 else None
    explanations = []
    for done, target in enumerate(found, 1):
        pod = _unless_held(held(target, args.as_pending), profile_for, plans)
        if isinstance(pod, Held) and pod.gates and profile_for(ungated(pod.pod)) is not None:
            # What removing the gates would do.
            free = ungated(pod.pod)
            pod = attrs.evolve(pod, ungated=explain(profile_for(free), state_for(state, free), free, **options))
        if isinstance(pod, Held):
            explanations.append(pod)
        else:
            pod = claims_made(state, pod)
            explanations.append(explain(profile_for(pod), state_for(state, pod), pod, **options))
        if progress:
            progress(done, len(found))
    if progress:
        print(file=sys.stderr)
    if args.output == "json":
        print(explain_json(explanations, k8s))
    elif args.output == "yaml":
        import json

        import yaml
        print(yaml.safe_dump(json.loads(explain_json(explanations, k8s)), sort_keys=False, width=120), end="")
    else:
        print(explain_text(explanations, Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR")),
                           every=args.every))
    return 0 if all(_placed(e) for e in explanations) else 1


def cmd_simulate(args) -> int:
    from ..cluster.dump import write_state
    from ..report import Style, simulate_json, simulate_text, utilisation
    from ..simulate import simulate

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    if args.write_state:
        check_state_target(args.write_state, args.cluster or [])
    check_report_target(args)
    k8s = target_of(args)
    plans = load_plans(args.profile, args.config, target=k8s)
    # Like kube-scheduler, a pod whose schedulerName has no profile is left alone, unless one
    # profile was named explicitly.
    state, _, _ = cluster_state(args)
    pods = pods_in(args.pods, state, args.replicas)
    profile_for = profile_chooser(plans, every_pod=bool(args.profile), executor=args.executor, state=state,
                                  pods=len(pods))
    rng = random.Random(args.seed) if args.tie_break == "random" else None
    before = utilisation(state) if args.report else None
    interactive = sys.stderr.isatty() and args.output == "text"
    progress = progress_bar if interactive and len(pods) > 20 else None
    placements = []
    interrupted = False
    try:
        placements = simulate(profile_for, state, pods, preemption=not args.no_preemption, rng=rng,
                              progress=progress, into=placements, percentage=args.percentage_of_nodes_to_score)
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
        print(simulate_json(placements, state, k8s))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(simulate_text(placements, state, Style(color)))
    if not interrupted:
        def page():
            from ..html_report import simulate_page
            return simulate_page(placements, before, utilisation(state))
        write_report(args, page)
    if interrupted:
        return interrupted
    return 0 if all((p.node or p.decision is None) and not p.gates for p in placements) else 1


def cmd_diff(args) -> int:
    from ..config import is_configuration
    from ..diff import changes, diff_json, diff_text
    from ..report import simulate_summary, utilisation
    from ..simulate import simulate

    if len(args.sides) != 2:
        raise InputError("name the two sides to compare: --policy and --config, twice in all (before, then after)")
    check_report_target(args)
    from ..cluster.state import ClusterState

    live = None if args.cluster else cluster_state(args)[0]   # read once: both runs start from it
    runs = []
    for how, policy in args.sides:
        # A KubeSchedulerConfiguration is known by what it holds (YAML or JSON, alone, among other
        # documents or in a ConfigMap), not by its file name.
        is_config = how == "config" or (not policy.endswith(".sched") and Path(policy).is_file()
                                        and is_configuration(policy))
        plans = load_plans(None if is_config else policy, policy if is_config else None, target=target_of(args))
        state = load_cluster(args.cluster) if live is None else ClusterState.build(live.objects())
        pods = pods_in(args.pods, state, args.replicas)
        placements = simulate(profile_chooser(plans, every_pod=not is_config), state, pods,
                              preemption=not args.no_preemption)
        runs.append((placements, state))
    (a, state_a), (b, state_b) = runs
    (_, before), (_, after) = args.sides
    found = changes(a, b)
    if args.output == "json":
        print(diff_json(before, after, found, simulate_summary(a), simulate_summary(b)))
    else:
        print(diff_text(before, after, found, simulate_summary(a), simulate_summary(b),
                        utilisation(state_a), utilisation(state_b)))

    def page():
        from ..html_report import diff_page
        return diff_page(before, after, a, b, utilisation(state_a), utilisation(state_b), found)
    write_report(args, page)
    return 0


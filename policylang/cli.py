"""The command line: wiring only. Exit codes: 0 success, 1 unschedulable / findings,
2 usage or input errors, 3 an internal error (a bug in policylang), 130 interrupted."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import random
import sys
import traceback

from . import load_plans
from .cluster.load import load_cluster, load_objects
from .cluster.model import Pod
from .diagnostics import InputError, PolicyError
from .inputs import DEFAULT_MAX_INPUT_SIZE, input_size_limit, read_source
from .program import allowed_roots


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        with allowed_roots(args.allow_root), input_size_limit(args.max_input_size):
            return args.run(args)
    except PolicyError as err:
        print(err.render(), file=sys.stderr)
        return 2
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - the one place a crash becomes exit 3
        return internal_error(err)


EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def internal_error(err: BaseException) -> int:
    """Report an unexpected exception in one line (a traceback with POLICYLANG_TRACEBACK=1)
    and return exit code 3, which CI cannot mistake for a verdict."""
    if os.environ.get("POLICYLANG_TRACEBACK"):
        traceback.print_exception(err, file=sys.stderr)
    message = " ".join(str(err).split())[:500]
    print(f"error: internal error (a bug in policylang): {type(err).__name__}: {message}; "
          f"please report it with the command and inputs (POLICYLANG_TRACEBACK=1 shows the traceback)",
          file=sys.stderr)
    return EXIT_INTERNAL


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="policylang", description="Policy-as-code for Kubernetes scheduling.")
    sub = p.add_subparsers(dest="command")

    e = sub.add_parser("eval", help="where would these pods go, and why not elsewhere")
    _cluster_arguments(e)
    _pod_arguments(e)
    e.add_argument("--profile", metavar="PATH|NAME", help="a .sched file with a profile, or a stdlib profile name "
                                                          "(default: the stdlib default-scheduler profile)")
    e.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): "
                                                    "its profiles, by schedulerName")
    e.add_argument("-o", "--output", choices=("text", "json"), default="text")
    e.add_argument("--tie-break", choices=("name", "random"), default="name",
                   help="among equally scored nodes pick the smallest name (default) or a seeded random one")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--no-preemption", action="store_true", help="do not run PostFilter's preemption search")
    e.add_argument("--percentage-of-nodes-to-score", type=int, metavar="N",
                   help="stop filtering once this share of nodes is feasible, as upstream (0: adaptive); "
                        "default: every node is evaluated")
    e.add_argument("--executor", choices=("vector", "reference"), default="vector",
                   help="how Filter and Score run: over every node at once (vector, the default) or node by node "
                        "(reference, the interpreter the vector executor is tested against)")
    e.set_defaults(run=cmd_eval)

    x = sub.add_parser("explain", help="why a pod is Pending: every failing filter, near misses, what would fit")
    _cluster_arguments(x)
    _pod_arguments(x)
    x.add_argument("--profile", metavar="PATH|NAME")
    x.add_argument("--config", metavar="PATH")
    x.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text",
                   help="text, or the policylang/explain/v1 document as JSON or YAML")
    x.set_defaults(run=cmd_explain)

    sm = sub.add_parser("simulate", help="schedule a batch of pending pods one by one")
    _cluster_arguments(sm)
    sm.add_argument("--pods", action="append", required=True, metavar="PATH", help="the pending pods (repeatable)")
    sm.add_argument("--profile", metavar="PATH|NAME")
    sm.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    sm.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sm.add_argument("--write-state", metavar="OUT.yaml", help="write the resulting cluster as kubectl-style YAML")
    sm.add_argument("--no-preemption", action="store_true")
    sm.add_argument("--percentage-of-nodes-to-score", type=int, metavar="N",
                    help="score only this share of nodes, as upstream (default: the profile's setting, else "
                         "upstream's adaptive default; 100 scores every node)")
    sm.add_argument("--replicas", type=int, metavar="N",
                    help="expand Deployments, StatefulSets, ReplicaSets and Jobs in --pods into N pods each "
                         "(default: their own replica count)")
    sm.add_argument("--tie-break", choices=("name", "random"), default="name")
    sm.add_argument("--seed", type=int, default=0)
    sm.add_argument("--executor", choices=("vector", "reference"), default="vector",
                    help="how Filter and Score run: over every node at once (vector, the default) or node by node "
                         "(reference, the interpreter the vector executor is tested against)")
    sm.set_defaults(run=cmd_simulate)

    d = sub.add_parser("diff", help="what a policy change does: simulate the same pods under two profiles")
    d.add_argument("--policy", action="append", required=True, metavar="NAME|FILE",
                   help="twice: a stdlib profile name, a .sched file with a profile, or a KubeSchedulerConfiguration")
    _cluster_arguments(d)
    d.add_argument("--pods", action="append", required=True, metavar="PATH")
    d.add_argument("-o", "--output", choices=("text", "json"), default="text")
    d.add_argument("--no-preemption", action="store_true")
    d.set_defaults(run=cmd_diff)

    sn = sub.add_parser("snapshot", help="write a live cluster's state (or a dump's) as a dump every verb reads")
    _cluster_arguments(sn)
    sn.add_argument("out", nargs="?", default="-", metavar="FILE",
                    help="where to write it (default: standard output); .json is JSON, anything else YAML")
    sn.add_argument("-n", "--namespace", help="read pending pods from this namespace only (bound pods always "
                                              "from all)")
    sn.add_argument("-o", "--output", choices=("yaml", "json"), help="the format (default: by FILE's extension)")
    sn.add_argument("--redact", action="store_true",
                    help="replace names, namespaces, label values and images by stand-ins (the same original, "
                         "the same stand-in, in the same order), for sharing in a bug report")
    sn.set_defaults(run=cmd_snapshot)

    ex = sub.add_parser("export", help="write the KubeSchedulerConfiguration (and webhook config) that runs a profile "
                                       "in a cluster, with `policylang serve` as its extender")
    ex.add_argument("profile", nargs="?", metavar="PATH|NAME")
    ex.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    ex.add_argument("-o", "--output", default="-", metavar="FILE",
                    help="where to write the KubeSchedulerConfiguration (default: standard output)")
    ex.add_argument("--webhook-output", metavar="FILE",
                    help="where to write the MutatingWebhookConfiguration of the profile's rules")
    ex.add_argument("--url", default=None, metavar="URL",
                    help="where kube-scheduler and the API server reach `policylang serve` "
                         "(default: https://policylang.policylang-system.svc:8443)")
    ex.add_argument("--ca-bundle", metavar="PEM",
                    help="the CA that signed serve's certificate (the extender's tlsConfig.caData, the webhook's "
                         "caBundle)")
    ex.add_argument("--managed-resource", action="append", default=[], metavar="NAME",
                    help="send only pods requesting this extended resource to the extender (repeatable; default: "
                         "every pod, which a filter such as GPU isolation needs)")
    ex.add_argument("--scheduler-kubeconfig", metavar="PATH",
                    help="the kubeconfig kube-scheduler connects with (clientConnection.kubeconfig; default: "
                         "in-cluster)")
    ex.add_argument("--ignorable", action="store_true",
                    help="schedule without the extender when it cannot be reached (default: the pod waits)")
    ex.set_defaults(run=cmd_export)

    sv = sub.add_parser("serve", help="serve a profile's team policies as kube-scheduler's extender and its rules as "
                                      "an admission webhook")
    sv.add_argument("--profile", metavar="PATH|NAME")
    sv.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    _cluster_arguments(sv)
    sv.add_argument("--address", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    sv.add_argument("--port", type=int, default=8443, help="the port (default: 8443)")
    sv.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate (and --tls-key)")
    sv.add_argument("--tls-key", metavar="PEM")
    sv.add_argument("--client-ca", metavar="PEM", help="require client certificates signed by this CA")
    sv.add_argument("--max-request-size", type=_size, default=32 * 2**20, metavar="BYTES",
                    help="refuse larger request bodies with 413 (default 32M)")
    sv.add_argument("--decision-log", metavar="FILE", help="append one JSON line per decision to FILE")
    sv.add_argument("--reload-interval", type=float, default=2.0, metavar="SECONDS",
                    help="how often to look for a changed policy or dump (default 2; 0: never)")
    sv.add_argument("--executor", choices=("vector", "reference"), default="vector")
    sv.set_defaults(run=cmd_serve)

    pl = sub.add_parser("plan", help="print the evaluation plan of a profile")
    pl.add_argument("profile", nargs="?", metavar="PATH|NAME")
    pl.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    pl.add_argument("--source", action="store_true", help="with --config: print the generated .sched source")
    pl.add_argument("--vector", action="store_true",
                    help="under each step, what the vector executor's passes decided about it (kept per node, "
                         "keyed by what, run as a batch)")
    pl.set_defaults(run=cmd_plan)

    f = sub.add_parser("fmt", help="rewrite .sched files in the canonical layout")
    f.add_argument("paths", nargs="+", help="files or directories")
    mode = f.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    mode.add_argument("--diff", action="store_true", help="print the changes as a unified diff; change nothing")
    f.set_defaults(run=cmd_fmt)

    t = sub.add_parser("test", help="run policy unit tests (*_test.yaml)")
    t.add_argument("paths", nargs="+", help="test files or directories")
    t.add_argument("--format", choices=("text", "junit"), default="text")
    t.add_argument("--coverage", action="store_true", help="show reject statements and scores no test exercised")
    t.set_defaults(run=cmd_test)

    c = sub.add_parser("check", help="parse and type-check .sched files")
    c.add_argument("paths", nargs="+")
    c.set_defaults(run=cmd_check)

    from .lint.command import add_arguments as lint_arguments
    li = sub.add_parser("lint", help="lint .sched policies, scheduler configs and workload manifests")
    lint_arguments(li)
    li.set_defaults(run=cmd_lint)
    for command in sub.choices.values():
        _input_arguments(command)
    return p


def _pod_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pod", action="append", metavar="PATH|NAMESPACE/NAME",
                   help="the pod(s) to place: a file or directory, or a pod of the --cluster dump by "
                        "NAMESPACE/NAME or NAME (with -n); repeatable (default: every pending pod of the dump)")
    p.add_argument("-n", "--namespace",
                   help="the namespace of a --pod NAME (default: default; from a live cluster, the context's); "
                        "from a live cluster it also narrows the pending pods read to this namespace")
    p.add_argument("--as-pending", action="store_true",
                   help="a pod of the dump already bound (or finished): where would it go if it were pending "
                        "(evaluated without itself on its node)")


def _cluster_arguments(p: argparse.ArgumentParser) -> None:
    """Where the cluster state comes from: dump files, or a live cluster read-only (README: From a
    live cluster)."""
    g = p.add_argument_group("cluster state: a dump, or a live cluster (read-only)")
    g.add_argument("--cluster", action="append", metavar="PATH",
                   help="Nodes and Pods as kubectl prints them (file or directory; repeatable)")
    g.add_argument("--kubeconfig", metavar="PATH",
                   help="read a live cluster through this kubeconfig (only GET requests are sent)")
    g.add_argument("--context", metavar="NAME",
                   help="read a live cluster through this context of the kubeconfig (--kubeconfig, else "
                        "KUBECONFIG, else ~/.kube/config); --context '' is its current context")
    g.add_argument("--in-cluster", action="store_true",
                   help="read the live cluster this pod runs in, with its service account")


def _live(args) -> bool:
    return bool(getattr(args, "kubeconfig", None) or getattr(args, "context", None) is not None
                or getattr(args, "in_cluster", False))


def _cluster_state(args, narrow: "str | None" = None):
    """The state to decide in, what to call it in messages, and the namespace a bare pod name is
    in: from --cluster's dumps, or from a live cluster (``narrow``: the only namespace whose
    pending pods are read)."""
    if args.cluster and _live(args):
        raise InputError("give --cluster or a live cluster (--kubeconfig, --context, --in-cluster), not both")
    if args.cluster:
        return load_cluster(args.cluster), args.cluster, "default"
    if not _live(args):
        raise InputError("give --cluster PATH, or read a live cluster with --kubeconfig PATH, --context NAME "
                         "or --in-cluster")
    from .cluster.live import ClusterSource, load_live

    progress = _read_progress if sys.stderr.isatty() else None
    try:
        state, namespace, read = load_live(ClusterSource(args.kubeconfig, args.context or None, args.in_cluster),
                                           namespace=narrow, progress=progress)
    finally:
        if progress:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)
    return state, [read.host], namespace


def _read_progress(kind: str, number: int, total: int, count: int) -> None:
    width = 20
    filled = width * (number - 1) // total
    print(f"\r\x1b[K[{'#' * filled}{'.' * (width - filled)}] reading {kind}s ({number}/{total} kinds), "
          f"{count} listed", end="", file=sys.stderr, flush=True)


def _narrowed(args) -> "str | None":
    """-n narrows a live read to one namespace's pending pods, unless a --pod names another."""
    if not args.namespace or any("/" in p or os.path.exists(p) for p in args.pod or ()):
        return None
    return args.namespace


def _input_arguments(p: argparse.ArgumentParser) -> None:
    """What every command may read: the limits on untrusted input (README: Exit codes, limits)."""
    p.add_argument("--allow-root", action="append", default=[], metavar="DIR",
                   help="let imports, uses and test files' profiles reach files under DIR too (repeatable; "
                        "default: only the policy's own directory and the stdlib)")
    p.add_argument("--max-input-size", type=_size, metavar="BYTES",
                   help=f"read input files up to this size (suffixes K, M, G; default "
                        f"{DEFAULT_MAX_INPUT_SIZE // 2**20}M)")


def _size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    number, unit = (text[:-1], units[text[-1].upper()]) if text[-1:].upper() in units else (text, 1)
    if not number.isdigit() or int(number) == 0 or len(number) > 15:
        raise argparse.ArgumentTypeError(f"expected a positive size such as 512M, got {text!r}")
    return int(number) * unit


def _pods(paths: list[str], state=None, replicas: int | None = None) -> list[Pod]:
    """The pods in ``paths``; given a state, workloads there are expanded into their pods too,
    and their controllers added to the state."""
    from .cluster.workloads import expand_workloads

    pods = [obj for path in paths for obj in load_objects(path, kinds=["Pod"])]
    if state is not None:
        for path in paths:
            expanded, owners = expand_workloads(path, replicas)
            pods += expanded
            state.workloads.extend(owners)
    if not pods:
        raise InputError("no Pod found", path=", ".join(paths))
    return pods


def _state_for(state, pod: Pod):
    """The state to place ``pod`` in: without its own copy, when the dump holds the same pod
    (bound or nominated, it would count against itself)."""
    if any(p.key == pod.key for p in state.pods):
        return state.without([pod])
    return state


def cmd_eval(args) -> int:
    from .pending import Held, held, targets
    from .report import Style, eval_json, eval_text
    from .run.schedule import Sampling, collector_paused, schedule

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    plans = load_plans(args.profile, args.config)
    state, where, namespace = _cluster_state(args, _narrowed(args))
    found = targets(args.pod, args.namespace or namespace, state, where)
    profile_for = _profile_chooser(plans, every_pod=not args.config, executor=args.executor)
    rng = random.Random(args.seed) if args.tie_break == "random" else None
    results = []
    with collector_paused():
        for target in found:
            pod = held(target, args.as_pending)
            if isinstance(pod, Held):
                results.append(pod)
                continue
            exe = _required_profile(profile_for, pod, plans)
            sampling = (Sampling(args.percentage_of_nodes_to_score)
                        if args.percentage_of_nodes_to_score is not None else None)
            results.append(schedule(exe, _state_for(state, pod), pod, rng=rng, preemption=not args.no_preemption,
                                    sampling=sampling))
    if args.output == "json":
        print(eval_json(results))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(eval_text(results, Style(color)))
    return 0 if all(_placed(r) for r in results) else 1


def _placed(result) -> bool:
    """Exit 0 for a pod scheduled, already bound or finished; 1 for one unschedulable or gated."""
    from .pending import Held

    if isinstance(result, Held):
        return not result.gates
    return bool(getattr(result, "decision", result).selected)


def cmd_explain(args) -> int:
    import attrs

    from .explain import explain
    from .pending import Held, held, targets, ungated
    from .report import Style, explain_json, explain_text

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    plans = load_plans(args.profile, args.config)
    profile_for = _profile_chooser(plans, every_pod=not args.config)
    state, where, namespace = _cluster_state(args, _narrowed(args))
    explanations = []
    for target in targets(args.pod, args.namespace or namespace, state, where):
        pod = held(target, args.as_pending)
        if isinstance(pod, Held) and pod.gates:
            # What removing the gates would do.
            free = ungated(pod.pod)
            pod = attrs.evolve(pod, ungated=explain(_required_profile(profile_for, free, plans),
                                                    _state_for(state, free), free))
        if isinstance(pod, Held):
            explanations.append(pod)
            continue
        explanations.append(explain(_required_profile(profile_for, pod, plans), _state_for(state, pod), pod))
    if args.output == "json":
        print(explain_json(explanations))
    elif args.output == "yaml":
        import json

        import yaml
        print(yaml.safe_dump(json.loads(explain_json(explanations)), sort_keys=False, width=120), end="")
    else:
        print(explain_text(explanations, Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR"))))
    return 0 if all(_placed(e) for e in explanations) else 1


def cmd_simulate(args) -> int:
    from .cluster.dump import write_state
    from .report import Style, simulate_json, simulate_text
    from .simulate import simulate

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    if args.write_state:
        _check_state_target(args.write_state, args.cluster or [])
    plans = load_plans(args.profile, args.config)
    # Like kube-scheduler, a pod whose schedulerName has no profile is left alone, unless one
    # profile was named explicitly.
    profile_for = _profile_chooser(plans, every_pod=bool(args.profile), executor=args.executor)
    state, _, _ = _cluster_state(args)
    pods = _pods(args.pods, state, args.replicas)
    rng = random.Random(args.seed) if args.tie_break == "random" else None
    interactive = sys.stderr.isatty() and args.output == "text"
    progress = _progress_bar if interactive and len(pods) > 20 else None
    placements = []
    interrupted = False
    try:
        placements = simulate(profile_for, state, pods, preemption=not args.no_preemption, rng=rng,
                              progress=progress, into=placements, percentage=args.percentage_of_nodes_to_score)
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: showing the pods placed so far"
              + ("; the state was not written" if args.write_state else ""), file=sys.stderr)
    if progress:
        print(file=sys.stderr)
    if args.write_state and not interrupted:
        write_state(state, args.write_state)
    if args.output == "json":
        print(simulate_json(placements, state))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(simulate_text(placements, state, Style(color)))
    if interrupted:
        return EXIT_INTERRUPTED
    return 0 if all((p.node or p.decision is None) and not p.gates for p in placements) else 1


def _check_state_target(out: str, clusters: list[str]) -> None:
    """Before any work: --write-state can be written, and is none of the --cluster inputs (the
    state written models only what scheduling reads, so it would drop the rest of that file)."""
    from .write import writable_target

    target = writable_target(out)
    for path in clusters:
        real = Path(os.path.realpath(path))
        if real == target or (real.is_dir() and real in target.parents):
            raise InputError("refusing to write the state over a --cluster input: it would drop every object and "
                             "field the simulation does not model; write it to another file", path=out)


def cmd_diff(args) -> int:
    from .diff import changes, diff_json, diff_text
    from .report import simulate_summary, utilisation
    from .simulate import simulate

    if len(args.policy) != 2:
        raise InputError("give --policy exactly twice: the policy before and after")
    from .cluster.state import ClusterState

    pods = _pods(args.pods)
    live = None if args.cluster else _cluster_state(args)[0]   # read once: both runs start from it
    runs = []
    for policy in args.policy:
        is_config = policy.endswith((".yaml", ".yml"))
        plans = load_plans(None if is_config else policy, policy if is_config else None)
        state = load_cluster(args.cluster) if live is None else ClusterState.build(live.objects())
        placements = simulate(_profile_chooser(plans, every_pod=not is_config), state, pods,
                              preemption=not args.no_preemption)
        runs.append((placements, state))
    (a, state_a), (b, state_b) = runs
    found = changes(a, b)
    if args.output == "json":
        print(diff_json(args.policy[0], args.policy[1], found, simulate_summary(a), simulate_summary(b)))
    else:
        print(diff_text(args.policy[0], args.policy[1], found, simulate_summary(a), simulate_summary(b),
                        utilisation(state_a), utilisation(state_b)))
    return 0


def cmd_snapshot(args) -> int:
    import json

    import yaml

    from .cluster.dump import dump_state
    from .write import write_atomic

    to_stdout = args.out == "-"
    if not to_stdout:
        _check_state_target(args.out, args.cluster or [])
    state, _, _ = _cluster_state(args, args.namespace)
    doc = dump_state(state)
    if args.redact:
        from .cluster.redact import redact
        doc = redact(doc)
    as_json = args.output == "json" or (args.output is None and args.out.endswith(".json"))
    text = json.dumps(doc, indent=2) + "\n" if as_json else yaml.safe_dump(doc, sort_keys=False, width=120)
    if to_stdout:
        sys.stdout.write(text)
    else:
        write_atomic(args.out, text)
    return 0


def _profile_chooser(plans: dict, every_pod: bool, executor: str = "vector"):
    """Which profile schedules a pod: the only one, when ``every_pod`` and there is just one;
    otherwise the one named by the pod's spec.schedulerName (or None)."""
    from .run.schedule import Executable

    executables = {name: Executable(plan, executor) for name, plan in plans.items()}
    if every_pod and len(executables) == 1:
        only = next(iter(executables.values()))
        return lambda pod: only
    return lambda pod: executables.get(pod.spec.scheduler_name)


def _required_profile(profile_for, pod: Pod, plans: dict):
    exe = profile_for(pod)
    if exe is None:
        raise InputError(f"no profile for schedulerName '{pod.spec.scheduler_name}' "
                         f"(profiles: {', '.join(sorted(plans))})", obj=f"Pod {pod.key}")
    return exe


def _progress_bar(done: int, total: int) -> None:
    width = 40
    filled = width * done // total
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} pods", end="", file=sys.stderr, flush=True)


def cmd_export(args) -> int:
    from .export import DEFAULT_URL, export, to_yaml
    from .inputs import read_text
    from .write import writable_target, write_atomic

    if args.config and args.profile:
        raise InputError("give a profile or --config, not both")
    for path in (args.output, args.webhook_output):
        if path not in (None, "-"):
            writable_target(path)
    ca = read_text(args.ca_bundle).encode() if args.ca_bundle else None
    result = export(load_plans(args.profile, args.config), args.url or DEFAULT_URL, ca,
                    tuple(args.managed_resource), args.ignorable)
    config = result.scheduler_config
    if args.scheduler_kubeconfig:
        config = {**config, "clientConnection": {"kubeconfig": os.path.abspath(args.scheduler_kubeconfig)}}
    text = to_yaml(config)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_atomic(args.output, text)
    if result.webhook_config is not None:
        hook = to_yaml(result.webhook_config)
        if args.webhook_output in (None, "-"):
            if args.output == "-":
                sys.stdout.write("---\n")
            sys.stdout.write(hook)
        else:
            write_atomic(args.webhook_output, hook)
    elif args.webhook_output:
        print("note: the profile has no rules, so no webhook configuration was written", file=sys.stderr)
    return 0


def cmd_serve(args) -> int:
    try:
        from .serve import Listen, Options, run
    except ImportError as err:     # the `serve` extra is not installed
        raise InputError(f"policylang serve needs starlette, uvicorn and prometheus_client "
                         f"(pip install 'policylang[serve]'): {err}") from None
    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    if args.cluster and _live(args):
        raise InputError("give --cluster or a live cluster (--kubeconfig, --context, --in-cluster), not both")
    if not args.cluster and not _live(args):
        raise InputError("give --cluster PATH, or a live cluster with --kubeconfig PATH, --context NAME or --in-cluster")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise InputError("--tls-cert and --tls-key go together")
    if args.client_ca and not args.tls_cert:
        raise InputError("--client-ca needs --tls-cert and --tls-key")
    for path in (args.tls_cert, args.tls_key, args.client_ca):
        if path and not os.path.isfile(path):
            raise InputError("no such file", path=path)
    options = Options(profile=args.profile, config=args.config, cluster=tuple(args.cluster or ()),
                      kubeconfig=args.kubeconfig, context=args.context or None, in_cluster=args.in_cluster,
                      executor=args.executor, max_request_bytes=args.max_request_size,
                      decision_log=args.decision_log, reload_interval=args.reload_interval)
    return run(options, Listen(args.address, args.port, args.tls_cert, args.tls_key, args.client_ca))


def cmd_plan(args) -> int:
    from .plan_text import plan_text

    if args.source:
        from .config import config_source
        if not args.config:
            raise InputError("--source goes with --config")
        print(config_source(args.config), end="")
        return 0
    notes = None
    if args.vector:
        from .run.vector.passes import describe as notes
    for plan in load_plans(args.profile, args.config).values():
        print(plan_text(plan, notes))
    return 0


def sched_files(paths: list[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(p.rglob("*.sched"))
        elif p.exists():
            out.append(p)
        else:
            raise InputError("no such file or directory", path=str(p))
    return out


def cmd_fmt(args) -> int:
    import difflib

    from .format import format_source
    from .write import write_atomic

    changed, broken = [], False
    for path in sched_files(args.paths):
        try:
            text, newline = read_source(path)
        except InputError as err:
            print(f"error: {err}", file=sys.stderr)
            broken = True
            continue
        try:
            formatted = format_source(text, str(path))
        except PolicyError as err:  # never rewrite what does not parse
            print(err.render(), file=sys.stderr)
            broken = True
            continue
        if formatted == text:
            continue
        changed.append(path)
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), formatted.splitlines(True),
                                                       f"{path}", f"{path} (formatted)"))
        elif args.check:
            print(f"would reformat {path}")
        else:
            try:
                write_atomic(path, formatted, newline)
            except InputError as err:
                print(f"error: {err}", file=sys.stderr)
                broken = True
                continue
            print(f"reformatted {path}")
    if broken:
        return 2
    return 1 if changed and (args.check or args.diff) else 0


def cmd_test(args) -> int:
    from .tester import Coverage, discover, junit, run_file

    coverage = Coverage() if args.coverage else None
    outcomes = [o for path in discover(args.paths) for o in run_file(path, coverage)]
    if args.format == "junit":
        print(junit(outcomes))
    else:
        for o in outcomes:
            if o.passed:
                continue
            print(f"FAIL {o.file}: {o.name}")
            for what, expected, actual in o.failures:
                print(f"  {what}:\n    - expected: {expected!r}\n    + actual:   {actual!r}")
        if coverage is not None:
            missed = [f"{os.path.relpath(o.path)}:{o.line}:{o.column}" for o, hit in coverage.rejects.items() if not hit]
            unscored = [p for p, hit in coverage.scores.items() if not hit]
            total = len(coverage.rejects) + len(coverage.scores)
            hit = total - len(missed) - len(unscored)
            print(f"coverage: {hit}/{total} reject statements and scores exercised")
            for m in missed:
                print(f"  never rejected: {m}")
            for p in unscored:
                print(f"  never scored: {p}")
        failed = sum(1 for o in outcomes if not o.passed)
        print(f"{len(outcomes) - failed} passed, {failed} failed")
    return 1 if any(not o.passed for o in outcomes) else 0


def cmd_check(args) -> int:
    from .check import check
    from .program import load_program

    failed = False
    for path in sched_files(args.paths):
        try:
            check(load_program(path))
        except PolicyError as err:
            print(err.render(), file=sys.stderr)
            failed = True
    return 2 if failed else 0


def cmd_lint(args) -> int:
    from .lint.command import run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

"""The command line: wiring only. Exit codes: 0 success, 1 unschedulable / findings,
2 usage or input errors, 3 an internal error (a bug in policylang), 130 interrupted."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
import random
import sys
import traceback

from typing import TYPE_CHECKING

from . import load_plans
from .cost import DEFAULT_MAX_COST, CostExceeded, max_cost
from .diagnostics import InputError, PolicyError
from .inputs import DEFAULT_MAX_INPUT_SIZE, input_size_limit, read_source, stdin_unread
from .roots import allowed_roots

if TYPE_CHECKING:
    from .cluster.model import Pod


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        with allowed_roots(args.allow_root), input_size_limit(args.max_input_size), stdin_unread(), \
                _quiet_when_pipe_closes(), deep_recursion(), max_cost(args.max_cost), \
                _time_limit(getattr(args, "timeout", None)):
            return args.run(args)
    except PolicyError as err:
        print(err.render(), file=sys.stderr)
        return 2
    except InputError as err:
        print(err.render(), file=sys.stderr)
        return 2
    except (CostExceeded, TimedOut) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - the one place a crash becomes exit 3
        return internal_error(err)


EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


class TimedOut(BaseException):
    """--timeout passed. A BaseException, as KeyboardInterrupt is, so that no `except
    Exception` on the way up mistakes it for a policy's or an input's error."""

    def __init__(self, seconds: float):
        super().__init__(f"the command ran past its --timeout of {seconds:g}s")


@contextlib.contextmanager
def _time_limit(seconds: "float | None"):
    """Raise TimedOut in the main thread once ``seconds`` of wall-clock time have passed."""
    import signal
    import threading

    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise TimedOut(seconds)
    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


# Python frames the stages may stack: a policy nested parse.MAX_NESTING levels deep takes a
# few frames per level in each recursive stage (check, compile, the executors' closures).
RECURSION_LIMIT = 20_000


@contextlib.contextmanager
def deep_recursion():
    """Raise the recursion limit for the command (Python 3.11 runs nested Python calls without
    growing the C stack, so this costs nothing until a policy nests deeply)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


@contextlib.contextmanager
def _quiet_when_pipe_closes():
    """A reader that stops early (``| head``) closes the pipe: the rest of the output is dropped
    and the command still ends with the exit code its result deserves."""
    real = sys.stdout
    sys.stdout = _DropAfterClose(real)
    try:
        yield
    finally:
        sys.stdout = real


class _DropAfterClose:
    def __init__(self, stream) -> None:
        self._stream, self._closed = stream, False

    def write(self, text: str) -> int:
        self._guarded(self._stream.write, text)
        return len(text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call, *args) -> None:
        if self._closed:
            return
        try:
            call(*args)
        except BrokenPipeError:
            self._closed = True
            # The interpreter flushes stdout once more at exit: point it at nothing, so that
            # this flush does not fail too.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name):
        return getattr(self._stream, name)


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
    p.add_argument("--version", action="version", version=f"policylang {_version()}")
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
    e.add_argument("--percentage-of-nodes-to-score", type=_percentage, metavar="N",
                   help="stop filtering once this share of nodes is feasible, as upstream (0: adaptive); "
                        "default: every node is evaluated")
    _executor_argument(e)
    e.set_defaults(run=cmd_eval)

    x = sub.add_parser("explain", help="why a pod is Pending: every failing filter, near misses, what would fit")
    _cluster_arguments(x)
    _pod_arguments(x)
    x.add_argument("--profile", metavar="PATH|NAME")
    x.add_argument("--config", metavar="PATH")
    x.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text",
                   help="text, or the policylang/explain/v1 document as JSON or YAML")
    x.add_argument("--no-preemption", action="store_true", help="do not run PostFilter's preemption search")
    _executor_argument(x)
    x.add_argument("--all", action="store_true", dest="every",
                   help="list every node on its own row, every near miss and every suggestion, and try fixes on "
                        "every near miss (default: nodes that fail alike share a row; the first 5 of each list)")
    x.add_argument("--suggest-infrastructure", action="store_true",
                   help="also suggest uncordoning a node or tolerating a control-plane or node-lifecycle taint")
    x.set_defaults(run=cmd_explain)

    sm = sub.add_parser("simulate", help="schedule a batch of pending pods one by one")
    _cluster_arguments(sm)
    sm.add_argument("--pods", "--pod", action="append", required=True, metavar="PATH",
                    help="the pending pods, and workloads to expand into pods (repeatable)")
    sm.add_argument("--profile", metavar="PATH|NAME")
    sm.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    sm.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sm.add_argument("--write-state", metavar="OUT.yaml", help="write the resulting cluster as kubectl-style YAML")
    sm.add_argument("--no-preemption", action="store_true")
    sm.add_argument("--percentage-of-nodes-to-score", type=_percentage, metavar="N",
                    help="score only this share of nodes, as upstream (default: the profile's setting, else "
                         "upstream's adaptive default; 100 scores every node)")
    _replicas_argument(sm)
    sm.add_argument("--tie-break", choices=("name", "random"), default="name")
    sm.add_argument("--seed", type=int, default=0)
    _executor_argument(sm)
    sm.set_defaults(run=cmd_simulate)

    d = sub.add_parser("diff", help="what a policy change does: simulate the same pods under two profiles")
    d.add_argument("--policy", action="append", dest="sides", default=[], metavar="NAME|FILE",
                   type=lambda v: ("policy", v),
                   help="a stdlib profile name, a .sched file with a profile, or a KubeSchedulerConfiguration")
    d.add_argument("--config", action="append", dest="sides", metavar="PATH", type=lambda v: ("config", v),
                   help="a KubeSchedulerConfiguration; --policy and --config together name the two sides, in order")
    _cluster_arguments(d)
    d.add_argument("--pods", "--pod", action="append", required=True, metavar="PATH")
    d.add_argument("-o", "--output", choices=("text", "json"), default="text")
    d.add_argument("--no-preemption", action="store_true")
    _replicas_argument(d)
    d.set_defaults(run=cmd_diff)

    w = sub.add_parser("whatif", help="what if we cordon or drain a node, taint it, lose a node or zone, add nodes")
    w.add_argument("--cluster", action="append", required=True, metavar="PATH")
    w.add_argument("--event", action="append", required=True, metavar="EVENT",
                   help="in order, repeatable: 'cordon NODE', 'drain NODE', 'taint NODE key=value:NoExecute', "
                        "'remove NODE', 'remove zone=ZONE', 'add N nodes like NODE|FILE'")
    w.add_argument("--profile", metavar="PATH|NAME")
    w.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    w.add_argument("-o", "--output", choices=("text", "json"), default="text")
    w.add_argument("--no-preemption", action="store_true")
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
    ca.set_defaults(run=cmd_capacity)

    for verb in (sm, d, w, ca):
        verb.add_argument("--report", metavar="FILE.html",
                          help="also write a self-contained HTML report with charts (no network needed to view it)")

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
    ls = sub.add_parser("lsp", help="the language server, over stdio (for editors: see README, Editors)")
    ls.add_argument("--stdio", action="store_true", help="talk over stdin and stdout (the default and only way)")
    ls.set_defaults(run=cmd_lsp)
    for command in sub.choices.values():
        _input_arguments(command)
    for name in ("eval", "explain", "simulate", "diff"):
        sub.choices[name].add_argument(
            "--timeout", type=_seconds, metavar="SECONDS",
            help="stop after this many seconds of wall-clock time (exit 2; simulate shows the pods placed so far)")
    return p


def _pod_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pod", "--pods", action="append", metavar="PATH|NAMESPACE/NAME",
                   help="the pod(s) to place: a file or directory (- for standard input) of pods or workloads, or a "
                        "pod of the --cluster dump by NAMESPACE/NAME or NAME (with -n); repeatable (default: every "
                        "pending pod of the dump)")
    _replicas_argument(p)
    p.add_argument("-n", "--namespace",
                   help="the namespace of a --pod NAME (default: default; from a live cluster, the context's); "
                        "from a live cluster it also narrows the pending pods read to this namespace")
    p.add_argument("--as-pending", action="store_true",
                   help="a pod of the dump already bound (or finished): where would it go if it were pending "
                        "(evaluated without itself on its node)")


def _replicas_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--replicas", type=int, metavar="N",
                   help="expand Deployments, ReplicaSets, StatefulSets, Jobs, CronJobs and DaemonSets among the pods "
                        "into N pods each (default: their own replica count)")


def _executor_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=("vector", "reference"), default="vector",
                   help="how Filter and Score run: over every node at once (vector, the default) or node by node "
                        "(reference, the interpreter the vector executor is tested against)")


def _percentage(text: str) -> int:
    """--percentage-of-nodes-to-score, refused outside 0..100 as kube-scheduler's configuration
    validation refuses it (pkg/scheduler/apis/config/validation/validation.go)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 100, got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"Invalid value: {value}: not in valid range [0-100]")
    return value


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("policylang")
    except PackageNotFoundError:
        return "(not installed)"


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
    p.add_argument("--max-cost", type=_count, metavar="N",
                   help=f"let each pod's evaluation take up to N steps (items comprehensions and folds go "
                        f"through, numbers range makes; default {DEFAULT_MAX_COST:,})")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 10**7:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) == 0 or len(text) > 18:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def _size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    number, unit = (text[:-1], units[text[-1].upper()]) if text[-1:].upper() in units else (text, 1)
    if not number.isdigit() or int(number) == 0 or len(number) > 15:
        raise argparse.ArgumentTypeError(f"expected a positive size such as 512M, got {text!r}")
    return int(number) * unit


def state_for(state, pod):
    """pending.state_for, imported on first call (pending imports the cluster state, numpy)."""
    from .pending import state_for as of
    return of(state, pod)


def claims_made(state, pod):
    """The pod once the resourceclaim controller has made the claims of its templates (into the
    state), as it does before kube-scheduler sees the pod (cluster/resourceclaims.py)."""
    if not pod.spec.resource_claims:
        return pod
    from .cluster.resourceclaims import instantiate
    return instantiate(state, pod)


def load_cluster(paths: list[str]):
    """cluster.load's load_cluster, imported on first call: cattrs and numpy are for the
    commands that read a cluster, not for `fmt` or `check`."""
    from .cluster.load import load_cluster as load
    return load(paths)


def load_objects(path: str, kinds: list[str]):
    """cluster.load's load_objects, imported on first call (as load_cluster)."""
    from .cluster.load import load_objects as load
    return load(path, kinds)


def _pods(paths: list[str], state, replicas: int | None = None) -> list[Pod]:
    """The pods in ``paths`` and those their workloads would make, whose controllers join the state."""
    from .pending import expand_into

    return expand_into(state, paths, replicas)


def cmd_eval(args) -> int:
    from .pending import Held, held, targets
    from .report import Style, eval_json, eval_text
    from .run.schedule import Sampling, collector_paused, schedule

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    plans = load_plans(args.profile, args.config)
    state, where, namespace = _cluster_state(args, _narrowed(args))
    found = targets(args.pod, args.namespace or namespace, state, where, args.replicas)
    profile_for = _profile_chooser(plans, every_pod=bool(args.profile), executor=args.executor)
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
        print(eval_json(results))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(eval_text(results, Style(color)))
    return 0 if all(_placed(r) for r in results) else 1


def _unless_held(pod, profile_for, plans: dict):
    """The pod to schedule, or why it is not scheduled: ``held``'s reasons, or a schedulerName no
    profile has (kube-scheduler leaves such a pod to that scheduler; every verb does the same)."""
    from .pending import Held

    if isinstance(pod, Held) or profile_for(pod) is not None:
        return pod
    return Held(pod, other_scheduler=pod.spec.scheduler_name, profiles=tuple(sorted(plans)))


def _placed(result) -> bool:
    """Exit 0 for a pod scheduled, already bound, finished or left to another scheduler; 1 for one
    unschedulable or gated."""
    from .pending import Held

    if isinstance(result, Held):
        return not result.gates
    return bool(getattr(result, "decision", result).selected)


def cmd_explain(args) -> int:
    import attrs

    from .explain import FIX_TRIES, explain
    from .pending import Held, held, targets, ungated
    from .report import Style, explain_json, explain_text

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    plans = load_plans(args.profile, args.config)
    profile_for = _profile_chooser(plans, every_pod=bool(args.profile), executor=args.executor)
    state, where, namespace = _cluster_state(args, _narrowed(args))
    found = targets(args.pod, args.namespace or namespace, state, where, args.replicas)
    options = {"preemption": not args.no_preemption, "infrastructure": args.suggest_infrastructure,
               "fix_tries": None if args.every else FIX_TRIES}
    progress = _progress_bar if sys.stderr.isatty() and args.output == "text" and len(found) > 5 else None
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
        print(explain_json(explanations))
    elif args.output == "yaml":
        import json

        import yaml
        print(yaml.safe_dump(json.loads(explain_json(explanations)), sort_keys=False, width=120), end="")
    else:
        print(explain_text(explanations, Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR")),
                           every=args.every))
    return 0 if all(_placed(e) for e in explanations) else 1


def cmd_simulate(args) -> int:
    from .cluster.dump import write_state
    from .report import Style, simulate_json, simulate_text, utilisation
    from .simulate import simulate

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    if args.write_state:
        _check_state_target(args.write_state, args.cluster or [])
    _check_report_target(args)
    plans = load_plans(args.profile, args.config)
    # Like kube-scheduler, a pod whose schedulerName has no profile is left alone, unless one
    # profile was named explicitly.
    profile_for = _profile_chooser(plans, every_pod=bool(args.profile), executor=args.executor)
    state, _, _ = _cluster_state(args)
    pods = _pods(args.pods, state, args.replicas)
    rng = random.Random(args.seed) if args.tie_break == "random" else None
    before = utilisation(state) if args.report else None
    interactive = sys.stderr.isatty() and args.output == "text"
    progress = _progress_bar if interactive and len(pods) > 20 else None
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
        print(simulate_json(placements, state))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(simulate_text(placements, state, Style(color)))
    if not interrupted:
        def page():
            from .html_report import simulate_page
            return simulate_page(placements, before, utilisation(state))
        _write_report(args, page)
    if interrupted:
        return interrupted
    return 0 if all((p.node or p.decision is None) and not p.gates for p in placements) else 1


def _check_report_target(args) -> None:
    """Before any work: --report can be written."""
    if getattr(args, "report", None):
        from .write import writable_target
        writable_target(args.report)


def _write_report(args, make) -> None:
    if getattr(args, "report", None):
        from .write import write_atomic
        write_atomic(Path(args.report), make(), "\n")


def cmd_whatif(args) -> int:
    from .report import Style
    from .whatif import parse_event, whatif
    from .whatif_report import verdict, whatif_json, whatif_text

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    events = [parse_event(e) for e in args.event]
    _check_report_target(args)
    plans = load_plans(args.profile, args.config)
    profile_for = _profile_chooser(plans, every_pod=bool(args.profile) or not args.config)
    outcome = whatif(profile_for, load_cluster(args.cluster), events, preemption=not args.no_preemption)
    if args.output == "json":
        print(whatif_json(outcome))
    else:
        print(whatif_text(outcome, Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR"))))

    def page():
        from .html_report import whatif_page
        return whatif_page(outcome)
    _write_report(args, page)
    return 1 if verdict(outcome) else 0


MAX_UNIT_PODS = 10_000     # pods in one copy of --workload's set


def _workload_units(specs: list[str], state) -> list[Pod]:
    """The pods of one copy of every --workload FILE[:N]."""
    from .cluster.workloads import read_pods_and_workloads

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

    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    if args.max is not None and not 0 < args.max <= 100_000:
        raise InputError("--max must be 1 to 100000")
    if args.pods and not args.node_template:
        raise InputError("--pods goes with --node-template")
    _check_report_target(args)
    state = load_cluster(args.cluster)
    # The inputs are read (and refused) before the profile is compiled, which takes longer.
    ask = _nodes_question(args, state) if args.node_template else _headroom_question(args, state)
    plans = load_plans(args.profile, args.config)
    text, doc, page, code = ask(_profile_chooser(plans, every_pod=bool(args.profile) or not args.config))
    print(json.dumps(doc, indent=2) if args.output == "json" else text)
    _write_report(args, page)
    return code


def _nodes_question(args, state):
    """capacity --node-template: the fewest such nodes for the batch (--pods, or the dump's pending pods)."""
    from .capacity import nodes_needed, nodes_needed_json, nodes_needed_text
    from .html_report import nodes_needed_page
    from .pending import is_pending

    found = load_objects(args.node_template, kinds=["Node"])
    if len(found) != 1:
        raise InputError(f"expected one Node, found {len(found)}", path=args.node_template)
    if args.pods:
        pods = _pods(args.pods, state, args.replicas)
    else:
        pods = [p for p in state.pods if is_pending(p)]
        if not pods:
            raise InputError("no pending pod in the dump; give --pods", path=", ".join(args.cluster))
        state = state.without(pods)

    def ask(profile_for):
        result = nodes_needed(profile_for, state, pods, found[0], limit=args.max or 100)
        return (nodes_needed_text(result), nodes_needed_json(result), lambda: nodes_needed_page(result),
                0 if result.count is not None else 1)
    return ask


def _headroom_question(args, state):
    """capacity --pod / --workload: how many more copies fit."""
    from .capacity import DEFAULT_LIMIT, headroom, headroom_json, headroom_text
    from .html_report import headroom_page

    if args.pod:
        unit = load_objects(args.pod, kinds=["Pod"])
        if len(unit) != 1:
            raise InputError(f"expected one Pod as the template, found {len(unit)}", path=args.pod)
    else:
        unit = _workload_units(args.workload, state)

    def ask(profile_for):
        result = headroom(profile_for, state, unit, limit=args.max or DEFAULT_LIMIT)
        nodes = list(state.nodes)
        return (headroom_text(result, nodes), headroom_json(result, nodes), lambda: headroom_page(result),
                0 if result.fits else 1)
    return ask


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
    from .config import is_configuration
    from .diff import changes, diff_json, diff_text
    from .report import simulate_summary, utilisation
    from .simulate import simulate

    if len(args.sides) != 2:
        raise InputError("name the two sides to compare: --policy and --config, twice in all (before, then after)")
    _check_report_target(args)
    from .cluster.state import ClusterState

    live = None if args.cluster else _cluster_state(args)[0]   # read once: both runs start from it
    runs = []
    for how, policy in args.sides:
        # A KubeSchedulerConfiguration is known by what it holds (YAML or JSON, alone, among other
        # documents or in a ConfigMap), not by its file name.
        is_config = how == "config" or (not policy.endswith(".sched") and Path(policy).is_file()
                                        and is_configuration(policy))
        plans = load_plans(None if is_config else policy, policy if is_config else None)
        state = load_cluster(args.cluster) if live is None else ClusterState.build(live.objects())
        pods = _pods(args.pods, state, args.replicas)
        placements = simulate(_profile_chooser(plans, every_pod=not is_config), state, pods,
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
        from .html_report import diff_page
        return diff_page(before, after, a, b, utilisation(state_a), utilisation(state_b), found)
    _write_report(args, page)
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
    for plan in load_plans(args.profile, args.config, alone=True).values():
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
            print(err.render(), file=sys.stderr)
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
                print(err.render(), file=sys.stderr)
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
    from . import check_file

    failed = False
    for path in sched_files(args.paths):
        try:
            check_file(path)
        except PolicyError as err:
            print(err.render(), file=sys.stderr)
            failed = True
    return 2 if failed else 0


def cmd_lsp(args) -> int:
    import importlib.util

    if importlib.util.find_spec("pygls") is None:
        raise InputError("the language server needs pygls: pip install 'policylang[lsp]'")
    from .lsp.server import main as serve  # imported here: no other command pays for the LSP stack
    return serve()


def cmd_lint(args) -> int:
    from .lint.command import run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

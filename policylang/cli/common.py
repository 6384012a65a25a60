"""What several verbs share: their arguments (the cluster, the pods, the executor, the input
limits), reading the cluster state, choosing each pod's profile, and the report and state files
they write."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from ..cost import DEFAULT_MAX_COST, DEFAULT_MAX_TOTAL_COST
from ..diagnostics import InputError
from ..inputs import DEFAULT_MAX_INPUT_SIZE

EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


class TimedOut(BaseException):
    """--timeout passed. A BaseException, as KeyboardInterrupt is, so that no `except
    Exception` on the way up mistakes it for a policy's or an input's error."""

    def __init__(self, seconds: float):
        super().__init__(f"the command ran past its --timeout of {seconds:g}s")


def pod_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pod", "--pods", action="append", metavar="PATH|NAMESPACE/NAME",
                   help="the pod(s) to place: a file or directory (- for standard input) of pods or workloads, or a "
                        "pod of the --cluster dump by NAMESPACE/NAME or NAME (with -n); repeatable (default: every "
                        "pending pod of the dump)")
    replicas_argument(p)
    p.add_argument("-n", "--namespace",
                   help="the namespace of a --pod NAME (default: default; from a live cluster, the context's); "
                        "from a live cluster it also narrows the pending pods read to this namespace")
    p.add_argument("--as-pending", action="store_true",
                   help="a pod of the dump already bound (or finished): where would it go if it were pending "
                        "(evaluated without itself on its node)")


def replicas_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--replicas", type=int, metavar="N",
                   help="expand Deployments, ReplicaSets, StatefulSets, Jobs, CronJobs and DaemonSets among the pods "
                        "into N pods each (default: their own replica count)")


def executor_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=("auto", "vector", "reference"), default="auto",
                   help="how Filter and Score run: over every node at once (vector) or node by node (reference, "
                        "the interpreter the vector executor is tested against); both decide alike. auto (the "
                        "default): reference for a small run (nodes x pods under 256), where it is done before "
                        "the vector executor has compiled the plan, else vector")


def target_arguments(p: argparse.ArgumentParser) -> None:
    """The Kubernetes to decide as (README: Kubernetes versions and feature gates)."""
    from ..target import DEFAULT_VERSION, MODELLED, VERSIONS
    p.add_argument("--kubernetes-version", metavar="|".join(VERSIONS),
                   help="decide as this kube-scheduler version does: its plugins, reasons, formulas and feature gate "
                        f"defaults (default {DEFAULT_VERSION})")
    p.add_argument("--feature-gates", metavar="A=true,B=false",
                   help="set feature gates as kube-scheduler's --feature-gates does; the gates that change what the "
                        f"stdlib decides: {', '.join(MODELLED)} (a gate the version does not have, or locks, is "
                        "refused; so is a gate the scheduler reads that policylang does not model, away from its "
                        "default)")


def target_of(args):
    """The target of --kubernetes-version and --feature-gates (an InputError when refused)."""
    from ..target import make_target
    return make_target(getattr(args, "kubernetes_version", None), getattr(args, "feature_gates", None))


def percentage(text: str) -> int:
    """--percentage-of-nodes-to-score, refused outside 0..100 as kube-scheduler's configuration
    validation refuses it (pkg/scheduler/apis/config/validation/validation.go)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 100, got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"Invalid value: {value}: not in valid range [0-100]")
    return value


def cluster_arguments(p: argparse.ArgumentParser) -> None:
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


def live(args) -> bool:
    return bool(getattr(args, "kubeconfig", None) or getattr(args, "context", None) is not None
                or getattr(args, "in_cluster", False))


def engine_for(args, narrow: "str | None" = None):
    """The Engine of a verb's options: its profiles (--profile, --config), its version and gates,
    its state (--cluster's dumps, or a live cluster; ``narrow``: the only namespace whose pending
    pods a live read takes) and its budgets."""
    from ..engine import Engine

    with _reading(args) as progress:
        engine = Engine(args.cluster, profile=getattr(args, "profile", None), config=getattr(args, "config", None),
                        kubernetes_version=getattr(args, "kubernetes_version", None),
                        feature_gates=getattr(args, "feature_gates", None),
                        kubeconfig=getattr(args, "kubeconfig", None),
                        context=getattr(args, "context", None), in_cluster=getattr(args, "in_cluster", False),
                        namespace=getattr(args, "namespace", None), executor=getattr(args, "executor", "auto"),
                        max_cost=getattr(args, "max_cost", None), max_total_cost=getattr(args, "max_total_cost", None),
                        only_namespace=narrow, progress=progress)
    _warn(engine.warnings)
    return engine


def state_of(args, narrow: "str | None" = None):
    """The cluster state alone (snapshot): --cluster's dumps, or a live cluster."""
    from ..engine import read_state

    with _reading(args) as progress:
        state, _, _, warnings = read_state(args.cluster, kubeconfig=args.kubeconfig, context=args.context,
                                           in_cluster=args.in_cluster, only_namespace=narrow, progress=progress)
    _warn(warnings)
    return state


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(line, file=sys.stderr)


@contextlib.contextmanager
def _reading(args):
    """A progress line while a live cluster is read, on a terminal; wiped when it is read."""
    progress = _read_progress if sys.stderr.isatty() and live(args) else None
    try:
        yield progress
    finally:
        if progress:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)


def _read_progress(kind: str, number: int, total: int, count: int) -> None:
    width = 20
    filled = width * (number - 1) // total
    print(f"\r\x1b[K[{'#' * filled}{'.' * (width - filled)}] reading {kind}s ({number}/{total} kinds), "
          f"{count} listed", end="", file=sys.stderr, flush=True)


def narrowed(args) -> "str | None":
    """-n narrows a live read to one namespace's pending pods, unless a --pod names another."""
    if not args.namespace or any("/" in p or os.path.exists(p) for p in args.pod or ()):
        return None
    return args.namespace


def input_arguments(p: argparse.ArgumentParser) -> None:
    """What every command may read: the limits on untrusted input (README: Exit codes, limits)."""
    p.add_argument("--allow-root", action="append", default=[], metavar="DIR",
                   help="let imports, uses and test files' profiles reach files under DIR too (repeatable; "
                        "default: only the policy's own directory and the stdlib)")
    p.add_argument("--max-input-size", type=byte_size, metavar="BYTES",
                   help=f"read input files up to this size (suffixes K, M, G; default "
                        f"{DEFAULT_MAX_INPUT_SIZE // 2**20}M)")
    p.add_argument("--max-cost", type=positive_count, metavar="N",
                   help=f"let each pod's evaluation take up to N steps (items comprehensions and folds go "
                        f"through, numbers range makes; default {DEFAULT_MAX_COST:,})")
    p.add_argument("--max-total-cost", type=positive_count, metavar="N",
                   help=f"let the whole evaluation (every pod of the run; one request of serve) take up to N "
                        f"steps (default {DEFAULT_MAX_TOTAL_COST:,})")


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 10**7:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def positive_count(text: str) -> int:
    if not text.isdigit() or int(text) == 0 or len(text) > 18:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def byte_size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    number, unit = (text[:-1], units[text[-1].upper()]) if text[-1:].upper() in units else (text, 1)
    if not number.isdigit() or int(number) == 0 or len(number) > 15:
        raise argparse.ArgumentTypeError(f"expected a positive size such as 512M, got {text!r}")
    return int(number) * unit


def load_objects(path: str, kinds: list[str]):
    """cluster.load's load_objects, imported on first call (as load_cluster)."""
    from ..cluster.load import load_objects as load
    return load(path, kinds)


def check_report_target(args) -> None:
    """Before any work: --report can be written."""
    if getattr(args, "report", None):
        from ..write import writable_target
        writable_target(args.report)


def write_report(args, make) -> None:
    if getattr(args, "report", None):
        from ..write import write_atomic
        write_atomic(Path(args.report), make(), "\n")


def check_state_target(out: str, clusters: list[str]) -> None:
    """Before any work: --write-state can be written, and is none of the --cluster inputs (the
    state written models only what scheduling reads, so it would drop the rest of that file)."""
    from ..write import writable_target

    target = writable_target(out)
    for path in clusters:
        real = Path(os.path.realpath(path))
        if real == target or (real.is_dir() and real in target.parents):
            raise InputError("refusing to write the state over a --cluster input: it would drop every object and "
                             "field the simulation does not model; write it to another file", path=out)


def progress_bar(done: int, total: int) -> None:
    width = 40
    filled = width * done // total
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} pods", end="", file=sys.stderr, flush=True)



def report_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--report", metavar="FILE.html",
                   help="also write a self-contained HTML report with charts (no network needed to view it)")


def timeout_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=seconds, metavar="SECONDS",
                   help="stop after this many seconds of wall-clock time (exit 2; simulate shows the pods placed so far)")

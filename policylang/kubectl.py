"""`kubectl policylang`: the kubectl plugin (the ``kubectl-policylang`` console script, which
kubectl runs for ``kubectl policylang ...``). It reads the cluster of the current context, with
kubectl's own flags and defaults (``-n``, ``-A``, ``--context``, ``--kubeconfig``, ``KUBECONFIG``,
``-o json|yaml``, ``pod/NAME``), and hands over to policylang's verbs (policylang/cli/)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from . import cli
from .diagnostics import InputError

POD_TYPES = ("pod", "pods", "po")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubectl policylang",
                                description="Ask kube-scheduler's questions of the current cluster, read-only.")
    sub = p.add_subparsers(dest="command")
    why = sub.add_parser("why", help="why a pod is Pending: every node's failing filters, near misses, what fits",
                         description="Explain pending pods against the cluster of the current context, as "
                                     "kube-scheduler v1.35's default profile decides (only GET requests are sent).")
    why.add_argument("pods", nargs="*", metavar="pod/NAME",
                     help="the pods (pod/NAME or NAME); default: every pending pod of the namespace")
    why.add_argument("-n", "--namespace", help="the namespace (default: the context's, else default)")
    why.add_argument("-A", "--all-namespaces", action="store_true", help="every pending pod of every namespace")
    why.add_argument("--context", help="the kubeconfig context to use (default: the current one)")
    why.add_argument("--kubeconfig", help="the kubeconfig file (default: KUBECONFIG, else ~/.kube/config)")
    why.add_argument("-o", "--output", choices=("json", "yaml"),
                     help="the policylang/explain/v1 document (default: text for people)")
    why.add_argument("--profile", metavar="PATH|NAME", help="a .sched profile (default: the default-scheduler)")
    why.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration")
    return p


def pod_name(arg: str) -> str:
    """NAME of pod/NAME (kubectl's TYPE/NAME, for pods only) or of a bare NAME."""
    kind, slash, name = arg.partition("/")
    if not slash:
        return arg
    if kind.lower() not in POD_TYPES or not name or "/" in name:
        raise InputError(f"expected pod/NAME or NAME, got {arg!r} (kubectl policylang why explains pods)")
    return name


def explain_argv(args) -> list[str]:
    """The `policylang explain` command these kubectl-style arguments mean."""
    from .cluster.live import ClusterSource, context_namespace

    argv = ["explain"]
    if args.kubeconfig:
        argv += ["--kubeconfig", args.kubeconfig]
    if args.context:
        argv += ["--context", args.context]
    if not args.kubeconfig and not args.context:
        argv += ["--context", ""]       # the current context, of KUBECONFIG or ~/.kube/config
    if args.all_namespaces and args.pods:
        raise InputError("-A lists every pending pod; give pod names with -n instead")
    if not args.all_namespaces:
        namespace = args.namespace or context_namespace(ClusterSource(args.kubeconfig, args.context or None))
        argv += ["-n", namespace]
        argv += [arg for name in args.pods for arg in ("--pod", pod_name(name))]
    if args.output:
        argv += ["-o", args.output]
    if args.profile:
        argv += ["--profile", args.profile]
    if args.config:
        argv += ["--config", args.config]
    return argv


def main(argv: "list[str] | None" = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        command = explain_argv(args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return cli.main(command)


def console() -> NoReturn:
    """The `kubectl-policylang` command (pyproject's entry point)."""
    cli.exit_now(main())


if __name__ == "__main__":
    console()

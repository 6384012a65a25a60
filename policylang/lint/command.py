"""`policylang lint`: the command's arguments and exit code (policylang/cli/ only wires it in).

Exit codes: 0 no finding at or above --fail-on, 1 some, 2 an input could not be read
(a .sched that does not parse or check, a YAML file that is not YAML, bad settings)."""

from __future__ import annotations

import argparse
import sys

from .formats import FORMATS, rules_table
from .model import SEVERITIES, severity_rank


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", help=".sched files, KubeSchedulerConfiguration and workload YAML, "
                                            "or directories to search")
    p.add_argument("--format", choices=tuple(FORMATS), default="text")
    p.add_argument("--fail-on", choices=SEVERITIES, default="warning",
                   help="exit 1 when a finding is at least this severe (default: warning)")
    p.add_argument("--fix", action="store_true", help="apply the fixes that are certain (to .sched files and KubeSchedulerConfigurations)")
    p.add_argument("--select", metavar="CODES", help="comma-separated codes, prefixes, names or categories "
                                                     "(replaces the configured selection)")
    p.add_argument("--ignore", metavar="CODES", help="comma-separated codes, prefixes, names or categories to skip")
    p.add_argument("--nodes", type=int, metavar="N", help="the target cluster has N nodes (enables S210)")
    p.add_argument("--rules", action="store_true", help="list the rule catalogue and exit")


def _tokens(raw: str | None) -> tuple[str, ...]:
    from .settings import validate_tokens
    tokens = tuple(t.strip() for t in (raw or "").split(",") if t.strip())
    return validate_tokens(list(tokens), "command line") if tokens else ()


def run(args) -> int:
    # Here, not at the top: the parser of every command is built from add_arguments, and
    # `policylang fmt` should not import the checker for it.
    from .context import Options
    from .runner import Selection, lint

    if args.rules:
        sys.stdout.write(rules_table())
        return 0
    if not args.paths:
        print("error: give files or directories to lint (or --rules)", file=sys.stderr)
        return 2
    selection = Selection(_tokens(args.select), _tokens(args.ignore))
    result = lint(args.paths, selection, Options(nodes=args.nodes), fix=args.fix)
    for error in result.input_errors:
        print(error, file=sys.stderr)
    print_notes(result)
    sys.stdout.write(FORMATS[args.format](result))
    if result.input_errors:
        return 2
    threshold = severity_rank(args.fail_on)
    return 1 if any(severity_rank(rule.severity) >= threshold for _, rule in result.findings) else 0


def print_notes(result) -> None:
    """The files lint skipped and why, and its notes, on standard error (the runner returns them)."""
    for path, reason in result.skipped:
        print(f"note: skipped {path}: {reason}", file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)

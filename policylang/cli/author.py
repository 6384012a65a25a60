"""The verbs of writing policy: plan, fmt, test, check, lint and lsp."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..profiles import load_plans
from ..diagnostics import InputError, PolicyError
from ..inputs import read_source
from .common import target_arguments, target_of


def register(sub) -> None:
    """plan, fmt, test, check, lint and lsp."""
    pl = sub.add_parser("plan", help="print the evaluation plan of a profile")
    pl.add_argument("profile", nargs="?", metavar="PATH|NAME")
    pl.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    pl.add_argument("--source", action="store_true", help="with --config: print the generated .sched source")
    pl.add_argument("--vector", action="store_true",
                    help="under each step, what the vector executor's passes decided about it (kept per node, "
                         "keyed by what, run as a batch)")
    target_arguments(pl)
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
    target_arguments(t)
    t.set_defaults(run=cmd_test)

    c = sub.add_parser("check", help="parse and type-check .sched files")
    c.add_argument("paths", nargs="+")
    c.set_defaults(run=cmd_check)

    li = sub.add_parser("lint", help="lint .sched policies, scheduler configs and workload manifests")
    li.set_defaults(run=cmd_lint)
    if sub.builds("lint"):      # its arguments name the rule catalogue's formats: not imported for other verbs
        from ..lint.command import add_arguments as lint_arguments
        lint_arguments(li)

    ls = sub.add_parser("lsp", help="the language server, over stdio (for editors: see README, Editors)")
    ls.add_argument("--stdio", action="store_true", help="talk over stdin and stdout (the default and only way)")
    ls.set_defaults(run=cmd_lsp)


def cmd_plan(args) -> int:
    from ..plan_text import plan_text

    if args.source:
        from ..config.read import config_source
        if not args.config:
            raise InputError("--source goes with --config")
        print(config_source(args.config, target_of(args)), end="")
        return 0
    notes = None
    if args.vector:
        from ..run.vector.passes import describe as notes
    for plan in load_plans(args.profile, args.config, alone=True, target=target_of(args)).values():
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


def formatted(text: str, path: str) -> str:
    """format_source(text), through the cache by the text alone (as black keeps the files it
    formatted): `fmt --check` of unchanged files imports no parser. A text that does not parse
    raises its PolicyError, and is not kept."""
    from .. import cache

    def build() -> str:
        from ..syntax.format import format_source
        return format_source(text, path)

    return cache.cached("formatted", cache.key("formatted", text), build, str, allow=cache.nothing)


def cmd_fmt(args) -> int:
    import difflib

    from ..write import write_atomic

    changed, broken = [], False
    for path in sched_files(args.paths):
        try:
            text, newline = read_source(path)
        except InputError as err:
            print(err.render(), file=sys.stderr)
            broken = True
            continue
        try:
            layout = formatted(text, str(path))
        except PolicyError as err:  # never rewrite what does not parse
            print(err.render(), file=sys.stderr)
            broken = True
            continue
        if layout == text:
            continue
        changed.append(path)
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), layout.splitlines(True),
                                                       f"{path}", f"{path} (formatted)"))
        elif args.check:
            print(f"would reformat {path}")
        else:
            try:
                write_atomic(path, layout, newline)
            except InputError as err:
                print(err.render(), file=sys.stderr)
                broken = True
                continue
            print(f"reformatted {path}")
    if broken:
        return 2
    return 1 if changed and (args.check or args.diff) else 0


def cmd_test(args) -> int:
    from ..tester import Coverage, discover, junit, run_file

    coverage = Coverage() if args.coverage else None
    k8s = target_of(args)
    outcomes = [o for path in discover(args.paths) for o in run_file(path, coverage, k8s)]
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
    from ..profiles import check_file

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
    from ..lsp.server import main as serve  # imported here: no other command pays for the LSP stack
    return serve()


def cmd_lint(args) -> int:
    from ..lint.command import run
    return run(args)


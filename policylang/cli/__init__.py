"""The command line: wiring only, one module per family of verbs (decide, forecast, deploy,
author), each registering its sub-parsers. Exit codes: 0 success, 1 unschedulable / findings,
2 usage or input errors, 3 an internal error (a bug in policylang), 130 interrupted."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import traceback
from typing import NoReturn

from ..cost import CostExceeded, max_cost
from ..diagnostics import InputError, PolicyError
from ..inputs import input_size_limit, stdin_unread
from ..roots import allowed_roots
from . import agent, author, decide, deploy, forecast
from .common import EXIT_INTERNAL, EXIT_INTERRUPTED, TimedOut, input_arguments, target_of


def _admitted_as(args):
    """Objects read are validated as the --kubernetes-version's API server, with its gates, would
    (a verb without the option reads them as v1.35's, the validation's default: nothing to set,
    and nothing to import for fmt, check or lint)."""
    if not hasattr(args, "kubernetes_version"):
        return contextlib.nullcontext()
    from ..cluster.validation.core import admitted_as
    return admitted_as(target_of(args))


def main(argv: list[str] | None = None) -> int:
    with _interpreter_settings():
        return _main(sys.argv[1:] if argv is None else argv)


def console() -> NoReturn:
    """The `policylang` command (pyproject's entry point, and `python -m policylang.cli`)."""
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """End the process with ``code``, its output flushed, without tearing the interpreter down:
    freeing every module, class and object a command built took ~30 ms of each `lint` and more
    of `eval`'s, and a process that ends needs none of it freed. policylang registers no exit
    handlers, and its files are written (atomically) before a command returns."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):     # a reader that went away: nothing left to tell it
            stream.flush()
    os._exit(code)


def _main(argv: list[str]) -> int:
    parser = _parser(next((a for a in argv if not a.startswith("-")), None))
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        with allowed_roots(args.allow_root), input_size_limit(args.max_input_size), stdin_unread(), \
                _quiet_when_pipe_closes(), deep_recursion(), max_cost(args.max_cost, args.max_total_cost), \
                _time_limit(getattr(args, "timeout", None)), _admitted_as(args):
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


@contextlib.contextmanager
def _interpreter_settings():
    """What a command asks of the interpreter before it imports anything heavy, put back after
    it (a test runs many commands in one process)."""
    # numpy's OpenBLAS starts a thread per core at import, and they spin waiting for work that
    # policylang, which does no linear algebra, never gives them: ~0.2 s of CPU time that a
    # 2-core machine takes from the command itself.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Start-up builds ~35,000 objects that live until the command ends (classes, plans, the
    # cluster); at the default threshold (700) the collector ran ~130 times over them, a fifth
    # of `eval`'s time on the examples. Loading a dump and the scheduling cycles pause it anyway.
    before = gc.get_threshold()
    gc.set_threshold(100_000, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*before)


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



def _parser(verb: "str | None" = None) -> argparse.ArgumentParser:
    """The command line's parser: given the ``verb`` being run, that verb's alone; every verb's
    when none is given or it names none (`policylang -h`, a mistyped verb's "invalid choice")."""
    p = argparse.ArgumentParser(prog="policylang", description="Policy-as-code for Kubernetes scheduling.")
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = p.add_subparsers(dest="command")
    verbs = _Verbs(sub, verb)
    for family in (decide, forecast, deploy, author, agent):
        family.register(verbs)
    if verb is not None and verb not in sub.choices:
        return _parser(None)
    for command in sub.choices.values():
        input_arguments(command)
    return p


class _Verbs:
    """The sub-parsers as the families register them, only the verb being run's (every one, when
    none is): argparse builds a help formatter for every argument it adds and looks for a
    translation of each of its messages, ~25 ms for all the verbs, which each run of `check` or
    `fmt` paid. A verb's own usage and errors never name the others."""

    def __init__(self, sub, verb: "str | None"):
        self.sub, self.verb = sub, verb

    def builds(self, name: str) -> bool:
        """Whether the verb's parser is being built."""
        return self.verb in (None, name)

    def add_parser(self, name: str, **kwargs):
        return self.sub.add_parser(name, **kwargs) if self.builds(name) else _Unused()


class _Unused:
    """A verb's parser not being run: what the family adds to it goes nowhere."""

    def add_argument(self, *args, **kwargs):
        pass

    def set_defaults(self, **kwargs):
        pass

    def add_mutually_exclusive_group(self, *args, **kwargs) -> "_Unused":
        return self

    add_argument_group = add_mutually_exclusive_group


class _Version(argparse.Action):
    """argparse's "version" action, reading the installed version only when asked: importlib.metadata
    costs every other command ~30 ms."""

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version
        try:
            found = version("policylang")
        except PackageNotFoundError:
            found = "(not installed)"
        print(f"policylang {found}")
        parser.exit()


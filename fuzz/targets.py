"""What every command must do on any input (issue 29): end within its limits with exit 0, 1 or 2,
and print no traceback and no "internal error". One entry point per kind of input, each taking
the input's bytes; the atheris harnesses (fuzz/*.py), the Hypothesis mutation tests and the corpus
replay (tests/test_fuzz.py) all go through these, so a crash found by one is checked by all."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
import tempfile

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CLUSTER = EXAMPLES / "cluster.yaml"
PODS = EXAMPLES / "pods"
POLICY = EXAMPLES / "policies" / "team.sched"
SMALL = ROOT / "fuzz" / "small.sched"      # a cheap profile: the cluster input is under test


# "Within its limits": no command on these small inputs may take longer than this (a command
# that hangs would otherwise hang CI instead of failing it).
SECONDS = float(os.environ.get("POLICYLANG_FUZZ_SECONDS", "60"))


class Crash(AssertionError):
    """A command broke the contract: an exit code other than 0/1/2, a traceback, or no end within
    SECONDS."""


class _TooSlow(BaseException):
    """Raised in the command by the alarm (a BaseException, so no `except Exception` takes it)."""


@contextlib.contextmanager
def _wall_clock(args):
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _TooSlow()
    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, SECONDS)
    try:
        yield
    except _TooSlow:
        raise Crash(f"policylang {' '.join(map(str, args))} ran past {SECONDS:g}s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def run_cli(*args) -> tuple[int, str, str]:
    from policylang.cli import main
    out, err = io.StringIO(), io.StringIO()
    with _wall_clock(args), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _check(args, code: int, err: str) -> None:
    if code not in (0, 1, 2) or "Traceback" in err or "internal error" in err:
        raise Crash(f"policylang {' '.join(map(str, args))} exited {code}:\n{err[-3000:]}")


def _commands(directory: Path, data: bytes, name: str, commands) -> None:
    path = directory / name
    path.write_bytes(data)
    for args in commands(path):
        code, _, err = run_cli(*args)
        _check(args, code, err)


@contextlib.contextmanager
def _workdir():
    with tempfile.TemporaryDirectory(prefix="policylang-fuzz-") as d:
        yield Path(d)


def policy(data: bytes) -> None:
    """A .sched file: check, lint, fmt --check and plan."""
    with _workdir() as d:
        _commands(d, data, "p.sched", lambda p: [["check", p], ["lint", p], ["fmt", "--check", p], ["plan", p]])


def policy_eval(data: bytes) -> None:
    """A .sched file's profile evaluated on the example cluster."""
    with _workdir() as d:
        _commands(d, data, "p.sched", lambda p: [["eval", "--profile", p, "--cluster", CLUSTER, "--pod", PODS]])


def cluster(data: bytes, suffix: str = ".yaml") -> None:
    """A cluster dump: eval and explain (with a small profile), and lint of it as a manifest."""
    with _workdir() as d:
        _commands(d, data, "dump" + suffix, lambda p: [
            ["eval", "--profile", SMALL, "--cluster", p, "--pod", PODS / "web.yaml"],
            ["explain", "--profile", SMALL, "--cluster", p],
            ["lint", p]])


def pods(data: bytes) -> None:
    """Pods or workloads given with --pod."""
    with _workdir() as d:
        _commands(d, data, "pod.yaml", lambda p: [["eval", "--profile", SMALL, "--cluster", CLUSTER, "--pod", p],
                                                  ["simulate", "--profile", SMALL, "--cluster", CLUSTER, "--pods", p]])


def config(data: bytes) -> None:
    """A KubeSchedulerConfiguration: plan --source, and lint of it."""
    with _workdir() as d:
        _commands(d, data, "config.yaml", lambda p: [
            ["plan", "--config", p, "--source"], ["lint", p]])


def test_file(data: bytes) -> None:
    """A *_test.yaml file beside a copy of the example policy, its cluster and pods."""
    with _workdir() as d:
        (d / "team.sched").write_bytes(POLICY.read_bytes())
        (d / "cluster.yaml").write_bytes(CLUSTER.read_bytes())
        (d / "pods").mkdir()
        for pod in PODS.iterdir():
            (d / "pods" / pod.name).write_bytes(pod.read_bytes())
        _commands(d, data, "x_test.yaml", lambda p: [["test", p], ["test", "--format", "junit", p]])


def settings(data: bytes, name: str = ".policylang.yaml") -> None:
    """Lint settings (.policylang.yaml or pyproject.toml) governing the lint of a policy beside them."""
    with _workdir() as d:
        (d / "sub").mkdir()
        (d / "sub" / "small.sched").write_bytes(SMALL.read_bytes())
        _commands(d, data, name, lambda p: [["lint", d / "sub" / "small.sched"]])


TARGETS = {"policy": policy, "policy_eval": policy_eval, "cluster": cluster, "pods": pods, "config": config,
           "test_file": test_file, "settings": settings,
           "pyproject": lambda data: settings(data, "pyproject.toml")}


# ---- in-process entry points, fast enough for coverage-guided fuzzing (atheris) ----------------
# Each takes bytes and may raise only policylang's own errors (PolicyError, InputError), as the
# CLI turns those into exit 2; anything else is a crash, exit 3 on the command line.

def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def parse_entry(data: bytes) -> None:
    """The parser, then the formatter on what parsed (it must print something that parses again)."""
    from policylang.diagnostics import PolicyError
    from policylang.syntax.format import format_source
    from policylang.syntax.parse import parse
    text = _text(data)
    if text is None:
        return
    try:
        parse(text, "fuzz.sched")
    except PolicyError:
        return
    parse(format_source(text), "fuzz.sched")


def check_entry(data: bytes) -> None:
    """Loading (imports, uses) and checking a policy."""
    from policylang.check import check
    from policylang.diagnostics import InputError, PolicyError
    from policylang.program import load_program
    text = _text(data)
    if text is None:
        return
    with _workdir() as d:
        try:
            check(load_program(d / "fuzz.sched", text=text))
        except (PolicyError, InputError):
            pass


def load_entry(data: bytes) -> None:
    """The cluster loader: YAML (or JSON, when it starts like JSON) into a ClusterState."""
    from policylang.cluster.load import load_cluster
    from policylang.diagnostics import InputError
    with _workdir() as d:
        path = d / ("dump.json" if data.lstrip()[:1] in (b"{", b"[") else "dump.yaml")
        path.write_bytes(data)
        try:
            load_cluster([path])
        except InputError:
            pass


ENTRIES = {"parse": parse_entry, "check": check_entry, "load": load_entry}

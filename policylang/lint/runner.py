"""Linting files: find them, load each as its kind of input, run the enabled rules,
apply suppressions, and (with --fix) rewrite .sched files whose fixes are certain."""

from __future__ import annotations

from pathlib import Path

import attrs

from ..syntax import ast
from ..check import check
from ..plan_size import profiles_past_bound
from ..diagnostics import InputError, PolicyError
from ..inputs import read_source
from ..syntax.parse import parse_file
from ..program import load_program
from ..source import Span
from . import edits, suppress
from .catalogue import all_rules, get
from .context import WORKLOAD_KINDS, ConfigContext, ManifestContext, Options, SchedContext
from .model import Finding, Rule
from .sched_ast import decl_exprs, walk
from .settings import settings_for, settings_for_dir

YAML_SUFFIXES = (".yaml", ".yml")
MAX_FIX_ROUNDS = 10


@attrs.define
class Result:
    """Everything a lint run found: findings with their rule and severity, the texts they
    point into, input errors (rendered), and the files fixed."""
    findings: list[tuple[Finding, Rule]] = attrs.Factory(list)
    sources: dict[str, str] = attrs.Factory(dict)
    input_errors: list[str] = attrs.Factory(list)
    notes: list[str] = attrs.Factory(list)
    files: int = 0
    fixed: list[str] = attrs.Factory(list)
    # Files not linted, with the reason: a Helm template, a file that is not valid YAML. Never
    # counted among the files with "no problems found".
    skipped: list[tuple[str, str]] = attrs.Factory(list)
    unreadable: int = 0     # files named explicitly that could not be read (their input errors)

    @property
    def linted(self) -> int:
        return self.files - len(self.skipped) - self.unreadable


@attrs.define
class Selection:
    cli_select: tuple[str, ...] = ()
    cli_ignore: tuple[str, ...] = ()

    def rules_for(self, path: str) -> list[Rule]:
        settings = settings_for(path)
        return [r for r in all_rules() if settings.enabled(r, path, self.cli_select, self.cli_ignore)]


def discover(paths: list[str]) -> list[tuple[str, bool]]:
    """(file, named explicitly) for every file to lint; directories are searched for .sched
    and YAML files, skipping hidden directories."""
    out: list[tuple[str, bool]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = [f for f in sorted(p.rglob("*")) if f.is_file() and f.suffix in (".sched",) + YAML_SUFFIXES
                     and not any(part.startswith(".") for part in f.relative_to(p).parts[:-1])]
            out += [(str(f), False) for f in found]
        elif p.is_file():
            out.append((str(p), True))
        elif p.exists():
            raise InputError("not a regular file (a FIFO, a device or a socket)", path=raw)
        else:
            raise InputError("no such file or directory", path=raw)
    return list(dict.fromkeys(out))


def lint(paths: list[str], selection: Selection | None = None, options: Options | None = None,
         fix: bool = False) -> Result:
    selection = selection or Selection()
    options = options or Options()
    settings_for_dir.cache_clear()
    result = Result()
    files = discover(paths)
    result.files = len(files)
    sched = [f for f, _ in files if f.endswith(".sched")]
    loaded: dict = {}       # (path, text) → _load's answer: each file is loaded and checked once
    external = _external_def_uses(sched, loaded)
    for path, explicit in files:
        if path.endswith(".sched"):
            rules = selection.rules_for(path)
            try:
                text, newline = read_source(path)
            except InputError as err:
                result.input_errors.append(err.render())
                result.unreadable += 1
                continue
            if fix:
                text = _fix(path, text, newline, rules, options, external, result, loaded)
            _lint_sched(path, text, rules, options, external, result, loaded)
        else:
            _lint_yaml(path, explicit, selection.rules_for(path), options, result, fix)
    result.findings.sort(key=lambda fr: (fr[0].span.path, fr[0].span.line, fr[0].span.column, fr[0].code))
    return result


# ---- .sched -----------------------------------------------------------------------------------

def _load(path: str, text: str, loaded: dict):
    """The file loaded and checked, or the PolicyError that `check` reports for it (a plan that
    inlining would grow past its bound, P081, included: counted, compiled only when it may);
    kept in ``loaded`` for the run's next question about the same text."""
    if (path, text) not in loaded:
        try:
            # The root's syntax tree through the cache, as for any file read from disk (lint
            # read it): an unchanged file is not parsed again.
            program = load_program(path, text=text, parsed=parse_file(text, path))
            checked = check(program)
            past, too_large = profiles_past_bound(checked), None
            if past:        # else nothing is compiled, nor the compiler imported
                from ..compile import plan_size_error
                too_large = plan_size_error(checked, past)
            loaded[path, text] = too_large if too_large is not None else (program, checked)
        except PolicyError as err:
            loaded[path, text] = err
    if isinstance(loaded[path, text], PolicyError):
        raise loaded[path, text]
    return loaded[path, text]


def _sched_findings(path: str, text: str, rules, options, external, loaded) -> list[Finding] | PolicyError:
    try:
        program, checked = _load(path, text, loaded)
    except PolicyError as err:
        return err
    return sched_findings(path, text, program, checked, rules, options, external)


def sched_findings(path: str, text: str, program, checked, rules=None, options: Options | None = None,
                   external=frozenset()) -> list[Finding]:
    """The findings, suppressions applied, of one .sched file already loaded and checked (the
    language server checks once per edit and shares the result). ``rules`` default to those the
    file's settings enable."""
    rules = Selection().rules_for(path) if rules is None else rules
    ctx = SchedContext(path, text, program, checked, options or Options(), set(external))
    findings = [f for r in rules if "sched" in r.checks for f in r.checks["sched"](ctx)]
    return _suppressed(path, text, findings, rules)


def _suppressed(path: str, text: str, findings: list[Finding], rules) -> list[Finding]:
    suppressions = suppress.find(path, text)
    kept = suppress.apply(findings, suppressions)
    if any(r.code == "S307" for r in rules):
        rule = get("S307")
        ran = {r.code for r in rules}
        kept += [rule.finding(m, span, "help: remove it", edits=fix)
                 for m, span, fix in suppress.unused(text, suppressions, ran)]
    return kept


def _lint_sched(path, text, rules, options, external, result: Result, loaded) -> None:
    result.sources[path] = text
    found = _sched_findings(path, text, rules, options, external, loaded)
    if isinstance(found, PolicyError):
        result.sources.update(found.sources)
        result.input_errors.append(found.render())
        result.unreadable += 1
        return
    result.findings += [(f, get(f.code)) for f in found]


def _fix(path, text, newline, rules, options, external, result: Result, loaded) -> str:
    """Apply certain fixes until none is left; every round must still parse and check, or
    the file keeps the last text that did."""
    original = text
    for _ in range(MAX_FIX_ROUNDS):
        found = _sched_findings(path, text, rules, options, external, loaded)
        if isinstance(found, PolicyError):
            break
        fixes = [e for f in found for e in f.edits]
        if not fixes:
            break
        candidate = edits.apply(text, fixes)
        try:
            _load(path, candidate, loaded)
        except PolicyError:
            result.notes.append(f"{path}: the remaining fixes would break the file, so they were not applied")
            break
        text = candidate
    if text != original:
        from ..write import write_atomic     # here: a lint that fixes nothing imports no tempfile

        try:
            write_atomic(path, text, newline)
        except InputError as err:
            result.input_errors.append(err.render())
            return text
        result.fixed.append(path)
    return text


def _external_def_uses(paths: list[str], loaded: dict) -> set:
    """(resolved module path, def name) for every def called through an import by a linted file."""
    uses = set()
    for path in paths:
        try:
            text = read_source(path)[0]
            program = _load(path, text, loaded)[0]
        except InputError:
            continue
        except PolicyError:
            try:
                program = load_program(path, text=text)   # one that does not check still calls what it calls
            except PolicyError:
                continue
        for module_path, module in program.modules.items():
            imports = program.imports.get(module_path, {})
            for d in module.decls:
                for root in decl_exprs(d):
                    for e in walk(root):
                        if isinstance(e, ast.Call) and "." in e.func:
                            alias, name = e.func.split(".", 1)
                            if alias in imports:
                                uses.add((str(Path(imports[alias]).resolve()), name))
    return uses


# ---- YAML ---------------------------------------------------------------------------------------

HELM_TEMPLATE = "Helm template: not YAML until rendered (lint the output of `helm template`)"


def _lint_yaml(path: str, explicit: bool, rules, options, result: Result, fix: bool = False) -> None:
    try:
        text, newline = read_source(path)
    except InputError as err:
        result.input_errors.append(err.render())
        result.unreadable += 1
        return
    from ..yaml_source import documents     # here: linting .sched files reads no YAML

    if "{{" in text:
        # Go template actions: what the file says is known only once Helm renders it. Reported,
        # never an error (a pre-commit hook over a chart must not fail on its templates).
        result.skipped.append((path, HELM_TEMPLATE))
        return
    try:
        docs = documents(path, text)
    except InputError as err:
        if explicit:
            result.input_errors.append(err.render())
            result.unreadable += 1
        else:
            result.skipped.append((path, f"not valid YAML: {err.message}"))
        return
    findings = _yaml_findings(path, text, docs, rules, options)
    if fix:
        original = text
        # Rounds, as for .sched: a misspelt field hides the typos inside it until it is renamed.
        for _ in range(MAX_FIX_ROUNDS):
            fixes = [e for f in findings for e in f.edits]
            if not fixes:
                break
            candidate = edits.apply(text, fixes)
            try:
                docs = documents(path, candidate)
            except InputError:
                result.notes.append(f"{path}: the remaining fixes would break the file, so they were not applied")
                break
            text = candidate
            findings = _yaml_findings(path, text, docs, rules, options)
        if text != original:
            from ..write import write_atomic

            try:
                write_atomic(path, text, newline)
            except InputError as err:
                result.input_errors.append(err.render())
            else:
                result.fixed.append(path)
    result.sources[path] = text
    result.findings += [(f, get(f.code)) for f in _suppressed(path, text, findings, rules)]


def _yaml_findings(path: str, text: str, docs, rules, options) -> list[Finding]:
    from ..config.read import _from_config_map
    findings: list[Finding] = []
    for doc in docs:
        kind_node = doc.get("kind")
        kind = kind_node.scalar if kind_node is not None else None
        if kind == "KubeSchedulerConfiguration":
            contexts = [(ConfigContext(path, text, doc, options), "config")]
        elif kind == "ConfigMap":
            try:
                held = _from_config_map(doc, text, path)
            except InputError as err:   # the data key's text is not YAML: kube-scheduler cannot read it
                held = []
                if any(r.code == "S117" for r in rules):
                    span = Span(path, err.line or 1, err.column or 1, err.line or 1, (err.column or 1) + 1)
                    findings.append(get("S117").finding(err.message, span))
            contexts = [(ConfigContext(path, text, d, options, embedded=True), "config") for d, _ in held]
        elif kind in WORKLOAD_KINDS:
            contexts = [(ManifestContext(path, text, doc, kind, options), "manifest")]
        else:
            continue
        for ctx, input_kind in contexts:
            findings += [f for r in rules if input_kind in r.checks for f in r.checks[input_kind](ctx)]
    return findings

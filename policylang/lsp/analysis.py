"""One open document, analysed: parsed (as far as it parses), loaded with its imports and
used policies, checked, and linted, with every problem found, as the CLI finds it.

Pure: no LSP types here. The server analyses a document after each edit (debounced) and
answers hover, definition, completion and the rest from the latest Analysis.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from ..syntax import ast
from ..check import Checked, check_all
from ..diagnostics import Diagnostic, InputError, PolicyError, sort_and_cap
from ..frozen import frozen
from ..program import Program, load_program
from ..source import Span
from .incremental import IncrementalParser


@frozen
class Problem:
    """A diagnostic to show in this document: the checker's (P…) or lint's (S…)."""
    code: str
    severity: str            # error | warning | info
    message: str
    span: Span               # in this document
    notes: tuple[str, ...] = ()
    edits: tuple = ()        # a lint rule's certain fix: lint.model.Edit offsets into the text
    rule: str = ""           # the lint rule's name (unused-let), empty for the checker's
    elsewhere: Span | None = None   # where in another file it is, when that file is the problem


@frozen
class Analysis:
    path: str
    text: str
    module: ast.Module             # the whole file, or the declarations that parse
    program: Program | None        # None when what the file reaches does not load
    checked: Checked | None        # None when it does not load; set (with errors) when it does not check
    # (when the file does not parse: the declarations that do, loaded and checked)
    problems: tuple[Problem, ...] = ()
    linted: bool = False           # lint has run (or cannot: the file does not check)
    parsed: bool = True            # the whole file parses


def analyse(path: str, text: str, lint: bool = True, parser: IncrementalParser | None = None) -> Analysis:
    """Everything the editor shows about ``text``, the current contents of ``path``. A bug in
    policylang becomes a problem on the first line, as the CLI's exit 3, never a dead server."""
    try:
        found = _analyse(path, text, parser or IncrementalParser())
        return with_lint(found) if lint else found
    except Exception as err:  # noqa: BLE001 - the one place a crash becomes a diagnostic
        return Analysis(path, text, ast.Module(path=path, decls=()), None, None, (_internal(path, err),),
                        linted=True)


def with_lint(analysis: Analysis) -> Analysis:
    """The analysis with lint's findings added (once it checks): lint takes longer than the
    checker on a large file, so the server shows the checker's problems first."""
    if analysis.linted:
        return analysis
    if analysis.checked is None or any(p.severity == "error" for p in analysis.problems):
        return attrs.evolve(analysis, linted=True)
    try:
        found = _lint(analysis.path, analysis.text, analysis.program, analysis.checked)
    except Exception as err:  # noqa: BLE001 - a bug in a rule: shown, the rest of the analysis stands
        found = (_internal(analysis.path, err),)
    return attrs.evolve(analysis, problems=analysis.problems + found, linted=True)


def _internal(path: str, err: Exception) -> Problem:
    message = " ".join(str(err).split())[:500]
    return Problem("internal", "error", f"internal error (a bug in policylang): {type(err).__name__}: {message}; "
                   f"please report it with this file", _top(path))


def _analyse(path: str, text: str, parser: IncrementalParser) -> Analysis:
    module, syntax = parser.parse(text, path)
    if syntax:
        # The declarations that parse are still loaded and checked, for hover, definition and
        # completion in them; what the checker says is not shown (it would miss what is broken).
        try:
            program = load_program(path, text=text, parsed=module)
            checked, _ = check_all(program)
        except (PolicyError, InputError):
            program = checked = None
        return Analysis(path, text, module, program, checked, _problems(path, text, syntax, module), parsed=False)
    try:
        program = load_program(path, text=text, parsed=module)
    except PolicyError as err:
        return Analysis(path, text, module, None, None, _problems(path, text, err.diagnostics, module))
    except InputError as err:  # a file it reaches cannot be read (too large, not a regular file)
        return Analysis(path, text, module, None, None, (Problem("P061", "error", str(err), _top(path)),))
    module = program.root_module
    checked, diagnostics = check_all(program)
    return Analysis(path, text, module, program, checked, _problems(path, text, diagnostics, module))


def _lint(path: str, text: str, program: Program, checked: Checked) -> tuple[Problem, ...]:
    from ..lint import get
    from ..lint.runner import sched_findings
    from ..lint.settings import settings_for_dir

    settings_for_dir.cache_clear()  # pyproject.toml or .policylang.yaml may have changed since
    try:
        findings = sched_findings(path, text, program, checked)
    except InputError as err:  # bad lint settings: say so where the user looks
        return (Problem("lint-settings", "error", f"lint settings: {err}", _top(path)),)
    out = []
    for f in findings:
        rule = get(f.code)
        out.append(Problem(f.code, rule.severity, f"{f.message} ({rule.name})", _here(path, f.span), f.notes,
                           f.edits, rule.name))
    return tuple(out)


def _problems(path: str, text: str, diagnostics, module: ast.Module) -> tuple[Problem, ...]:
    return tuple(_problem(path, d, module) for d in sort_and_cap(diagnostics))


def _problem(path: str, d: Diagnostic, module: ast.Module) -> Problem:
    if _same_file(d.span.path, path):
        return Problem(d.code, d.severity, d.message, _here(path, d.span), d.notes)
    # In a file this one imports or uses: shown on the statement that reaches it.
    where = f"{d.span}" if d.span.line else d.span.path
    return Problem(d.code, d.severity, f"in {where}: {d.message}", _reaching(module, d.span.path) or _top(path),
                   d.notes, elsewhere=d.span)


def _same_file(a: str, b: str) -> bool:
    return a == b or (Path(a).is_absolute() and Path(b).is_absolute() and Path(a).resolve() == Path(b).resolve())


def _here(path: str, span: Span) -> Span:
    """A span of this file; one with no position (a whole-file problem) goes to the first line."""
    return _top(path) if span.line <= 0 else attrs.evolve(span, path=path)


def _top(path: str) -> Span:
    return Span(path, 1, 1, 1, 1)


def _reaching(module: ast.Module, target: str) -> Span | None:
    """The import or use of ``module`` whose file is ``target``, by file name."""
    name = Path(target).name
    for imp in module.of_type(ast.Import):
        if (imp.path and Path(imp.path).name == name) or f"{imp.alias}.sched" == name:
            return imp.span
    from ..program import snake_case
    for profile in module.of_type(ast.Profile):
        for use in profile.uses:
            if (use.is_path and Path(use.ref).name == name) or f"{snake_case(use.ref)}.sched" == name:
                return use.span
    return None

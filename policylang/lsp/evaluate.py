"""The "evaluate on …" code lens: a profile of the open document, as it stands in the editor,
run on a cluster dump named in the workspace settings (`policylang.cluster`), for every pending
pod of the dump, as `policylang eval --profile FILE --cluster DUMP` runs it."""

from __future__ import annotations


from ..syntax import ast
from ..diagnostics import InputError
from ..frozen import frozen
from ..source import Span
from .analysis import Analysis


@frozen
class Lens:
    span: Span
    title: str
    profile: str


@frozen
class Evaluation:
    summary: str     # one line per pod, as eval's first line for it reads
    text: str        # eval's whole text output
    ok: bool         # every pod placed (eval's exit code 0)


def lenses(analysis: Analysis, shown: tuple[str, ...]) -> list[Lens]:
    """A lens on each profile; ``shown``: the dumps as the settings name them."""
    where = ", ".join(shown) if shown else "a cluster dump (set policylang.cluster)"
    return [Lens(Span(p.span.path, p.span.line, p.span.column, p.span.line, p.span.column),
                 f"▶ evaluate on {where}", p.name) for p in analysis.module.of_type(ast.Profile)]


def evaluate(analysis: Analysis, profile: str, clusters: tuple[str, ...]) -> Evaluation:
    """Raises InputError where eval would exit 2: a bad dump, no pending pod, no such profile,
    a document that does not check."""
    from ..compile import compile_all
    from ..engine import Engine
    from ..pending import Held
    from ..report.decisions import Style, decision_text, held_text
    from ..run.schedule import collector_paused

    if not clusters:
        raise InputError("set policylang.cluster in the workspace settings to the dump to evaluate on")
    if not analysis.parsed or analysis.checked is None or any(p.severity == "error" for p in analysis.problems
                                                              if p.code.startswith("P")):
        raise InputError("the policy does not check: fix its errors first")
    plans = compile_all(analysis.checked)
    if profile not in plans:
        raise InputError(f"no profile named '{profile}' in this document")
    engine = Engine(list(clusters), plans={profile: plans[profile]}, executor="vector")
    with collector_paused():
        results = [engine.evaluate(target) for target in engine.pods()]
    style = Style(False)
    texts = [held_text(r, style) if isinstance(r, Held) else decision_text(r, style) for r in results]
    placed = all(not r.gates if isinstance(r, Held) else bool(r.selected) for r in results)
    return Evaluation("\n".join(t.splitlines()[0] for t in texts), "\n\n".join(texts), placed)

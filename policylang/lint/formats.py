"""A lint result as text (like a compiler), JSON, SARIF 2.1.0 (GitHub code scanning) or
GitHub Actions workflow commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..diagnostics import Diagnostic
from .catalogue import all_rules
from .model import SEVERITIES

if TYPE_CHECKING:
    from .runner import Result

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
GITHUB_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("policylang")
    except Exception:  # running from a checkout that is not installed
        return "0.0.0"


def text(result: Result) -> str:
    blocks = []
    for f, rule in result.findings:
        notes = f.notes + (("note: fixable with `policylang lint --fix`",) if f.edits else ())
        d = Diagnostic(f.code, f"{f.message} ({rule.name})", f.span, rule.severity, notes)
        blocks.append(d.render(result.sources))
    counts = {s: sum(rule.severity == s for _, rule in result.findings) for s in SEVERITIES}
    if result.findings:
        parts = [f"{counts[s]} {s}{'s' if counts[s] != 1 and s != 'info' else ''}"
                 for s in reversed(SEVERITIES) if counts[s]]
        fixable = sum(bool(f.edits) for f, _ in result.findings)
        summary = f"found {len(result.findings)} problem{'s' if len(result.findings) != 1 else ''} " \
                  f"({', '.join(parts)})" + (f"; {fixable} fixable with --fix" if fixable else "")
    elif result.input_errors:
        summary = f"no findings, but {len(result.input_errors)} input error{'s' if len(result.input_errors) != 1 else ''} " \
                  f"(above): not every file was linted"
    else:
        summary = f"no problems found in {result.linted} file{'s' if result.linted != 1 else ''}"
    if result.skipped:
        # A skipped file was not linted: said in the summary, so "no problems" is never read as "all clean".
        n = len(result.skipped)
        summary += f"; {n} file{'s' if n != 1 else ''} skipped, not linted (see the notes above)"
    if result.fixed:
        summary += f"; fixed {len(result.fixed)} file{'s' if len(result.fixed) != 1 else ''}"
    return "\n\n".join(blocks + [summary]) + "\n"


def as_json(result: Result) -> str:
    doc = {
        "schema": "policylang/lint/v1",
        "findings": [{
            "code": f.code, "rule": rule.name, "category": rule.category, "severity": rule.severity,
            "message": f.message, "path": f.span.path,
            "line": f.span.line, "column": f.span.column, "end_line": f.span.end_line, "end_column": f.span.end_column,
            "notes": list(f.notes), "fixable": bool(f.edits)} for f, rule in result.findings],
        "fixed": result.fixed,
        "files": result.files,
        "skipped": [{"path": path, "reason": reason} for path, reason in result.skipped],
    }
    return json.dumps(doc, indent=2) + "\n"


def _uri(path: str) -> str:
    """A path relative to the working directory (GitHub resolves it against the checkout)."""
    p = Path(path)
    try:
        p = p.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return p.resolve().as_uri()
    return quote(p.as_posix())


def sarif(result: Result) -> str:
    rules = all_rules()
    index = {r.code: i for i, r in enumerate(rules)}
    driver = {
        "name": "policylang",
        "semanticVersion": _version(),
        "rules": [{
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.rationale},
            "help": {"text": f"{r.rationale}\n\nBad:\n{r.bad}\nGood:\n{r.good}",
                     "markdown": f"{r.rationale}\n\nBad:\n\n```\n{r.bad}```\n\nGood:\n\n```\n{r.good}```\n"},
            "defaultConfiguration": {"level": SARIF_LEVEL[r.severity]},
            "properties": {"category": r.category, "tags": [r.category], "fixable": r.fixable},
        } for r in rules],
    }
    results = []
    for f, rule in result.findings:
        region = {"startLine": max(1, f.span.line), "startColumn": max(1, f.span.column)}
        if f.span.end_line >= f.span.line > 0:
            region.update(endLine=f.span.end_line, endColumn=max(f.span.end_column, 1))
        message = f.message + "".join(f"\n{n}" for n in f.notes)
        results.append({
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": SARIF_LEVEL[rule.severity],
            "message": {"text": message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(f.span.path)},
                                                "region": region}}],
        })
    run = {"tool": {"driver": driver}, "results": results, "columnKind": "unicodeCodePoints"}
    if result.skipped:
        # Files not linted, as the tool's notifications: code scanning shows them beside the results.
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": [
            {"level": "note", "message": {"text": f"skipped, not linted: {reason}"},
             "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)}}}]}
            for path, reason in result.skipped]}]
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2) + "\n"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(result: Result) -> str:
    lines = []
    for f, rule in result.findings:
        props = [f"file={_escape_property(f.span.path)}", f"line={f.span.line}", f"col={f.span.column}"]
        if f.span.end_line >= f.span.line > 0:
            props += [f"endLine={f.span.end_line}", f"endColumn={f.span.end_column}"]
        props.append(f"title={_escape_property(f'{rule.code} {rule.name}')}")
        message = f.message + "".join(f"\n{n}" for n in f.notes)
        lines.append(f"::{GITHUB_COMMAND[rule.severity]} {','.join(props)}::{_escape_data(message)}")
    for path, reason in result.skipped:
        lines.append(f"::notice file={_escape_property(path)},title=skipped::{_escape_data(f'not linted: {reason}')}")
    return "".join(line + "\n" for line in lines)


FORMATS = {"text": text, "json": as_json, "sarif": sarif, "github": github}


def rules_table() -> str:
    rules = all_rules()
    width = max(len(r.name) for r in rules)
    lines = [f"{'CODE':<5} {'SEVERITY':<8} {'CATEGORY':<12} {'NAME':<{width}}  FIX  SUMMARY"]
    for r in rules:
        lines.append(f"{r.code:<5} {r.severity:<8} {r.category:<12} {r.name:<{width}}  "
                     f"{'yes' if r.fixable else '   '}  {r.summary}")
    return "\n".join(lines) + "\n"

"""Completion: what may be typed at the cursor.

- after `x.`: the fields of x's type (the typed cluster model, as the checker infers it), a
  policy's params after `params.`, an imported module's defs after `alias.`;
- after `use`: the plugins (the stdlib's and the program's); inside `use X { … }`: X's params;
- after `normalize` and `code`: the normalisers and status codes the checker accepts;
- elsewhere: the scopes, defs, import aliases, builtins (with their signatures) and keywords.

While the user types `pod.spec.` the file does not parse; the expression before the dot is
typed by analysing the text without the dot and what follows it.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..syntax import ast
from ..builtins import REGISTRY
from ..check import STATUS_CODES
from ..diagnostics import InputError, PolicyError
from ..syntax.format import expr as expr_text, type_text
from ..frozen import frozen
from ..syntax.grammar import keywords
from ..infer import GLOBALS, SCOPE_TYPES
from ..inputs import read_text
from ..syntax.parse import parse
from ..vocabulary import NORMALIZERS
from ..program import confined, policy_roots, stdlib_dir
from ..types import Type, fields_of, record_fields
from .analysis import Analysis, analyse
from .hover import SCOPE_DOCS, signature
from .incremental import IncrementalParser
from .modules import api_doc, comment_above, stdlib_plugins

KINDS = ("field", "function", "keyword", "variable", "module", "class", "property", "value")


@frozen
class Item:
    label: str
    kind: str                # one of KINDS
    detail: str = ""
    doc: str = ""


_AFTER_DOT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?\.([A-Za-z_][A-Za-z0-9_]*)?$")
_USE = re.compile(r"^\s*use\s+[A-Za-z_]*$")
_USE_ARGS = re.compile(r"^\s*use\s+(\"[^\"]*\"|[A-Za-z_][A-Za-z0-9_]*)\s*\{(?:[^}]*,)?\s*[A-Za-z_]*$")
_NORMALIZE = re.compile(r"\bnormalize\s+[a-z]*$")
_CODE = re.compile(r"\bcode\s+[A-Za-z]*$")


def complete(analysis: Analysis, line: int, column: int, parser: IncrementalParser | None = None) -> list[Item]:
    """Items for the cursor at 1-based (line, column) of ``analysis.text`` (``parser``: the
    document's, so typing the expression before a dot parses only the declaration it is in)."""
    lines = analysis.text.splitlines()
    before = lines[line - 1][:column - 1] if 0 < line <= len(lines) else ""
    if _NORMALIZE.search(before):
        return [Item(n, "value", "normalizer") for n in NORMALIZERS] + [Item("with", "keyword", "normalize with EXPR")]
    if _CODE.search(before):
        return [Item(c, "value", "status code") for c in STATUS_CODES]
    if _USE.match(before):
        return _plugins(analysis)
    m = _USE_ARGS.match(before)
    if m:
        return _use_params(analysis, m.group(1))
    m = _AFTER_DOT.search(before)
    if m and not _in_string(before):
        partial = m.group(2) or ""
        return _members(analysis, line, column - len(partial) - 1, m.group(1), parser)
    return _everything(analysis)


def _in_string(before: str) -> bool:
    return before.count('"') % 2 == 1 or before.count("'") % 2 == 1


# ---- after a dot ------------------------------------------------------------------------

def _members(analysis: Analysis, line: int, dot: int, word: str | None, parser) -> list[Item]:
    """What may follow the dot at 1-based column ``dot``."""
    found = _imported(analysis, word) if word is not None else None
    if found is not None:
        module, source = found
        return [Item(d.name, "function", f"def {word}.{d.name}({', '.join(d.params)})",
                     comment_above(source, d.span.line)) for d in module.of_type(ast.Def)]
    t = _type_before(analysis, line, dot, parser)
    fields = fields_of(t) if t is not None else None
    if fields is None:
        return []
    if t.name:
        return [Item(name, "field", f"{t.name}.{name}: {info.type}", api_doc(t.name, name))
                for name, info in record_fields(t.name).items()]
    # An anonymous record: `params` (documented by the param declarations) or a record literal.
    params = {p.name: p for p in analysis.module.of_type(ast.Param)}
    return [Item(name, "property", str(ft), _param_doc(analysis.text, params[name]) if name in params else "")
            for name, ft in fields.items()]


def _imported(analysis: Analysis, alias: str) -> tuple[ast.Module, str] | None:
    """The module an import's alias names, and its text (also while the document does not parse:
    `c.` is being typed)."""
    imp = next((i for i in analysis.module.of_type(ast.Import) if i.alias == alias), None)
    if imp is None:
        return None
    target = str((Path(analysis.path).parent / imp.path).resolve()) if imp.path else \
        str(stdlib_dir() / f"{alias}.sched")
    return _policy_file(analysis, target)


def _type_before(analysis: Analysis, line: int, dot: int, parser) -> Type | None:
    """The type of the expression ending just before the dot at (line, dot)."""
    lines = analysis.text.splitlines(keepends=True)
    row = lines[line - 1]
    end = dot + len(re.match(r"[A-Za-z0-9_]*", row[dot:]).group(0))  # past the dot and the partial name
    # Without the dot and the partial name; then also with the brackets the line leaves open
    # closed (`any(c in xs where c.` is typed before its `)`).
    for closers in ("", _closers(row[:dot - 1])):
        patched = "".join(lines[:line - 1]) + row[:dot - 1] + closers + row[end:] + "".join(lines[line:])
        found = analyse(analysis.path, patched, lint=False, parser=parser)
        if found.parsed and found.checked is not None:
            break
    else:
        return _scope_chain(row[:dot - 1])
    best = None
    for decl in found.module.decls:
        for node in _nodes(decl):
            s = getattr(node, "span", None)
            if s is not None and (s.end_line, s.end_column) == (line, dot) and node in found.checked.expr_types:
                if best is None or (s.line, s.column) > (best.span.line, best.span.column):
                    best = node
    return found.checked.expr_types.get(best) if best is not None else _scope_chain(row[:dot - 1])


def _closers(prefix: str) -> str:
    """The brackets ``prefix`` opens and does not close, closed, innermost first."""
    pairs, stack = {"(": ")", "[": "]", "{": "}"}, []
    for ch in re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', "", prefix):
        if ch in pairs:
            stack.append(pairs[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
    return "".join(reversed(stack))


def _nodes(decl):
    from ..lint.sched_ast import decl_exprs, walk
    for root in decl_exprs(decl):
        yield from walk(root)


_CHAIN = re.compile(r"\b(pod|node|cluster)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)$")


def _scope_chain(before: str) -> Type | None:
    """When nothing around parses: a plain chain of fields from a scope (`pod.spec`)."""
    m = _CHAIN.search(before)
    if not m:
        return None
    t = SCOPE_TYPES[m.group(1)]
    for name in filter(None, m.group(2).split(".")):
        fields = fields_of(t)
        if not fields or name not in fields:
            return None
        t = fields[name]
    return t


# ---- profiles ----------------------------------------------------------------------------

def _plugins(analysis: Analysis) -> list[Item]:
    names = dict(stdlib_plugins())
    if analysis.program is not None:
        names.update(analysis.program.policies)
    return [Item(name, "class", "plugin") for name in sorted(names) if name]


def _use_params(analysis: Analysis, ref: str) -> list[Item]:
    program = analysis.program
    if ref.startswith('"'):
        target = str((Path(analysis.path).parent / ref.strip('"')).resolve())
    else:
        target = (program.policies.get(ref) if program is not None else None) or stdlib_plugins().get(ref)
    found = _policy_file(analysis, target) if target else None
    if found is None:
        return []
    module, source = found
    return [Item(p.name, "property", type_text(p.type) + (f" = {expr_text(p.default)}" if p.default else ""),
                 comment_above(source, p.span.line)) for p in module.of_type(ast.Param)]


def _policy_file(analysis: Analysis, target: str) -> tuple[ast.Module, str] | None:
    """The module and text of a policy a `use` names: loaded with the program, else read (while
    the document does not parse), if the loader would let the document reach it."""
    program = analysis.program
    if program is not None and target in program.modules:
        return program.modules[target], program.sources.get(target, "")
    if not target.endswith(".sched") or not confined(target, policy_roots(Path(analysis.path).parent)):
        return None
    try:
        text = read_text(target)
        return parse(text, target), text
    except (InputError, PolicyError):
        return None


def _param_doc(text: str, p: ast.Param) -> str:
    default = f" = {expr_text(p.default)}" if p.default is not None else ""
    doc = comment_above(text, p.span.line)
    return f"param {p.name}: {type_text(p.type)}{default}" + (f"\n\n{doc}" if doc else "")


# ---- anywhere else ------------------------------------------------------------------------

def _everything(analysis: Analysis) -> list[Item]:
    items = [Item(s, "variable", str(SCOPE_TYPES.get(s) or GLOBALS.get(s) or "params"), SCOPE_DOCS[s])
             for s in SCOPE_DOCS]
    for d in analysis.module.of_type(ast.Def):
        items.append(Item(d.name, "function", f"def {d.name}({', '.join(d.params)})",
                          comment_above(analysis.text, d.span.line)))
    for imp in analysis.module.of_type(ast.Import):
        items.append(Item(imp.alias, "module", f"import {imp.path or imp.alias}"))
    items += [Item(name, "function", signature(name), REGISTRY[name].doc) for name in sorted(REGISTRY)]
    items += [Item(k, "keyword") for k in keywords()]
    return items

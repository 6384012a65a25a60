"""Hover: what the thing under the cursor is, in Markdown.

A field of `pod`/`node`/… gets its API path, type and default (read off the typed cluster
model, as the checker reads it), a builtin its signature and doc (builtins.REGISTRY), a def its
signature and the comment above it, `params.x` its type and default, a plugin named by `use`
the header comment of its file and its params, a scope (`pod`, `node`, …) what it holds.
"""

from __future__ import annotations

import attrs

from ..syntax import ast
from ..builtins import REGISTRY
from ..syntax.format import expr as expr_text, type_text
from ..frozen import frozen
from ..infer import GLOBALS, SCOPE_TYPES
from ..source import Span
from ..types import Type, model_class
from .analysis import Analysis
from .locate import chain_at, contains
from .modules import api_doc, comment_above, header_comment, imported_module, used_module

SCOPE_DOCS = {
    "pod": "the incoming pod, the one being scheduled",
    "node": "the candidate node (`node.pods`: the pods bound to it)",
    "cluster": "the whole cluster: `cluster.nodes`, `cluster.pods`, `cluster.namespaces`, …",
    "feasible": "the nodes that passed filtering (in scores)",
    "score": "this node's raw score (in `normalize with`)",
    "scores": "every feasible node's raw score (in `normalize with`)",
    "params": "this policy's params, as a profile's `use` sets them",
    "kubernetes": "the Kubernetes decided as: `kubernetes.version` (\"1.35\"), `kubernetes.minor` (35), "
                  "`kubernetes.gates.NAME` (--kubernetes-version, --feature-gates; docs/versions.md)",
}


# What each comprehension and `fold` computes (the README's language brief, in one line each).
COMPREHENSION_DOCS = {
    "list": "`[e for x in xs where c]`: the list of e for each x of xs where c holds",
    "any": "`any(x in xs where c)`: whether c holds for some x of xs",
    "all": "`all(x in xs where c)`: whether c holds for every x of xs",
    "count": "`count(x in xs where c)`: how many x of xs c holds for",
    "sum": "`sum(e for x in xs where c)`: the sum of e over the x of xs where c holds",
    "min": "`min(e for x in xs where c)`: the least e over the x of xs where c holds (null if none)",
    "max": "`max(e for x in xs where c)`: the greatest e over the x of xs where c holds (null if none)",
    "first": "`first(x in xs where c)`: the first x of xs where c holds, or null",
    "group": "`group(x in xs by key)`: the x of xs grouped by key, a map from each key to its list",
    "fold": "`fold(acc = init for x in xs: e)`: acc starts as init and becomes e for each x in turn; "
            "the last acc",
}


@frozen
class Hover:
    markdown: str
    span: Span


def hover(analysis: Analysis, line: int, column: int) -> Hover | None:
    chain = chain_at(analysis.module, line, column)
    if not chain:
        return None
    node = chain[-1]
    text = None
    if isinstance(node, ast.Call) and contains(node.func_span, line, column):
        text, span = _call(analysis, node), node.func_span
    elif isinstance(node, ast.Field):
        text, span = _field(analysis, node), node.span
    elif isinstance(node, ast.Name):
        text, span = _name(analysis, node), node.span
    elif isinstance(node, ast.Use):
        text, span = _use(analysis, node), node.span
    elif isinstance(node, ast.UseArg) and isinstance(chain[-2], ast.Use):
        text, span = _use_arg(analysis, chain[-2], node), node.span
    elif isinstance(node, ast.Import):
        text, span = _import(analysis, node), node.span
    elif isinstance(node, ast.Param):
        text, span = _param(analysis, analysis.path, node), node.span
    elif isinstance(node, ast.Def):
        text, span = _def(analysis.text, node), node.span
    elif isinstance(node, (ast.Comprehension, ast.Fold)) and _on_keyword(analysis.text, node, line, column):
        kind = node.kind if isinstance(node, ast.Comprehension) else "fold"
        t = _type(analysis, node)
        text, span = "\n\n".join(p for p in (_code(f"{kind}: {t}") if t else "", COMPREHENSION_DOCS[kind]) if p), \
            node.span
    if text is None:
        t = _type(analysis, node)
        if t is None or isinstance(node, (ast.Filter, ast.Score, ast.Rule, ast.Profile, ast.PolicyDecl)):
            return None
        text, span = _code(f"{_short(node)}: {t}"), node.span
    return Hover(text, span)


def _on_keyword(text: str, node, line: int, column: int) -> bool:
    """Whether (line, column) is on the word a comprehension or fold starts with (`count`)."""
    kind = node.kind if isinstance(node, ast.Comprehension) else "fold"
    if kind == "list":
        return (line, column) == (node.span.line, node.span.column)
    lines = text.splitlines()
    row = lines[node.span.line - 1] if 0 < node.span.line <= len(lines) else ""
    start = node.span.column - 1
    return line == node.span.line and row[start:start + len(kind)] == kind and column <= node.span.column + len(kind)


def _code(text: str) -> str:
    return f"```sched\n{text}\n```"


def _short(node) -> str:
    try:
        text = expr_text(node)
    except Exception:  # noqa: BLE001 - a statement, not an expression: no text to show
        return type(node).__name__.lower()
    return text if len(text) <= 60 else text[:57] + "…"


def _type(analysis: Analysis, node) -> Type | None:
    return analysis.checked.expr_types.get(node) if analysis.checked is not None else None


# ---- fields and names -------------------------------------------------------------------

def _field(analysis: Analysis, node: ast.Field) -> str | None:
    if isinstance(node.target, ast.Name) and node.target.id == "params":
        param = next((p for p in analysis.module.of_type(ast.Param) if p.name == node.name), None)
        return _param(analysis, analysis.path, param) if param is not None else None
    owner, t = _type(analysis, node.target), _type(analysis, node)
    if owner is None or t is None or owner.kind != "record":
        return None
    where = f"{owner.name}.{node.name}" if owner.name else f"{_short(node.target)}.{node.name}"
    lines = [_code(f"(field) {where}: {t}")]
    doc = api_doc(owner.name, node.name) if owner.name else ""
    if doc:
        lines.append(doc)
    path = _api_path(analysis, node)
    if path and path != where:
        lines.append(f"API field `{path}`")
    default = _default(owner.name, node.name)
    if default is not None:
        lines.append(f"default: `{default}`")
    kind_doc = _kind_doc(t)
    if kind_doc:
        lines.append(kind_doc)
    return "\n\n".join(lines)


def _api_path(analysis: Analysis, node: ast.Field) -> str | None:
    """`Pod.spec.tolerations` for `pod.spec.tolerations`: the chain of fields down from a scope."""
    names = []
    while isinstance(node, ast.Field):
        names.append(node.name)
        node = node.target
    if isinstance(node, ast.Name) and node.id in SCOPE_TYPES and _type(analysis, node) == SCOPE_TYPES[node.id]:
        t = SCOPE_TYPES[node.id]
        root = t.name if t.kind == "record" else node.id
        return ".".join([root, *reversed(names)])
    return None


def _default(record: str, field: str):
    """The API server's default of a model field, as the model declares it."""
    from ..api.model import api_name
    cls = model_class(record)
    if cls is None:
        return None
    for f in attrs.fields(cls):
        if api_name(f.name) == field:
            if f.default is attrs.NOTHING or isinstance(f.default, attrs.Factory):
                return None
            return "null" if f.default is None else repr(f.default).lower() if isinstance(f.default, bool) \
                else f'"{f.default}"' if isinstance(f.default, str) else f.default
    return None


def _kind_doc(t: Type) -> str | None:
    """The fields of a record type (or of a list's elements), so a hover says what is inside."""
    inner = t.args[0] if t.kind == "list" else t
    if inner.kind != "record" or not inner.name:
        return None
    from ..types import record_fields
    fields = record_fields(inner.name)
    if not fields:
        return None
    shown = ", ".join(f"`{n}`" for n in list(fields)[:12])
    more = f", … ({len(fields)} fields)" if len(fields) > 12 else ""
    return f"{inner.name} has {shown}{more}"


def _name(analysis: Analysis, node: ast.Name) -> str | None:
    t = _type(analysis, node)
    if node.id in SCOPE_DOCS and (t is None or node.id == "params"
                                  or t == (SCOPE_TYPES.get(node.id) or GLOBALS.get(node.id))):
        shown = f"{node.id}: {t}" if t is not None and node.id != "params" else node.id
        kind_doc = api_doc(t.name) if t is not None and t.kind == "record" and t.name else ""
        return "\n\n".join(p for p in (_code(shown), SCOPE_DOCS[node.id], kind_doc) if p)
    return _code(f"{node.id}: {t}") if t is not None else None


# ---- calls, defs, params --------------------------------------------------------------

def _call(analysis: Analysis, node: ast.Call) -> str | None:
    if "." in node.func:
        alias, name = node.func.split(".", 1)
        target = imported_module(analysis, alias)
        d = next((d for d in target.of_type(ast.Def) if d.name == name), None) if target else None
        source = analysis.program.sources.get(target.path, "") if target and analysis.program else ""
        return _def(source, d, prefix=f"{alias}.") if d is not None else None
    d = next((d for d in analysis.module.of_type(ast.Def) if d.name == node.func), None)
    if d is not None:
        return _def(analysis.text, d)
    b = REGISTRY.get(node.func)
    if b is None:
        return None
    return _code(signature(node.func, _type(analysis, node))) + "\n\n" + b.doc


def signature(name: str, result: Type | None = None) -> str:
    """A builtin's signature: `requests(Pod) -> map[string, quantity]`."""
    b = REGISTRY[name]
    params = [str(t) for t in b.params]
    if b.variadic and params:
        params[-1] += ", …"
    out = b.result if not callable(b.result) else result
    return f"{name}({', '.join(params)})" + (f" -> {out}" if out is not None else "")


def _def(text: str, d: ast.Def, prefix: str = "") -> str:
    doc = comment_above(text, d.span.line)
    head = _code(f"def {prefix}{d.name}({', '.join(d.params)})")
    return head + (f"\n\n{doc}" if doc else "")


def _param(analysis: Analysis, path: str, p: ast.Param) -> str:
    source = analysis.text if path == analysis.path else (analysis.program.sources.get(path, "")
                                                          if analysis.program else "")
    default = f" = {expr_text(p.default)}" if p.default is not None else ""
    doc = comment_above(source, p.span.line)
    return _code(f"param {p.name}: {type_text(p.type)}{default}") + (f"\n\n{doc}" if doc else "")


# ---- plugins and imports ---------------------------------------------------------------

def _use(analysis: Analysis, use: ast.Use) -> str | None:
    target = used_module(analysis, use)
    if target is None:
        return None
    return plugin_doc(analysis, target, use.ref)


def _use_arg(analysis: Analysis, use: ast.Use, arg: ast.UseArg) -> str | None:
    """`scoringStrategy: …` in a `use`: the param it sets, as the plugin declares it."""
    target = used_module(analysis, use)
    param = next((p for p in target.of_type(ast.Param) if p.name == arg.name), None) if target else None
    return _param(analysis, target.path, param) if param is not None else None


def plugin_doc(analysis: Analysis, module: ast.Module, ref: str) -> str:
    """A plugin's header comment, then its params with their types and defaults."""
    source = analysis.program.sources.get(module.path, "") if analysis.program else ""
    name = module.policy.name if module.policy is not None else ref
    parts = [_code(f"policy {name}"), header_comment(source)]
    params = module.of_type(ast.Param)
    if params:
        parts.append("params: " + ", ".join(
            f"`{p.name}: {type_text(p.type)}" + (f" = {expr_text(p.default)}`" if p.default is not None else "`")
            for p in params))
    return "\n\n".join(p for p in parts if p)


def _import(analysis: Analysis, imp: ast.Import) -> str | None:
    target = imported_module(analysis, imp.alias)
    if target is None:
        return None
    source = analysis.program.sources.get(target.path, "") if analysis.program else ""
    defs = ", ".join(f"`{d.name}({', '.join(d.params)})`" for d in target.of_type(ast.Def))
    return "\n\n".join(p for p in (_code(f"import {imp.alias}"), header_comment(source),
                                   f"defs: {defs}" if defs else "") if p)

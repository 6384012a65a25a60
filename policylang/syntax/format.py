"""Format: the one canonical layout of a .sched file.

Declarations and statements keep the blank lines between them (at most one) and their
comments; everything else is canonical: four-space indents, one statement per line,
`reason` and `code` of a reject on lines of their own, and expressions on one line when
they fit in 100 columns, broken at their loosest operator when they do not. A file that
does not parse is never rewritten: `format_source` raises PolicyError.
"""

from __future__ import annotations

import re

from . import ast
from .parse import parse

WIDTH = 100
INDENT = "    "
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COMPARISON = ast.PRECEDENCE["=="]
_SHORT_SOURCE = _COMPARISON + 1  # the source of `any(t in xs)`, the right operand of `in`
_BLOCKS = (ast.Filter, ast.Score, ast.Rule, ast.Profile)


def format_source(text: str, path: str = "<input>") -> str:
    module = parse(text, path)
    return _Formatter(text).module(module)


def format_module(module: ast.Module) -> str:
    """The canonical text of a syntax tree built in code (no comments or blank lines to keep)."""
    return _Formatter("").module(module)


# ---- expressions --------------------------------------------------------------------

def expr(e, parent: int = 0) -> str:
    """An expression on one line, parenthesised where the tree needs it."""
    if isinstance(e, ast.Literal):
        text = _literal(e)
        # A negative number is a unary minus to the parser: `(-5).x` is not `-5.x`, which is -(5.x).
        return f"({text})" if parent > 8 and text.startswith("-") else text
    if isinstance(e, ast.Interpolated):
        return _interpolated(e)
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Field):
        return f"{expr(e.target, 9)}.{e.name}"
    if isinstance(e, ast.Index):
        return f"{expr(e.target, 9)}[{expr(e.key)}]"
    if isinstance(e, ast.Call):
        return f"{e.func}({', '.join(expr(a) for a in e.args)})"
    if isinstance(e, ast.Unary):
        if e.op == "not":
            return _paren(f"not {expr(e.operand, 3)}", 3, parent)
        return _paren(f"-{expr(e.operand, 8)}", 8, parent)
    if isinstance(e, ast.Binary):
        prec = ast.PRECEDENCE[e.op]
        op = "not in" if e.op == "notin" else e.op
        if e.op == "??":  # right-associative
            left, right = expr(e.left, prec + 1), expr(e.right, prec)
        elif prec == _COMPARISON:  # comparisons do not chain
            left, right = expr(e.left, prec + 1), expr(e.right, prec + 1)
        else:
            left, right = expr(e.left, prec), expr(e.right, prec + 1)
        return _paren(f"{left} {op} {right}", prec, parent)
    if isinstance(e, ast.If):
        text = f"if {expr(e.cond)} then {expr(e.then, 1)} else {expr(e.else_)}"
        return f"({text})" if parent else text
    if isinstance(e, ast.ListExpr):
        return "[" + ", ".join(expr(i) for i in e.items) + "]"
    if isinstance(e, ast.MapExpr):
        return "{" + ", ".join(f"{_key(k, e.record)}: {expr(v)}" for k, v in zip(e.keys, e.values)) + "}"
    if isinstance(e, ast.Comprehension):
        parts = [expr(x) if x is not None else None for x in (e.element, e.source, e.where, e.by)]
        if e.element is None:  # `x in xs` is a comparison: `any(t in (a or b))` keeps its parentheses
            parts[1] = expr(e.source, _SHORT_SOURCE)
        return _comprehension(e, parts)
    if isinstance(e, ast.Fold):
        return f"fold({e.acc} = {expr(e.init)} for {e.var} in {expr(e.source)}: {expr(e.body)})"
    raise TypeError(f"cannot format {type(e).__name__}")


def _paren(text: str, prec: int, parent: int) -> str:
    return f"({text})" if prec < parent else text


def _key(k: str, record: bool) -> str:
    return k if record else quote(k)


def _escape(text: str, quote_char: str) -> str:
    """``text`` inside a string delimited by ``quote_char``, with the escapes the parser reads
    back: backslash, the quote, newline, tab, and ``${`` (which would start a hole); every other
    character is written as itself (the grammar has no ``\\u`` escape)."""
    return (text.replace("\\", "\\\\").replace(quote_char, "\\" + quote_char).replace("\n", "\\n")
            .replace("\t", "\\t").replace("${", "\\${"))


def quote(text: str) -> str:
    """A string literal that parses back to ``text``."""
    return '"' + _escape(text, '"') + '"'


def _literal(e: ast.Literal) -> str:
    if e.text:
        return e.text
    if e.kind == "string":
        return quote(e.value)
    return {"bool": lambda v: "true" if v else "false", "null": lambda v: "null"}.get(e.kind, str)(e.value)


def _interpolated(e: ast.Interpolated) -> str:
    holes = [expr(p) for p in e.parts if not isinstance(p, str)]
    q = "'" if any('"' in h for h in holes) else '"'
    out = []
    for part in e.parts:
        if isinstance(part, str):
            out.append(_escape(part, q))
        else:
            out.append("${" + expr(part) + "}")
    return q + "".join(out) + q


def _comprehension(e: ast.Comprehension, parts: list) -> str:
    element, source, where, by = parts
    body = f"{element} for {e.var} in {source}" if element is not None else f"{e.var} in {source}"
    if where is not None:
        body += f" where {where}"
    if by is not None:
        body += f" by {by}"
    return f"[{body}]" if e.kind == "list" else f"{e.kind}({body})"


def _needs_parens(e, parent: int) -> bool:
    if isinstance(e, ast.Binary):
        return ast.PRECEDENCE[e.op] < parent
    if isinstance(e, ast.Unary):
        return (3 if e.op == "not" else 8) < parent
    return isinstance(e, ast.If) and parent > 0


def layout(e, indent: str, lead: str, parent: int = 0) -> list[str]:
    """``lead`` followed by ``e``, as lines: one if it fits, else broken at the loosest point,
    continuation lines hanging under the expression's first character."""
    flat = indent + lead + expr(e, parent)
    if len(flat) <= WIDTH:
        return [flat]
    hang = " " * (len(indent) + len(lead))
    if _needs_parens(e, parent):
        lines = layout(e, indent, lead + "(")
        lines[-1] += ")"
        return lines
    if isinstance(e, ast.Binary) and e.op in ("and", "or"):
        operands = _chain(e, e.op)
        lines = layout(operands[0], indent, lead, ast.PRECEDENCE[e.op])
        for operand in operands[1:]:
            lines += layout(operand, hang, f"{e.op} ", ast.PRECEDENCE[e.op] + 1)
        return lines
    if isinstance(e, ast.Binary):
        prec = ast.PRECEDENCE[e.op]
        op = "not in" if e.op == "notin" else e.op
        left_parent = prec + 1 if e.op == "??" or prec == _COMPARISON else prec
        right_parent = prec if e.op == "??" else prec + 1
        return layout(e.left, indent, lead, left_parent) + layout(e.right, hang, f"{op} ", right_parent)
    if isinstance(e, ast.Unary) and e.op == "not":
        return layout(e.operand, indent, lead + "not ", 3)
    if isinstance(e, ast.If):
        lines, branch, first = [], e, True
        while isinstance(branch, ast.If):
            head = f"{lead}if " if first else "else if "
            where = indent if first else hang
            one = f"{where}{head}{expr(branch.cond)} then {expr(branch.then, 1)}"
            if len(one) <= WIDTH:
                lines.append(one)
            else:  # the condition on its own line, then the branch under it
                lines += layout(branch.cond, where, head)
                lines += layout(branch.then, hang, "then ", 1)
            branch, first = branch.else_, False
        return lines + layout(branch, hang, "else ")
    if isinstance(e, ast.Comprehension):
        opening = "[" if e.kind == "list" else f"{e.kind}("
        pad = hang + " " * len(opening)
        if e.element is not None:
            lines = layout(e.element, indent, lead + opening)
            lines += layout(e.source, pad, f"for {e.var} in ")
        else:
            lines = layout(e.source, indent, f"{lead}{opening}{e.var} in ", _SHORT_SOURCE)
        if e.where is not None:
            lines += layout(e.where, pad, "where ")
        if e.by is not None:
            lines += layout(e.by, pad, "by ")
        lines[-1] += "]" if e.kind == "list" else ")"
        return lines
    if isinstance(e, ast.Fold):
        pad = hang + " " * len("fold(")
        lines = layout(e.init, indent, f"{lead}fold({e.acc} = ")
        lines += layout(e.source, pad, f"for {e.var} in ")
        lines[-1] += ":"
        lines += layout(e.body, pad, "")
        lines[-1] += ")"
        return lines
    items = _items_of(e)
    if items:
        # Fill each line with as many items as fit; an item too long alone is broken itself.
        opening, parts, closing = items
        pad = hang + " " * len(opening)
        lines = [indent + lead + opening]
        for i, (prefix, item) in enumerate(parts):
            end = "," if i < len(parts) - 1 else closing
            text = prefix + expr(item) + end
            fresh = lines[-1] == indent + lead + opening or lines[-1] == pad.rstrip() + ""
            joined = lines[-1] + ("" if fresh else " ") + text
            if len(joined) <= WIDTH:
                lines[-1] = joined
            elif len(pad + text) <= WIDTH:
                lines.append(pad + text)
            else:
                sub = layout(item, pad, prefix)
                sub[-1] += end
                if fresh:
                    lines[-1] = lines[-1] + sub[0][len(pad):] if lines[-1].endswith(opening) else lines[-1]
                    lines += sub[1:]
                else:
                    lines += sub
        return lines
    return [flat]


def _items_of(e):
    """A call's, list's or map's opening text, (prefix, item) parts and closing text."""
    if isinstance(e, ast.Call) and e.args:
        return f"{e.func}(", [("", a) for a in e.args], ")"
    if isinstance(e, ast.ListExpr) and e.items:
        return "[", [("", i) for i in e.items], "]"
    if isinstance(e, ast.MapExpr) and e.keys:
        return "{", [(f"{_key(k, e.record)}: ", v) for k, v in zip(e.keys, e.values)], "}"
    return None


def _chain(e, op: str) -> list:
    if isinstance(e, ast.Binary) and e.op == op:
        return _chain(e.left, op) + [e.right]
    return [e]


def type_text(t) -> str:
    if isinstance(t, ast.RecordTypeRef):
        return "{" + ", ".join(f"{n}: {type_text(ft)}" for n, ft in t.fields) + "}"
    if t.args:
        return f"{t.name}[{', '.join(type_text(a) for a in t.args)}]"
    return t.name


# ---- declarations and statements ---------------------------------------------------------

class _Formatter:
    def __init__(self, text: str):
        # Lines as the parser counts them: only "\n" ends one (str.splitlines would also break at
        # "\r", "\x85", "\u2028", … inside string literals and misplace comments).
        self.lines = text.split("\n")
        self.comments = _comments(self.lines)  # line → comment text
        self.emitted: set[int] = set()

    def _blank_between(self, after_line: int, before_line: int) -> bool:
        return any(not self.lines[i - 1].strip() for i in range(after_line + 1, before_line)
                   if 0 < i <= len(self.lines))

    def _leading(self, prev_end: int, start: int, indent: str) -> list[str]:
        """The comments between the previous item and this one, with their blank lines."""
        out, last = [], None
        for line in sorted(self.comments):
            if prev_end < line < start and line not in self.emitted:
                if last is not None and self._blank_between(last, line):
                    out.append("")
                out.append(indent + self.comments[line])
                last = line
                self.emitted.add(line)
        if last is not None and start < 10**9 and self._blank_between(last, start):
            out.append("")
        return out

    def _items(self, items, indent: str, render, prev_end: int) -> list[str]:
        out: list[str] = []
        for i, item in enumerate(items):
            start, end = item.span.line, item.span.end_line
            first_content = min([start] + [ln for ln in self.comments if prev_end < ln < start])
            block = isinstance(item, (ast.Filter, ast.Score, ast.Rule, ast.Profile))
            # Blocks stand apart from their neighbours; other blank lines are the author's.
            if i > 0 and (self._blank_between(prev_end, first_content) or
                          (not indent and (block or isinstance(items[i - 1], _BLOCKS)))):
                out.append("")
            out += self._leading(prev_end, start, indent)
            # A comment inside a one-statement expression moves above it; blocks keep theirs.
            inner = [] if block else [ln for ln in sorted(self.comments)
                                      if start <= ln < end and ln not in self.emitted]
            for ln in inner:
                out.append(indent + self.comments[ln])
                self.emitted.add(ln)
            lines = render(item, indent)
            if end in self.comments and end not in self.emitted:
                lines[-1] += "  " + self.comments[end]
                self.emitted.add(end)
            out += lines
            prev_end = end
        return out

    def module(self, m: ast.Module) -> str:
        out = self._items(m.decls, "", self.decl, 0)
        rest = self._leading(max([d.span.end_line for d in m.decls], default=0), 10**9, "")
        if rest:
            if out:
                out.append("")
            out += rest
        return "\n".join(out) + "\n" if out else ""

    def decl(self, d, indent: str) -> list[str]:
        if isinstance(d, ast.PolicyDecl):
            return [f"policy {d.name}" + (f" implements {', '.join(d.implements)}" if d.implements else "")
                    + (f" assumes filter {', '.join(d.assumes_filter)}" if d.assumes_filter else "")]
        if isinstance(d, ast.Import):
            return [f"import {quote(d.path)} as {d.alias}" if d.path is not None else f"import {d.alias}"]
        if isinstance(d, ast.Param):
            head = f"param {d.name}: "
            if d.default is None:
                return self._typed(head, d.type, "")
            typed = self._typed(head, d.type, " = ")
            return typed[:-1] + self._value(d.default, "", typed[-1])
        if isinstance(d, ast.Def):
            head = f"def {d.name}({', '.join(d.params)}) ="
            one = f"{head} {expr(d.body)}"
            return [one] if len(one) <= WIDTH else [head] + layout(d.body, INDENT, "")
        if isinstance(d, ast.Filter) or isinstance(d, ast.Score):
            kind = "filter" if isinstance(d, ast.Filter) else "score"
            return self._block(f"{kind} {d.name} {{", d, d.body, self.stmt)
        if isinstance(d, ast.Rule):
            when = f" when {expr(d.when)}" if d.when is not None else ""
            return self._block(f"rule {d.name}{when} {{", d, d.body, self.rule_stmt)
        if isinstance(d, ast.Profile):
            items = list(d.uses)
            lines = self._block(f"profile {d.name} {{", d, items, self.use)
            if d.percentage_of_nodes_to_score is not None:
                lines.insert(-1, f"{INDENT}percentage_of_nodes_to_score {expr(d.percentage_of_nodes_to_score)}")
            return lines
        raise TypeError(type(d).__name__)

    def _block(self, head: str, d, body, render) -> list[str]:
        # A comment on the header line (`filter f {  # why`) stays there.
        first = d.span.line
        if first in self.comments and first not in self.emitted and first != d.span.end_line:
            head += "  " + self.comments[first]
            self.emitted.add(first)
        lines = [head] + self._items(body, INDENT, render, d.span.line)
        closing = d.span.end_line
        lines += self._leading(max([s.span.end_line for s in body], default=d.span.line), closing, INDENT)
        return lines + ["}"]

    def _typed(self, head: str, t, tail: str) -> list[str]:
        flat = head + type_text(t) + tail
        if len(flat) <= WIDTH or not isinstance(t, ast.RecordTypeRef):
            return [flat]
        return [head + "{"] + [f"{INDENT}{n}: {type_text(ft)}," for n, ft in t.fields[:-1]] + \
               [f"{INDENT}{t.fields[-1][0]}: {type_text(t.fields[-1][1])}", "}" + tail]

    def _value(self, e, indent: str, lead: str) -> list[str]:
        flat = lead + expr(e)
        if len(flat) <= WIDTH or not isinstance(e, (ast.MapExpr, ast.ListExpr)):
            return layout(e, indent, lead[len(indent):]) if lead.startswith(indent) else [flat]
        opening, closing = ("{", "}") if isinstance(e, ast.MapExpr) else ("[", "]")
        lines = [lead + opening]
        items = (list(zip(e.keys, e.values)) if isinstance(e, ast.MapExpr) else [(None, v) for v in e.items])
        for i, (k, v) in enumerate(items):
            comma = "," if i < len(items) - 1 else ""
            prefix = indent + INDENT + (f"{_key(k, e.record)}: " if k is not None else "")
            sub = self._value(v, indent + INDENT, prefix)
            sub[-1] += comma
            lines += sub
        return lines + [indent + closing]

    def stmt(self, s, indent: str) -> list[str]:
        more = indent + INDENT
        if isinstance(s, ast.Skip):
            return layout(s.cond, indent, "skip when ")
        if isinstance(s, ast.Let):
            return layout(s.value, indent, f"let {s.name} = ")
        if isinstance(s, ast.Restrict):
            return layout(s.names, indent, "restrict nodes to ")
        if isinstance(s, ast.Value):
            return layout(s.expr, indent, "value ")
        if isinstance(s, ast.Normalize):
            return [f"{indent}normalize {s.method}"] if s.expr is None else layout(s.expr, indent, "normalize with ")
        if isinstance(s, ast.Reject):
            lines = layout(s.cond, indent, "reject pod when " if s.pod else "reject when ")
            lines += layout(s.reason, more, "reason ")
            if s.code != "Unschedulable":
                lines.append(f"{more}code {s.code}")
            return lines
        raise TypeError(type(s).__name__)

    def rule_stmt(self, s, indent: str) -> list[str]:
        if isinstance(s, ast.Tolerate):
            key = s.key if _IDENT.match(s.key) else quote(s.key)
            op = "exists" if s.operator == "Exists" else f"= {expr(s.value)}"
            seconds = f" for {expr(s.seconds)}" if s.seconds is not None else ""
            return [f"{indent}tolerate {key} {op} : {s.effect}{seconds}"]
        if isinstance(s, ast.Require):
            return layout(s.cond, indent, "require ")
        if isinstance(s, ast.Prefer):
            return layout(s.cond, indent, f"prefer weight {expr(s.weight)} ")
        if isinstance(s, ast.Spread):
            return [f"{indent}spread by {quote(s.topology_key)} max_skew {expr(s.max_skew)} "
                    f"when_unsatisfiable {s.when_unsatisfiable}"]
        raise TypeError(type(s).__name__)

    def use(self, u: ast.Use, indent: str) -> list[str]:
        ref = quote(u.ref) if u.is_path else u.ref
        head = f"{indent}use {ref}"
        tail = (f" weight {expr(u.weight)}" if u.weight is not None else "") + \
               "".join(f" without {w}" for w in u.without) + \
               (f" when {expr(u.when)}" if u.when is not None else "")
        if not u.args:
            return [head + tail]
        args = ast.MapExpr(tuple(a.name for a in u.args), tuple(a.value for a in u.args), record=True)
        lines = self._value(args, indent, head + " ")
        lines[-1] += tail
        return lines


def _comments(lines: list[str]) -> dict[int, str]:
    """Line number → the comment on it (a `#` outside string literals)."""
    found = {}
    for number, line in enumerate(lines, 1):
        quote = None
        i = 0
        while i < len(line):
            ch = line[i]
            if quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                found[number] = line[i:].rstrip()
                break
            i += 1
    return found

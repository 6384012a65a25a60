"""Lark's tree → frozen ast nodes (one method per grammar rule), with string interpolation
parsed again as expressions and their spans moved to where they stand in the file."""

from __future__ import annotations

import math
import re

import lark
from lark import Token, Transformer, v_args

from . import ast
from ..api.quantity import QuantityError, QuantityRangeError, parse_quantity
from ..diagnostics import Diagnostic
from .grammar import lalr, syntax_diagnostic
from ..source import Span


AGGREGATES = frozenset(ast.AGGREGATES) | {"group"}

_STRING_SPECIAL = re.compile(r"\\|\$\{")

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "$": "$"}

_HOLE = re.compile(r"\$\{")

INT64_MAX = 2**63 - 1

def _int64(digits: str) -> int | None:
    """The value of a decimal literal that fits a 64-bit integer, else None (checked on the
    text first, so a literal of a million digits is never converted)."""
    stripped = digits.lstrip("0") or "0"
    if len(stripped) > 19:
        return None
    value = int(stripped)
    return value if value <= INT64_MAX else None

def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"

class Build(Transformer):
    """Lark tree → ast nodes. One method per grammar rule."""

    def __init__(self, path: str, diagnostics: list[Diagnostic]):
        super().__init__()
        self.path = path
        self.diagnostics = diagnostics

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.path, 0, 0, 0, 0)
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tspan(self, token: Token) -> Span:
        return Span(self.path, token.line, token.column, token.end_line or token.line,
                    token.end_column or token.column + len(token))

    def _error(self, code: str, message: str, span: Span, *notes: str) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, notes=notes))

    # ---- declarations ----
    def start(self, children):
        return children

    @v_args(meta=True)
    def policy_decl(self, meta, c):
        return ast.PolicyDecl(str(c[0]), c[1] or (), c[2] or (), span=self._span(meta))

    def policy_implements(self, c):
        return tuple(str(t) for t in c)

    policy_assumes = policy_implements

    @v_args(meta=True)
    def import_stdlib(self, meta, c):
        return ast.Import(alias=str(c[0]), span=self._span(meta))

    @v_args(meta=True)
    def import_path(self, meta, c):
        path = self._plain_string(c[0])
        return ast.Import(alias=str(c[1]), path=path, span=self._span(meta))

    @v_args(meta=True)
    def param_decl(self, meta, c):
        return ast.Param(str(c[0]), c[1], c[2], span=self._span(meta))

    @v_args(meta=True)
    def def_decl(self, meta, c):
        name, *params, body = c
        return ast.Def(str(name), tuple(str(p) for p in params if p is not None), body, span=self._span(meta))

    @v_args(meta=True)
    def filter_decl(self, meta, c):
        return ast.Filter(str(c[0]), tuple(c[1:]), span=self._span(meta))

    @v_args(meta=True)
    def score_decl(self, meta, c):
        return ast.Score(str(c[0]), tuple(c[1:]), span=self._span(meta))

    @v_args(meta=True)
    def skip_stmt(self, meta, c):
        return ast.Skip(c[0], span=self._span(meta))

    @v_args(meta=True)
    def let_stmt(self, meta, c):
        return ast.Let(str(c[0]), c[1], span=self._span(meta))

    @v_args(meta=True)
    def reject_stmt(self, meta, c):
        return ast.Reject(c[0], c[1], c[2] or "Unschedulable", False, span=self._span(meta))

    @v_args(meta=True)
    def reject_pod_stmt(self, meta, c):
        return ast.Reject(c[0], c[1], c[2] or "Unschedulable", True, span=self._span(meta))

    @v_args(meta=True)
    def restrict_stmt(self, meta, c):
        return ast.Restrict(c[0], span=self._span(meta))

    def status_code(self, c):
        return str(c[0])

    @v_args(meta=True)
    def value_stmt(self, meta, c):
        return ast.Value(c[0], span=self._span(meta))

    @v_args(meta=True)
    def normalize_named(self, meta, c):
        return ast.Normalize(str(c[0]), span=self._span(meta))

    @v_args(meta=True)
    def normalize_with(self, meta, c):
        return ast.Normalize("with", c[0], span=self._span(meta))

    @v_args(meta=True)
    def rule_decl(self, meta, c):
        return ast.Rule(str(c[0]), c[1], tuple(c[2:]), span=self._span(meta))

    @v_args(meta=True)
    def tolerate_stmt(self, meta, c):
        key, (operator, value), effect, seconds = c
        key = self._plain_string(key) if key.type == "STRING" else str(key)
        return ast.Tolerate(key, operator, value, str(effect), seconds, span=self._span(meta))

    def tolerate_equal(self, c):
        return ("Equal", c[0])

    def tolerate_exists(self, c):
        return ("Exists", None)

    @v_args(meta=True)
    def require_stmt(self, meta, c):
        return ast.Require(c[0], span=self._span(meta))

    @v_args(meta=True)
    def prefer_stmt(self, meta, c):
        return ast.Prefer(c[0], c[1], span=self._span(meta))

    @v_args(meta=True)
    def spread_stmt(self, meta, c):
        return ast.Spread(self._plain_string(c[0]), c[1], str(c[2]), span=self._span(meta))

    @v_args(meta=True)
    def profile_decl(self, meta, c):
        name, *stmts = c
        uses = tuple(s for s in stmts if isinstance(s, ast.Use))
        pct = [s for s in stmts if not isinstance(s, ast.Use)]
        for extra in pct[1:]:
            self._error("P003", "percentage_of_nodes_to_score is set twice", extra.span)
        return ast.Profile(str(name), uses, pct[0].expr if pct else None, span=self._span(meta))

    @v_args(meta=True)
    def percentage_stmt(self, meta, c):
        return ast.Value(c[0], span=self._span(meta))

    @v_args(meta=True)
    def use_stmt(self, meta, c):
        ref, args, *options = c
        is_path = ref.type == "STRING"
        weight, without, when = None, [], None
        for kind, value, span in options:
            if kind == "weight":
                if weight is not None:
                    self._error("P003", "weight is set twice", span)
                weight = value
            elif kind == "when":
                if when is not None:
                    self._error("P003", "when is set twice", span)
                when = value
            else:
                without.append((value, span))
        for name, span in without:
            if name not in ("filter", "score", "postfilter"):
                self._error("P004", f"'without' takes filter, score or postfilter, not '{name}'", span)
        return ast.Use(self._plain_string(ref) if is_path else str(ref), is_path, args or (), weight,
                       tuple(n for n, _ in without), when, span=self._span(meta))

    def use_args(self, c):
        return tuple(a for a in c if a is not None)

    @v_args(meta=True)
    def use_arg(self, meta, c):
        return ast.UseArg(str(c[0]), c[1], span=self._span(meta))

    @v_args(meta=True)
    def use_weight(self, meta, c):
        return ("weight", c[0], self._span(meta))

    @v_args(meta=True)
    def use_when(self, meta, c):
        return ("when", c[0], self._span(meta))

    @v_args(meta=True)
    def use_without(self, meta, c):
        return ("without", str(c[0]), self._span(meta))

    # ---- types ----
    @v_args(meta=True)
    def simple_type(self, meta, c):
        return ast.TypeRef(str(c[0]), span=self._span(meta))

    @v_args(meta=True)
    def generic_type(self, meta, c):
        return ast.TypeRef(str(c[0]), tuple(t for t in c[1:] if t is not None), span=self._span(meta))

    @v_args(meta=True)
    def record_type(self, meta, c):
        return ast.RecordTypeRef(tuple(f for f in c if f is not None), span=self._span(meta))

    def field_type(self, c):
        return (str(c[0]), c[1])

    # ---- expressions ----
    @v_args(meta=True)
    def if_expr(self, meta, c):
        return ast.If(c[0], c[1], c[2], span=self._span(meta))

    def _binary(self, op, meta, c):
        return ast.Binary(op, c[0], c[-1], span=self._span(meta))

    @v_args(meta=True)
    def or_op(self, meta, c):
        return self._binary("or", meta, c)

    @v_args(meta=True)
    def and_op(self, meta, c):
        return self._binary("and", meta, c)

    @v_args(meta=True)
    def not_op(self, meta, c):
        return ast.Unary("not", c[0], span=self._span(meta))

    @v_args(meta=True)
    def compare(self, meta, c):
        return ast.Binary(str(c[1]), c[0], c[2], span=self._span(meta))

    @v_args(meta=True)
    def in_op(self, meta, c):
        return self._binary("in", meta, c)

    @v_args(meta=True)
    def not_in_op(self, meta, c):
        return self._binary("notin", meta, c)

    @v_args(meta=True)
    def coalesce_op(self, meta, c):
        return self._binary("??", meta, c)

    @v_args(meta=True)
    def arith(self, meta, c):
        return ast.Binary(str(c[1]), c[0], c[2], span=self._span(meta))

    @v_args(meta=True)
    def neg(self, meta, c):
        operand = c[-1]
        if isinstance(operand, ast.Literal) and operand.kind in ("int", "float", "quantity"):
            return ast.Literal(-operand.value, operand.kind, "-" + operand.text, span=self._span(meta))
        return ast.Unary("-", operand, span=self._span(meta))

    @v_args(meta=True)
    def field(self, meta, c):
        return ast.Field(c[0], str(c[1]), span=self._span(meta))

    @v_args(meta=True)
    def index(self, meta, c):
        return ast.Index(c[0], c[1], span=self._span(meta))

    @v_args(meta=True)
    def call(self, meta, c):
        callee, *args = c
        args = [a for a in args if a is not None]
        span = self._span(meta)
        func = _dotted(callee)
        if func is None:
            self._error("P005", "only functions can be called", getattr(callee, "span", span))
            return ast.Literal(None, "null", span=span)
        if func in AGGREGATES and len(args) == 1 and (args[0][1] is not None or _binds(args[0][0])):
            return self._comprehension(func, (args[0][0], args[0][1] or (None, None, None, None), args[0][2]), span)
        plain = [self._plain_arg(a) for a in args]
        return ast.Call(func, tuple(plain), func_span=callee.span, span=span)

    def _plain_arg(self, arg):
        expr, binding, span = arg
        if binding is not None:
            self._error("P006", "a 'for', 'where' or 'by' clause is only allowed in a comprehension", span,
                        "help: comprehensions are [x for x in xs where c] and any/all/count/sum/min/max/first/group(...)")
        return expr

    def _comprehension(self, kind, arg, span):
        element, (var, source, where, by), arg_span = arg
        if var is None:
            # Short form `count(t in node.taints where ...)`: the element is the variable.
            if not (isinstance(element, ast.Binary) and element.op == "in" and isinstance(element.left, ast.Name)):
                self._error("P006", "expected `x in xs` before 'where' or 'by'", arg_span)
                return ast.Literal(None, "null", span=span)
            var, source, element = element.left.id, element.right, None
        if by is not None and kind != "group":
            self._error("P006", "'by' is only allowed in group(...)", by.span)
        if kind == "group" and by is None:
            self._error("P006", "group(...) needs a 'by' clause", span)
        return ast.Comprehension(kind, var, source, element, where, by, span=span)

    @v_args(meta=True)
    def fold_expr(self, meta, c):
        acc, init, var, source, body = c
        span = self._span(meta)
        if str(acc) == str(var):
            self._error("P014", f"fold's accumulator and its loop variable are both named '{acc}'", span)
        return ast.Fold(str(acc), init, str(var), source, body, span=span)

    @v_args(meta=True)
    def arg(self, meta, c):
        expr, for_clause, where, by = c
        if for_clause is None and where is None and by is None:
            return (expr, None, self._span(meta))
        var, source = for_clause if for_clause is not None else (None, None)
        return (expr, (var, source, where, by), self._span(meta))

    def for_clause(self, c):
        return (str(c[0]), c[1])

    def where_clause(self, c):
        return c[0]

    def by_clause(self, c):
        return c[0]

    @v_args(meta=True)
    def list_expr(self, meta, c):
        args = [a for a in c if a is not None]
        span = self._span(meta)
        if len(args) == 1 and args[0][1] is not None:
            return self._comprehension("list", args[0], span)
        return ast.ListExpr(tuple(self._plain_arg(a) for a in args), span=span)

    @v_args(meta=True)
    def map_expr(self, meta, c):
        entries = [e for e in c if e is not None]
        span = self._span(meta)
        bare = {is_name for is_name, *_ in entries}
        if len(bare) > 1:
            self._error("P007", "write all keys bare (a record) or all quoted (a map), not both", span)
        seen = set()
        for _, key, _, key_span in entries:
            if key in seen:
                self._error("P008", f"key '{key}' appears twice", key_span)
            seen.add(key)
        return ast.MapExpr(tuple(k for _, k, _, _ in entries), tuple(v for *_, v, _ in entries),
                           record=bare == {True}, span=span)

    def entry(self, c):
        key, value = c
        text = self._plain_string(key) if key.type == "STRING" else str(key)
        return (key.type == "NAME", text, value, self._tspan(key))

    def number(self, c):
        token = c[0]
        text = str(token)
        span = self._tspan(token)
        digits, unit = re.fullmatch(r"([0-9.]+(?:[eE][+-]?[0-9]+)?)(.*)", text).groups()
        if unit in ("s", "h", "ms"):
            if not digits.isdigit() or unit == "ms":
                self._error("P009", "durations are whole seconds or hours, e.g. 300s or 1h", span)
                return ast.Literal(0, "duration", text, span=span)
            seconds = _int64(digits) * (3600 if unit == "h" else 1) if _int64(digits) is not None else None
            if seconds is None or seconds > INT64_MAX:
                self._error("P009", f"duration '{_short(text)}' is out of range (at most {INT64_MAX} seconds)", span)
                return ast.Literal(0, "duration", text, span=span)
            return ast.Literal(seconds, "duration", text, span=span)
        if text.isdigit():
            value = _int64(text)
            if value is None:
                self._error("P009", f"integer '{_short(text)}' is out of range (at most {INT64_MAX}, a 64-bit "
                                    f"integer as in the Kubernetes API)", span)
                return ast.Literal(0, "int", text, span=span)
            return ast.Literal(value, "int", text, span=span)
        if re.fullmatch(r"[0-9]+\.[0-9]+", text):
            value = float(text)
            if not math.isfinite(value):
                self._error("P009", f"number '{_short(text)}' is out of range", span)
                return ast.Literal(0.0, "float", text, span=span)
            return ast.Literal(value, "float", text, span=span)
        try:
            return ast.Literal(parse_quantity(text), "quantity", text, span=span)
        except QuantityRangeError as err:
            self._error("P009", str(err), span)
            return ast.Literal(0, "int", text, span=span)
        except QuantityError:
            self._error("P009", f"'{_short(text)}' is not a valid quantity", span)
            return ast.Literal(0, "int", text, span=span)

    def string(self, c):
        token = c[0]
        return self._string(token)

    def true(self, _):
        return ast.Literal(True, "bool", "true")

    def false(self, _):
        return ast.Literal(False, "bool", "false")

    def null(self, _):
        return ast.Literal(None, "null", "null")

    def name(self, c):
        return ast.Name(str(c[0]), span=self._tspan(c[0]))

    # ---- strings ----
    def _plain_string(self, token: Token) -> str:
        node = self._string(token)
        if isinstance(node, ast.Interpolated):
            self._error("P010", "this string cannot contain ${...}", node.span)
            return ""
        return node.value

    # Where a string literal needs more than copying: an escape or an interpolation. Copying the
    # text between them in one slice keeps a long literal linear (issue 29: 20 MB took minutes).
    def _string(self, token: Token):
        raw = str(token)[1:-1]
        span = self._tspan(token)
        parts: list = []
        buf: list[str] = []
        i = 0
        while i < len(raw):
            special = _STRING_SPECIAL.search(raw, i)
            if special is None:          # the rest is plain text: taken whole, not char by char
                buf.append(raw[i:])
                break
            if special.start() > i:
                buf.append(raw[i:special.start()])
                i = special.start()
            ch = raw[i]
            if ch == "\\" and i + 1 < len(raw):
                nxt = raw[i + 1]
                if nxt not in _ESCAPES:
                    col = span.column + 1 + i
                    self._error("P011", f"unknown escape '\\{nxt}'", Span(self.path, span.line, col, span.line, col + 2))
                buf.append(_ESCAPES.get(nxt, nxt))
                i += 2
            elif raw.startswith("${", i):
                end = _closing_brace(raw, i + 2)
                col = span.column + 1 + i
                if end < 0:
                    self._error("P010", "'${' is never closed", Span(self.path, span.line, col, span.line, col + 2))
                    break
                if buf:
                    parts.append("".join(buf))
                    buf = []
                parts.append(self._hole(raw[i + 2:end], span.line, col + 2))
                i = end + 1
            else:
                buf.append(ch)
                i += 1
        if buf or not parts:
            parts.append("".join(buf))
        if len(parts) == 1 and isinstance(parts[0], str):
            return ast.Literal(parts[0], "string", str(token), span=span)
        return ast.Interpolated(tuple(parts), span=span)

    def _hole(self, text: str, line: int, column: int):
        try:
            tree = lalr().parse(text, start="expr")
        except lark.exceptions.UnexpectedInput as err:
            inner = syntax_diagnostic(err, text, self.path)
            shift = column - 1
            s = inner.span
            self.diagnostics.append(Diagnostic(inner.code, inner.message,
                                               Span(self.path, line, s.column + shift, line, s.end_column + shift),
                                               notes=inner.notes))
            return ast.Literal(None, "null")
        inner = Build(self.path, self.diagnostics).transform(tree)
        return _shift(inner, line, column - 1)

def _binds(expr) -> bool:
    """`count(t in xs)`: an aggregate over one `name in list` binds the name."""
    return isinstance(expr, ast.Binary) and expr.op == "in" and isinstance(expr.left, ast.Name)

def _closing_brace(text: str, start: int) -> int:
    depth = 1
    quote = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:  # in `'${f("a\"}")}'` the escaped quote does not end the inner string
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1

def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Field) and isinstance(node.target, ast.Name):
        return f"{node.target.id}.{node.name}"
    return None

def _shift(node, line: int, columns: int):
    """Move the spans of an expression parsed from inside a string to where it stands in the file."""
    import attrs

    if isinstance(node, tuple):
        return tuple(_shift(n, line, columns) for n in node)
    if not attrs.has(type(node)):
        return node
    changes = {}
    for f in attrs.fields(type(node)):
        value = getattr(node, f.name)
        if isinstance(value, Span):
            changes[f.name] = Span(value.path, line, value.column + columns, line, value.end_column + columns)
        elif attrs.has(type(value)) or isinstance(value, tuple):
            changes[f.name] = _shift(value, line, columns)
    return attrs.evolve(node, **changes)

"""The celpy parse tree as the DRA CEL checker reads it: the check error and where cel-go
reports it (an operator at its symbol, a call at its parenthesis, ...), the grammar's wrapper
levels and the rules that count towards nesting, and unwrapping single-child chains.
Package-internal."""

from __future__ import annotations

from typing import Any

import lark


class _CheckError(Exception):
    def __init__(self, message: str, where: Any):
        super().__init__(message)
        self.message = message
        self.where = where


def _pos(where: Any, lines: list[str]) -> tuple[int, int]:
    """Where cel-go reports an error about ``where``: an operator at its symbol, a selection at
    its dot, a call at its parenthesis, an index at its bracket, a ternary at its ``?``,
    anything else where it starts (parentheses make no node: their content's place)."""
    if where is None:
        return -1, 0
    if isinstance(where, lark.Token):
        return where.line or 1, where.column or 1
    rule, children = where.data, where.children
    if rule == "paren_expr" or (rule in _WRAPPERS and len(children) == 1):
        return _pos(children[0], lines)
    after = None
    if rule == "member_dot":
        after, symbol = children[0], "."
    elif rule == "member_dot_arg":
        after, symbol = children[1], "("
    elif rule in ("ident_arg", "dot_ident_arg"):
        after, symbol = children[0], "("
    elif rule == "member_index":
        after, symbol = children[0], "["
    elif rule == "expr" and len(children) == 3:
        after, symbol = children[0], "?"
    elif rule in ("relation", "addition", "multiplication") and len(children) == 2:
        op_tree = children[0]
        after, symbol = op_tree.children[0], _SYMBOLS[op_tree.data]
    if after is not None:
        found = _scan(lines, _end(after), symbol)
        if found:
            return found
    meta = getattr(where, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    return 1, 1


_SYMBOLS = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
            "relation_eq": "==", "relation_ne": "!=", "relation_in": "in", "addition_add": "+",
            "addition_sub": "-", "multiplication_mul": "*", "multiplication_div": "/",
            "multiplication_mod": "%"}


def _end(node: Any) -> tuple[int, int] | None:
    if isinstance(node, lark.Token):
        return node.end_line, node.end_column
    meta = getattr(node, "meta", None)
    if meta is None or getattr(meta, "empty", True):
        return None
    return meta.end_line, meta.end_column


def _scan(lines: list[str], start: tuple[int, int] | None, symbol: str) -> tuple[int, int] | None:
    """The position of ``symbol`` at or after ``start``, past whitespace and comments."""
    if start is None:
        return None
    line, column = start
    while 0 < line <= len(lines):
        text = lines[line - 1]
        i = column - 1
        while i < len(text) and text[i] in " \t\r\f\v":
            i += 1
        if i < len(text) and not text.startswith("//", i):
            return (line, i + 1) if text.startswith(symbol, i) else None
        line, column = line + 1, 1
    return None


_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                       "multiplication", "member", "primary", "unary"})
_UNCOUNTED = frozenset({"paren_expr", "list_lit", "map_lit", "conditionalor", "conditionaland", "literal",
                        "ident", "expr", "unary"})


def _unwrap(tree: Any) -> Any:
    """The innermost tree of a chain of single-child wrappers (expr → … → primary)."""
    while isinstance(tree, lark.Tree) and len(tree.children) == 1 and isinstance(tree.children[0], lark.Tree):
        tree = tree.children[0]
    return tree


def _unwrap_to(tree: Any, rule: str) -> Any:
    """``tree`` itself or the first tree named ``rule`` down its chain of single children."""
    while isinstance(tree, lark.Tree):
        if tree.data == rule:
            return tree
        if len(tree.children) != 1 or tree.data == "paren_expr":
            return None
        tree = tree.children[0]
    return None


def _is_ident(tree: Any, name: str | None = None) -> bool:
    inner = _unwrap(tree)
    return isinstance(inner, lark.Tree) and inner.data == "ident" and (name is None or str(inner.children[0]) == name)

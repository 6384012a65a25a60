"""The grammar (grammar.lark) as a Lark LALR parser (its tables kept in the cache:
``cache.cached_lark``), its keywords, and Lark's syntax errors as policylang diagnostics, so no
input text, however broken, produces a traceback."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import lark

from ..cache import cached_lark
from ..diagnostics import Diagnostic
from ..source import Span


_OPTIONS = dict(parser="lalr", start=["start", "expr"], propagate_positions=True, maybe_placeholders=True)

@lru_cache(maxsize=None)
def lalr() -> lark.Lark:
    """The LALR parser of grammar.lark."""
    return cached_lark(resources.files("policylang.syntax").joinpath("grammar.lark").read_text(), _OPTIONS)


@lru_cache(maxsize=None)
def keywords() -> tuple[str, ...]:
    """Every keyword of the language, read off the grammar (the words it spells out), sorted:
    what an editor completes and highlights, so neither can drift from the syntax."""
    return tuple(sorted({t.pattern.value for t in lalr().terminals
                         if t.pattern.type == "str" and re.fullmatch(r"[a-z_]+", t.pattern.value)}))

_TOKEN_WORDS = {
    "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "COLON": "':'", "DOT": "'.'", "EQUAL": "'='", "NAME": "a name", "STRING": "a string",
    "NUMBER": "a number", "COMPARE": "a comparison", "PLUS": "'+'", "MUL": "'*', '/' or '%'",
    "PROFILE_NAME": "a profile name", "$END": "end of file", "MINUS": "'-'", "QMARK": "'??'",
}

def _describe(token_type: str) -> str:
    if token_type in _TOKEN_WORDS:
        return _TOKEN_WORDS[token_type]
    if token_type.startswith("__ANON") or not token_type.isupper():
        return token_type
    return f"'{token_type.lower()}'"

def syntax_diagnostic(err: lark.exceptions.UnexpectedInput, text: str, path: str) -> Diagnostic:
    line = getattr(err, "line", 1) or 1
    column = getattr(err, "column", 1) or 1
    if isinstance(err, lark.exceptions.UnexpectedToken):
        token = err.token
        if token.type == "$END":
            lines = text.splitlines() or [""]
            line, column = len(lines), len(lines[-1]) + 1
            found, width = "end of file", 1
        else:
            found, width = f"'{token}'", max(1, len(str(token)))
        expected = sorted({_describe(t) for t in err.expected if not t.startswith("__")})
        message = f"unexpected {found}"
        notes = (f"expected {', '.join(expected[:8])}{', …' if len(expected) > 8 else ''}",) if expected else ()
        return Diagnostic("P001", message, Span(path, line, column, line, column + width), notes=notes)
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        message = "unterminated string" if char in "\"'" else f"unexpected character {char!r}"
        return Diagnostic("P002", message, Span(path, line, column, line, column + 1))
    return Diagnostic("P001", "unexpected end of file", Span(path, line, column, line, column + 1))

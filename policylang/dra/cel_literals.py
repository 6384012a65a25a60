"""The literals of DRA CEL selectors as cel-go's parser reads them: keywords, numbers, strings
and bytes with their escapes. Package-internal."""

from __future__ import annotations

import re
from typing import Any

import lark

from policylang.dra.cel_values import (BOOL, BYTES, DOUBLE, INT, INT_MAX, INT_MIN, NULL, STRING, T, UINT, UINT_MAX,
    Uint)


_KEYWORD_LITERALS = {"true": (True, BOOL), "false": (False, BOOL), "null": (None, NULL)}


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            '"': '"', "'": "'", "\\": "\\", "?": "?", "`": "`"}
_ESCAPE = re.compile(r"\\(?:([abfnrtv\"'\\?`])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-7]{3})|(.))", re.S)


def _unescape(body: str, raw: bool, as_bytes: bool, compiler: Any, token) -> str | bytes:
    if raw:
        return body.encode() if as_bytes else body
    out: list[bytes] = []
    pos = 0
    for m in _ESCAPE.finditer(body):
        out.append(body[pos:m.start()].encode())
        pos = m.end()
        simple, hx, u4, u8, octal, bad = m.groups()
        if bad is not None:
            compiler.fail("Syntax error: invalid escape sequence", token)
        if simple:
            out.append(_ESCAPES[simple].encode())
        elif hx or octal:
            code = int(hx, 16) if hx else int(octal, 8)
            if octal and code > 255:
                compiler.fail("Syntax error: octal escape sequence out of range", token)
            out.append(bytes([code]) if as_bytes else chr(code).encode())
        else:
            code = int(u4 or u8, 16)
            if as_bytes or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                compiler.fail("Syntax error: invalid unicode escape", token)
            out.append(chr(code).encode())
    out.append(body[pos:].encode())
    joined = b"".join(out)
    if as_bytes:
        return joined
    try:
        return joined.decode("utf-8")
    except UnicodeDecodeError:
        compiler.fail("Syntax error: invalid UTF-8 in string literal", token)


def _literal(token: lark.Token, compiler: Any) -> tuple[Any, T]:
    text = str(token)
    kind_ = token.type
    if kind_ == "BOOL_LIT":
        return text == "true", BOOL
    if kind_ == "NULL_LIT":
        return None, NULL
    if kind_ in ("INT_LIT", "UINT_LIT"):
        digits = text[:-1] if kind_ == "UINT_LIT" else text
        negative = digits.startswith("-")
        digits = digits.lstrip("-")
        value = int(digits[2:], 16) if digits[:2].lower() == "0x" else int(digits)
        value = -value if negative else value
        if kind_ == "UINT_LIT":
            if not 0 <= value <= UINT_MAX:
                compiler.fail("invalid uint literal", token)
            return Uint(value), UINT
        if not INT_MIN <= value <= INT_MAX:
            compiler.fail("invalid int literal", token)
        return value, INT
    if kind_ == "FLOAT_LIT":
        return float(text), DOUBLE
    as_bytes = text[:1] in "bB"
    if as_bytes:
        text = text[1:]
    raw = text[:1] in "rR"
    if raw:
        text = text[1:]
    quote = 3 if text[:3] in ('"""', "'''") else 1
    body = text[quote:-quote]
    value = _unescape(body, raw, as_bytes, compiler, token)
    return value, (BYTES if as_bytes else STRING)

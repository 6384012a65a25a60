"""The texts of apimachinery's field errors (k8s.io/apimachinery/pkg/util/validation/field,
errors.go: ``Error.ErrorBody``), which kube-scheduler's configuration validation and the API
server's object validation both print: ``<path>: Invalid value: 150: not in valid range [0-100]``.

Each function returns the body, without the path: the caller names the field its own way
(``field <path>: <body>``) and knows where in the file the path is.
"""

from __future__ import annotations

# Go's escapes of control characters in a %q string.
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(s: str) -> str:
    """Go's %q of a string."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x80 else
                       f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def go_value(value) -> str:
    """A bad value as ErrorBody prints it: strings quoted (%q), numbers and booleans plain (%v)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return str(value)


def invalid(value, detail: str) -> str:
    return f"Invalid value: {go_value(value)}" + (f": {detail}" if detail else "")


def not_supported(value, supported) -> str:
    return f"Unsupported value: {go_value(value)}: supported values: " + ", ".join(go_quote(s) for s in supported)


def required(detail: str = "") -> str:
    return "Required value" + (f": {detail}" if detail else "")


def forbidden(detail: str) -> str:
    return f"Forbidden: {detail}"


def duplicate(value) -> str:
    return f"Duplicate value: {go_value(value)}"


def too_long(max_length: int) -> str:
    return f"Too long: may not be more than {max_length} byte{'' if max_length == 1 else 's'}"


def too_many(actual: int, max_items: int) -> str:
    return f"Too many: {actual}: must have at most {max_items} item{'' if max_items == 1 else 's'}"

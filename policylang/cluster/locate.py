"""Where a field of a loaded object is in its file: the line and column of the value at a field
path (``spec.containers[0].ports[0].containerPort``, ``status.allocatable['cpu']``).

The loader builds objects without YAML marks (libyaml's construction is several times faster
without them); when an object is refused, its file is composed again, with marks, and the
object found by its position among the file's objects, as ``load._documents`` counts them.
"""

from __future__ import annotations

import contextvars
import os
import re
from typing import Iterator

import yaml

from ..diagnostics import InputError
from ..inputs import read_text

_STEP = re.compile(r"\.?([A-Za-z0-9_$-]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]")


def steps(field: str) -> list[str | int]:
    """A field path as keys and indexes: `a.b[0]['c']` → ['a', 'b', 0, 'c']."""
    out: list[str | int] = []
    pos = 0
    while pos < len(field):
        m = _STEP.match(field, pos)
        if not m or m.end() == pos:
            break
        name, index, single, double = m.groups()
        out.append(int(index) if index is not None else name if name is not None else
                   (single if single is not None else double))
        pos = m.end()
    return out


def node_at(node: yaml.Node, field: str | None) -> yaml.Node:
    """The deepest node on the path that the document has (the field itself when present)."""
    for step in steps(field or ""):
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            found = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            found = node.value[step]
        else:
            found = None
        if found is None:
            break
        node = found
    return node


def _objects(node: yaml.Node | None) -> Iterator[yaml.MappingNode]:
    """The objects of a document as load._flatten opens them (kind List and kind *List)."""
    if not isinstance(node, yaml.MappingNode):
        return
    kind = next((v.value for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "kind"
                 and isinstance(v, yaml.ScalarNode)), None)
    if isinstance(kind, str) and kind.endswith("List"):
        items = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "items"), None)
        for item in (items.value if isinstance(items, yaml.SequenceNode) else ()):
            yield from _objects(item)
        return
    yield node


# Standard input is read once: its text is kept (for the command, as the objects made of it are)
# so that an error in it can be located as one in a file is.
STDIN_NAME = "<stdin>"
_STDIN_TEXT: contextvars.ContextVar[str | None] = contextvars.ContextVar("stdin_text", default=None)


def remember_stdin(text: str) -> None:
    _STDIN_TEXT.set(text)


def _text(file: str) -> str | None:
    if file == STDIN_NAME:
        return _STDIN_TEXT.get()
    if not os.path.isfile(file):
        return None     # a file gone since: the error keeps the rest
    return read_text(file)


def _documents(text: str) -> Iterator[yaml.Node | None]:
    # A JSON text is a YAML one (a flow mapping): its marks are the JSON text's lines and columns.
    return yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def locate(file: str, index: int, field: str | None) -> tuple[int, int] | None:
    """(line, column), 1-based, of the field of the file's index-th object; None when the file
    cannot be composed again (then the error keeps its file, object and field)."""
    try:
        text = _text(file)
        if text is None:
            return None
        for i, obj in enumerate(o for doc in _documents(text) for o in _objects(doc)):
            if i == index:
                return _mark(node_at(obj, field))
    except (yaml.YAMLError, InputError, RecursionError, ValueError):
        return None
    return None


def locate_in_document(file: str, number: int, field: str | None) -> tuple[int, int] | None:
    """(line, column) of a field path (``items[3].kind``) in the file's number-th document (0-based,
    empty documents counted), for an error about a document's shape rather than one object's."""
    try:
        text = _text(file)
        if text is None:
            return None
        for i, doc in enumerate(_documents(text)):
            if i == number:
                return _mark(node_at(doc, field)) if doc is not None else None
    except (yaml.YAMLError, InputError, RecursionError, ValueError):
        return None
    return None

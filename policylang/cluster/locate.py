"""Where a field of a loaded object is in its file: the line and column of the value at a field
path (``spec.containers[0].ports[0].containerPort``, ``status.allocatable['cpu']``).

The loader builds objects without YAML marks (libyaml's construction is several times faster
without them); when an object is refused, its file is composed again, with marks, and the
object found by its position among the file's objects, as ``load._documents`` counts them.
"""

from __future__ import annotations

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


def locate(file: str, index: int, field: str | None) -> tuple[int, int] | None:
    """(line, column), 1-based, of the field of the file's index-th object; None when the file
    cannot be composed again (then the error keeps its file, object and field)."""
    if not os.path.isfile(file):
        return None     # standard input (read once) or a file gone since: the error keeps the rest
    try:
        text = read_text(file)
        documents = yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for i, obj in enumerate(o for doc in documents for o in _objects(doc)):
            if i == index:
                mark = node_at(obj, field).start_mark
                return mark.line + 1, mark.column + 1
    except (yaml.YAMLError, InputError, RecursionError, ValueError):
        return None
    return None

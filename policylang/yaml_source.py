"""YAML documents kept as nodes, so every finding can point at the line and column of the
key it is about (``yaml.compose`` keeps the marks that ``safe_load`` throws away)."""

from __future__ import annotations

from typing import Iterator

import yaml
from yaml.constructor import SafeConstructor

from .diagnostics import InputError
from .inputs import check_node_graph, yaml_error
from .source import Span


class YamlNode:
    """A YAML node with its path and file: mappings are looked up by key, sequences by
    index; ``value`` is the plain Python value (as ``yaml.safe_load`` would give)."""

    def __init__(self, node: yaml.Node, path: str, key_node: yaml.Node | None = None):
        self.node, self.path, self.key_node = node, path, key_node

    @property
    def value(self):
        constructor = SafeConstructor()
        return constructor.construct_document(self.node)

    @property
    def is_map(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)

    @property
    def is_seq(self) -> bool:
        return isinstance(self.node, yaml.SequenceNode)

    @property
    def scalar(self):
        """The value of a scalar node, else None."""
        return self.value if isinstance(self.node, yaml.ScalarNode) else None

    def get(self, key: str) -> "YamlNode | None":
        if not self.is_map:
            return None
        for k, v in self.node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return YamlNode(v, self.path, k)
        return None

    def at(self, *keys: str) -> "YamlNode | None":
        node: YamlNode | None = self
        for key in keys:
            node = node.get(key) if node is not None else None
        return node

    def items(self) -> Iterator[tuple[str, "YamlNode"]]:
        if self.is_map:
            for k, v in self.node.value:
                if isinstance(k, yaml.ScalarNode):
                    yield k.value, YamlNode(v, self.path, k)

    def __iter__(self) -> Iterator["YamlNode"]:
        if self.is_seq:
            for item in self.node.value:
                yield YamlNode(item, self.path)

    def __bool__(self) -> bool:  # a node is there even when it is an empty mapping or sequence
        return True

    def __len__(self) -> int:
        return len(self.node.value) if self.is_seq or self.is_map else 0

    @property
    def span(self) -> Span:
        """Where this entry is: its key when it has one (`nodeSelector:`), else the value."""
        return _span(self.path, self.key_node if self.key_node is not None else self.node)

    @property
    def value_span(self) -> Span:
        return _span(self.path, self.node)


def _span(path: str, node: yaml.Node) -> Span:
    start, end = node.start_mark, node.end_mark
    if end.line != start.line:  # a block value ends on a later line: point at its first line only
        return Span(path, start.line + 1, start.column + 1, start.line + 1, start.column + 2)
    # Marks are 0-based with an exclusive end; spans are 1-based with an exclusive end.
    return Span(path, start.line + 1, start.column + 1, end.line + 1, max(end.column, start.column + 1) + 1)


def documents(path: str, text: str) -> list[YamlNode]:
    """Every document of a (multi-document) YAML file, as mapping nodes; `kind: List`
    documents are opened into their items, as kubectl prints them."""
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError) as err:
        raise yaml_error(err, path) from None
    for node in nodes:
        if node is not None:
            check_node_graph(node, path)
            try:
                SafeConstructor().construct_document(node)
            except (yaml.YAMLError, ValueError) as err:  # e.g. an integer of more than 4,300 digits
                raise InputError(f"invalid YAML: {str(err)[:120]}", path=path) from None
    out: list[YamlNode] = []
    for node in nodes:
        if node is None:
            continue
        doc = YamlNode(node, path)
        if doc.is_map and _kind(doc) == "List" and doc.get("items") is not None:
            out += [item for item in doc.get("items") if item.is_map]
        elif doc.is_map:
            out.append(doc)
    return out


def document(path: str, text: str) -> YamlNode | None:
    """The one document of a YAML file (None when it has none), with its marks: a file that is
    not YAML, or holds several documents, is an InputError naming the place."""
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=yaml.SafeLoader) if n is not None]
    except (yaml.YAMLError, RecursionError) as err:
        raise yaml_error(err, path) from None
    if len(nodes) > 1:
        mark = nodes[1].start_mark
        raise InputError("expected one YAML document, found several", path=path, line=mark.line + 1,
                         column=mark.column + 1)
    if not nodes:
        return None
    check_node_graph(nodes[0], path)
    try:
        SafeConstructor().construct_document(nodes[0])
    except (yaml.YAMLError, ValueError) as err:  # e.g. an integer of more than 4,300 digits
        mark = getattr(err, "problem_mark", None) or nodes[0].start_mark
        raise InputError(f"invalid YAML: {str(err)[:120]}", path=path, line=mark.line + 1,
                         column=mark.column + 1) from None
    return YamlNode(nodes[0], path)


def _kind(doc: YamlNode) -> str | None:
    kind = doc.get("kind")
    return kind.scalar if kind is not None else None

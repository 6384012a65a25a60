"""Seeded mutations of real inputs: what a careless or hostile author makes of a valid file.
Byte flips, deletions, duplicated lines, and for YAML/JSON a value of the wrong type where a field
was (a string for an int, a list for a mapping, a huge number, nesting as deep as the limits let
through). Pure functions of (random.Random, bytes), so a failing seed replays exactly."""

from __future__ import annotations

import random

import yaml

_SWAPS = ("x", "", 0, -1, 2**63, -(2**63) - 1, 10**400, 1.5, 1e308, float("nan"), True, None,
          [], [1], {}, {"a": 1}, "1e999999999", "-5", "0x10", "9999999999999999999999Ei", "\x00", "é" * 50)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not data:
            data += b"x"
        choice = rng.randrange(6)
        i = rng.randrange(len(data))
        if choice == 0:
            data[i] ^= 1 << rng.randrange(8)
        elif choice == 1:
            del data[i:i + rng.randint(1, 16)]
        elif choice == 2:
            data[i:i] = rng.choice([b"{", b"}", b"(", b")", b"[", b"]", b":", b"\n", b"  ", b"\"", b"#", b"*",
                                    b"&a", b"*a", b"\xff", b"\t", b"-", b"!!", b"...", b"0" * 30])
        elif choice == 3:
            j = rng.randrange(len(data))
            data[min(i, j):min(i, j)] = data[min(i, j):max(i, j)][:4096]
        else:
            lines = bytes(data).split(b"\n")
            k = rng.randrange(len(lines))
            if choice == 4:
                lines.insert(k, lines[rng.randrange(len(lines))])
            else:
                del lines[k]
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def _deep(rng: random.Random):
    value = rng.choice(_SWAPS)
    for _ in range(rng.randint(1, 90)):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def _nodes(doc, path=()):
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _nodes(v, (*path, i))


def _replace(doc, path, value):
    if not path:
        return value
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return doc


def mutate_yaml(rng: random.Random, data: bytes) -> bytes:
    """Swap the types of a few values (or keys' values) of every document; bytes mutations when the
    text does not load."""
    try:
        docs = [d for d in yaml.safe_load_all(data.decode()) if d is not None]
    except (yaml.YAMLError, UnicodeDecodeError):
        return mutate_bytes(rng, data)
    if not docs:
        return mutate_bytes(rng, data)
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(docs))
        nodes = list(_nodes(docs[k]))
        path, _ = rng.choice(nodes)
        value = _deep(rng) if rng.random() < 0.15 else rng.choice(_SWAPS)
        docs[k] = _replace(docs[k], path, value)
    out = yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True, width=10**6).encode()
    return mutate_bytes(rng, out) if rng.random() < 0.2 else out


def mutate(rng: random.Random, data: bytes, structured: bool) -> bytes:
    return mutate_yaml(rng, data) if structured and rng.random() < 0.75 else mutate_bytes(rng, data)

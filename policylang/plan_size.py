"""How large a profile's plan would grow once its defs are inlined, bounded from the syntax
before compiling, so that `lint` (which reports P081, the plan too large) compiles only a
profile that may pass the limit, and imports no compiler when none may."""

from __future__ import annotations

import attrs

from .syntax import ast
from .check import Checked

# The most expressions one profile's plan may hold once its defs are inlined: defs that call
# the previous one twice double the plan at each level, so 20 such lines would take gigabytes.
# The stdlib's default profile (every plugin) holds about 12,000.
MAX_PLAN_SIZE = 100_000


def profiles_past_bound(checked: Checked) -> list:
    """(path, profile) of each profile whose plan may pass MAX_PLAN_SIZE: a bound on its plan
    is counted from the syntax, every def's inlined size once (so linear however defs double),
    every plugin three times (a rule's `when` is lowered for its filter, its score and itself).
    Only these can fail to compile with P081 (compile.plan_size_error compiles them to find the call)."""
    sizes = _InlinedSizes(checked.program)
    return [(path, profile) for path, profile in checked.program.profiles()
            if sum(3 * sizes.module(checked.program.uses[use]) + sizes.of(use, path) for use in profile.uses)
            > MAX_PLAN_SIZE]


class _InlinedSizes:
    """Syntax nodes counted as compile lowers them, each call of a def counting its body's (at
    least as many as compile's ``size``: statements and type names count too)."""

    def __init__(self, program):
        self.program = program
        self.defs: dict = {}        # (module, def) → its body's size, inlined
        self.modules: dict = {}
        self.module_defs: dict = {}
        self.fields: dict = {}      # node type → the names of its fields that may hold nodes

    def module(self, path: str) -> int:
        if path not in self.modules:
            skip = (ast.Def, ast.Profile, ast.Import, ast.PolicyDecl)
            self.modules[path] = sum(self.of(d, path) for d in self.program.modules[path].decls
                                     if not isinstance(d, skip))
        return self.modules[path]

    def of(self, node, path: str) -> int:
        size, missing = self._count(node, path)
        for key in missing:
            self._def_size(key)
        return size if not missing else self._count(node, path)[0]

    def _count(self, node, path: str) -> tuple[int, list]:
        """(the size, with the defs already sized; the defs called that are not sized yet)."""
        total, missing, stack = 0, [], [node]
        fields = self.fields
        while stack:
            x = stack.pop()
            kind = type(x)
            names = fields.get(kind)
            if names is None:
                names = fields[kind] = self._node_fields(kind)
            if names is False:      # a string, a number: not a node
                continue
            total += 1
            if kind is ast.Call:
                key = self._def_of(x, path)
                if key is not None:
                    known = self.defs.get(key)
                    if known is None:
                        missing.append(key)
                    else:
                        total += known
            for name in names:
                v = getattr(x, name)
                if type(v) is tuple:
                    stack += v
                else:
                    stack.append(v)
        return total, missing

    @staticmethod
    def _node_fields(kind: type):
        """The fields of a syntax node that may hold nodes (False: not a node)."""
        if not attrs.has(kind):
            return False
        plain = {"str", "'str | None'", "bool", "int", "Span"}
        return tuple(f.name for f in attrs.fields(kind) if str(f.type) not in plain)

    def _def_size(self, key) -> None:
        """Size the def and every def it calls, callees first, by a depth-first search without
        recursion (a def that calls itself, which check refuses, would count its own call once)."""
        stack, seen = [(key, False)], set()
        while stack:
            k, callees_sized = stack.pop()
            if k in self.defs:
                continue
            body = self._defs(k[0])[k[1]].body
            if callees_sized:
                self.defs[k] = self._count(body, k[0])[0]
            elif k not in seen:
                seen.add(k)
                stack.append((k, True))
                stack += [(m, False) for m in dict.fromkeys(self._count(body, k[0])[1]) if m not in seen]

    def _def_of(self, e: ast.Call, path: str):
        module_path, func = path, e.func
        if "." in func:
            alias, func = func.split(".", 1)
            module_path = self.program.imports.get(path, {}).get(alias)
        if module_path not in self.program.modules:
            return None
        return (module_path, func) if func in self._defs(module_path) else None

    def _defs(self, path: str) -> dict:
        if path not in self.module_defs:
            self.module_defs[path] = {d.name: d for d in self.program.modules[path].of_type(ast.Def)}
        return self.module_defs[path]

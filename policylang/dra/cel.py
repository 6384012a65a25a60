"""CEL device selectors for Dynamic Resource Allocation, as kube-scheduler v1.35 evaluates them.

A DeviceClass or a ResourceClaim request selects devices with CEL expressions over one variable,
``device`` (``driver``, ``attributes``, ``capacity``), in the Kubernetes CEL environment
(``k8s.io/dynamic-resource-allocation/cel/compile.go``). This module compiles such an expression
once (``compile_selector``, cached as upstream's ``cel/cache.go`` does) into a tree of Python
closures that is type-checked as it is built, and ``Selector.matches`` runs it against a device.
The work is split by stage: ``cel_values`` (types and runtime values), ``cel_library`` (the
functions, with their costs), ``cel_check`` (checking and compiling the parse tree: its walk and
the expressions), ``cel_calls`` (calls and macros), ``cel_literals`` (literals), ``cel_nodes``
(compiled Nodes and scopes), ``cel_tree`` (the parse tree's positions); this module is the
interface, the parser and the device conversion.

Parsing is cel-python's (celpy) Lark grammar of CEL. The checker and the evaluator are ours,
because no CEL library for Python carries what the DRA environment needs: typed values of
Kubernetes' own types (``quantity(...)``, ``semver(...)``), the attribute maps that answer an
unknown domain with an empty map, and a bound on the work of one evaluation.

The environment is the one kube-scheduler compiles in (environment.StoredExpressions, the
DRAConsumableCapacity gate off, its default in v1.35): ``device.allowMultipleAllocations`` is
declared and false. ``validate_selector`` checks new expressions as the API server does, without
that field. tests/test_dra_cel_oracle.py holds all of this against upstream's own package.

Cost: upstream enforces ``CELSelectorExpressionMaxCost`` with cel-go's cost tracker at runtime.
Ours charges each node of the expression once, each node of a comprehension's body and the
fold's own steps on each iteration, and each call what cel-go's tracker and Kubernetes'
CallCost charge it (strings by size, regular expressions by pattern length, ...). Every node
costs at least what cel-go charges for it, so a selector upstream stops also stops here; it can
stop slightly sooner (a branch skipped inside a comprehension is still charged). The
compile-time estimate of ``validate_selector``'s "too complex" check is this model at the
environment's size limits, not cel-go's estimator: close to it, not equal.

Not supported (refused with a message that says so): the URL, IP/CIDR, sets, format and optional
libraries, two-variable comprehensions and the lists library beyond indexOf/lastIndexOf.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections import OrderedDict
from collections.abc import Mapping
from functools import lru_cache

import attrs
import lark

from policylang.cache import cached_lark
from policylang.api.quantity import Quantity
from policylang.frozen import frozen
from policylang.dra.cel_values import (ANY, BOOL, CEL_SELECTOR_EXPRESSION_MAX_COST,
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH, CompileError, DEVICE_FIELDS, EvalError, Fn,
    NEW_EXPRESSION_FIELDS, _DefaultMap, _DeviceValue, _Run, kind, parse_semver)
from policylang.dra.cel_check import _Compiler
from policylang.dra.cel_nodes import _ROOT
from policylang.dra.cel_tree import _CheckError, _pos

__all__ = ["CEL_SELECTOR_EXPRESSION_MAX_COST", "CEL_SELECTOR_EXPRESSION_MAX_LENGTH", "CompileError", "Device",
           "EvalError", "Selector", "Version", "compile_selector", "validate_selector"]

# ---------------------------------------------------------------------------------------------
# The public interface.

class Version(str):
    """An attribute of type version (semver)."""


@frozen
class Device:
    """One device as a selector sees it. Attribute and capacity names are ``domain/id`` or just
    ``id``; an unqualified name belongs to the driver's domain (upstream's parseQualifiedName)."""

    driver: str
    attributes: Mapping[str, "bool | int | str | Version"] = attrs.field(factory=dict)
    capacity: Mapping[str, Quantity] = attrs.field(factory=dict)
    # From v1.36 (DRAConsumableCapacity on) the scheduler passes the device's
    # allowMultipleAllocations (allocator_incubating.go selectorsMatch); v1.35 leaves it false.
    allow_multiple_allocations: bool = False



_OPTIONS = dict(parser="lalr", start="expr", propagate_positions=True, maybe_placeholders=False,
                priority="invert", g_regex_flags=re.M)


# celpy's grammar also reads `1.` as a float, so `1.exists(…)` would not parse; the CEL spec (and
# cel-go's lexer) want a digit after the point.
_FLOAT_AS_CEL_SPEC = '\n%override FLOAT_LIT: /-?/ DIGIT* "." DIGIT+ EXPONENT? | /-?/ DIGIT+ EXPONENT\n'


@lru_cache(maxsize=None)
def _parser() -> lark.Lark:
    """The LALR parser of cel-python's CEL grammar (``celpy/cel.lark``). Only the grammar file is
    read, not celpy's modules; its tables are kept in policylang's cache (cache.cached_lark), as ours are."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("celpy")
    if spec is None or not spec.submodule_search_locations:
        raise CompileError("CEL selectors need the cel-python package (pip install cel-python)")
    grammar = (Path(next(iter(spec.submodule_search_locations))) / "cel.lark").read_text() + _FLOAT_AS_CEL_SPEC
    return cached_lark(grammar, _OPTIONS)


def _render(expression: str, message: str, line: int, column: int) -> str:
    """cel-go's issue text: ``ERROR: <input>:L:C: message``, the source line, a caret (none
    for an error of the whole expression, which cel-go places at -1:0)."""
    if line < 0:
        return f"ERROR: <input>:-1:0: {message}"
    lines = expression.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    caret = "." * (column - 1) + "^"
    return f"ERROR: <input>:{line}:{column}: {message}\n | {source}\n | {caret}"


@frozen
class Selector:
    """One compiled selector expression."""

    expression: str
    _fn: Fn = attrs.field(repr=False, eq=False)
    _static_cost: int = attrs.field(repr=False, eq=False)
    max_cost: int = attrs.field(default=0, eq=False)   # the worst-case estimate validation uses
    _deep: bool = attrs.field(default=False, eq=False, repr=False)
    cost_limit: int = CEL_SELECTOR_EXPRESSION_MAX_COST

    def matches(self, device: Device) -> bool:
        """Whether the device is selected; raises EvalError on a runtime error or when the
        evaluation exceeds the cost limit."""
        return self.evaluate(device)[0]

    def evaluate(self, device: Device) -> tuple[bool, int]:
        """``matches``'s answer and the cost charged for it (at least cel-go's actual cost)."""
        run = _Run({"device": _view(device)}, self.cost_limit)
        run.charge(self._static_cost)
        with _deep_recursion() if self._deep else contextlib.nullcontext():
            result = self._fn(run)
        if not isinstance(result, bool):
            name = kind(result).output()
            raise EvalError(f"CEL result of type {name} could not be converted to bool: "
                            + _NOT_BOOL.get(name, f"type conversion error from '{name}' to 'bool'"))
        return result, run.cost


@contextlib.contextmanager
def _deep_recursion():
    """Room for the 250 + 250 levels of nesting a selector may have, each a few Python frames
    to compile and to run (as cli.deep_recursion does for policies; Python 3.11 does not grow
    the C stack for these calls)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 20_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


# ConvertToNative's texts for the values an attribute can hold (an any result is one of them).
_NOT_BOOL = {"int": "unsupported type conversion from 'int' to bool",
             "string": "unsupported native conversion from string to 'bool'",
             "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'"}


def _compile(expression: str, new: bool = False) -> Selector:
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        raise CompileError(f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes")
    try:
        tree = _parser().parse(expression)
    except lark.exceptions.UnexpectedInput as err:
        line, column = max(getattr(err, "line", 1) or 1, 1), max(getattr(err, "column", 1) or 1, 1)
        raise CompileError("compilation failed: " + _render(
            expression, f"Syntax error: {_syntax_detail(expression, line, column)}", line, column)) from None
    except lark.exceptions.LarkError:
        raise CompileError("compilation failed: " + _render(expression, "Syntax error", 1, 1)) from None
    except RecursionError:
        raise CompileError("compilation failed: " + _render(
            expression, "Syntax error: expression nested too deeply", 1, 1)) from None
    compiler = _Compiler(NEW_EXPRESSION_FIELDS if new else DEVICE_FIELDS)
    try:
        with _deep_recursion():
            node = compiler.compile(tree, _ROOT)
    except _CheckError as err:
        line, column = _pos(err.where, expression.splitlines() or [""])
        raise CompileError("compilation failed: " + _render(expression, err.message, line, column)) from None
    if node.type not in (BOOL, ANY):
        raise CompileError(f"must evaluate to bool or the unknown type, not {node.type.output()}")
    return Selector(expression, node.fn, compiler.nodes, compiler.nodes + compiler.extra,
                    deep=compiler.deepest > 60)


def _syntax_detail(expression: str, line: int, column: int) -> str:
    lines = expression.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    near = source[column - 1:column] if column - 1 < len(source) else ""
    return f"unexpected input {near!r}" if near else "unexpected end of input"


@lru_cache(maxsize=1024)
def _compile_cached(expression: str, new: bool = False) -> Selector | CompileError:
    try:
        return _compile(expression, new)
    except CompileError as err:
        return err


def compile_selector(expression: str) -> Selector:
    """Compile a selector as kube-scheduler does (cached, in the stored-expressions
    environment); raises CompileError with upstream's text."""
    result = _compile_cached(expression)
    if isinstance(result, CompileError):
        raise CompileError(str(result))
    return result


def validate_selector(expression: str, *, stored: bool = False) -> str | None:
    """The API server's check of a CEL selector on a DeviceClass or a ResourceClaim
    (pkg/apis/resource/validation: validateCELSelector): None when valid, else the field
    error's text after its path (``Invalid value: "1": must evaluate to bool …``), to which
    the caller prefixes the field path. ``stored``: the expression is already stored (an update
    that leaves it unchanged), checked in the stored-expressions environment as upstream does;
    otherwise in the new-expressions one.

    The "too complex" check compares a worst-case estimate with CELSelectorExpressionMaxCost
    as upstream does; the estimate is this module's cost model at the environment's size
    limits (a device's 32 attributes, a literal's length), not cel-go's estimator, so an
    expression near the limit may be judged differently from the API server."""
    if len(expression.encode()) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes"
    result = _compile_cached(expression, not stored)
    if isinstance(result, CompileError):
        return f"Invalid value: {json.dumps(expression)}: {result}"
    selector = result
    if selector.max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return "Forbidden: too complex, exceeds cost limit"
    return None


# Devices are converted once into the maps a selector reads (the allocator asks many selectors
# about the same device); the cache holds the device itself, so an id is never reused under it.
_VIEWS: OrderedDict[int, tuple[Device, _DeviceValue]] = OrderedDict()
_VIEWS_MAX = 4096


def _view(device: Device) -> _DeviceValue:
    entry = _VIEWS.get(id(device))
    if entry is not None and entry[0] is device:
        return entry[1]
    view = _convert(device)
    _VIEWS[id(device)] = (device, view)
    if len(_VIEWS) > _VIEWS_MAX:
        _VIEWS.popitem(last=False)
    return view


def _split_name(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _convert(device: Device) -> _DeviceValue:
    attributes: dict[str, dict] = _DefaultMap()
    for name, value in device.attributes.items():
        if isinstance(value, Version):
            try:
                value = parse_semver(str(value))
            except ValueError as err:
                raise EvalError(f"attribute {name}: parse semantic version: {err}") from None
        elif isinstance(value, bool) or isinstance(value, str):
            pass
        elif isinstance(value, int):
            value = int(value)
        else:
            raise EvalError(f"attribute {name}: unsupported attribute value")
        domain, ident = _split_name(name, device.driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict] = _DefaultMap()
    for name, q in device.capacity.items():
        domain, ident = _split_name(name, device.driver)
        capacity.setdefault(domain, {})[ident] = q
    return _DeviceValue(device.driver, attributes, capacity, bool(device.allow_multiple_allocations))

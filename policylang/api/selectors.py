"""Label, selector and toleration semantics of the Kubernetes API, as one module that the
builtins (which declare them to policies) and the cluster state (whose indexes count pods by
the selectors) both use.

- ``tolerates``: Toleration.ToleratesTaint (with the TaintTolerationComparisonOperators gate
  given, v1.35's Lt and Gt);
- ``selector_matches``: a LabelSelector against a label map (metav1.LabelSelectorAsSelector);
- ``label_selector_error``: why LabelSelectorAsSelector rejects a selector, in apimachinery's words;
- ``term_matches`` / ``node_selector_matches``: NodeSelectorTerms (nodeaffinity.NodeSelector);
- ``narrowing``: the labels whose pools hold every pod a selector selects (for the indexes).
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING

from .errors import go_quote

if TYPE_CHECKING:   # annotations only: the builtins import this module for `policylang check`
    from . import model

def tolerates(tol, taint, comparison_operators: bool = False) -> bool:
    """Whether the toleration tolerates the taint (the API's Toleration.ToleratesTaint,
    k8s.io/api core/v1/toleration.go). ``comparison_operators`` is v1.35's
    TaintTolerationComparisonOperators gate: with it, Lt and Gt compare the taint's value with the
    toleration's as decimal integers (a value that is not one tolerates nothing); without it, and
    in v1.34, such a toleration tolerates nothing."""
    if tol is None or taint is None:
        return False
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator == "Exists":
        return True
    if tol.operator in ("Equal", ""):
        return tol.value == taint.value
    if tol.operator in ("Lt", "Gt") and comparison_operators:
        wanted, have = decimal_integer(tol.value), decimal_integer(taint.value)
        if wanted is None or have is None:
            return False
        return have < wanted if tol.operator == "Lt" else have > wanted
    return False


_DECIMAL_INTEGER = re.compile(r"0|-?[1-9][0-9]*")


def decimal_integer(text: str) -> "int | None":
    """``text`` as content.IsDecimalInteger and strconv.ParseInt(text, 10, 64) accept it (no sign
    but a leading minus, no leading zeros, 64 bits), or None."""
    if not _DECIMAL_INTEGER.fullmatch(text or ""):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def selector_matches(selector, labels) -> bool:
    """Whether labels satisfy a LabelSelector. A null selector matches nothing; an empty one everything."""
    if selector is None:
        return False
    labels = labels or {}
    for key, val in selector.match_labels.items():
        if labels.get(key) != val:
            return False
    for req in selector.match_expressions:
        has = req.key in labels
        op = req.operator
        if op == "In":
            ok = has and labels[req.key] in req.values
        elif op == "NotIn":
            ok = not has or labels[req.key] not in req.values
        elif op == "Exists":
            ok = has
        elif op == "DoesNotExist":
            ok = not has
        else:
            return False
        if not ok:
            return False
    return True


# metav1.LabelSelectorAsSelector's validation, with apimachinery v0.35's error texts
# (labels.NewRequirement, content.IsLabelKey / IsLabelValue, field.Error, errors.Aggregate).
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                          "'.', and must start and end with an alphanumeric character")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    examples_text = "(e.g. " + " or ".join(f"'{e}', " for e in examples) if examples else "("
    return f"{msg} {examples_text}regex used for validation is '{fmt}')"


def _label_key_errors(key: str) -> list[str]:
    parts = key.split("/")
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    errs, name = [], parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not re.fullmatch(_DNS1123_SUBDOMAIN_FMT, prefix):
                errs.append("prefix part " + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not re.fullmatch(_LABEL_KEY_FMT, name):
        errs.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs = ["must be no more than 63 bytes"] if len(value.encode()) > 63 else []
    if not re.fullmatch(_LABEL_VALUE_FMT, value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def label_key_errors(key: str) -> list[str]:
    """apimachinery's IsQualifiedName (a label key, a topology key, a resource name): its messages."""
    return _label_key_errors(key)


def label_value_errors(value: str) -> list[str]:
    """apimachinery's IsValidLabelValue: its messages."""
    return _label_value_errors(value)


def _go_json(values) -> str:
    """Go's json.Marshal of a []string (nil when empty, as NewRequirement receives it)."""
    if not values:
        return "null"
    text = json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _aggregate(errs: list[str]) -> str | None:
    """utilerrors.NewAggregate(errs).Error(), repeated messages dropped."""
    errs = list(dict.fromkeys(errs))
    if not errs:
        return None
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


def requirement_error(key: str, op: str, values) -> str | None:
    errs = []
    key_errs = _label_key_errors(key)
    if key_errs:
        errs.append(f"key: Invalid value: {go_quote(key)}: {'; '.join(key_errs)}")
    if op in ("In", "NotIn") and not values:
        errs.append(f"values: Invalid value: {_go_json(values)}: for 'in', 'notin' operators, values set can't be empty")
    if op in ("Exists", "DoesNotExist") and values:
        errs.append(f"values: Invalid value: {_go_json(values)}: values set must be empty for exists and does not exist")
    for i, v in enumerate(values):
        value_errs = _label_value_errors(v)
        if value_errs:
            errs.append(f"values[{i}][{key}]: Invalid value: {go_quote(v)}: {'; '.join(value_errs)}")
    return _aggregate(errs)


def label_selector_error(selector) -> "str | None":
    """Why metav1.LabelSelectorAsSelector rejects the selector (its error text), or None when it
    parses. A None selector parses (it matches nothing). matchLabels are checked in key order."""
    if selector is None:
        return None
    for key in sorted(selector.match_labels):
        err = requirement_error(key, "=", (selector.match_labels[key],))
        if err:
            return err
    for req in selector.match_expressions:
        if req.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return f"{go_quote(req.operator)} is not a valid label selector operator"
        err = requirement_error(req.key, req.operator, req.values)
        if err:
            return err
    return None


_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT64 = re.compile(r"^[+-]?[0-9]+$")


def valid_label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _PREFIX.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME.fullmatch(name))


def _valid_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME.fullmatch(value)))


def _requirement_valid(req) -> bool:
    """labels.NewRequirement's validation: a bad requirement makes its whole term fail."""
    return _valid_requirement(req.key, req.operator, tuple(req.values))


@functools.lru_cache(maxsize=4096)     # a pod's terms are checked against every node
def _valid_requirement(key: str, op: str, values: tuple) -> bool:
    if not valid_label_key(key):
        return False
    if op in ("In", "NotIn"):
        return len(values) > 0 and all(_valid_label_value(v) for v in values)
    if op in ("Exists", "DoesNotExist"):
        return len(values) == 0
    if op in ("Gt", "Lt"):
        # The value must parse as an int64 and, like every requirement value, be a valid label value.
        return len(values) == 1 and _int64(values[0]) is not None and _valid_label_value(values[0])
    return False


def _int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None where Go returns an error (syntax or range)."""
    if not _INT64.fullmatch(text):
        return None
    n = int(text, 10)
    return n if -(2 ** 63) <= n < 2 ** 63 else None


def _requirement_matches(req, value: str | None) -> bool:
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        have = _int64(value) if value is not None else None
        bound = _int64(req.values[0]) if len(req.values) == 1 else None
        if have is None or bound is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _field_requirement_valid(req) -> bool:
    return req.key == "metadata.name" and req.operator in ("In", "NotIn") and len(req.values) == 1


def term_matches(term, node) -> bool:
    """Whether a node satisfies one NodeSelectorTerm; a term with no requirements matches nothing."""
    if term is None or (not term.match_expressions and not term.match_fields):
        return False
    labels = node.metadata.labels
    for req in term.match_expressions:
        if not _requirement_valid(req) or not _requirement_matches(req, labels.get(req.key)):
            return False
    if not node.metadata.name:
        return all(_field_requirement_valid(r) for r in term.match_fields)
    for req in term.match_fields:
        if not _field_requirement_valid(req):
            return False
        if not _requirement_matches(req, node.metadata.name):
            return False
    return True


def node_selector_matches(selector, node) -> bool:
    """Whether a node satisfies a NodeSelector: any of its terms (a None selector: yes)."""
    if selector is None:
        return True
    return any(term_matches(t, node) for t in selector.node_selector_terms)


# ---- what the cluster state's indexes need of a selector ---------------------------------

def narrowing(selector: model.LabelSelector) -> tuple[list[tuple[str, str]], bool]:
    """The labels whose pools a selector's pods are in: its matchLabels and one-value In
    requirements (what a workload's matchLabels become when a selector is built from
    requirements); and whether being in them is all the selector asks."""
    narrowing = [r for r in selector.match_expressions if r.operator == "In" and len(r.values) == 1]
    labels = list(dict.fromkeys([*selector.match_labels.items(), *((r.key, r.values[0]) for r in narrowing)]))
    return labels, bool(labels) and len(narrowing) == len(selector.match_expressions)


def selector_sig(selector: "model.LabelSelector | None"):
    """A selector as a hashable value (its matchLabels are a dict)."""
    return None if selector is None else (tuple(sorted(selector.match_labels.items())), selector.match_expressions)


def selector_key(namespace: "str | None", selector: model.LabelSelector) -> tuple:
    """A (namespace, selector) pair as a hashable value."""
    return (namespace, *selector_sig(selector))

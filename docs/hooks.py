"""mkdocs hooks: the generated parts of docs/reference/ (issue 45).

A page says where generated text goes with a marker on a line of its own::

    <!-- generated: language -->   the language reference: the grammar's declarations, expression
                                   forms, keywords and terminals (from policylang/syntax/grammar.lark
                                   and grammar.keywords()), the builtins (builtins.REGISTRY), and the
                                   grammar file itself
    <!-- generated: cli -->        every verb's usage and help, from the command line's own parser
    <!-- generated: gates -->      the feature gates the stdlib models, per Kubernetes version (from
                                   policylang/target.py and feature_gates.json)

so the reference cannot drift from the code: nothing in it is copied by hand. mkdocs.yml names
this module under ``hooks:``; tests/test_reference_docs.py imports it by path and calls
``generate`` directly (no mkdocs needed: nothing here imports it). The text is deterministic: no
dates, and help formatted at a fixed width whatever the terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:           # a build from a checkout without policylang installed
    sys.path.insert(0, str(ROOT))

MARKER = re.compile(r"^<!-- generated: ([a-z_-]+) -->[ \t]*$", re.MULTILINE)
HELP_WIDTH = 100                         # the columns argparse formats help in, whatever the terminal


# ---- the hook --------------------------------------------------------------------------------

def on_page_markdown(markdown, page, config, files):
    """Replace each marker of the page with its generated text (an unknown marker fails the build)."""
    return replace_markers(markdown, getattr(getattr(page, "file", None), "src_uri", "?"))


def replace_markers(markdown: str, where: str = "?") -> str:
    def generated(match):
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{where}: unknown marker <!-- generated: {name} --> "
                             f"(known: {', '.join(sorted(GENERATORS))})")
        return GENERATORS[name]().rstrip("\n")
    return MARKER.sub(generated, markdown)


def generate(name: str) -> str:
    """The text that replaces ``<!-- generated: name -->``."""
    return GENERATORS[name]()


# ---- the grammar, read as text ---------------------------------------------------------------

def grammar_text() -> str:
    from importlib import resources
    return resources.files("policylang.syntax").joinpath("grammar.lark").read_text()


class Rule:
    def __init__(self, name: str, inlined: bool, comment: list[str]):
        self.name, self.inlined, self.comment = name, inlined, comment
        self.alternatives: list[str] = []
        self.terminal = name.isupper()

    def lines(self) -> list[str]:
        """The rule as grammar.lark writes it, without its ``-> alias``es (names of tree nodes, not
        syntax)."""
        alts = [_unaliased(a) for a in self.alternatives]
        head = f"{self.name}: "
        if self.terminal:
            return [head + " | ".join(alts)]
        return [head + alts[0]] + [" " * (len(head) - 2) + "| " + a for a in alts[1:]]

    def references(self) -> list[str]:
        """The rules its alternatives name, in order of first mention."""
        out: list[str] = []
        for alt in self.alternatives:
            for word in re.findall(r"\b[a-z_][a-z0-9_]*\b", _unquoted(_unaliased(alt))):
                if word not in out:
                    out.append(word)
        return out


def _unaliased(alt: str) -> str:
    return re.sub(r"\s*->\s*\w+\s*$", "", alt).strip()


def _unquoted(alt: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', " ", alt)


def parse_grammar(text: str) -> dict[str, Rule]:
    """grammar.lark's rules and terminals by name, in the file's order, each with the comment
    written just above it."""
    rules: dict[str, Rule] = {}
    comment: list[str] = []
    current: Rule | None = None
    for line in text.splitlines():
        stripped = line.strip()
        head = re.match(r"^(\??)([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$", line)
        if stripped.startswith("//"):
            comment.append(stripped[2:].strip())
            current = None
        elif head:
            current = Rule(head.group(2), bool(head.group(1)), comment)
            rules[current.name] = current
            current.alternatives += [a.strip() for a in _split_alternatives(head.group(3))]
            comment = []
        elif stripped.startswith("|") and current is not None:
            current.alternatives += [a.strip() for a in _split_alternatives(stripped[1:])]
        else:
            comment = [] if not stripped else comment
            if not stripped:
                current = None
    return rules


def _split_alternatives(body: str) -> list[str]:
    """``a | b`` split at the bars outside quotes, regular expressions and parentheses."""
    out, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(body):
        if quote:
            if ch == quote and body[i - 1] != "\\":
                quote = None
        elif ch in "\"/":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(body[start:i])
            start = i + 1
    out.append(body[start:])
    return [a for a in (x.strip() for x in out) if a]


def _keywords_of(rules: list[Rule]) -> list[str]:
    from policylang.syntax.grammar import keywords
    known = set(keywords())
    found: list[str] = []
    for rule in rules:
        for alt in rule.alternatives:
            for word in re.findall(r'"([a-z_]+)"', alt):
                if word in known and word not in found:
                    found.append(word)
    return found


# ---- the language reference ------------------------------------------------------------------

# Rules a declaration's section stops at: they have sections of their own.
_SHARED = ("expr", "type", "start", "decl")


def _declaration_closure(rules: dict[str, Rule], root: str) -> list[Rule]:
    """The declaration's rule and the rules only it uses (its statements), in order of first use."""
    seen: list[str] = []
    todo = [root]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in rules or (name in _SHARED and name != root):
            continue
        seen.append(name)
        todo += [r for r in rules[name].references() if r not in seen]
    return [rules[n] for n in seen]


def _expression_chain(rules: dict[str, Rule]) -> list[Rule]:
    """The expression rules from the loosest binding to the tightest, as ``?expr`` descends."""
    chain: list[Rule] = []
    name = "expr"
    while name in rules and rules[name] not in chain:
        rule = rules[name]
        chain.append(rule)
        passing = [a for a in rule.alternatives if re.fullmatch(r"[a-z_]+", _unaliased(a))]
        nxt = [a for a in passing if a != "if_expr"]
        if rule.name == "expr":
            chain += [rules[a] for a in passing if a == "if_expr" and a in rules]
        if not nxt:
            break
        name = _unaliased(nxt[-1])
    return chain


def _code(text: str) -> str:
    """``text`` as inline code inside a table cell."""
    text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _block(lines: list[str], lang: str = "text") -> list[str]:
    return [f"```{lang}", *lines, "```"]


def language_reference() -> str:
    from policylang.syntax.grammar import keywords

    text = grammar_text()
    rules = parse_grammar(text)
    out: list[str] = []

    out += ["## Keywords", "",
            "Every word the grammar spells out (the lexer is contextual, so after a `.` a field "
            "may still be called `value` or `code`):", "",
            " ".join(_code(k) for k in keywords()), ""]

    out += ["## Declarations", "",
            "A `.sched` file is a sequence of declarations (`start: decl*`), in any order.", ""]
    for alt in rules["decl"].alternatives:
        root = _unaliased(alt)
        closure = _declaration_closure(rules, root)
        if not closure:
            continue
        word = _keywords_of(closure[:1])[0] if _keywords_of(closure[:1]) else root
        out += [f"### `{word}`", ""]
        comment = [c for r in closure for c in r.comment]
        if comment:
            out += [" ".join(comment), ""]
        out += _block([line for r in closure for line in r.lines()], "text")
        out += ["", "Keywords: " + ", ".join(_code(k) for k in _keywords_of(closure)), ""]

    type_rules = _declaration_closure(rules, "type")
    if type_rules:
        out += ["## Types", "",
                "The types `param` declarations give: a name (`int`, `string`, `Pod`, …), a generic "
                "(`list[T]`, `map[K, V]`) or a record of fields.", ""]
        out += _block([line for r in type_rules for line in r.lines()], "text") + [""]

    chain = _expression_chain(rules)
    if chain:
        out += ["## Expressions", "",
                "From the loosest binding to the tightest: each level's operands are the next "
                "level's expressions.", "",
                "| Level | Rule | Forms |", "| ---: | --- | --- |"]
        level = 0
        for rule in chain:
            forms = [_unaliased(a) for a in rule.alternatives
                     if not re.fullmatch(r"[a-z_]+", _unaliased(a))]
            if not forms:
                continue
            level += 1
            out.append(f"| {level} | `{rule.name}` | " + "<br>".join(_code(f) for f in forms) + " |")
        out += [""]
        helpers = [rules[n] for n in ("arg", "for_clause", "where_clause", "by_clause", "entry") if n in rules]
        if helpers:
            comment = [c for r in helpers for c in r.comment]
            out += ["### Arguments, comprehensions and map entries", ""]
            if comment:
                out += [" ".join(comment), ""]
            out += _block([line for r in helpers for line in r.lines()], "text") + [""]
        from policylang.syntax.ast import AGGREGATES
        out += ["Besides the builtins below, calls take these forms of their own: the aggregates "
                + ", ".join(_code(a) for a in AGGREGATES) + " over a list or a comprehension "
                "(`sum(p.cpu for p in node.pods)`, `count(t in node.taints where ...)`), "
                "`group(x in xs by key)`, and `fold(acc = init for x in xs: step)`.", ""]

    terminals = [r for r in rules.values() if r.terminal]
    if terminals:
        out += ["## Tokens", ""]
        out += _block([line for r in terminals for line in
                       ["// " + c for c in r.comment] + r.lines()], "text") + [""]

    out += builtin_reference()

    out += ["## The grammar", "",
            "`policylang/syntax/grammar.lark`, the normative definition of the syntax "
            "(Lark, LALR with a contextual lexer); everything above is read from it.", ""]
    out += _block(text.rstrip("\n").splitlines(), "text") + [""]
    return "\n".join(out)


# ---- the builtins ----------------------------------------------------------------------------

def _declarations() -> dict[str, str]:
    """Each builtin's family: the ``# ---- family ----`` heading above its ``builtin("name", …)``
    declaration in policylang/builtins/ (values.py, then cluster.py: REGISTRY's order)."""
    import policylang.builtins as package
    families: dict[str, str] = {}
    for module in ("values", "cluster", "declare"):
        path = Path(package.__file__).parent / f"{module}.py"
        family = module
        for line in path.read_text().splitlines():
            heading = re.match(r"^# ---- (.+?)\s*-*\s*$", line)
            if heading:
                family = heading.group(1).split(":")[0].strip()
            for name in re.findall(r'\bbuiltin\(\s*"([A-Za-z_][A-Za-z0-9_]*)"', line):
                families.setdefault(name, family)
    return families


def _family(builtin, declared: dict[str, str]) -> str:
    return declared.get(builtin.name) or builtin.impl.__module__.rsplit(".", 1)[-1]


def _signature(builtin) -> str:
    try:
        names = [p.name for p in inspect.signature(builtin.impl).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    if builtin.needs_state and names[:1] == ["state"]:
        names = names[1:]
    if len(names) != len(builtin.params):
        names = [""] * len(builtin.params)
    params = [f"{n}: {t}" if n else str(t) for n, t in zip(names, builtin.params)]
    if builtin.variadic:
        params.append("…")
    return f"{builtin.name}({', '.join(params)})"


def _result(builtin) -> str:
    if not callable(builtin.result):
        return _code(str(builtin.result))
    try:
        general = builtin.result(list(builtin.params))
    except Exception:  # noqa: BLE001 - a result function that needs real arguments
        return "from the arguments"
    return f"{_code(str(general))}, from the arguments"


def builtin_reference() -> list[str]:
    from policylang.builtins import READS, REGISTRY

    declared = _declarations()
    families: dict[str, list] = {}
    for b in REGISTRY.values():
        families.setdefault(_family(b, declared), []).append(b)
    out = ["## Builtins", "",
           f"The {len(REGISTRY)} functions a policy can call, as `policylang/builtins/` declares them. "
           "*Reads* says what a builtin reads besides its arguments: "
           + ", ".join(_code(r) for r in READS) + " (a builtin that reads the cluster is "
           "recomputed as the cluster changes; one that reads nothing only when its arguments do).", ""]
    for family, members in families.items():
        out += [f"### {family[:1].upper() + family[1:]}", "",
                "| Builtin | Result | Reads | Description |", "| --- | --- | --- | --- |"]
        for b in members:
            doc = " ".join(b.doc.split()).replace("|", "\\|")
            out.append(f"| {_code(_signature(b))} | {_result(b)} | {b.reads} | {doc} |")
        out.append("")
    return out


# ---- the command line ------------------------------------------------------------------------

@contextlib.contextmanager
def _fixed_width():
    """argparse wraps help at the terminal's width (shutil.get_terminal_size reads COLUMNS)."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_WIDTH)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _subparsers(parser: argparse.ArgumentParser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def verbs() -> list[tuple[str, str]]:
    """Every verb of ``policylang`` with its one-line help, in the order ``policylang -h`` lists
    them (the families' registration order)."""
    from policylang.cli import _parser
    with _fixed_width():
        sub = _subparsers(_parser(None))            # no verb named: every verb's parser is built
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    return [(name, helps.get(name, "")) for name in sub.choices]


def verb_help(verb: str) -> str:
    """What ``policylang VERB --help`` prints, at the fixed width."""
    from policylang.cli import _parser
    with _fixed_width():
        parser = _parser(verb)
        return _subparsers(parser).choices[verb].format_help()


def cli_reference() -> str:
    from policylang.cli import _parser
    with _fixed_width():
        top = _parser(None).format_help()
    out = ["## `policylang`", "", "What `policylang --help` prints:", ""]
    out += _block(top.rstrip("\n").splitlines()) + [""]
    for name, lead in verbs():
        out += [f"## `policylang {name}`", ""]
        if lead:
            out += [lead[:1].upper() + lead[1:] + ("" if lead.endswith((".", "?", "!")) else "."), ""]
        out += _block(verb_help(name).rstrip("\n").splitlines()) + [""]
    return "\n".join(out)


# ---- the feature gates ---------------------------------------------------------------------------

def gates_reference() -> str:
    """Each modelled gate's stage and default per version (— where the version does not have it),
    and how many gates each version's --feature-gates accepts and its scheduler reads."""
    from policylang.target import MODELLED, VERSIONS, _modelled_at, gate_specs, read_by_scheduler

    def cell(name: str, version: str) -> str:
        spec = gate_specs(version).get(name)
        if spec is None:
            return "—"
        return f"{spec.stage.title() if spec.stage != 'GA' else 'GA'}, {str(spec.default).lower()}" + \
            (", locked" if spec.locked else "") + ("" if _modelled_at(name, version) else " (not modelled)")
    lines = ["| Gate | " + " | ".join(VERSIONS) + " |", "|---|" + "---|" * len(VERSIONS)]
    lines += [f"| {name} | " + " | ".join(cell(name, v) for v in VERSIONS) + " |" for name in MODELLED]
    lines += ["| *gates accepted (read by the scheduler)* | "
              + " | ".join(f"{len(gate_specs(v))} ({len(read_by_scheduler(v))})" for v in VERSIONS) + " |"]
    return "\n".join(lines) + "\n"


GENERATORS = {"language": language_reference, "cli": cli_reference, "gates": gates_reference}

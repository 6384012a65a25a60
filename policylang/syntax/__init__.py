"""The surface language: the grammar (grammar.lark, grammar.py), parsing text into the syntax tree
(parse.py, with build.py turning Lark's tree into ast.py's nodes), the canonical layout of a file
(format.py), and Python values written as .sched literals (literal.py)."""

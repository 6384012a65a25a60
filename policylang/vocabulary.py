"""The words the language fixes that more than one stage reads, in a module of their own so
that a stage reads them without importing another's classes: printing a plan imports no syntax
tree, checking a policy no plan."""

# The binary operators' precedence, loosest binding first, as the grammar nests them: both
# printers (syntax/format.py for source, plan_text.py for plans) parenthesise by it.
PRECEDENCE = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "in": 4, "notin": 4,
              "??": 5, "+": 6, "-": 6, "*": 7, "/": 7, "%": 7}

# The extension points a plugin may implement that change a decision (`policy P implements …`).
EXTENSION_POINTS = ("filter", "score", "postFilter")
# The normalisers a score names (`normalize max`); `normalize with EXPR` is the policy's own.
NORMALIZERS = ("none", "max", "reverse", "minmax")

"""The binary operators' precedence, loosest binding first, as the grammar nests them: both
printers (format.py for source, plan_text.py for plans) parenthesise by it. A module of its own
so that printing a plan imports no syntax tree."""

PRECEDENCE = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "in": 4, "notin": 4,
              "??": 5, "+": 6, "-": 6, "*": 7, "/": 7, "%": 7}

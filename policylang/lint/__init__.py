"""policylang lint: a rule catalogue checked over .sched policies, KubeSchedulerConfiguration
files and workload manifests.

    model.py      Rule, Finding, Edit          catalogue.py  the registry of rules
    rules/        the rule families            context.py    what a rule's check receives
    sched_ast.py  walking and folding .sched    yaml_source.py YAML nodes with line/column
    k8s.py        well-known labels and keys    settings.py   select/ignore/per-path settings
    suppress.py   `# policylang: ignore[…]`     edits.py      the text edits of fixes
    runner.py     finding, loading, fixing      formats.py    text, json, sarif, github
    command.py    the `lint` command            docs.py       docs/lint-rules.md
"""

from .catalogue import all_rules, get
from .runner import Result, Selection, lint

__all__ = ["all_rules", "get", "lint", "Result", "Selection"]

"""Write policylang/feature_gates.json: for each Kubernetes version policylang decides as, every
feature gate kube-scheduler's --feature-gates accepts (its default, whether it is locked, its stage)
and which of them the scheduler's own code reads.

    python tools/feature_gates.py            # needs Go: builds (or reuses) each version's oracle

The gates come from the oracle of each version (`oracle --list-gates`: what pkg/features and
cmd/kube-scheduler/app/server.go register, at that version). The gates the scheduler reads are the
`features.NAME` the version's pkg/scheduler, pkg/api/v1/resource and pkg/api/v1/pod name (read from
the Go module cache, where the oracle's build put k8s.io/kubernetes). tests/test_oracle_gates.py
checks the committed file against the oracles.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "policylang" / "feature_gates.json"
RELEASES = {"1.34": "v1.34.4", "1.35": "v1.35.4", "1.36": "v1.36.3", "1.37": "v1.37.2"}
READERS = ("pkg/scheduler", "pkg/api/v1/resource", "pkg/api/v1/pod")


def oracle_gates(version: str) -> dict[str, list]:
    binary = subprocess.run([str(ROOT / "oracle" / "build.sh"), version], check=True, capture_output=True,
                            text=True).stdout.strip()
    listed = json.loads(subprocess.run([binary, "--list-gates"], check=True, capture_output=True, text=True).stdout)
    # featuregate.PreRelease spells GA as the empty string.
    return {g["name"]: [g["default"], g["locked"], g["stage"] or "GA", g.get("dependsOn", [])] for g in listed}


def read_by_scheduler(version: str, known: set[str]) -> list[str]:
    modcache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
    tree = Path(modcache) / f"k8s.io/kubernetes@{RELEASES[version]}"
    names: set[str] = set()
    for folder in READERS:
        for path in (tree / folder).rglob("*.go"):
            if not path.name.endswith("_test.go"):
                names.update(re.findall(r"\bfeatures\.([A-Z]\w+)", path.read_text()))
    return sorted(names & known)


def main() -> int:
    table = {}
    for version in RELEASES:
        gates = oracle_gates(version)
        table[version] = {"gates": gates, "read_by_scheduler": read_by_scheduler(version, set(gates))}
    doc = {"source": "tools/feature_gates.py: oracle --list-gates of k8s.io/kubernetes "
                     + ", ".join(RELEASES.values()) + "; read_by_scheduler: features.NAME in " + ", ".join(READERS),
           "versions": table}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The oracle: kube-scheduler's own framework (oracle/, a Go program) deciding the same
scenarios as policylang, for the differential tests (tests/test_oracle.py) and the
conformance cases whose expectations it produced.

``oracle/build.sh VERSION`` builds it once per Kubernetes version (1.37 against k8s.io/kubernetes
v1.37.2, 1.36 against v1.36.3, 1.35 against v1.35.4, 1.34 against v1.34.4, from the same sources) into
``${XDG_CACHE_HOME:-~/.cache}/policylang/oracle/<key>`` (``make oracle`` builds them all);
:func:`oracle_binary` runs that script, which reuses the binary when the module is unchanged. Without Go the oracle is unavailable: its tests skip, unless
``POLICYLANG_REQUIRE_ORACLE=1`` (CI) turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).parent.parent
BUILD = ROOT / "oracle" / "build.sh"


class OracleUnavailable(Exception):
    pass


@lru_cache(maxsize=None)
def oracle_binary(version: str) -> str:
    """The oracle of kube-scheduler ``version`` (1.34 to 1.37), built if need be."""
    if shutil.which("go") is None:
        raise OracleUnavailable(f"go is not on PATH: the kube-scheduler {version} oracle cannot be built")
    done = subprocess.run([str(BUILD), version], capture_output=True, text=True)
    if done.returncode != 0:
        raise OracleUnavailable(f"oracle/build.sh {version} failed:\n{done.stderr[-4000:]}")
    return done.stdout.strip().splitlines()[-1]


class Oracle:
    """One long-lived ``oracle --serve`` process: a scenario per line in, a document per line out."""

    def __init__(self, binary: str):
        self.binary = binary
        self._proc = subprocess.Popen([binary, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, bufsize=1)
        self._lock = threading.Lock()

    def run(self, objects: list, pods: list, config: str = "", preemption: bool = True,
            percentage: "int | None" = None, mode: str = "eval", feature_gates: "dict | None" = None) -> dict:
        """One scenario: ``eval`` decides each pod on its own (policylang/eval/v1), ``simulate``
        places them one after another (policylang/simulate/v1); ``feature_gates`` set for it
        alone, as kube-scheduler's --feature-gates sets them."""
        scenario = {"objects": objects, "pods": pods, "config": config, "preemption": preemption,
                    "percentage": percentage, "mode": mode, "featureGates": feature_gates or {}}
        with self._lock:
            self._proc.stdin.write(json.dumps(scenario) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the oracle exited (status {self._proc.poll()})")
        doc = json.loads(line)
        if "error" in doc:
            raise RuntimeError(f"oracle: {doc['error']}")
        return doc

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=10)


def required() -> bool:
    return os.environ.get("POLICYLANG_REQUIRE_ORACLE", "") not in ("", "0")


# ---- comparing decisions --------------------------------------------------------------------

def assert_agree(ours: dict, theirs: dict) -> None:
    """Each of upstream's keys, then each of its nodes, compared on its own (``comparable``
    results), so that a failure names the field or the node that differs."""
    for key in theirs:
        if key != "nodes":
            assert ours[key] == theirs[key], key
    for name, node in theirs["nodes"].items():
        assert ours["nodes"].get(name) == node, name


def comparable(result: dict) -> dict:
    """What must agree between policylang and upstream in one eval/v1 result: the feasible set,
    per node its failing plugin, code and reasons, and its normalised (and weighted) score per
    plugin and total; the best set, the selected node (both pick the smallest name among the
    best), the FitError text and the message; preemption's nominated node and victims."""
    nodes = {}
    for n in result["nodes"]:
        nodes[n["name"]] = {
            "feasible": n["feasible"],
            "evaluated": n["evaluated"],
            "failure": n["failure"],
            "scores": None if n["scores"] is None else {
                p: {"normalized": s["normalized"], "weight": s["weight"], "weighted": s["weighted"]}
                for p, s in n["scores"].items()},
            "total": n["total"],
        }
    totals = {name: n["total"] for name, n in nodes.items() if n["total"] is not None}
    best = max(totals.values(), default=None)
    return {
        "feasible": sorted(result["feasible"]),
        "nodes": nodes,
        "best": sorted(name for name, t in totals.items() if t == best),
        "selected": result["selected"],
        "fit_error": result["fit_error"],
        "message": result["message"],
        "nominated_node": result.get("nominated_node"),
        "victims": None if result.get("victims") is None else sorted(
            (v["namespace"], v["name"]) for v in result["victims"]),
    }

"""The Kubernetes a decision targets: its version (1.34 to 1.37, default 1.37) and the values of
its feature gates.

A policy reads them as ``kubernetes.version`` ("1.37"), ``kubernetes.minor`` (37) and
``kubernetes.gates.NAME`` (a bool) for the gates the stdlib models (MODELLED), checked like any
field (another name is P012 with a did-you-mean) and folded into the plan as constants when a
profile is compiled for a target. `--kubernetes-version` and `--feature-gates` (spelled as
kube-scheduler spells it: ``A=true,B=false``) choose the target.

`--feature-gates` accepts every gate kube-scheduler of that version accepts (feature_gates.json,
written by tools/feature_gates.py from each version's own gate registry) and refuses what it
refuses, in its words (component-base featuregate/feature_gate.go: Set, SetFromMap): a gate the
version does not know, or one it locks. A gate the scheduler's code never reads changes no
decision, so any value is taken. A gate it reads that policylang does not model can only be left at
its default: another value is refused as "not modelled", never silently ignored. A set of values
that leaves an enabled gate without one it depends on is refused too, as kube-scheduler refuses it.
docs/versions.md lists every difference between the versions and where the stdlib carries it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .diagnostics import InputError
from .frozen import frozen

VERSIONS = ("1.34", "1.35", "1.36", "1.37")
DEFAULT_VERSION = "1.37"

# The gates whose values the stdlib's policies and the DRA allocator read: each changes what a
# shipped plugin decides, and docs/versions.md says where.
MODELLED = (
    "DynamicResourceAllocation",           # off: the DynamicResources plugin passes every pod
    "DRAExtendedResource",                 # on: extended resources a DeviceClass names are allocated by DRA (v1.35+)
    "InPlacePodLevelResourcesVerticalScaling",  # a resized pod's pod-level status counts (api/requests.py)
    "InPlacePodVerticalScaling",           # off (1.34): a pod being resized counts by its spec alone
    "NodeDeclaredFeatures",                # the NodeDeclaredFeatures plugin joins the default profile
    "RestartAllContainersOnContainerExits",  # the API server admits restartPolicyRules' RestartAllContainers
    "StorageCapacityScoring",              # VolumeBinding scores nodes by the free storage of provisioned claims
    "TaintTolerationComparisonOperators",  # tolerations with Lt and Gt compare integers
    "VolumeLimitScaling",                  # NodeVolumeLimits rejects nodes missing an opted-in CSI driver
)

# A modelled gate whose feature policylang decides as upstream does only from a version on: below
# it, the gate is modelled at its default only (another value is "not modelled"). v1.34's
# DRAExtendedResource is an older design (dynamicresources/extended/util.go lists the classes
# itself), v1.35's is v1.36's (extendeddynamicresources.go).
MODELLED_FROM = {"DRAExtendedResource": "1.35"}


@frozen
class GateSpec:
    """A gate's spec at one version: its default, whether it is locked to it, its stage, and the
    gates it needs enabled when it is (from v1.35: component-base featuregate AddDependencies)."""
    default: bool
    locked: bool
    stage: str
    depends_on: tuple[str, ...] = ()


@functools.cache
def _table() -> dict:
    return json.loads((Path(__file__).parent / "feature_gates.json").read_text())["versions"]


def gate_specs(version: str) -> dict[str, GateSpec]:
    """Every gate kube-scheduler of ``version`` accepts, with its spec there."""
    return {name: GateSpec(default, locked, stage, tuple(deps))
            for name, (default, locked, stage, deps) in _table()[version]["gates"].items()}


def read_by_scheduler(version: str) -> frozenset[str]:
    """The gates whose values the scheduler's code of ``version`` reads."""
    return frozenset(_table()[version]["read_by_scheduler"])


@frozen
class Target:
    version: str = DEFAULT_VERSION
    # Every gate of MODELLED, with its value for this target (set, or the version's default).
    gates: tuple[tuple[str, bool], ...] = ()
    # The gates given on the command line, as given (for the JSON output's record).
    explicit: tuple[tuple[str, bool], ...] = ()

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])

    def gate(self, name: str) -> bool:
        return dict(self.gates)[name]

    def value(self) -> dict:
        """What `kubernetes` is in a policy: a record of the version and the gates."""
        return {"version": self.version, "minor": self.minor, "gates": dict(self.gates)}

    def key(self) -> str:
        """The target in a cache key."""
        return ";".join([self.version, ",".join(f"{k}={v}" for k, v in self.gates),
                         ",".join(f"{k}={v}" for k, v in self.explicit)])

    def json(self) -> dict:
        return {"version": self.version, "feature_gates": dict(self.explicit)}


def default_gates(version: str) -> dict[str, bool]:
    """The modelled gates at their defaults; a gate the version does not have yet is false (the
    feature is not there), one it has removed after graduation is true (it is always on)."""
    specs = gate_specs(version)
    return {name: specs[name].default if name in specs else _graduated(name, version) for name in MODELLED}


def _graduated(name: str, version: str) -> bool:
    return any(name in _table()[v]["gates"] for v in VERSIONS[:VERSIONS.index(version)])


def make_target(version: str | None = None, feature_gates: str | None = None) -> Target:
    """The target of ``--kubernetes-version`` and ``--feature-gates``; an InputError (exit 2)
    for a version policylang does not decide as, a malformed list, a gate the version does not
    know, one it locks, or one policylang does not model set away from its default."""
    version = DEFAULT_VERSION if version is None else version.strip().removeprefix("v")
    if version.count(".") == 2:   # 1.34.4: the minor decides; every patch release of it is the same here
        version = version.rsplit(".", 1)[0]
    if version not in VERSIONS:
        raise InputError(f"--kubernetes-version {version}: policylang decides as Kubernetes "
                         f"{', '.join(VERSIONS[:-1])} or {VERSIONS[-1]}")
    explicit = parse_feature_gates(feature_gates or "", version)
    gates = {**default_gates(version), **{k: v for k, v in explicit.items() if k in MODELLED}}
    return Target(version, tuple(sorted(gates.items())), tuple(explicit.items()))


def parse_feature_gates(text: str, version: str) -> dict[str, bool]:
    """``A=true,B=false`` as featuregate.Set parses it (strconv.ParseBool's spellings), then
    checked as SetFromMap checks it, every error reported at once."""
    values: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise InputError(f"--feature-gates: missing bool value for {key}")
        raw = raw.strip()
        if raw not in _BOOLS:
            raise InputError(f"--feature-gates: invalid value of {key}={raw}, err: strconv.ParseBool: "
                             f"parsing {_go_quote(raw)}: invalid syntax")
        values[key] = _BOOLS[raw]
    specs, read = gate_specs(version), read_by_scheduler(version)
    errors = []
    for key, value in values.items():
        spec = specs.get(key)
        if spec is None:
            errors.append(f"unrecognized feature gate: {key}")
        elif spec.locked and value != spec.default:
            errors.append(f"cannot set feature gate {key} to {str(value).lower()}, feature is locked to "
                          f"{str(spec.default).lower()}")
        elif key in read and not _modelled_at(key, version) and value != spec.default:
            errors.append(f"{key}={str(value).lower()} is not modelled: policylang decides as Kubernetes {version} "
                          f"with {key}={str(spec.default).lower()} (its default); the gates it models are "
                          f"{', '.join(g for g in MODELLED if g in specs and _modelled_at(g, version))}")
    if not errors:
        errors = _unmet_dependencies(specs, values)
    if errors:
        raise InputError("--feature-gates: " + "; ".join(errors))
    return values


def _unmet_dependencies(specs: dict[str, GateSpec], values: dict[str, bool]) -> list[str]:
    """Each enabled gate (set, or on by default) whose dependencies are not all enabled, as
    featuregate.SetFromMap reports it once the values are set."""
    def enabled(name: str) -> bool:
        return values.get(name, specs[name].default) if name in specs else False
    return [f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]"
            for name, spec in sorted(specs.items())
            if enabled(name) and (off := [dep for dep in spec.depends_on if not enabled(dep)])]


def _modelled_at(gate: str, version: str) -> bool:
    since = MODELLED_FROM.get(gate)
    return gate in MODELLED and (since is None or VERSIONS.index(version) >= VERSIONS.index(since))


# strconv.ParseBool's accepted spellings.
_BOOLS = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
          **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False)}


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


DEFAULT = make_target()

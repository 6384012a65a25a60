"""The Kubernetes a decision targets: its version (1.34 or 1.35) and the values of the feature
gates that change what the stdlib's plugins decide.

A policy reads them as ``kubernetes.version`` ("1.35"), ``kubernetes.minor`` (35) and
``kubernetes.gates.NAME`` (a bool), checked like any field (a gate the table does not name is
P012 with a did-you-mean) and folded into the plan as constants when a profile is compiled
for a target. `--kubernetes-version` and `--feature-gates` (spelled as kube-scheduler spells
it: ``A=true,B=false``) choose the target; a gate the version does not know, or one it locks,
is refused as kube-scheduler refuses it (component-base featuregate/feature_gate.go: Set,
SetFromMap).

The gate table is transcribed from each version's pkg/features/kube_features.go
(defaultVersionedKubernetesFeatureGates: the spec in force at that version), only for the gates
the stdlib reads. A gate a version does not have reads as false: the feature is not there yet.
docs/versions.md lists every difference between the versions and where the stdlib carries it.
"""

from __future__ import annotations

from .diagnostics import InputError
from .frozen import frozen

DEFAULT_VERSION = "1.35"


@frozen
class GateSpec:
    """A gate's spec at one version: its default, whether it is locked to it, its stage."""
    default: bool
    locked: bool
    stage: str


# Per gate, per version, its spec in force there (k8s.io/kubernetes vX.Y.4 pkg/features/kube_features.go).
GATES: dict[str, dict[str, GateSpec]] = {
    # GA in 1.34 (may still be turned off), locked to true in 1.35. Off: the DynamicResources
    # plugin is disabled (dynamicresources.go New: `enabled`), every pod passes it.
    "DynamicResourceAllocation": {
        "1.34": GateSpec(default=True, locked=False, stage="GA"),
        "1.35": GateSpec(default=True, locked=True, stage="GA"),
    },
    # New (alpha, off) in 1.35: tolerations with the Lt and Gt operators compare the taint's
    # value as a decimal integer (k8s.io/api core/v1/toleration.go ToleratesTaint); off, such a
    # toleration tolerates nothing. Read by TaintToleration, NodeUnschedulable and
    # PodTopologySpread's nodeTaintsPolicy (component-helpers scheduling/corev1/helpers.go).
    "TaintTolerationComparisonOperators": {
        "1.35": GateSpec(default=False, locked=False, stage="Alpha"),
    },
}

VERSIONS = ("1.34", "1.35")


@frozen
class Target:
    version: str = DEFAULT_VERSION
    # Every gate of GATES, with its value for this target (set, or the version's default).
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
    return {name: specs[version].default if version in specs else False for name, specs in GATES.items()}


def make_target(version: str | None = None, feature_gates: str | None = None) -> Target:
    """The target of ``--kubernetes-version`` and ``--feature-gates``; an InputError (exit 2)
    for a version policylang does not decide as, a malformed list, a gate the version does not
    know, or one it locks."""
    version = DEFAULT_VERSION if version is None else version.strip().removeprefix("v")
    if version.count(".") == 2:   # 1.34.4: the minor decides; every patch release of it is the same here
        version = version.rsplit(".", 1)[0]
    if version not in VERSIONS:
        raise InputError(f"--kubernetes-version {version}: policylang decides as Kubernetes "
                         f"{' or '.join(VERSIONS)}")
    explicit = parse_feature_gates(feature_gates or "", version)
    gates = {**default_gates(version), **explicit}
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
    errors = []
    for key, value in values.items():
        spec = GATES.get(key, {}).get(version)
        if spec is None:
            known = sorted(name for name, specs in GATES.items() if version in specs)
            errors.append(f"unrecognized feature gate: {key} (policylang models, for Kubernetes {version}: "
                          f"{', '.join(known)})")
        elif spec.locked and value != spec.default:
            errors.append(f"cannot set feature gate {key} to {str(value).lower()}, feature is locked to "
                          f"{str(spec.default).lower()}")
    if errors:
        raise InputError("--feature-gates: " + "; ".join(errors))
    return values


# strconv.ParseBool's accepted spellings.
_BOOLS = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
          **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False)}


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


DEFAULT = make_target()

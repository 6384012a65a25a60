"""What a rule's check receives: one .sched file, one KubeSchedulerConfiguration, or one
workload manifest, with what the rules need to know about it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ..syntax import ast
from ..check import Checked
from ..program import Program

if TYPE_CHECKING:   # annotations only: linting .sched files reads no YAML
    from ..yaml_source import YamlNode

WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "Job", "CronJob", "DaemonSet", "ReplicaSet")


@attrs.define
class Options:
    nodes: int | None = None   # --nodes N: how many nodes the target cluster has, when known


@attrs.define
class SchedContext:
    path: str
    text: str
    program: Program
    checked: Checked
    options: Options
    # (resolved module path, def name) of every def another linted file calls through an import.
    external_def_uses: set = attrs.Factory(set)

    @property
    def module(self) -> ast.Module:
        return self.program.modules[self.program.root]

    @property
    def resolved(self) -> str:
        return str(Path(self.path).resolve())

    def deps(self, node) -> frozenset | None:
        """The scopes the checker found ``node`` depends on (pod, node, cluster, params, …)."""
        return self.checked.stage_deps.get(node)

    def policy_module(self, use: ast.Use) -> ast.Module | None:
        target = self.program.uses.get(use)
        return self.program.modules.get(target) if target else None


@attrs.define
class ConfigContext:
    path: str
    text: str
    doc: YamlNode
    options: Options
    # The configuration is YAML text held in a ConfigMap's data key: its spans were moved to the
    # file's lines, but its offsets are the embedded text's, so no fix edits it.
    embedded: bool = False


@attrs.define
class ManifestContext:
    path: str
    text: str
    obj: YamlNode
    kind: str
    options: Options

    @property
    def template(self) -> YamlNode | None:
        """The pod template (or the Pod itself)."""
        if self.kind == "Pod":
            return self.obj
        if self.kind == "CronJob":
            return self.obj.at("spec", "jobTemplate", "spec", "template")
        return self.obj.at("spec", "template")

    @property
    def pod_spec(self) -> YamlNode | None:
        t = self.template
        spec = t.get("spec") if t is not None else None
        return spec if spec is not None and spec.is_map else None

    @property
    def labels(self) -> dict:
        t = self.template
        labels = t.at("metadata", "labels") if t is not None else None
        value = labels.value if labels is not None else None
        return value if isinstance(value, dict) else {}

    @property
    def replicas(self) -> tuple[int, YamlNode | None] | None:
        """How many pods of this template run at once, and the field that says so."""
        if self.kind in ("Deployment", "StatefulSet", "ReplicaSet"):
            field = self.obj.at("spec", "replicas")
            n = field.scalar if field is not None else 1
            return (n, field) if isinstance(n, int) and not isinstance(n, bool) else None
        if self.kind == "Job":
            field = self.obj.at("spec", "parallelism")
            n = field.scalar if field is not None else 1
            return (n, field) if isinstance(n, int) and not isinstance(n, bool) else None
        return None

    def containers(self, init: bool = False):
        spec = self.pod_spec
        keys = ("containers", "initContainers") if init else ("containers",)
        for key in keys:
            seq = spec.get(key) if spec is not None else None
            if seq is not None and seq.is_seq:
                yield from (c for c in seq if c.is_map)

    def tolerations(self):
        spec = self.pod_spec
        seq = spec.get("tolerations") if spec is not None else None
        if seq is not None and seq.is_seq:
            yield from (t for t in seq if t.is_map)

    def affinity(self, *keys: str) -> YamlNode | None:
        spec = self.pod_spec
        return spec.at("affinity", *keys) if spec is not None else None

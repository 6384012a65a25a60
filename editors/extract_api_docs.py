"""Write policylang/lsp/api_docs.json: the Kubernetes API's own description of every field of the
typed cluster model, for the language server's hover. Read from the generated swagger docs of
k8s.io/api and k8s.io/apimachinery at the release the project follows (v1.37: v0.37.2):

    <api>/core/v1/types_swagger_doc_generated.go        (Pod, Node, volumes, …)
    <api>/storage/v1/, policy/v1/, scheduling/v1/ …     (StorageClass, PodDisruptionBudget, …)
    <api>/resource/v1/                                  (DeviceClass, ResourceClaim, ResourceSlice, …)
    <apimachinery>/pkg/apis/meta/v1/types_swagger_doc_generated.go   (ObjectMeta, LabelSelector)

    python editors/extract_api_docs.py API_CHECKOUT APIMACHINERY_CHECKOUT [--tag v0.37.2]

(CHECKOUT: a clone, or a bare git directory, of github.com/kubernetes/api and
github.com/kubernetes/apimachinery.) Only the model's kinds and fields are kept; a kind whose
name is not an API type (Workload: policylang's view of a controller) gets none.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "policylang" / "lsp" / "api_docs.json"
# resource/v1 first: the model's ResourceClaim is resource.k8s.io's (core/v1 has a type of the
# same name, a container's reference to a claim, which the model does not have); then core/v1,
# the kinds the model means where the other groups reuse a name.
API_FILES = ("resource/v1", "core/v1", "storage/v1", "policy/v1", "scheduling/v1")
META_FILE = "pkg/apis/meta/v1"
# Model records with no API type of their name: the workload controllers' view, and a status's
# applied resources (core/v1 types it as ResourceRequirements; the model keeps it apart because an
# absent list and an empty one count differently there).
NOT_API_TYPES = ("Workload", "WorkloadSpec", "ActuatedResources")

_MAP = re.compile(r"^var map_(\w+) = map\[string\]string\{$")
_ENTRY = re.compile(r'^\s*"([^"]*)":\s*"((?:[^"\\]|\\.)*)",$')


def _go_source(checkout: str, tag: str, folder: str) -> str:
    return subprocess.run(["git", "-C", checkout, "show", f"{tag}:{folder}/types_swagger_doc_generated.go"],
                          check=True, capture_output=True, text=True).stdout


def parse_swagger_docs(source: str) -> dict[str, dict[str, str]]:
    """{type: {field: doc}} from a types_swagger_doc_generated.go (the type's own doc under "")."""
    out: dict[str, dict[str, str]] = {}
    current = None
    for line in source.splitlines():
        m = _MAP.match(line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        if line.strip() == "}":
            current = None
            continue
        m = _ENTRY.match(line)
        if current is not None and m:
            current[m.group(1)] = json.loads(f'"{m.group(2)}"')
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("api")
    ap.add_argument("apimachinery")
    ap.add_argument("--tag", default="v0.37.2")
    args = ap.parse_args(argv)
    docs: dict[str, dict[str, str]] = {}
    for folder in API_FILES:
        for kind, fields in parse_swagger_docs(_go_source(args.api, args.tag, folder)).items():
            docs.setdefault(kind, fields)   # the first group's, in API_FILES' order
    for kind, fields in parse_swagger_docs(_go_source(args.apimachinery, args.tag, META_FILE)).items():
        docs.setdefault(kind, fields)

    sys.path.insert(0, str(ROOT))
    from policylang.types import model_schema, record_fields
    out = {"_source": f"k8s.io/api and k8s.io/apimachinery {args.tag}, types_swagger_doc_generated.go "
                      f"(written by editors/extract_api_docs.py)"}
    for kind in sorted(model_schema()):
        if kind in NOT_API_TYPES or kind not in docs:
            continue
        upstream = docs[kind]
        out[kind] = {name: upstream[name] for name in ["", *record_fields(kind)] if name in upstream}
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    missing = sorted(k for k in model_schema() if k not in out and k not in NOT_API_TYPES)
    if missing:
        print(f"no upstream docs for: {', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

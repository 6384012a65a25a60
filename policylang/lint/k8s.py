"""What Kubernetes itself says about label keys, taint keys and topology keys.

Keys under kubernetes.io/ and k8s.io/ (and their subdomains) are reserved for Kubernetes
components; only the ones listed here are set by a component users can rely on
(https://kubernetes.io/docs/reference/labels-annotations-taints/).
"""

from __future__ import annotations

import difflib

WELL_KNOWN_KEYS = frozenset({
    # Node labels set by the kubelet, the cloud provider or the node lifecycle controller.
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type", "node.kubernetes.io/windows-build",
    "node.kubernetes.io/exclude-from-external-load-balancers", "node.kubernetes.io/exclude-disruption",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    # Pod and namespace labels set by controllers.
    "kubernetes.io/metadata.name", "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
    "batch.kubernetes.io/job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-completion-index",
    "kubernetes.io/service-name", "endpointslice.kubernetes.io/managed-by", "service.kubernetes.io/headless",
    "service.kubernetes.io/service-proxy-name",
    # Taints the node lifecycle controller, the kubelet and cloud providers set.
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/network-unavailable", "node.kubernetes.io/out-of-service",
    "node.cloudprovider.kubernetes.io/uninitialized", "node.cloudprovider.kubernetes.io/shutdown",
})

# Reserved prefixes whose keys are meant to be set by users or by well-known tools.
OPEN_PREFIXES = (
    "node-role.kubernetes.io/",          # kubeadm and admins: node-role.kubernetes.io/control-plane
    "node-restriction.kubernetes.io/",   # for admins: the kubelet cannot set these on itself
    "app.kubernetes.io/",                # the recommended application labels
    "feature.node.kubernetes.io/",       # node-feature-discovery
    "pod-security.kubernetes.io/",       # Pod Security admission (namespaces)
)

TOPOLOGY_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
DEPRECATED_TOPOLOGY = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
                       "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


def is_reserved(key: str) -> bool:
    prefix, slash, _ = key.partition("/")
    if not slash:
        return False
    return prefix in ("kubernetes.io", "k8s.io") or prefix.endswith((".kubernetes.io", ".k8s.io"))


def is_unknown_reserved(key: str) -> bool:
    """Under a reserved prefix, yet set by no component anyone can rely on."""
    return is_reserved(key) and key not in WELL_KNOWN_KEYS and not key.startswith(OPEN_PREFIXES)


def _closest(key: str, options) -> str | None:
    """A well-known key with the same name (`kubernetes.io/zone` → topology.kubernetes.io/zone),
    or one spelled almost the same."""
    name = key.partition("/")[2]
    same_name = sorted(k for k in options if k.partition("/")[2] == name and not k.startswith("failure-domain."))
    if same_name:
        return same_name[-1]
    # Compare the names: every reserved key shares the prefix, which would make any two look alike.
    by_name = {k.partition("/")[2]: k for k in sorted(options)}
    close = difflib.get_close_matches(name, sorted(by_name), n=1, cutoff=0.75)
    return by_name[close[0]] if close else None


def reserved_notes(key: str) -> tuple[str, ...]:
    close = _closest(key, WELL_KNOWN_KEYS)
    if close:
        return (f"help: did you mean '{close}'?",)
    name = key.partition("/")[2]
    return (f"help: use a prefix you own for custom labels, e.g. 'example.com/{name}'",)


def topology_problem(key: str) -> tuple[str, tuple[str, ...]] | None:
    """Why nodes are unlikely to carry this topology key, or None when they will."""
    if not key:
        return "the topology key is empty", ("help: use kubernetes.io/hostname, topology.kubernetes.io/zone or "
                                             "a label your nodes carry",)
    if key in TOPOLOGY_KEYS:
        return None
    if key in DEPRECATED_TOPOLOGY:
        return (f"'{key}' is deprecated and newer nodes no longer carry it",
                (f"help: use '{DEPRECATED_TOPOLOGY[key]}'",))
    if is_reserved(key) and not key.startswith(("node-restriction.kubernetes.io/", "feature.node.kubernetes.io/")):
        close = _closest(key, TOPOLOGY_KEYS)
        hint = (f"help: did you mean '{close}'?",) if close else \
            ("help: topology keys are kubernetes.io/hostname, topology.kubernetes.io/zone, "
             "topology.kubernetes.io/region, or a label of your own",)
        return f"'{key}' is not a topology label nodes carry", hint
    return None

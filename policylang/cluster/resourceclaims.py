"""The resourceclaim controller, as `simulate` runs it before a pod is scheduled: for each pod claim
that names a ResourceClaimTemplate and has no entry in the pod's status.resourceClaimStatuses, a
ResourceClaim is made from the template and named in that status, so that DynamicResources finds
it (pkg/controller/resourceclaim/controller.go, handleClaim).

The claim is the template's spec with its metadata's labels and annotations, the
resource.kubernetes.io/pod-claim-name annotation, and the pod as its controlling owner, in the
pod's namespace. Upstream names it with generateName `<pod>-<pod claim>-` (both cut in
proportion when longer than 57 characters) and five random characters from the API server's
alphabet; here those five are drawn from a SHA-256 of the namespace, pod and pod claim names,
so a simulation names the same claims every time and `--write-state` can be loaded again. A
template that does not exist makes no claim: the pod then waits, as DynamicResources says
("ResourceClaim not created yet")."""

from __future__ import annotations

import hashlib

import attrs

from ..api import model

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# k8s.io/apimachinery/pkg/util/rand: the characters generated names end with.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_BASE_LEN = 57   # leaves room for the hyphen and five characters in a 63-character name


def generated_name(pod: model.Pod, pod_claim_name: str) -> str:
    base = f"{pod.metadata.name}-{pod_claim_name}-"
    if len(base) > MAX_BASE_LEN:
        pod_name = pod.metadata.name
        base = (pod_name[:len(pod_name) * MAX_BASE_LEN // len(base)] + "-"
                + pod_claim_name[:len(pod_claim_name) * MAX_BASE_LEN // len(base)])
    digest = hashlib.sha256(f"{pod.metadata.namespace}/{pod.metadata.name}/{pod_claim_name}".encode()).digest()
    return base + "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in digest[:5])


def claim_from_template(pod: model.Pod, pod_claim_name: str,
                        template: model.ResourceClaimTemplate) -> model.ResourceClaim:
    meta = template.spec.metadata
    return model.ResourceClaim(
        metadata=model.ObjectMeta(
            name=generated_name(pod, pod_claim_name), namespace=pod.metadata.namespace,
            labels=dict(meta.labels), annotations={**meta.annotations, POD_CLAIM_ANNOTATION: pod_claim_name},
            owner_references=(model.OwnerReference(kind="Pod", name=pod.metadata.name, api_version="v1",
                                                   uid=pod.metadata.uid, controller=True),)),
        spec=template.spec.spec)


def instantiate(state, pod: model.Pod) -> model.Pod:
    """The pod with a claim made (into the state) for each of its template claims that has none
    yet, and named in its status; the pod itself when there is nothing to make."""
    named = {s.name for s in pod.status.resource_claim_statuses}
    made = []
    for pc in pod.spec.resource_claims:
        if pc.resource_claim_template_name is None or pc.resource_claim_name is not None or pc.name in named:
            continue
        template = state.resource_claim_templates.get((pod.metadata.namespace, pc.resource_claim_template_name))
        if template is None:
            continue
        claim = state.resource_claims.get((pod.metadata.namespace, generated_name(pod, pc.name)))
        if claim is None:
            claim = claim_from_template(pod, pc.name, template)
            state.add_resource_claim(claim)
        made.append(model.PodResourceClaimStatus(name=pc.name, resource_claim_name=claim.metadata.name))
    if not made:
        return pod
    return attrs.evolve(pod, status=attrs.evolve(
        pod.status, resource_claim_statuses=(*pod.status.resource_claim_statuses, *made)))

package main

// The resourceclaim controller, as simulate runs it before a pod is scheduled: each pod claim
// that names a ResourceClaimTemplate and has no entry in pod.status.resourceClaimStatuses gets
// a ResourceClaim made from the template (pkg/controller/resourceclaim/controller.go,
// handleClaim), named in the pod's status. Upstream names it with generateName
// "<pod>-<pod claim>-" (both cut in proportion past 57 characters) and five random characters;
// here the five come from a SHA-256 of the namespace, pod and pod claim names, the convention
// policylang's simulate follows (policylang/cluster/resourceclaims.py), so that both sides name
// the same claims.

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

const (
	podClaimAnnotation = "resource.kubernetes.io/pod-claim-name"
	nameAlphabet       = "bcdfghjklmnpqrstvwxz2456789" // k8s.io/apimachinery/pkg/util/rand
	maxBaseLen         = 57
)

func generatedClaimName(pod *v1.Pod, podClaim string) string {
	base := pod.Name + "-" + podClaim + "-"
	if len(base) > maxBaseLen {
		base = pod.Name[:len(pod.Name)*maxBaseLen/len(base)] + "-" + podClaim[:len(podClaim)*maxBaseLen/len(base)]
	}
	digest := sha256.Sum256([]byte(pod.Namespace + "/" + pod.Name + "/" + podClaim))
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = nameAlphabet[int(digest[i])%len(nameAlphabet)]
	}
	return base + string(suffix)
}

// instantiateClaims: the pod with a claim made for each template claim that has none yet (a
// template that does not exist makes none), once the scheduler's claim cache holds it.
func (w *world) instantiateClaims(pod *v1.Pod) (*v1.Pod, error) {
	if w.dra == nil {
		return pod, nil
	}
	named := map[string]bool{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		named[s.Name] = true
	}
	var made []v1.PodResourceClaimStatus
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil || pc.ResourceClaimName != nil || named[pc.Name] {
			continue
		}
		claims := w.client.ResourceV1().ResourceClaims(pod.Namespace)
		template, err := w.client.ResourceV1().ResourceClaimTemplates(pod.Namespace).Get(w.ctx, *pc.ResourceClaimTemplateName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		name := generatedClaimName(pod, pc.Name)
		if _, err := claims.Get(w.ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			annotations := map[string]string{}
			for k, v := range template.Spec.ObjectMeta.Annotations {
				annotations[k] = v
			}
			annotations[podClaimAnnotation] = pc.Name
			yes := true
			claim := &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: pod.Namespace, UID: types.UID("claim-" + pod.Namespace + "/" + name),
					ResourceVersion: "1", Labels: template.Spec.ObjectMeta.Labels, Annotations: annotations,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name,
						UID: pod.UID, Controller: &yes, BlockOwnerDeletion: &yes}},
				},
				Spec: template.Spec.Spec,
			}
			if err := w.client.Tracker().Add(claim); err != nil {
				return nil, err
			}
			if err := w.awaitClaim(pod.Namespace, name); err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		n := name
		made = append(made, v1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: &n})
	}
	if len(made) == 0 {
		return pod, nil
	}
	pod = pod.DeepCopy()
	pod.Status.ResourceClaimStatuses = append(pod.Status.ResourceClaimStatuses, made...)
	return pod, nil
}

// awaitClaim: the informer delivers a new claim to the assume cache asynchronously.
func (w *world) awaitClaim(namespace, name string) error {
	for i := 0; i < 5000; i++ {
		if _, err := w.dra.ResourceClaims().Get(namespace, name); err == nil {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("claim %s/%s never reached the scheduler's cache", namespace, name)
}

// deallocations notes the claims whose status is written without an allocation: what
// DynamicResources' PostFilter does to a claim allocated where the pod cannot go and reserved
// for no other pod (PreBind's writes carry one).
//
// It also gives each written claim a newer resourceVersion, as the API server would: the fake
// clientset keeps the one it was given, and the claim cache ignores an update that is not newer
// than what it holds (assume_cache.go), so a write the plugin does not assume itself (PostFilter's)
// would never reach it.
type deallocations struct {
	mu      sync.Mutex
	claims  []podRef
	version int64
}

func (d *deallocations) react(action clienttesting.Action) (bool, runtime.Object, error) {
	u, ok := action.(clienttesting.UpdateAction)
	if !ok {
		return false, nil, nil
	}
	claim, ok := u.GetObject().(*resourceapi.ResourceClaim)
	if !ok {
		return false, nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.version == 0 {
		d.version = 1 // what every object of the scenario has (load.go)
	}
	d.version++
	claim.ResourceVersion = strconv.FormatInt(d.version, 10)
	if u.GetSubresource() == "status" && claim.Status.Allocation == nil {
		d.claims = append(d.claims, podRef{Namespace: claim.Namespace, Name: claim.Name})
	}
	return false, nil, nil
}

func (d *deallocations) take() []podRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.claims
	d.claims = nil
	return out
}

// awaitDeallocated: the deallocation reaches the claim cache through the informer.
func (w *world) awaitDeallocated(ref podRef) error {
	for i := 0; i < 5000; i++ {
		if claim, err := w.dra.ResourceClaims().Get(ref.Namespace, ref.Name); err == nil && claim.Status.Allocation == nil {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("the deallocation of claim %s/%s never reached the scheduler's cache", ref.Namespace, ref.Name)
}

// nameGenerated: the API server's naming of an object created with generateName (the claim
// DynamicResources' PreBind creates for a pod's extended resources, "<pod>-extended-resources-",
// extendeddynamicresources.go createExtendedResourceClaimInAPI), which the fake clientset does not
// do. Upstream's SimpleNameGenerator cuts the base to 58 characters and adds five random ones;
// here the five come from a SHA-256 of the namespace and the generateName, the convention
// policylang's simulate follows (policylang/dra/extended.py), with a UID and a resourceVersion
// as claims made above have.
func nameGenerated(action clienttesting.Action) (bool, runtime.Object, error) {
	c, ok := action.(clienttesting.CreateAction)
	if !ok {
		return false, nil, nil
	}
	claim, ok := c.GetObject().(*resourceapi.ResourceClaim)
	if !ok || claim.Name != "" || claim.GenerateName == "" {
		return false, nil, nil
	}
	base := claim.GenerateName
	if len(base) > maxBaseLen+1 {
		base = base[:maxBaseLen+1]
	}
	digest := sha256.Sum256([]byte(c.GetNamespace() + "/" + claim.GenerateName))
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = nameAlphabet[int(digest[i])%len(nameAlphabet)]
	}
	claim.Name = base + string(suffix)
	claim.UID = types.UID("claim-" + c.GetNamespace() + "/" + claim.Name)
	claim.ResourceVersion = "1"
	return false, nil, nil
}

// awaitNoExtendedClaim: Unreserve deletes the claim PreBind created for the pod's extended
// resources (extendeddynamicresources.go unreserveExtendedResourceClaim); the deletion reaches
// the claim cache through the informer.
func (w *world) awaitNoExtendedClaim(pod *v1.Pod) error {
	if w.dra == nil {
		return nil
	}
	for i := 0; i < 5000; i++ {
		claims, err := w.dra.ResourceClaims().List()
		if err != nil {
			return err
		}
		found := false
		for _, c := range claims {
			if c.Annotations["resource.kubernetes.io/extended-resource-claim"] != "true" {
				continue
			}
			for _, ref := range c.OwnerReferences {
				if ref.UID == pod.UID {
					found = true
				}
			}
		}
		if !found {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("the extended resource claim of pod %s/%s was never deleted from the scheduler's cache", pod.Namespace, pod.Name)
}

package main

// Simulating a batch (policylang/simulate/v1): the pending pods in PrioritySort's order, each
// decided against the cache as the pods before it left it, once the resourceclaim controller
// has made the claims of its templates (claims.go); a pod whose cycle deallocated a claim
// (DynamicResources' PostFilter) is tried again at once, as the claim's update requeues it. A pod that fits is reserved (the
// Reserve plugins) and assumed into the cache, as schedulingCycle does before binding; when
// preemption nominates a node, its victims leave the cache and the pod is tried again at once,
// nominated to that node, as the next cycle would try it once the deletions arrive.

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

const simulateSchema = "policylang/simulate/v1"

type placement struct {
	Pod           podRef   `json:"pod"`
	Node          *string  `json:"node"`
	Message       *string  `json:"message"`
	NominatedNode *string  `json:"nominated_node"`
	Victims       []podRef `json:"victims"`
}

type ratio struct {
	Requested   int64 `json:"requested"`
	Allocatable int64 `json:"allocatable"`
}

type usage map[string]*ratio

type simulateDoc struct {
	Schema     string      `json:"schema"`
	Placements []placement `json:"placements"`
	Summary    struct {
		Pods          int `json:"pods"`
		Scheduled     int `json:"scheduled"`
		Unschedulable int `json:"unschedulable"`
		Skipped       int `json:"skipped"`
		Gated         int `json:"gated"`
		Preempted     int `json:"preempted"`
		Utilisation   struct {
			Nodes map[string]usage `json:"nodes"`
			Zones map[string]usage `json:"zones"`
		} `json:"utilisation"`
	} `json:"summary"`
}

const gpu = "nvidia.com/gpu"

const gatedMessage = "Scheduling is blocked due to non-empty scheduling gates"

// queueOrder: PrioritySort's Less (priority, then the time the pod entered the queue: its
// creation, then the order given).
func queueOrder(pods []*v1.Pod) []*v1.Pod {
	out := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := *out[i].Spec.Priority, *out[j].Spec.Priority
		if pi != pj {
			return pi > pj
		}
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
	})
	return out
}

// simulation: a batch ready to place (the scenario decoded, the world built, the pending pods
// in queue order), so that bench mode can time the placing alone.
type simulation struct {
	w          *world
	pending    []*v1.Pod
	preemption bool
}

func simulate(sc scenario) (*simulateDoc, error) {
	s, err := prepareSimulation(sc)
	if err != nil {
		return nil, err
	}
	defer s.w.close()
	doc, err := s.place()
	if err != nil {
		return nil, err
	}
	if err := s.summarise(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func prepareSimulation(sc scenario) (*simulation, error) {
	cfg, objects, podObjects, err := decodeScenario(sc)
	if err != nil {
		return nil, err
	}
	var pending []*v1.Pod
	for _, obj := range podObjects {
		if pod, ok := obj.(*v1.Pod); ok {
			admitPriority(pod, objects)
			pending = append(pending, pod)
		}
	}
	for _, obj := range objects {
		if pod, ok := obj.(*v1.Pod); ok {
			admitPriority(pod, objects)
		}
	}
	preemption := sc.Preemption == nil || *sc.Preemption
	w, err := newWorld(objects, pending, cfg, preemption)
	if err != nil {
		return nil, err
	}
	w.percentage = sc.Percentage
	return &simulation{w: w, pending: queueOrder(pending), preemption: preemption}, nil
}

// place: the scheduling loop, each pod decided, reserved and assumed before the next.
func (s *simulation) place() (*simulateDoc, error) {
	w := s.w
	logger := klog.FromContext(w.ctx)
	doc := &simulateDoc{Schema: simulateSchema, Placements: []placement{}}
	opts := cycleOptions{preemption: s.preemption}
	for _, pod := range s.pending {
		pl := placement{Pod: podRef{pod.Namespace, pod.Name}, Victims: []podRef{}}
		if gates := pod.Spec.SchedulingGates; len(gates) > 0 {
			// PreEnqueue (SchedulingGates) keeps it out of the queue: never attempted. The
			// message is the condition the API server sets (pkg/registry/core/pod/strategy.go).
			names := make([]string, len(gates))
			for i, g := range gates {
				names[i] = g.Name
			}
			pl.Message = strp(gatedMessage + " (" + strings.Join(names, ", ") + ")")
			doc.Placements = append(doc.Placements, pl)
			doc.Summary.Gated++
			continue
		}
		pf, _, perr := w.profileFor(pod, false)
		if perr != nil {
			pl.Message = strp("no profile for schedulerName \"" + pod.Spec.SchedulerName + "\"")
			doc.Placements = append(doc.Placements, pl)
			doc.Summary.Skipped++
			continue
		}
		pod, err := w.instantiateClaims(pod)
		if err != nil {
			return nil, err
		}
		w.dealloc.take()
		d, err := w.schedule(pod, opts)
		if err != nil {
			return nil, err
		}
		if freed := w.dealloc.take(); d.Selected == nil && len(freed) > 0 && d.NominatedNode == nil {
			// DynamicResources' PostFilter deallocated a claim: its update requeues the pod,
			// tried again at once, as a nomination is below.
			for _, ref := range freed {
				if err := w.awaitDeallocated(ref); err != nil {
					return nil, err
				}
			}
			if d, err = w.schedule(pod, opts); err != nil {
				return nil, err
			}
		}
		if d.Selected == nil && d.NominatedNode != nil {
			pl.NominatedNode = d.NominatedNode
			for _, v := range *d.Victims {
				pl.Victims = append(pl.Victims, v)
				if victim := w.podByRef(v); victim != nil {
					_ = w.cache.RemovePod(logger, victim)
				}
			}
			pod = pod.DeepCopy()
			pod.Status.NominatedNodeName = *d.NominatedNode
			if d, err = w.schedule(pod, opts); err != nil {
				return nil, err
			}
		}
		if d.Selected != nil {
			node := *d.Selected
			assumed := pod.DeepCopy()
			assumed.Spec.NodeName = node
			assumed.Status.NominatedNodeName = ""
			if err := w.cache.AssumePod(logger, assumed); err != nil {
				return nil, err
			}
			if st := pf.RunReservePluginsReserve(w.ctx, w.lastState, assumed, node); !st.IsSuccess() {
				return nil, st.AsError()
			}
			if st := w.bindClaims(pf, assumed, node); !st.IsSuccess() {
				// The binding cycle failed (schedule_one.go handleBindingCycleError): Unreserve
				// runs, the assumed pod is forgotten, and the pod stays pending with PreBind's
				// error as RunPreBindPlugins words it.
				pf.RunReservePluginsUnreserve(w.ctx, w.lastState, assumed, node)
				if err := w.cache.ForgetPod(logger, assumed); err != nil {
					return nil, err
				}
				if err := w.awaitNoExtendedClaim(pod); err != nil {
					return nil, err
				}
				pl.Message = strp(fmt.Sprintf("running PreBind plugin %q: %v", names.DynamicResources, st.AsError()))
				doc.Summary.Unschedulable++
				doc.Summary.Preempted += len(pl.Victims)
				doc.Placements = append(doc.Placements, pl)
				continue
			}
			if err := finishBinding(w.cache, logger, assumed); err != nil {
				return nil, err
			}
			w.nominator.DeleteNominatedPodIfExists(pod)
			w.bound[podRef{pod.Namespace, pod.Name}] = assumed
			pl.Node = strp(node)
			doc.Summary.Scheduled++
		} else {
			pl.Message = d.Message
			doc.Summary.Unschedulable++
		}
		doc.Summary.Preempted += len(pl.Victims)
		doc.Placements = append(doc.Placements, pl)
	}
	doc.Summary.Pods = len(doc.Placements)
	return doc, nil
}

// bindClaims is DynamicResources' PreBind (bindClaim, dynamicresources.go): each of the pod's
// claims gets the allocation Reserve chose and the pod in status.reservedFor, through the API,
// and the assume cache holds the claim as written, so that later pods see its devices in use
// and the claim reserved. The other PreBind plugins (VolumeBinding's waits for a PV
// controller) are left out, as binding itself is.
func (w *world) bindClaims(pf *profileFramework, pod *v1.Pod, node string) *fwk.Status {
	p, ok := pf.plugins[names.DynamicResources].(preBindPlugin)
	if !ok {
		return nil
	}
	if st := preBindPreFlight(p, w.ctx, w.lastState, pod, node); st.IsSkip() {
		return nil
	} else if !st.IsSuccess() {
		return st
	}
	return p.PreBind(w.ctx, w.lastState, pod, node)
}

// summarise: the batch's utilisation, from the cache once every pod is placed.
func (s *simulation) summarise(doc *simulateDoc) error {
	if err := s.w.cache.UpdateSnapshot(klog.FromContext(s.w.ctx), s.w.snapshot); err != nil {
		return err
	}
	doc.Summary.Utilisation.Nodes, doc.Summary.Utilisation.Zones = s.w.utilisation()
	return nil
}

// utilisation: requested / allocatable cpu (millicores), memory (bytes), pods and GPUs, per
// node and per zone, from the cache's NodeInfos.
func (w *world) utilisation() (map[string]usage, map[string]usage) {
	nodes, zones := map[string]usage{}, map[string]usage{}
	infos, _ := w.snapshot.NodeInfos().List()
	for _, ni := range infos {
		req, alloc := ni.GetRequested(), ni.GetAllocatable()
		u := usage{
			"cpu":    {req.GetMilliCPU(), alloc.GetMilliCPU()},
			"memory": {req.GetMemory(), alloc.GetMemory()},
			"pods":   {int64(len(ni.GetPods())), int64(alloc.GetAllowedPodNumber())},
			"gpu":    {req.GetScalarResources()[gpu], alloc.GetScalarResources()[gpu]},
		}
		nodes[ni.Node().Name] = u
		zone := ni.Node().Labels[v1.LabelTopologyZone]
		z, ok := zones[zone]
		if !ok {
			z = usage{"cpu": {}, "memory": {}, "pods": {}, "gpu": {}}
			zones[zone] = z
		}
		for k, r := range u {
			z[k].Requested += r.Requested
			z[k].Allocatable += r.Allocatable
		}
	}
	return nodes, zones
}

// podByRef: a pod in the cache (from the dump, or bound earlier in the batch).
func (w *world) podByRef(ref podRef) *v1.Pod {
	if p, ok := w.bound[ref]; ok {
		return p
	}
	for _, obj := range w.objects {
		if p, ok := obj.(*v1.Pod); ok && p.Namespace == ref.Namespace && p.Name == ref.Name && p.Spec.NodeName != "" {
			return p
		}
	}
	return nil
}

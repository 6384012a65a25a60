package main

// The scheduler's world for one scenario, put together as scheduler.New does it: a fake
// clientset holding every object, informers over it, the scheduler cache and its snapshot,
// the DRA and CSI managers, and one framework per profile built by
// frameworkruntime.NewFramework from the in-tree registry.

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// profileFramework is one profile's framework with the plugin instances it was built with
// (captured from the registry's factories), so that raw scores come from the same instances.
type profileFramework struct {
	framework.Framework
	plugins map[string]schedPlugin
	weights map[string]int64
}

type world struct {
	ctx        context.Context
	cancel     context.CancelFunc
	client     *fake.Clientset
	cache      internalcache.Cache
	snapshot   *internalcache.Snapshot
	nominator  *nominator
	profiles   map[string]*profileFramework
	order      []string // profile names as configured
	numNodes   int
	nextStart  int // the rotating index findNodesThatPassFilters starts from
	percentage *int32
	globalPct  *int32
	objects    []runtime.Object
	bound      map[podRef]*v1.Pod // pods bound during a simulation
	lastState  fwk.CycleState     // the last cycle's state, for Reserve
	dra        sharedDRAManager
	dealloc    *deallocations // claims DynamicResources' PostFilter deallocated through the API
}

// newWorld: without preemption, DefaultPreemption is disabled at PostFilter (other PostFilter
// plugins, DynamicResources', still run), as a profile would disable it.
// The pending pods are in the clientset only: the cache holds what the dump holds.
func newWorld(objects []runtime.Object, pending []*v1.Pod, cfg *schedulerapi.KubeSchedulerConfiguration, preemption bool) (*world, error) {
	ctx, cancel := context.WithCancel(context.Background())
	logger := klog.FromContext(ctx)
	w := &world{ctx: ctx, cancel: cancel, nominator: newNominator(), profiles: map[string]*profileFramework{},
		objects: objects, bound: map[podRef]*v1.Pod{}}
	inClient := append([]runtime.Object{}, objects...)
	for _, p := range pending {
		inClient = append(inClient, p)
	}
	w.client = fake.NewClientset(inClient...)
	w.dealloc = &deallocations{}
	w.client.PrependReactor("update", "resourceclaims", w.dealloc.react)
	w.client.PrependReactor("create", "resourceclaims", nameGenerated)
	informerFactory := informers.NewSharedInformerFactory(w.client, 0)
	w.snapshot = internalcache.NewEmptySnapshot()

	var draManager sharedDRAManager
	var draSynced []func() bool // the claims' assume cache and the slice tracker, past the informers
	if utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		claimInformer := informerFactory.Resource().V1().ResourceClaims().Informer()
		claimCache := assumecache.NewAssumeCache(logger, claimInformer, "ResourceClaim", "", nil)
		opts := trackerOptions(informerFactory, w.client)
		sliceTracker, err := tracker.StartTracker(ctx, opts)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("starting the resource slice tracker: %w", err)
		}
		draManager = dynamicresources.NewDRAManager(ctx, claimCache, sliceTracker, informerFactory)
		if h := deviceClassHandler(draManager); h != nil {
			reg, err := informerFactory.Resource().V1().DeviceClasses().Informer().AddEventHandler(h)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("registering the extended resource cache: %w", err)
			}
			draSynced = append(draSynced, reg.HasSynced)
		}
		// The assume cache fills from its informer's handler, and the DRA manager's record of
		// allocated devices from the cache's: both after the informer itself has synced, as
		// the scheduler's WaitForHandlersSync waits for (eventhandlers.go). A no-op handler's
		// registration is the cache's own.
		draSynced = append(draSynced, claimCache.AddEventHandler(toolscache.ResourceEventHandlerFuncs{}).HasSynced,
			sliceTracker.HasSynced)
	}
	w.dra = draManager

	w.globalPct = cfg.PercentageOfNodesToScore
	for i := range cfg.Profiles {
		prof := cfg.Profiles[i].DeepCopy()
		if !preemption {
			prof.Plugins.PostFilter.Disabled = append(prof.Plugins.PostFilter.Disabled,
				schedulerapi.Plugin{Name: names.DefaultPreemption})
		}
		pf := &profileFramework{plugins: map[string]schedPlugin{}, weights: map[string]int64{}}
		var mu sync.Mutex
		registry := frameworkruntime.Registry{}
		for name, factory := range plugins.NewInTreeRegistry() {
			name, factory := name, factory
			registry[name] = func(ctx context.Context, args runtime.Object, h schedHandle) (schedPlugin, error) {
				p, err := factory(ctx, args, h)
				if err == nil {
					mu.Lock()
					pf.plugins[name] = p
					mu.Unlock()
				}
				return p, err
			}
		}
		opts := append(append(versionOptions(informerFactory), preemptionOptions(w.snapshot)...),
			frameworkruntime.WithClientSet(w.client),
			frameworkruntime.WithInformerFactory(informerFactory),
			frameworkruntime.WithSharedDRAManager(draManager),
			frameworkruntime.WithSnapshotSharedLister(w.snapshot),
			frameworkruntime.WithPodNominator(w.nominator),
			frameworkruntime.WithParallelism(1),
			frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
			frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
			frameworkruntime.WithPodActivator(noActivator{}),
		)
		f, err := frameworkruntime.NewFramework(ctx, registry, prof, opts...)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("profile %s: %w", prof.SchedulerName, err)
		}
		pf.Framework = f
		for _, p := range f.ListPlugins().Score.Enabled {
			pf.weights[p.Name] = int64(p.Weight)
		}
		w.profiles[prof.SchedulerName] = pf
		w.order = append(w.order, prof.SchedulerName)
	}

	informerFactory.Start(ctx.Done())
	waitForSync(informerFactory, draSynced...)

	// The cache, in the dump's order: the node tree keeps nodes as they arrive.
	w.cache = newCache(ctx)
	for _, obj := range objects {
		if node, ok := obj.(*v1.Node); ok {
			w.cache.AddNode(logger, node)
			w.numNodes++
		}
	}
	for _, obj := range objects {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		if pod.Spec.NodeName != "" {
			if err := w.cache.AddPod(logger, pod); err != nil {
				cancel()
				return nil, err
			}
		} else if pod.Status.NominatedNodeName != "" {
			pi, err := framework.NewPodInfo(pod)
			if err != nil {
				cancel()
				return nil, err
			}
			w.nominator.AddNominatedPod(logger, pi, nil)
		}
	}
	if err := w.cache.UpdateSnapshot(logger, w.snapshot); err != nil {
		cancel()
		return nil, err
	}
	return w, nil
}

func (w *world) close() {
	for _, p := range w.profiles {
		_ = p.Close()
	}
	w.cancel()
}

// waitForSync is WaitForCacheSync polling every millisecond instead of every 100: a fake
// clientset's informers sync at once, and a scenario should not wait for the poll. The
// handlers' syncs come after.
func waitForSync(factory informers.SharedInformerFactory, handlers ...func() bool) {
	closed := make(chan struct{})
	close(closed)
	for {
		synced := true
		for _, ok := range factory.WaitForCacheSync(closed) {
			synced = synced && ok
		}
		for _, ok := range handlers {
			synced = synced && ok()
		}
		if synced {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// noActivator: there is no queue to move pods in.
type noActivator struct{}

func (noActivator) Activate(klog.Logger, map[string]*v1.Pod) {}

// nominator: the scheduling queue's record of pods nominated to nodes (by preemption), which
// RunFilterPluginsWithNominatedPods counts on a node when they are of at least the pod's priority.
type nominator struct {
	mu     sync.Mutex
	byNode map[string][]fwk.PodInfo
	nodeOf map[string]string // uid → node
}

func newNominator() *nominator {
	return &nominator{byNode: map[string][]fwk.PodInfo{}, nodeOf: map[string]string{}}
}

func (n *nominator) AddNominatedPod(_ klog.Logger, pi fwk.PodInfo, info *nominatingInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pi.GetPod())
	node := pi.GetPod().Status.NominatedNodeName
	if info != nil && info.Mode() == modeOverride {
		node = info.NominatedNodeName
	}
	if node == "" {
		return
	}
	n.byNode[node] = append(n.byNode[node], pi)
	n.nodeOf[string(pi.GetPod().UID)] = node
}

func (n *nominator) deleteLocked(pod *v1.Pod) {
	node, ok := n.nodeOf[string(pod.UID)]
	if !ok {
		return
	}
	list := n.byNode[node]
	for i, pi := range list {
		if pi.GetPod().UID == pod.UID {
			n.byNode[node] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	delete(n.nodeOf, string(pod.UID))
}

func (n *nominator) DeleteNominatedPodIfExists(pod *v1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pod)
}

func (n *nominator) UpdateNominatedPod(logger klog.Logger, _ *v1.Pod, newPodInfo fwk.PodInfo) {
	n.AddNominatedPod(logger, newPodInfo, nil)
}

func (n *nominator) NominatedPodsForNode(nodeName string) []fwk.PodInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]fwk.PodInfo(nil), n.byNode[nodeName]...)
}

// admitPriority resolves the pod's priority as the Priority admission plugin does: its
// PriorityClass's value, else the global default class's, else 0.
func admitPriority(pod *v1.Pod, objects []runtime.Object) {
	if pod.Spec.Priority != nil {
		return
	}
	var value int32
	var policy *v1.PreemptionPolicy
	for _, obj := range objects {
		pc, ok := obj.(*schedulingv1.PriorityClass)
		if !ok {
			continue
		}
		if (pod.Spec.PriorityClassName != "" && pc.Name == pod.Spec.PriorityClassName) ||
			(pod.Spec.PriorityClassName == "" && pc.GlobalDefault) {
			value, policy = pc.Value, pc.PreemptionPolicy
			break
		}
	}
	pod.Spec.Priority = &value
	if pod.Spec.PreemptionPolicy == nil {
		if policy == nil {
			p := v1.PreemptLowerPriority
			policy = &p
		}
		pod.Spec.PreemptionPolicy = policy
	}
}

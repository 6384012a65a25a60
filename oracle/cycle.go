package main

// One scheduling cycle for one pod, as Scheduler.schedulingCycle and schedulePod run it
// (pkg/scheduler/schedule_one.go), calling the framework's own extension points, and keeping
// what policylang reports per node: the failing plugin and its reasons, and per plugin the raw
// and normalised scores.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	noNodesAvailable                 = "no nodes available to schedule pods"
)

type podRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type failure struct {
	Plugin  string   `json:"plugin"`
	Code    string   `json:"code"`
	Reasons []string `json:"reasons"`
}

type pluginScore struct {
	Raw        int64 `json:"raw"`
	Normalized int64 `json:"normalized"`
	Weight     int64 `json:"weight"`
	Weighted   int64 `json:"weighted"`
}

type nodeResult struct {
	Name      string                 `json:"name"`
	Feasible  bool                   `json:"feasible"`
	Failure   *failure               `json:"failure"`
	Scores    map[string]pluginScore `json:"scores"`
	Total     *int64                 `json:"total"`
	Evaluated bool                   `json:"evaluated"`
}

// decision: one entry of policylang/eval/v1's results.
type decision struct {
	Pod           podRef       `json:"pod"`
	Profile       string       `json:"profile"`
	Selected      *string      `json:"selected"`
	Feasible      []string     `json:"feasible"`
	FitError      *string      `json:"fit_error"`
	Message       *string      `json:"message"`
	Nodes         []nodeResult `json:"nodes"`
	NominatedNode *string      `json:"nominated_node,omitempty"`
	Victims       *[]podRef    `json:"victims,omitempty"`
}

func strp(s string) *string { return &s }

func failureOf(s *fwk.Status) *failure {
	reasons := s.Reasons()
	if reasons == nil {
		reasons = []string{}
	}
	return &failure{Plugin: s.Plugin(), Code: s.Code().String(), Reasons: reasons}
}

// numFeasibleNodesToFind: how many feasible nodes the search stops at (schedule_one.go).
func numFeasibleNodesToFind(percentage *int32, numAllNodes int32) int32 {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	var pct int32
	if percentage != nil {
		pct = *percentage
	}
	if pct == 0 {
		pct = int32(50) - numAllNodes/125
		if pct < minFeasibleNodesPercentageToFind {
			pct = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * pct / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// victimRecorder notes the pods preemption deletes through the API.
type victimRecorder struct {
	mu      sync.Mutex
	deleted []podRef
}

func (r *victimRecorder) react(action clienttesting.Action) (bool, runtime.Object, error) {
	if d, ok := action.(clienttesting.DeleteAction); ok {
		r.mu.Lock()
		r.deleted = append(r.deleted, podRef{Namespace: d.GetNamespace(), Name: d.GetName()})
		r.mu.Unlock()
	}
	return false, nil, nil
}

func (w *world) profileFor(pod *v1.Pod, everyPod bool) (*profileFramework, string, error) {
	if everyPod {
		return w.profiles[w.order[0]], w.order[0], nil
	}
	name := pod.Spec.SchedulerName
	if name == "" {
		name = v1.DefaultSchedulerName
	}
	pf, ok := w.profiles[name]
	if !ok {
		return nil, "", fmt.Errorf("pod %s/%s: no profile for schedulerName %q", pod.Namespace, pod.Name, name)
	}
	return pf, name, nil
}

type cycleOptions struct {
	preemption bool
	everyPod   bool
}

// schedule decides one pod. The node list is the snapshot's (the node tree's order); the
// output lists nodes by name, as policylang does.
func (w *world) schedule(pod *v1.Pod, opts cycleOptions) (*decision, error) {
	ctx := w.ctx
	pf, profileName, err := w.profileFor(pod, opts.everyPod)
	if err != nil {
		return nil, err
	}
	d := &decision{Pod: podRef{pod.Namespace, pod.Name}, Profile: profileName, Feasible: []string{}, Nodes: []nodeResult{}}
	if w.numNodes == 0 {
		d.Message = strp(noNodesAvailable)
		return d, nil
	}
	if err := w.cache.UpdateSnapshot(klog.FromContext(ctx), w.snapshot); err != nil {
		return nil, err
	}
	allNodes, err := w.snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(allNodes))
	for _, n := range allNodes {
		names = append(names, n.Node().Name)
	}
	sort.Strings(names)

	state := framework.NewCycleState()
	w.lastState = state
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}

	// An Error status stops the cycle: no node results, the error as the message.
	fail := func(msg string) *decision {
		d.Message = strp(msg)
		d.Nodes, d.Feasible = []nodeResult{}, []string{}
		return d
	}

	var feasible []fwk.NodeInfo
	preRes, s, unschedulablePlugins := pf.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = unschedulablePlugins
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return fail(s.AsError().Error()), nil
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
		diagnosis.PreFilterMsg = s.Message()
		diagnosis.AddPluginStatus(s)
	} else {
		if nnn := pod.Status.NominatedNodeName; nnn != "" {
			if nodeInfo, err := w.snapshot.Get(nnn); err == nil {
				found, err := w.passFilters(ctx, pf, state, pod, &diagnosis, []fwk.NodeInfo{nodeInfo}, false)
				if err == nil && len(found) != 0 {
					for _, name := range names {
						nr := nodeResult{Name: name, Evaluated: name == nnn}
						if name == nnn {
							nr.Feasible, nr.Scores, nr.Total = true, map[string]pluginScore{}, new(int64)
						}
						d.Nodes = append(d.Nodes, nr)
					}
					d.Selected, d.Feasible = strp(nnn), []string{nnn}
					return d, nil
				}
			}
		}
		nodes := allNodes
		if !preRes.AllNodes() {
			nodes = make([]fwk.NodeInfo, 0, len(preRes.NodeNames))
			for nodeName := range preRes.NodeNames {
				if nodeInfo, err := w.snapshot.Get(nodeName); err == nil {
					nodes = append(nodes, nodeInfo)
				}
			}
			diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulablePlugins))))
		}
		feasible, err = w.passFilters(ctx, pf, state, pod, &diagnosis, nodes, true)
		processed := len(feasible) + diagnosis.NodeToStatus.Len()
		w.nextStart = (w.nextStart + processed) % len(allNodes)
		if err != nil {
			return fail(err.Error()), nil
		}
	}

	feasibleSet := map[string]bool{}
	for _, n := range feasible {
		feasibleSet[n.Node().Name] = true
		d.Feasible = append(d.Feasible, n.Node().Name)
	}
	sort.Strings(d.Feasible)

	if len(feasible) == 0 {
		fitErr := &framework.FitError{Pod: pod, NumAllNodes: len(allNodes), Diagnosis: diagnosis}
		d.FitError = strp(fitErr.Error())
		if pf.HasPostFilterPlugins() {
			recorder := &victimRecorder{}
			w.client.PrependReactor("delete", "pods", recorder.react)
			result, status := pf.RunPostFilterPlugins(ctx, state, pod, diagnosis.NodeToStatus)
			fitErr.Diagnosis.PostFilterMsg = status.Message()
			if result != nil && result.NominatingInfo != nil && result.NominatedNodeName != "" {
				d.NominatedNode = strp(result.NominatedNodeName)
				victims := w.awaitVictims(recorder)
				d.Victims = &victims
			}
		}
		d.Message = strp(fitErr.Error())
		for _, name := range names {
			nr := nodeResult{Name: name, Evaluated: true}
			if st := diagnosis.NodeToStatus.Get(name); st != nil && !st.IsSuccess() {
				nr.Failure = failureOf(st)
			}
			d.Nodes = append(d.Nodes, nr)
		}
		return d, nil
	}

	scores := map[string]map[string]pluginScore{}
	if len(feasible) == 1 {
		scores[feasible[0].Node().Name] = map[string]pluginScore{}
	} else {
		scores, err = w.prioritize(ctx, pf, state, pod, feasible)
		if err != nil {
			return fail(err.Error()), nil
		}
	}
	explicit := sets.New[string]()
	diagnosis.NodeToStatus.ForEachExplicitNode(func(name string, _ *fwk.Status) { explicit.Insert(name) })
	var best int64 = -1
	for _, name := range names {
		nr := nodeResult{Name: name}
		if feasibleSet[name] {
			nr.Feasible, nr.Evaluated, nr.Scores = true, true, scores[name]
			var total int64
			for _, s := range nr.Scores {
				total += s.Weighted
			}
			nr.Total = &total
			if total > best { // names ascend: the first of the best is the smallest name
				best, d.Selected = total, strp(name)
			}
		} else if explicit.Has(name) || (!preRes.AllNodes() && !preRes.NodeNames.Has(name)) {
			// Filtered out, or left out by PreFilter; a node the search never reached has neither.
			nr.Evaluated, nr.Failure = true, failureOf(diagnosis.NodeToStatus.Get(name))
		}
		d.Nodes = append(d.Nodes, nr)
	}
	return d, nil
}

// awaitVictims: the pods preemption deletes (asynchronously when SchedulerAsyncPreemption
// is on), once the deletions have stopped coming.
func (w *world) awaitVictims(r *victimRecorder) []podRef {
	seen, quiet := -1, 0
	for i := 0; i < 2000 && quiet < 10; i++ {
		r.mu.Lock()
		n := len(r.deleted)
		r.mu.Unlock()
		if n == seen && n > 0 {
			quiet++
		} else {
			seen, quiet = n, 0
		}
		time.Sleep(time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]podRef{}, r.deleted...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// passFilters is findNodesThatPassFilters: the nodes from the rotating start index, one
// worker, stopping once enough feasible nodes are found.
func (w *world) passFilters(ctx context.Context, pf *profileFramework, state fwk.CycleState, pod *v1.Pod,
	diagnosis *framework.Diagnosis, nodes []fwk.NodeInfo, rotate bool) ([]fwk.NodeInfo, error) {
	numAllNodes := len(nodes)
	pct := pf.PercentageOfNodesToScore()
	if pct == nil {
		pct = w.globalPct
	}
	if w.percentage != nil {
		pct = w.percentage
	}
	numNodesToFind := numFeasibleNodesToFind(pct, int32(numAllNodes))
	if !pf.HasScorePlugins() {
		numNodesToFind = 1
	}
	start := 0
	if rotate {
		start = w.nextStart
	}
	feasibleNodes := make([]fwk.NodeInfo, numNodesToFind)
	if !pf.HasFilterPlugins() {
		for i := range feasibleNodes {
			feasibleNodes[i] = nodes[(start+i)%numAllNodes]
		}
		return feasibleNodes, nil
	}
	errCh := newErrorChannel()
	var feasibleNodesLen int32
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(errors.New("done"))
	type nodeStatus struct {
		node   string
		status *fwk.Status
	}
	result := make([]*nodeStatus, numAllNodes)
	checkNode := func(i int) {
		nodeInfo := nodes[(start+i)%numAllNodes]
		status := pf.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo)
		if status.Code() == fwk.Error {
			errCh.sendWithCancel(status.AsError(), func() { cancel(errors.New("a filter failed")) })
			return
		}
		if status.IsSuccess() {
			length := atomic.AddInt32(&feasibleNodesLen, 1)
			if length > numNodesToFind {
				cancel(errors.New("enough nodes"))
				atomic.AddInt32(&feasibleNodesLen, -1)
			} else {
				feasibleNodes[length-1] = nodeInfo
			}
		} else {
			result[i] = &nodeStatus{node: nodeInfo.Node().Name, status: status}
		}
	}
	pf.Parallelizer().Until(ctx, numAllNodes, checkNode, metrics.Filter)
	feasibleNodes = feasibleNodes[:feasibleNodesLen]
	for _, item := range result {
		if item == nil {
			continue
		}
		diagnosis.NodeToStatus.Set(item.node, item.status)
		diagnosis.AddPluginStatus(item.status)
	}
	if err := errCh.receive(); err != nil {
		return feasibleNodes, err
	}
	return feasibleNodes, nil
}

// prioritize is prioritizeNodes without extenders, keeping each plugin's raw score (from the
// same plugin instance, on the same cycle state) beside the framework's weighted one.
func (w *world) prioritize(ctx context.Context, pf *profileFramework, state fwk.CycleState, pod *v1.Pod,
	nodes []fwk.NodeInfo) (map[string]map[string]pluginScore, error) {
	out := map[string]map[string]pluginScore{}
	if !pf.HasScorePlugins() {
		for _, n := range nodes {
			out[n.Node().Name] = map[string]pluginScore{}
		}
		return out, nil
	}
	if st := pf.RunPreScorePlugins(ctx, state, pod, nodes); !st.IsSuccess() {
		return nil, st.AsError()
	}
	// Raw scores first: NormalizeScore works on the framework's own lists. A plugin that fails
	// here fails again in RunScorePlugins below, whose error is upstream's message.
	raw := map[string]map[string]int64{}
scoring:
	for _, p := range pf.ListPlugins().Score.Enabled {
		if state.GetSkipScorePlugins().Has(p.Name) {
			continue
		}
		sp, ok := pf.plugins[p.Name].(scorePlugin)
		if !ok {
			continue
		}
		raw[p.Name] = map[string]int64{}
		for _, n := range nodes {
			s, st := sp.Score(ctx, state, pod, n)
			if !st.IsSuccess() {
				break scoring
			}
			raw[p.Name][n.Node().Name] = s
		}
	}
	nodeScores, st := pf.RunScorePlugins(ctx, state, pod, nodes)
	if !st.IsSuccess() {
		return nil, st.AsError()
	}
	for _, ns := range nodeScores {
		m := map[string]pluginScore{}
		for _, ps := range ns.Scores {
			weight := pf.weights[ps.Name]
			m[ps.Name] = pluginScore{Raw: raw[ps.Name][ns.Name], Normalized: ps.Score / weight, Weight: weight, Weighted: ps.Score}
		}
		out[ns.Name] = m
	}
	return out, nil
}

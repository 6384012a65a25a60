// Command oracle decides pods with kube-scheduler's own framework (k8s.io/kubernetes
// v1.35), and prints the decisions as policylang's `policylang/eval/v1` JSON, so that
// policylang's answers can be compared with upstream's on any scenario.
//
//	oracle --cluster DUMP... --pod PODS... [--config KubeSchedulerConfiguration]
//	       [--no-preemption] [--percentage-of-nodes-to-score N]
//	oracle --list-gates  every feature gate kube-scheduler accepts, with its spec (JSON)
//	oracle --serve     one scenario per stdin line (JSON), one eval/v1 document per stdout line
//	oracle --bench --cluster DUMP... --pod PODS... [--config ...] [--no-preemption]
//	       [--percentage-of-nodes-to-score N]
//	                   simulate the pods as a batch (as simulate mode does) and print
//	                   {"pods", "seconds", "pods_per_s", "scheduled", ...}: the scheduling alone
//	                   timed, at parallelism 1; without N, the configuration's percentage
//	                   (v1's default: adaptive)
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

const evalSchema = "policylang/eval/v1"

type evalDoc struct {
	Schema  string      `json:"schema"`
	Results []*decision `json:"results"`
}

// scenario: what one run decides. Objects and Pods are API objects (JSON); Config is a
// KubeSchedulerConfiguration as YAML or JSON text.
type scenario struct {
	Objects    []json.RawMessage `json:"objects"`
	Pods       []json.RawMessage `json:"pods"`
	Config     string            `json:"config"`
	Preemption *bool             `json:"preemption"`
	Percentage *int32            `json:"percentage"`
	Mode       string            `json:"mode"` // eval (the default) or simulate
	// FeatureGates: gates set for this scenario only, as kube-scheduler's --feature-gates
	// sets them (featuregate.SetFromMap: an unknown or locked gate is the scenario's error).
	FeatureGates map[string]bool `json:"featureGates"`
}

// withGates runs f with the scenario's feature gates set, and sets them back afterwards.
func withGates(gates map[string]bool, f func() error) error {
	if len(gates) == 0 {
		return f()
	}
	before := map[string]bool{}
	for name := range gates {
		before[name] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name))
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		return err
	}
	defer func() { _ = utilfeature.DefaultMutableFeatureGate.SetFromMap(before) }()
	return f()
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	var clusters, podPaths multiFlag
	flag.Var(&clusters, "cluster", "Nodes, Pods and the other objects, as kubectl prints them (repeatable)")
	flag.Var(&podPaths, "pod", "the pod(s) to place (repeatable)")
	configPath := flag.String("config", "", "a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)")
	noPreemption := flag.Bool("no-preemption", false, "do not run PostFilter")
	percentage := flag.Int("percentage-of-nodes-to-score", -1,
		"sample nodes as upstream (0: adaptive); default every node (with --bench: the configuration's, adaptive by default)")
	output := flag.String("o", "json", "output format (json only)")
	serve := flag.Bool("serve", false, "read scenarios from stdin, one JSON object per line")
	benchMode := flag.Bool("bench", false, "time simulating the pods as a batch (pods/s, parallelism 1)")
	gates := flag.String("feature-gates", "", "A=true,B=false, as kube-scheduler's --feature-gates")
	listGatesMode := flag.Bool("list-gates", false, "print every feature gate kube-scheduler accepts, with its spec (JSON)")
	klog.InitFlags(nil)
	flag.Parse()
	if *output != "json" {
		fatal(fmt.Errorf("only -o json is supported"))
	}
	_ = flag.Set("v", "0")
	_ = flag.Set("logtostderr", "false")
	_ = flag.Set("stderrthreshold", "FATAL")
	klog.SetOutput(nopWriter{})
	metrics.Register() // the framework's instrumented plugins expect the scheduler's metrics
	fatal(registerServerGates())
	if *gates != "" {
		fatal(utilfeature.DefaultMutableFeatureGate.Set(*gates))
	}
	if *listGatesMode {
		fatal(listGates())
		return
	}

	if *serve {
		serveLines()
		return
	}
	if len(clusters) == 0 || len(podPaths) == 0 {
		fatal(fmt.Errorf("--cluster and --pod are required"))
	}
	objects, err := readPaths(clusters)
	fatal(err)
	pods, err := readPaths(podPaths)
	fatal(err)
	sc := scenario{Objects: objects, Pods: pods}
	if *configPath != "" {
		data, err := os.ReadFile(*configPath)
		fatal(err)
		sc.Config = string(data)
	}
	pre := !*noPreemption
	sc.Preemption = &pre
	if *percentage >= 0 {
		p := int32(*percentage)
		sc.Percentage = &p
	}
	if *benchMode {
		doc, err := bench(sc)
		fatal(err)
		out, _ := json.Marshal(doc)
		fmt.Println(string(out))
		return
	}
	doc, err := run(sc)
	fatal(err)
	out, _ := json.MarshalIndent(doc, "", "  ")
	fmt.Println(string(out))
	for _, d := range doc.Results {
		if d.Selected == nil {
			os.Exit(1)
		}
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func fatal(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func serveLines() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var sc scenario
			var doc any
			if jerr := json.Unmarshal(line, &sc); jerr != nil {
				doc = map[string]string{"error": jerr.Error()}
			} else if rerr := withGates(sc.FeatureGates, func() (err error) {
				if sc.Mode == "simulate" {
					doc, err = simulate(sc)
				} else {
					doc, err = run(sc)
				}
				return err
			}); rerr != nil {
				doc = map[string]string{"error": rerr.Error()}
			}
			b, _ := json.Marshal(doc)
			out.Write(b)
			out.WriteByte('\n')
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}

// loadConfig: the configuration given, defaulted and converted as kube-scheduler loads it,
// or v1's defaults.
func loadConfig(text string) (*schedulerapi.KubeSchedulerConfiguration, error) {
	if strings.TrimSpace(text) == "" {
		var versioned configv1.KubeSchedulerConfiguration
		scheme.Scheme.Default(&versioned)
		cfg := &schedulerapi.KubeSchedulerConfiguration{}
		if err := scheme.Scheme.Convert(&versioned, cfg, nil); err != nil {
			return nil, err
		}
		return cfg, nil
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode([]byte(text), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("KubeSchedulerConfiguration: %w", err)
	}
	cfg, ok := obj.(*schedulerapi.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("not a KubeSchedulerConfiguration: %T", obj)
	}
	return cfg, nil
}

// decodeScenario: the scenario's configuration, cluster objects and pods, decoded.
func decodeScenario(sc scenario) (*schedulerapi.KubeSchedulerConfiguration, []runtime.Object, []runtime.Object, error) {
	cfg, err := loadConfig(sc.Config)
	if err != nil {
		return nil, nil, nil, err
	}
	objects, err := decodeObjects(sc.Objects)
	if err != nil {
		return nil, nil, nil, err
	}
	podObjects, err := decodeObjects(sc.Pods)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, objects, podObjects, nil
}

// run decides each pod of the scenario on its own, against the same cluster (as
// `policylang eval` does): a fresh world per pod.
func run(sc scenario) (*evalDoc, error) {
	cfg, objects, podObjects, err := decodeScenario(sc)
	if err != nil {
		return nil, err
	}
	for _, obj := range objects {
		if pod, ok := obj.(*v1.Pod); ok {
			admitPriority(pod, objects)
		}
	}
	doc := &evalDoc{Schema: evalSchema, Results: []*decision{}}
	opts := cycleOptions{preemption: sc.Preemption == nil || *sc.Preemption, everyPod: strings.TrimSpace(sc.Config) == ""}
	for _, obj := range podObjects {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			continue
		}
		admitPriority(pod, objects)
		w, err := newWorld(objects, []*v1.Pod{pod}, cfg, opts.preemption)
		if err != nil {
			return nil, err
		}
		w.percentage = sc.Percentage
		if sc.Percentage == nil {
			every := int32(100)
			w.percentage = &every
		}
		// As `policylang eval` does, the resourceclaim controller first (claims.go).
		pod, err = w.instantiateClaims(pod)
		if err != nil {
			w.close()
			return nil, err
		}
		d, err := w.schedule(pod, opts)
		w.close()
		if err != nil {
			return nil, err
		}
		doc.Results = append(doc.Results, d)
	}
	return doc, nil
}

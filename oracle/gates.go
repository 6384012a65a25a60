package main

import (
	"encoding/json"
	"fmt"
	"sort"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	logsapi "k8s.io/component-base/logs/api/v1"
	metricsfeatures "k8s.io/component-base/metrics/features"
)

// gateSpec is one feature gate as kube-scheduler of this version registers it.
type gateSpec struct {
	Name       string `json:"name"`
	Default    bool   `json:"default"`
	Locked     bool   `json:"locked"`
	PreRelease string `json:"stage"`
	// DependsOn: the gates this one needs enabled when it is (featuregate's AddDependencies).
	DependsOn []string `json:"dependsOn,omitempty"`
}

// registerServerGates adds the gates cmd/kube-scheduler/app/server.go adds to those pkg/features
// registers (Kubernetes', client-go's, the zpages'): the logs' and the metrics'.
func registerServerGates() error {
	gate := utilfeature.DefaultMutableFeatureGate
	if err := logsapi.AddFeatureGates(gate); err != nil {
		return err
	}
	return metricsfeatures.AddFeatureGates(gate)
}

// listGates prints every gate kube-scheduler's --feature-gates accepts, with its spec at this
// version. policylang's table of gates (policylang/feature_gates.json) is checked against this
// list, version by version.
func listGates() error {
	gate := utilfeature.DefaultMutableFeatureGate
	deps := gateDependencies(gate)
	var out []gateSpec
	for name, spec := range gate.GetAll() {
		if name == "AllAlpha" || name == "AllBeta" {
			continue // not gates: switches for every alpha or beta gate at once
		}
		g := gateSpec{Name: string(name), Default: spec.Default, Locked: spec.LockToDefault, PreRelease: string(spec.PreRelease)}
		for _, dep := range deps[name] {
			g.DependsOn = append(g.DependsOn, string(dep))
		}
		sort.Strings(g.DependsOn)
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	doc, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(doc))
	return nil
}

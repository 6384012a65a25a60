//go:build !k8s1.34 && !k8s1.36 && !k8s1.37

package main

// What v1.35 does its own way (api_from135.go has what it shares with v1.36 and v1.37).

import (
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
)

// setTaintRuleInformers: v1.35 reads DeviceTaintRules from resource.k8s.io/v1alpha3 and the
// DeviceClasses beside them.
func setTaintRuleInformers(opts *tracker.Options, f informers.SharedInformerFactory) {
	opts.TaintInformer = f.Resource().V1alpha3().DeviceTaintRules()
	opts.ClassInformer = f.Resource().V1().DeviceClasses()
}

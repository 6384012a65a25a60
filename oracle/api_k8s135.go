//go:build !k8s1.34 && !k8s1.36 && !k8s1.37

package main

// What v1.35 does its own way (api_from135.go has what it shares with v1.36 and v1.37).

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/kubernetes/pkg/features"
)

// trackerOptions: the resource slice tracker as the scheduler starts it (pkg/scheduler/scheduler.go),
// with v1.35's gate and option names (DRADeviceTaintRules, EnableDeviceTaintRules).
func trackerOptions(f informers.SharedInformerFactory, client kubernetes.Interface) tracker.Options {
	opts := tracker.Options{
		EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            f.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = f.Resource().V1alpha3().DeviceTaintRules()
		opts.ClassInformer = f.Resource().V1().DeviceClasses()
	}
	return opts
}

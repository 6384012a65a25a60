//go:build !k8s1.34 && !k8s1.36 && !k8s1.37

package main

// The scheduler framework's plugin interfaces, where v1.35 keeps them: k8s.io/kube-scheduler/framework
// (they moved there from pkg/scheduler/framework in v1.35). api_k8s134.go names the same for v1.34;
// build.sh picks one with the k8s1.34 tag.

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

type (
	schedPlugin      = fwk.Plugin
	schedHandle      = fwk.Handle
	scorePlugin      = fwk.ScorePlugin
	preBindPlugin    = fwk.PreBindPlugin
	sharedDRAManager = fwk.SharedDRAManager
	nominatingInfo   = fwk.NominatingInfo
)

const modeOverride = fwk.ModeOverride

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

// versionOptions: the framework options that only v1.35 has: NodeVolumeLimits' shared CSI manager.
func versionOptions(f informers.SharedInformerFactory) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithSharedCSIManager(
		nodevolumelimits.NewCSIManager(f.Storage().V1().CSINodes().Lister()))}
}

// gateDependencies: the gates each gate needs enabled (featuregate's AddDependencies, from v1.35).
func gateDependencies(g featuregate.MutableVersionedFeatureGate) map[featuregate.Feature][]featuregate.Feature {
	return g.Dependencies()
}

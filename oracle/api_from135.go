//go:build !k8s1.34

package main

// The scheduler framework's plugin interfaces where v1.35 and later keep them:
// k8s.io/kube-scheduler/framework (they moved there from pkg/scheduler/framework in v1.35;
// api_k8s134.go names the same for v1.34). What differs between v1.35, v1.36 and v1.37 is in
// api_k8s135.go, api_k8s136.go and api_k8s137.go, which build.sh picks by tag.

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

// versionOptions: the framework options that v1.35 and later have: NodeVolumeLimits' shared CSI manager.
func versionOptions(f informers.SharedInformerFactory) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithSharedCSIManager(
		nodevolumelimits.NewCSIManager(f.Storage().V1().CSINodes().Lister()))}
}

// gateDependencies: the gates each gate needs enabled (featuregate's AddDependencies, from v1.35).
func gateDependencies(g featuregate.MutableVersionedFeatureGate) map[featuregate.Feature][]featuregate.Feature {
	return g.Dependencies()
}

// trackerOptions: the resource slice tracker as the scheduler starts it (pkg/scheduler/scheduler.go);
// only where the version reads DeviceTaintRules from differs (setTaintRuleInformers).
func trackerOptions(f informers.SharedInformerFactory, client kubernetes.Interface) tracker.Options {
	opts := tracker.Options{
		EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            f.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		setTaintRuleInformers(&opts, f)
	}
	return opts
}

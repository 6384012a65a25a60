//go:build k8s1.34

package main

// The scheduler framework's plugin interfaces, where v1.34 keeps them: pkg/scheduler/framework
// (v1.35 moved them to k8s.io/kube-scheduler/framework; see api_k8s135.go).

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

type (
	schedPlugin      = framework.Plugin
	schedHandle      = framework.Handle
	scorePlugin      = framework.ScorePlugin
	preBindPlugin    = framework.PreBindPlugin
	sharedDRAManager = framework.SharedDRAManager
	nominatingInfo   = framework.NominatingInfo
)

const modeOverride = framework.ModeOverride

// trackerOptions: the resource slice tracker as the scheduler starts it (pkg/scheduler/scheduler.go),
// with v1.34's gate and option names (DRADeviceTaints, EnableDeviceTaints).
func trackerOptions(f informers.SharedInformerFactory, client kubernetes.Interface) tracker.Options {
	opts := tracker.Options{
		EnableDeviceTaints:       utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaints),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            f.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaints {
		opts.TaintInformer = f.Resource().V1alpha3().DeviceTaintRules()
		opts.ClassInformer = f.Resource().V1().DeviceClasses()
	}
	return opts
}

// versionOptions: none in v1.34 (NodeVolumeLimits reads CSINodes from the informer itself).
func versionOptions(informers.SharedInformerFactory) []frameworkruntime.Option { return nil }

// gateDependencies: none in v1.34 (featuregate has no dependencies between gates before v1.35).
func gateDependencies(featuregate.MutableVersionedFeatureGate) map[featuregate.Feature][]featuregate.Feature {
	return nil
}

// deviceClassHandler: v1.34's DRA manager keeps no extended resource cache (its plugin lists the
// DeviceClasses itself, extended/util.go), so there is nothing to register.
func deviceClassHandler(sharedDRAManager) toolscache.ResourceEventHandler { return nil }

//go:build k8s1.36

package main

// The scheduler framework's plugin interfaces, as v1.36 keeps them (k8s.io/kube-scheduler/framework,
// as v1.35 does); build.sh picks this file with the k8s1.36 tag.

import (
	"context"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
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
// as v1.36 starts it: DeviceTaintRules from resource.k8s.io/v1beta2.
func trackerOptions(f informers.SharedInformerFactory, client kubernetes.Interface) tracker.Options {
	opts := tracker.Options{
		EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            f.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = f.Resource().V1beta2().DeviceTaintRules()
		opts.ClassInformer = f.Resource().V1().DeviceClasses()
	}
	return opts
}

// versionOptions: the framework options that v1.35 and later have: NodeVolumeLimits' shared CSI manager.
func versionOptions(f informers.SharedInformerFactory) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithSharedCSIManager(
		nodevolumelimits.NewCSIManager(f.Storage().V1().CSINodes().Lister()))}
}

// newCache: the scheduler's cache as v1.36's scheduler.go makes it, with no API dispatcher.
func newCache(ctx context.Context) internalcache.Cache {
	return internalcache.New(ctx, nil, utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload))
}

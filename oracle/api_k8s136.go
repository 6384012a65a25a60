//go:build k8s1.36

package main

// What v1.36 does its own way (api_from135.go and api_from136.go have what it shares).

import (
	"context"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/kubernetes/pkg/features"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// setTaintRuleInformers: v1.36 reads DeviceTaintRules from resource.k8s.io/v1beta2 and the
// DeviceClasses beside them.
func setTaintRuleInformers(opts *tracker.Options, f informers.SharedInformerFactory) {
	opts.TaintInformer = f.Resource().V1beta2().DeviceTaintRules()
	opts.ClassInformer = f.Resource().V1().DeviceClasses()
}

// newCache: the scheduler's cache as v1.36's scheduler.go makes it, with no API dispatcher.
func newCache(ctx context.Context) internalcache.Cache {
	return internalcache.New(ctx, nil, utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload))
}

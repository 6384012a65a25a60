//go:build !k8s1.34

package main

// The DRA manager's ExtendedResourceCache (k8s.io/dynamic-resource-allocation deviceclass/
// extendedresourcecache) maps an extended resource name to the DeviceClass that serves it
// (spec.extendedResourceName, or deviceclass.resource.kubernetes.io/<class>). It is filled only
// as a handler of the DeviceClass informer, which the scheduler chains in front of its own
// handlers when DRAExtendedResource is on (pkg/scheduler/eventhandlers.go, addAllEventHandlers);
// without it the DynamicResources and NodeResourcesFit plugins see no class for any resource.
// api_k8s134.go has v1.34's, which has no such cache.

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/features"
)

// deviceClassHandler: the cache as a DeviceClass event handler, or nil with the gate off (the
// manager then has no cache: NewDRAManager makes one only with the gate on).
func deviceClassHandler(m sharedDRAManager) toolscache.ResourceEventHandler {
	if !utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
		return nil
	}
	h, _ := m.DeviceClassResolver().(toolscache.ResourceEventHandler)
	return h
}

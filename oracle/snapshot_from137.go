//go:build k8s1.37

package main

// v1.37's preemption reads nodes through the framework's mutable snapshot lister
// (MutableSnapshotSharedLister: preemption.go, default_preemption.go PodEligibleToPreemptOthers),
// which scheduler.go sets to the same snapshot as the shared lister; without it the framework
// hands preemption a nil lister.

import (
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

func snapshotOptions(s *internalcache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithMutableSnapshotLister(s)}
}

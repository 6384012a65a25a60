//go:build k8s1.37

package main

// The framework options v1.37's scheduler.go sets that the oracle's framework needs for
// preemption: the mutable snapshot lister (preemption reads nodes through it:
// preemption.go, default_preemption.go PodEligibleToPreemptOthers) and the map of pods in PreBind
// (the preemption executor looks victims up in it: preemption/executor.go). Without them the
// framework hands preemption nil.

import (
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

func preemptionOptions(s *internalcache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithMutableSnapshotLister(s),
		frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap())}
}

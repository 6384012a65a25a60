//go:build k8s1.36

package main

// The framework options v1.36's scheduler.go sets that the oracle's framework needs for
// preemption: the map of pods in PreBind (the preemption executor looks victims up in it:
// preemption/executor.go; options_k8s137.go has v1.37's).

import (
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

func preemptionOptions(*internalcache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap())}
}

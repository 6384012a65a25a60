//go:build !k8s1.36 && !k8s1.37

package main

// Up to v1.35 the framework needs no options beyond the shared ones (options_k8s136.go,
// options_k8s137.go have the later versions').

import (
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

func preemptionOptions(*internalcache.Snapshot) []frameworkruntime.Option { return nil }

//go:build !k8s1.37

package main

// Up to v1.36 the framework has only the shared snapshot lister (snapshot_from137.go).

import (
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

func snapshotOptions(*internalcache.Snapshot) []frameworkruntime.Option { return nil }

//go:build !k8s1.36 && !k8s1.37

package main

// What the scheduler's cache, filter loop and PreBind look like up to v1.35 (api_from136.go has
// v1.36's and v1.37's).

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
)

// newCache: the scheduler's cache with no expiry of assumed pods (ttl 0) and no API dispatcher.
func newCache(ctx context.Context) internalcache.Cache { return internalcache.New(ctx, 0, nil) }

// finishBinding: the assumed pod's binding is done (it would start the assumed pod's expiry).
func finishBinding(c internalcache.Cache, logger klog.Logger, pod *v1.Pod) error {
	return c.FinishBinding(logger, pod)
}

// preBindPreFlight: whether the plugin has PreBind work for the pod on the node.
func preBindPreFlight(p preBindPlugin, ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	return p.PreBindPreFlight(ctx, state, pod, node)
}

// errorChannel: the first filter error, as findNodesThatPassFilters collects it.
type errorChannel struct{ ch *parallelize.ErrorChannel }

func newErrorChannel() errorChannel { return errorChannel{parallelize.NewErrorChannel()} }

func (e errorChannel) sendWithCancel(err error, cancel func()) { e.ch.SendErrorWithCancel(err, cancel) }

func (e errorChannel) receive() error { return e.ch.ReceiveError() }

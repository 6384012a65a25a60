//go:build k8s1.36 || k8s1.37

package main

// What the scheduler's cache, filter loop and PreBind look like from v1.36 (api_upto135.go has
// the earlier versions'): the cache has no expiry of assumed pods any more (no FinishBinding),
// findNodesThatPassFilters collects errors in a generic ResultChannel, and PreBindPreFlight also
// returns a result.

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
)

// finishBinding: nothing to do from v1.36 (an assumed pod no longer expires).
func finishBinding(internalcache.Cache, klog.Logger, *v1.Pod) error { return nil }

// preBindPreFlight: whether the plugin has PreBind work for the pod on the node.
func preBindPreFlight(p preBindPlugin, ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	_, st := p.PreBindPreFlight(ctx, state, pod, node)
	return st
}

// errorChannel: the first filter error, as findNodesThatPassFilters collects it.
type errorChannel struct {
	ch *parallelize.ResultChannel[error]
}

func newErrorChannel() errorChannel { return errorChannel{parallelize.NewResultChannel[error]()} }

func (e errorChannel) sendWithCancel(err error, cancel func()) { e.ch.SendWithCancel(err, cancel) }

func (e errorChannel) receive() error { return e.ch.Receive() }

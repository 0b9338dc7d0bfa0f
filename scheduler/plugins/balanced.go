package plugins

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// NodeResourcesBalancedAllocation favours nodes whose resource fractions
// (requested/allocatable, with actual requests, no scoring defaults) become
// more even with the pod.
//
// It follows the formula of Kubernetes 1.36 and later
// (kubernetes/kubernetes#135573), which scores the change in balance:
// 50 + (50 + B(with pod) − B(without pod))/2, where B is the older
// formula's score (1 − std of the fractions)·100. The range is 50..100 and
// a pod that does not change the balance scores 75. Pods that request
// none of the resources are skipped.
type NodeResourcesBalancedAllocation struct {
	alloc allocScorer
}

var (
	_ framework.PreScorePlugin = (*NodeResourcesBalancedAllocation)(nil)
	_ framework.ScorePlugin    = (*NodeResourcesBalancedAllocation)(nil)

	_ framework.BatchScorePlugin = (*NodeResourcesBalancedAllocation)(nil)
)

const balancedPreScoreKey = "PreScore" + NameNodeResourcesBalancedAllocation

// NewBalancedAllocation returns the plugin over resources (nil: cpu and
// memory).
func NewBalancedAllocation(resources []ResourceSpec) *NodeResourcesBalancedAllocation {
	if len(resources) == 0 {
		resources = DefaultResources()
	}
	return &NodeResourcesBalancedAllocation{alloc: newAllocScorer(resources)}
}

// Name implements framework.Plugin.
func (b *NodeResourcesBalancedAllocation) Name() string { return NameNodeResourcesBalancedAllocation }

// PreScore implements framework.PreScorePlugin.
func (b *NodeResourcesBalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	req := b.alloc.podRequests(state.Pod, true)
	for _, r := range req {
		if r != 0 {
			state.Write(balancedPreScoreKey, req)
			return nil
		}
	}
	return statusSkip
}

// Score implements framework.ScorePlugin.
func (b *NodeResourcesBalancedAllocation) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	return b.score(b.preScored(state), node), nil
}

// ScoreNodes implements framework.BatchScorePlugin.
func (b *NodeResourcesBalancedAllocation) ScoreNodes(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	podReq := b.preScored(state)
	for i, node := range nodes {
		scores[i] = b.score(podReq, node)
	}
	return nil
}

func (b *NodeResourcesBalancedAllocation) preScored(state *framework.CycleState) []int64 {
	if podReq, ok := state.Read(balancedPreScoreKey).([]int64); ok {
		return podReq
	}
	return b.alloc.podRequests(state.Pod, true)
}

func (b *NodeResourcesBalancedAllocation) score(podReq []int64, node *framework.NodeInfo) int64 {
	var buf [2 * maxInlineResources]int64
	req, alloc := b.alloc.nodeValues(node, podReq, true, false, buf[:])
	without := BalanceScore(req, alloc)
	for i := range req {
		req[i] += podReq[i]
	}
	return ChangeInBalanceScore(BalanceScore(req, alloc), without)
}

// ChangeInBalanceScore is the 1.36+ score from the balance scores with and
// without the pod: 50 + (50 + with − without)/2.
func ChangeInBalanceScore(with, without int64) int64 {
	return 50 + (50+with-without)/2
}

// BalanceScore is the classic (1.23–1.35) BalancedAllocation score:
// (1 − std)·100 over the fractions min(1, req/alloc) of the resources the
// node has; with two resources std is |f1 − f2|/2.
func BalanceScore(req, alloc []int64) int64 {
	var fr [maxInlineResources]float64
	fractions := fr[:0]
	var total float64
	for i := range req {
		if alloc[i] == 0 {
			continue
		}
		f := min(1, float64(req[i])/float64(alloc[i]))
		total += f
		fractions = append(fractions, f)
	}
	var std float64
	switch n := len(fractions); {
	case n == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case n > 2:
		mean := total / float64(n)
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(n))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}

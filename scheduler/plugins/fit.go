package plugins

import (
	"context"
	"fmt"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// ScoringStrategyType names how NodeResourcesFit scores.
type ScoringStrategyType string

// Scoring strategies.
const (
	// LeastAllocated favours the emptiest nodes (the default).
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// MostAllocated favours the fullest nodes (bin packing).
	MostAllocated ScoringStrategyType = "MostAllocated"
	// RequestedToCapacityRatio maps utilisation through a piecewise
	// linear shape.
	RequestedToCapacityRatio ScoringStrategyType = "RequestedToCapacityRatio"
)

// ResourceSpec is a resource the scorers look at and its weight.
type ResourceSpec struct {
	Name   v1.ResourceName
	Weight int64
}

// UtilizationShapePoint is one point of RequestedToCapacityRatio's shape:
// at Utilization percent (0..100) the score is Score (0..10).
type UtilizationShapePoint struct {
	Utilization int32
	Score       int32
}

// ScoringStrategy configures NodeResourcesFit's score. Zero Type means
// LeastAllocated; nil Resources means cpu and memory with weight 1.
type ScoringStrategy struct {
	Type      ScoringStrategyType
	Resources []ResourceSpec
	// Shape is required for RequestedToCapacityRatio, ignored otherwise.
	Shape []UtilizationShapePoint
}

// DefaultResources are cpu and memory, weight 1 each.
func DefaultResources() []ResourceSpec {
	return []ResourceSpec{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}
}

// Validate checks s, naming the failing field under path.
func (s *ScoringStrategy) Validate(path string) error {
	switch s.Type {
	case "", LeastAllocated, MostAllocated:
	case RequestedToCapacityRatio:
		if len(s.Shape) == 0 {
			return fmt.Errorf("%s.requestedToCapacityRatio.shape: required for RequestedToCapacityRatio", path)
		}
		for i, p := range s.Shape {
			f := fmt.Sprintf("%s.requestedToCapacityRatio.shape[%d]", path, i)
			if p.Utilization < 0 || p.Utilization > 100 {
				return fmt.Errorf("%s.utilization %d: want 0 to 100", f, p.Utilization)
			}
			if p.Score < 0 || p.Score > 10 {
				return fmt.Errorf("%s.score %d: want 0 to 10", f, p.Score)
			}
			if i > 0 && p.Utilization <= s.Shape[i-1].Utilization {
				return fmt.Errorf("%s.utilization %d: want strictly increasing utilization", f, p.Utilization)
			}
		}
	default:
		return fmt.Errorf("%s.type %q: want LeastAllocated, MostAllocated or RequestedToCapacityRatio", path, s.Type)
	}
	seen := map[v1.ResourceName]bool{}
	for i, r := range s.Resources {
		f := fmt.Sprintf("%s.resources[%d]", path, i)
		if r.Name == "" {
			return fmt.Errorf("%s.name: required", f)
		}
		if seen[r.Name] {
			return fmt.Errorf("%s.name %q: listed twice", f, r.Name)
		}
		seen[r.Name] = true
		if r.Weight < 1 || r.Weight > 100 {
			return fmt.Errorf("%s.weight %d: want 1 to 100", f, r.Weight)
		}
	}
	return nil
}

// Rejection reasons of NodeResourcesFit.
const ReasonTooManyPods = "Too many pods"

// InsufficientReason is the rejection for a resource the node lacks.
func InsufficientReason(name v1.ResourceName) string { return "Insufficient " + string(name) }

var (
	statusTooManyPods      = framework.NewStatus(framework.Unschedulable, ReasonTooManyPods)
	statusInsufficientCPU  = framework.NewStatus(framework.Unschedulable, InsufficientReason(v1.ResourceCPU))
	statusInsufficientMem  = framework.NewStatus(framework.Unschedulable, InsufficientReason(v1.ResourceMemory))
	statusInsufficientDisk = framework.NewStatus(framework.Unschedulable, InsufficientReason(v1.ResourceEphemeralStorage))
)

// NodeResourcesFit rejects nodes without room for the pod's requests
// (cpu, memory, ephemeral-storage, extended resources, and the pod count),
// and scores nodes by the configured strategy.
type NodeResourcesFit struct {
	strategy ScoringStrategy
	alloc    allocScorer
	// shape is RequestedToCapacityRatio's shape with scores scaled to
	// 0..100.
	shape []UtilizationShapePoint
}

var (
	_ framework.FilterPlugin   = (*NodeResourcesFit)(nil)
	_ framework.PreScorePlugin = (*NodeResourcesFit)(nil)
	_ framework.ScorePlugin    = (*NodeResourcesFit)(nil)

	_ framework.BatchScorePlugin = (*NodeResourcesFit)(nil)
)

const fitPreScoreKey = "PreScore" + NameNodeResourcesFit

// NewNodeResourcesFit returns the plugin with strategy s.
func NewNodeResourcesFit(s ScoringStrategy) (*NodeResourcesFit, error) {
	if err := s.Validate("scoringStrategy"); err != nil {
		return nil, err
	}
	if s.Type == "" {
		s.Type = LeastAllocated
	}
	if len(s.Resources) == 0 {
		s.Resources = DefaultResources()
	}
	f := &NodeResourcesFit{strategy: s, alloc: newAllocScorer(s.Resources)}
	const scale = int32(framework.MaxNodeScore / 10)
	for _, p := range s.Shape {
		f.shape = append(f.shape, UtilizationShapePoint{Utilization: p.Utilization, Score: p.Score * scale})
	}
	return f, nil
}

// Strategy returns the scoring strategy with defaults filled in.
func (f *NodeResourcesFit) Strategy() ScoringStrategy { return f.strategy }

// Name implements framework.Plugin.
func (f *NodeResourcesFit) Name() string { return NameNodeResourcesFit }

// Filter implements framework.FilterPlugin. Every resource that does not
// fit is a reason, so a node can count under several in the 0/N message.
func (f *NodeResourcesFit) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) *framework.Status {
	req := &state.Pod.Requests
	var reasons []string
	if int64(len(node.Pods))+1 > node.Allocatable.Pods {
		reasons = append(reasons, ReasonTooManyPods)
	}
	if req.MilliCPU == 0 && req.Memory == 0 && req.EphemeralStorage == 0 && len(req.Scalar) == 0 {
		return statusFor(reasons)
	}
	if req.MilliCPU > node.Allocatable.MilliCPU-node.Requested.MilliCPU {
		reasons = append(reasons, InsufficientReason(v1.ResourceCPU))
	}
	if req.Memory > node.Allocatable.Memory-node.Requested.Memory {
		reasons = append(reasons, InsufficientReason(v1.ResourceMemory))
	}
	if req.EphemeralStorage > node.Allocatable.EphemeralStorage-node.Requested.EphemeralStorage {
		reasons = append(reasons, InsufficientReason(v1.ResourceEphemeralStorage))
	}
	if len(req.Scalar) > 0 {
		names := make([]v1.ResourceName, 0, len(req.Scalar))
		for name, q := range req.Scalar {
			if q > 0 && q > node.Allocatable.Scalar[name]-node.Requested.Scalar[name] {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			reasons = append(reasons, InsufficientReason(name))
		}
	}
	return statusFor(reasons)
}

// statusFor returns nil for no reasons and shares the common single-reason
// statuses.
func statusFor(reasons []string) *framework.Status {
	if len(reasons) == 0 {
		return nil
	}
	if len(reasons) == 1 {
		switch reasons[0] {
		case ReasonTooManyPods:
			return statusTooManyPods
		case statusInsufficientCPU.Reasons[0]:
			return statusInsufficientCPU
		case statusInsufficientMem.Reasons[0]:
			return statusInsufficientMem
		case statusInsufficientDisk.Reasons[0]:
			return statusInsufficientDisk
		}
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// PreScore implements framework.PreScorePlugin.
func (f *NodeResourcesFit) PreScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(fitPreScoreKey, f.alloc.podRequests(state.Pod, false))
	return nil
}

// Score implements framework.ScorePlugin. Requests count cpu and memory
// with the scoring defaults for containers that set none.
func (f *NodeResourcesFit) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	return f.score(f.preScored(state), node), nil
}

// ScoreNodes implements framework.BatchScorePlugin.
func (f *NodeResourcesFit) ScoreNodes(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	podReq := f.preScored(state)
	for i, node := range nodes {
		scores[i] = f.score(podReq, node)
	}
	return nil
}

func (f *NodeResourcesFit) preScored(state *framework.CycleState) []int64 {
	if podReq, ok := state.Read(fitPreScoreKey).([]int64); ok {
		return podReq
	}
	return f.alloc.podRequests(state.Pod, false)
}

func (f *NodeResourcesFit) score(podReq []int64, node *framework.NodeInfo) int64 {
	var buf [2 * maxInlineResources]int64
	req, alloc := f.alloc.nodeValues(node, podReq, false, true, buf[:])
	if f.strategy.Type == RequestedToCapacityRatio {
		return ratioScore(f.strategy.Resources, f.shape, req, alloc)
	}
	return weightedScore(f.strategy.Resources, req, alloc, f.strategy.Type == MostAllocated)
}

// maxInlineResources is how many scored resources fit in a stack buffer.
const maxInlineResources = 8

// allocScorer computes, per configured resource, what a node would have
// requested with the pod and what it has allocatable.
type allocScorer struct {
	resources []ResourceSpec
	// kinds[i] says where resources[i] is kept, so that nodeValues does
	// not compare names for every node.
	kinds []resourceKind
}

type resourceKind uint8

const (
	kindExtended resourceKind = iota
	kindCPU
	kindMemory
	kindEphemeralStorage
	kindPods
)

func newAllocScorer(resources []ResourceSpec) allocScorer {
	a := allocScorer{resources: resources, kinds: make([]resourceKind, len(resources))}
	for i, r := range resources {
		switch r.Name {
		case v1.ResourceCPU:
			a.kinds[i] = kindCPU
		case v1.ResourceMemory:
			a.kinds[i] = kindMemory
		case v1.ResourceEphemeralStorage:
			a.kinds[i] = kindEphemeralStorage
		case v1.ResourcePods:
			a.kinds[i] = kindPods
		}
	}
	return a
}

// podRequests returns the pod's request of each resource; with
// useRequested false cpu and memory carry the scoring defaults.
func (a *allocScorer) podRequests(pi *framework.PodInfo, useRequested bool) []int64 {
	out := make([]int64, len(a.resources))
	for i, r := range a.resources {
		switch {
		case a.kinds[i] == kindCPU && !useRequested:
			out[i] = pi.NonZeroCPU
		case a.kinds[i] == kindMemory && !useRequested:
			out[i] = pi.NonZeroMemory
		default:
			out[i] = pi.Requests.Get(r.Name)
		}
	}
	return out
}

// nodeValues returns requested (node plus pod when withPod) and
// allocatable per resource, in buf when it is large enough. An extended
// resource the pod does not request gets 0 and 0, so scorers skip it.
func (a *allocScorer) nodeValues(node *framework.NodeInfo, podReq []int64, useRequested, withPod bool, buf []int64) (req, alloc []int64) {
	n := len(a.resources)
	if len(buf) < 2*n {
		buf = make([]int64, 2*n)
	}
	req, alloc = buf[:n:n], buf[n:2*n:2*n]
	for i, kind := range a.kinds {
		var used, have int64
		switch kind {
		case kindCPU:
			used, have = node.NonZeroCPU, node.Allocatable.MilliCPU
			if useRequested {
				used = node.Requested.MilliCPU
			}
		case kindMemory:
			used, have = node.NonZeroMemory, node.Allocatable.Memory
			if useRequested {
				used = node.Requested.Memory
			}
		case kindEphemeralStorage:
			used, have = node.Requested.EphemeralStorage, node.Allocatable.EphemeralStorage
		case kindPods:
			used, have = node.Requested.Pods, node.Allocatable.Pods
		default:
			if podReq[i] == 0 {
				req[i], alloc[i] = 0, 0
				continue
			}
			name := a.resources[i].Name
			used, have = node.Requested.Scalar[name], node.Allocatable.Scalar[name]
		}
		if withPod {
			used += podReq[i]
		}
		req[i], alloc[i] = used, have
	}
	return req, alloc
}

// weightedScore averages per-resource scores (leastRequestedScore, or
// mostRequestedScore when most) by weight over the resources the node has
// (allocatable > 0), with integer division; 0 if none.
func weightedScore(resources []ResourceSpec, req, alloc []int64, most bool) int64 {
	var sum, weights int64
	for i := range req {
		if alloc[i] == 0 {
			continue
		}
		s := leastRequestedScore(req[i], alloc[i])
		if most {
			s = mostRequestedScore(req[i], alloc[i])
		}
		sum += s * resources[i].Weight
		weights += resources[i].Weight
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

// leastRequestedScore is (alloc − req)·100/alloc, 0 when over.
func leastRequestedScore(req, alloc int64) int64 {
	if alloc == 0 || req > alloc {
		return 0
	}
	return (alloc - req) * framework.MaxNodeScore / alloc
}

// mostRequestedScore is req·100/alloc, with req capped at alloc.
func mostRequestedScore(req, alloc int64) int64 {
	if alloc == 0 {
		return 0
	}
	return min(req, alloc) * framework.MaxNodeScore / alloc
}

// ratioScore is RequestedToCapacityRatio: per resource the utilisation
// percentage goes through the shape (scores already scaled from 0..10 to
// 0..100; over-committed counts as 100 percent); resources scoring 0 do
// not count; the weighted mean is rounded.
func ratioScore(resources []ResourceSpec, shape []UtilizationShapePoint, req, alloc []int64) int64 {
	var sum, weights int64
	for i := range req {
		if alloc[i] == 0 {
			continue
		}
		u := int64(100)
		if req[i] <= alloc[i] {
			u = req[i] * 100 / alloc[i]
		}
		if s := shapeScore(shape, u); s > 0 {
			sum += s * resources[i].Weight
			weights += resources[i].Weight
		}
	}
	if weights == 0 {
		return 0
	}
	return int64(math.Round(float64(sum) / float64(weights)))
}

// shapeScore interpolates the shape linearly at utilisation u.
func shapeScore(shape []UtilizationShapePoint, u int64) int64 {
	for i, p := range shape {
		if u <= int64(p.Utilization) {
			if i == 0 {
				return int64(p.Score)
			}
			q := shape[i-1]
			return int64(q.Score) + int64(p.Score-q.Score)*(u-int64(q.Utilization))/int64(p.Utilization-q.Utilization)
		}
	}
	return int64(shape[len(shape)-1].Score)
}

package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// ReasonNodeAffinity is NodeAffinity's rejection.
const ReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector"

var statusNodeAffinity = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeAffinity)

// NodeAffinity rejects nodes that do not match the pod's spec.nodeSelector
// or required node affinity, and scores nodes by the summed weights of the
// preferred node affinity terms they match, normalised to the highest.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin = NodeAffinity{}
	_ framework.FilterPlugin    = NodeAffinity{}
	_ framework.PreScorePlugin  = NodeAffinity{}
	_ framework.ScorePlugin     = NodeAffinity{}
	_ framework.ScoreNormalizer = NodeAffinity{}

	_ framework.BatchScorePlugin = NodeAffinity{}
)

const (
	nodeAffinityPreFilterKey = "PreFilter" + NameNodeAffinity
	nodeAffinityPreScoreKey  = "PreScore" + NameNodeAffinity
)

// Name implements framework.Plugin.
func (NodeAffinity) Name() string { return NameNodeAffinity }

// PreFilter implements framework.PreFilterPlugin: pods with neither a node
// selector nor required node affinity skip the filter.
func (NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	r := newRequiredNodeAffinity(pod)
	if r == nil {
		return statusSkip
	}
	state.Write(nodeAffinityPreFilterKey, r)
	return nil
}

// Filter implements framework.FilterPlugin.
func (NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	r, ok := state.Read(nodeAffinityPreFilterKey).(*requiredNodeAffinity)
	if !ok {
		r = newRequiredNodeAffinity(pod)
	}
	if r.matches(node.Node) {
		return nil
	}
	return statusNodeAffinity
}

// PreScore implements framework.PreScorePlugin: pods without preferred
// node affinity skip scoring.
func (NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	terms := preferredNodeTerms(pod)
	if len(terms) == 0 {
		return statusSkip
	}
	state.Write(nodeAffinityPreScoreKey, terms)
	return nil
}

// preferredNodeTerms compiles the preferred terms, dropping those with
// weight 0 or no requirements.
func preferredNodeTerms(pod *v1.Pod) []nodeSelectorTerm {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	var out []nodeSelectorTerm
	for i := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		p := &a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i]
		if p.Weight == 0 {
			continue
		}
		t, ok := compileTerm(&p.Preference)
		if !ok {
			continue
		}
		t.weight = p.Weight
		out = append(out, t)
	}
	return out
}

// Score implements framework.ScorePlugin.
func (NodeAffinity) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	return preferredWeight(preScoredNodeTerms(state, pod), node), nil
}

// ScoreNodes implements framework.BatchScorePlugin.
func (NodeAffinity) ScoreNodes(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	terms := preScoredNodeTerms(state, pod)
	for i, node := range nodes {
		scores[i] = preferredWeight(terms, node)
	}
	return nil
}

func preScoredNodeTerms(state *framework.CycleState, pod *v1.Pod) []nodeSelectorTerm {
	if terms, ok := state.Read(nodeAffinityPreScoreKey).([]nodeSelectorTerm); ok {
		return terms
	}
	return preferredNodeTerms(pod)
}

// preferredWeight sums the weights of the terms node matches.
func preferredWeight(terms []nodeSelectorTerm, node *framework.NodeInfo) int64 {
	var sum int64
	for i := range terms {
		if terms[i].matches(node.Node) {
			sum += int64(terms[i].weight)
		}
	}
	return sum
}

// NormalizeScore implements framework.ScoreNormalizer.
func (NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, _ []*framework.NodeInfo, scores []int64) *framework.Status {
	framework.DefaultNormalizeScore(false, scores)
	return nil
}

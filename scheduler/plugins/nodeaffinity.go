package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// ReasonNodeAffinity is NodeAffinity's rejection.
const ReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector"

var statusNodeAffinity = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeAffinity)

// NodeAffinity rejects nodes that do not match the pod's spec.nodeSelector
// or required node affinity, and scores nodes by the summed weights of the
// preferred node affinity terms they match, normalised to the highest.
// Both are component-helpers' nodeaffinity rules, as in kube-scheduler.
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
	if len(pod.Spec.NodeSelector) == 0 && !hasRequiredNodeAffinity(pod) {
		return statusSkip
	}
	r := nodeaffinity.GetRequiredNodeAffinity(pod)
	state.Write(nodeAffinityPreFilterKey, &r)
	return nil
}

func hasRequiredNodeAffinity(pod *v1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}

// Filter implements framework.FilterPlugin. A required term that does not
// parse matches no node; the parse error, which kube-scheduler drops too,
// is not reported.
func (NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	r, ok := state.Read(nodeAffinityPreFilterKey).(*nodeaffinity.RequiredNodeAffinity)
	if !ok {
		a := nodeaffinity.GetRequiredNodeAffinity(pod)
		r = &a
	}
	if match, _ := r.Match(node.Node); match {
		return nil
	}
	return statusNodeAffinity
}

// PreScore implements framework.PreScorePlugin: pods without preferred
// node affinity terms that count skip scoring.
func (NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	terms := preferredNodeTerms(pod)
	if terms == nil {
		return statusSkip
	}
	state.Write(nodeAffinityPreScoreKey, terms)
	return nil
}

// preferredNodeTerms parses the preferred terms that count: not of weight
// 0, not empty, and parsing. It is nil when none does.
//
// kube-scheduler fails the scheduling attempt on a term that does not
// parse; kube-apiserver refuses such a pod, but kubegate's API server
// stores affinity as sent, so its scheduler leaves the term out and
// scores by the others.
func preferredNodeTerms(pod *v1.Pod) *nodeaffinity.PreferredSchedulingTerms {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	var counted []v1.PreferredSchedulingTerm
	for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if p.Weight == 0 || len(p.Preference.MatchExpressions)+len(p.Preference.MatchFields) == 0 {
			continue
		}
		if _, err := nodeaffinity.NewPreferredSchedulingTerms([]v1.PreferredSchedulingTerm{p}); err != nil {
			continue
		}
		counted = append(counted, p)
	}
	if len(counted) == 0 {
		return nil
	}
	terms, _ := nodeaffinity.NewPreferredSchedulingTerms(counted)
	return terms
}

// Score implements framework.ScorePlugin: the summed weights of the
// preferred terms node matches.
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

func preScoredNodeTerms(state *framework.CycleState, pod *v1.Pod) *nodeaffinity.PreferredSchedulingTerms {
	if terms, ok := state.Read(nodeAffinityPreScoreKey).(*nodeaffinity.PreferredSchedulingTerms); ok {
		return terms
	}
	return preferredNodeTerms(pod)
}

func preferredWeight(terms *nodeaffinity.PreferredSchedulingTerms, node *framework.NodeInfo) int64 {
	if terms == nil {
		return 0
	}
	return terms.Score(node.Node)
}

// NormalizeScore implements framework.ScoreNormalizer.
func (NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, _ []*framework.NodeInfo, scores []int64) *framework.Status {
	framework.DefaultNormalizeScore(false, scores)
	return nil
}

package plugins

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// Rejection reasons of InterPodAffinity.
const (
	ReasonPodAffinity             = "node(s) didn't match pod affinity rules"
	ReasonPodAntiAffinity         = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingPodAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
)

var (
	statusPodAffinity         = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonPodAffinity)
	statusPodAntiAffinity     = framework.NewStatus(framework.Unschedulable, ReasonPodAntiAffinity)
	statusExistingAntiAffinty = framework.NewStatus(framework.Unschedulable, ReasonExistingPodAntiAffinity)
)

// HardPodAffinityWeight is what an existing pod's required affinity term
// matching the incoming pod adds to the score of its topology domain.
const HardPodAffinityWeight = 1

// InterPodAffinity enforces required pod affinity and anti-affinity (the
// incoming pod's and, for anti-affinity, the existing pods'), and scores
// nodes by the preferred terms of both, min-max normalised.
type InterPodAffinity struct{}

var (
	_ framework.PreFilterPlugin = InterPodAffinity{}
	_ framework.FilterPlugin    = InterPodAffinity{}
	_ framework.PreScorePlugin  = InterPodAffinity{}
	_ framework.ScorePlugin     = InterPodAffinity{}
	_ framework.ScoreNormalizer = InterPodAffinity{}

	_ framework.BatchScorePlugin = InterPodAffinity{}
)

const (
	podAffinityPreFilterKey = "PreFilter" + NameInterPodAffinity
	podAffinityPreScoreKey  = "PreScore" + NameInterPodAffinity
)

// Name implements framework.Plugin.
func (InterPodAffinity) Name() string { return NameInterPodAffinity }

type topologyPair struct{ key, value string }

type topologyCounts map[topologyPair]int64

func (m topologyCounts) add(node *v1.Node, key string, d int64) {
	if v, ok := node.Labels[key]; ok {
		p := topologyPair{key, v}
		m[p] += d
		if m[p] == 0 {
			delete(m, p)
		}
	}
}

type podAffinityFilterState struct {
	pod *framework.PodInfo
	// existingAnti counts, per domain, existing pods' required
	// anti-affinity terms the incoming pod matches.
	existingAnti topologyCounts
	// affinity and anti count, per domain, existing pods matching the
	// incoming pod's required terms (affinity: all of them at once).
	affinity, anti topologyCounts
}

func matchesAll(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod) {
			return false
		}
	}
	return true
}

// PreFilter implements framework.PreFilterPlugin.
func (InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	pi := state.Pod
	if pi.ParseErr != nil {
		return framework.NewStatus(framework.Error, pi.ParseErr.Error())
	}
	snap := state.Snapshot
	if len(pi.RequiredAffinity) == 0 && len(pi.RequiredAntiAffinity) == 0 && !snap.HasAffinityPods() {
		return statusSkip
	}
	s := &podAffinityFilterState{pod: pi, existingAnti: topologyCounts{}, affinity: topologyCounts{}, anti: topologyCounts{}}
	incoming := len(pi.RequiredAffinity)+len(pi.RequiredAntiAffinity) > 0
	for _, ni := range snap.Nodes() {
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			for i := range existing.RequiredAntiAffinity {
				t := &existing.RequiredAntiAffinity[i]
				if t.Matches(pod) {
					s.existingAnti.add(ni.Node, t.TopologyKey, 1)
				}
			}
		}
		if !incoming {
			continue
		}
		for _, existing := range ni.Pods {
			if matchesAll(pi.RequiredAffinity, existing.Pod) {
				for i := range pi.RequiredAffinity {
					s.affinity.add(ni.Node, pi.RequiredAffinity[i].TopologyKey, 1)
				}
			}
			for i := range pi.RequiredAntiAffinity {
				if pi.RequiredAntiAffinity[i].Matches(existing.Pod) {
					s.anti.add(ni.Node, pi.RequiredAntiAffinity[i].TopologyKey, 1)
				}
			}
		}
	}
	state.Write(podAffinityPreFilterKey, s)
	return nil
}

// Filter implements framework.FilterPlugin, checking in kube-scheduler's
// order: the pod's affinity, its anti-affinity, then existing pods'
// anti-affinity.
func (InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) *framework.Status {
	s, ok := state.Read(podAffinityPreFilterKey).(*podAffinityFilterState)
	if !ok {
		return nil
	}
	labels := node.Labels
	if len(s.pod.RequiredAffinity) > 0 {
		exist := true
		for i := range s.pod.RequiredAffinity {
			t := &s.pod.RequiredAffinity[i]
			v, ok := labels[t.TopologyKey]
			if !ok {
				return statusPodAffinity
			}
			if s.affinity[topologyPair{t.TopologyKey, v}] <= 0 {
				exist = false
			}
		}
		// The first pod of a group that has affinity to itself may go
		// anywhere with the keys if no pod matches yet.
		if !exist && !(len(s.affinity) == 0 && matchesAll(s.pod.RequiredAffinity, s.pod.Pod)) {
			return statusPodAffinity
		}
	}
	if len(s.anti) > 0 {
		for i := range s.pod.RequiredAntiAffinity {
			t := &s.pod.RequiredAntiAffinity[i]
			if v, ok := labels[t.TopologyKey]; ok && s.anti[topologyPair{t.TopologyKey, v}] > 0 {
				return statusPodAntiAffinity
			}
		}
	}
	if len(s.existingAnti) > 0 {
		for k, v := range labels {
			if s.existingAnti[topologyPair{k, v}] > 0 {
				return statusExistingAntiAffinty
			}
		}
	}
	return nil
}

type podAffinityScoreState struct {
	// scores maps topology key → value → score.
	scores map[string]map[string]int64
}

func (s *podAffinityScoreState) add(node *v1.Node, key string, d int64) {
	v, ok := node.Labels[key]
	if !ok {
		return
	}
	m := s.scores[key]
	if m == nil {
		m = map[string]int64{}
		s.scores[key] = m
	}
	m[v] += d
}

// PreScore implements framework.PreScorePlugin. For every existing pod
// (only those with affinity terms unless the pod has preferred terms), the
// domain of its node gains or loses: the weight of each of the pod's
// preferred (anti-)affinity terms the existing pod matches, 1 for each
// required affinity term of the existing pod the pod matches, and the
// weight of each preferred (anti-)affinity term of the existing pod the pod
// matches.
func (InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	pi := state.Pod
	if pi.ParseErr != nil {
		return framework.NewStatus(framework.Error, pi.ParseErr.Error())
	}
	hasPreferred := len(pi.PreferredAffinity)+len(pi.PreferredAntiAffinity) > 0
	if len(nodes) == 0 || (!hasPreferred && !state.Snapshot.HasAffinityPods()) {
		return statusSkip
	}
	s := &podAffinityScoreState{scores: map[string]map[string]int64{}}
	for _, ni := range state.Snapshot.Nodes() {
		pods := ni.PodsWithAffinity
		if hasPreferred {
			pods = ni.Pods
		}
		if len(ni.Labels) == 0 {
			continue
		}
		for _, existing := range pods {
			for i := range pi.PreferredAffinity {
				if t := &pi.PreferredAffinity[i]; t.Matches(existing.Pod) {
					s.add(ni.Node, t.TopologyKey, int64(t.Weight))
				}
			}
			for i := range pi.PreferredAntiAffinity {
				if t := &pi.PreferredAntiAffinity[i]; t.Matches(existing.Pod) {
					s.add(ni.Node, t.TopologyKey, -int64(t.Weight))
				}
			}
			for i := range existing.RequiredAffinity {
				if t := &existing.RequiredAffinity[i]; t.Matches(pod) {
					s.add(ni.Node, t.TopologyKey, HardPodAffinityWeight)
				}
			}
			for i := range existing.PreferredAffinity {
				if t := &existing.PreferredAffinity[i]; t.Matches(pod) {
					s.add(ni.Node, t.TopologyKey, int64(t.Weight))
				}
			}
			for i := range existing.PreferredAntiAffinity {
				if t := &existing.PreferredAntiAffinity[i]; t.Matches(pod) {
					s.add(ni.Node, t.TopologyKey, -int64(t.Weight))
				}
			}
		}
	}
	if len(s.scores) == 0 {
		return statusSkip
	}
	state.Write(podAffinityPreScoreKey, s)
	return nil
}

// Score implements framework.ScorePlugin: the sum of the scores of the
// node's domains.
func (InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := state.Read(podAffinityPreScoreKey).(*podAffinityScoreState)
	if !ok {
		return 0, nil
	}
	return s.score(node), nil
}

// ScoreNodes implements framework.BatchScorePlugin.
func (InterPodAffinity) ScoreNodes(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	s, ok := state.Read(podAffinityPreScoreKey).(*podAffinityScoreState)
	for i, node := range nodes {
		if ok {
			scores[i] = s.score(node)
		} else {
			scores[i] = 0
		}
	}
	return nil
}

func (s *podAffinityScoreState) score(node *framework.NodeInfo) int64 {
	var score int64
	for key, values := range s.scores {
		if v, ok := node.Labels[key]; ok {
			score += values[v]
		}
	}
	return score
}

// NormalizeScore implements framework.ScoreNormalizer: min-max to 0..100,
// all 0 when every node scores the same.
func (InterPodAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, _ []*framework.NodeInfo, scores []int64) *framework.Status {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	diff := hi - lo
	for i, s := range scores {
		var f float64
		if diff > 0 {
			f = float64(framework.MaxNodeScore) * (float64(s-lo) / float64(diff))
		}
		scores[i] = int64(f)
	}
	return nil
}

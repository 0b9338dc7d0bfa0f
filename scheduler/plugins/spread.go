package plugins

import (
	"context"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// Rejection reasons of PodTopologySpread.
const (
	ReasonSpreadConstraints = "node(s) didn't match pod topology spread constraints"
	ReasonSpreadMissingKey  = ReasonSpreadConstraints + " (missing required label)"
)

var (
	statusSpread        = framework.NewStatus(framework.Unschedulable, ReasonSpreadConstraints)
	statusSpreadMissing = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonSpreadMissingKey)
)

// SystemDefaultConstraints are the soft constraints applied to pods that
// have none: at most 3 apart per node and 5 per zone.
func SystemDefaultConstraints() []v1.TopologySpreadConstraint {
	return []v1.TopologySpreadConstraint{
		{MaxSkew: 3, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway},
		{MaxSkew: 5, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway},
	}
}

// SpreadSources finds the objects that select a pod, from which the system
// default spreading derives its selector.
type SpreadSources interface {
	// Services returns the services in namespace.
	Services(namespace string) []*v1.Service
	// ReplicationController, ReplicaSet and StatefulSet return the named
	// object, or nil.
	ReplicationController(namespace, name string) *v1.ReplicationController
	ReplicaSet(namespace, name string) *appsv1.ReplicaSet
	StatefulSet(namespace, name string) *appsv1.StatefulSet
}

// DefaultSelector is the union of the selectors of the services that
// select pod and of its controller (ReplicationController, ReplicaSet or
// StatefulSet). It is empty when nothing selects the pod.
func DefaultSelector(pod *v1.Pod, src SpreadSources) labels.Selector {
	set := labels.Set{}
	if src == nil {
		return labels.Everything()
	}
	for _, svc := range src.Services(pod.Namespace) {
		if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			set = labels.Merge(set, svc.Spec.Selector)
		}
	}
	sel := labels.SelectorFromSet(set)
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return sel
	}
	var ls *metav1.LabelSelector
	switch owner.Kind {
	case "ReplicationController":
		if rc := src.ReplicationController(pod.Namespace, owner.Name); rc != nil && owner.APIVersion == "v1" {
			return labels.SelectorFromSet(labels.Merge(set, rc.Spec.Selector))
		}
	case "ReplicaSet":
		if rs := src.ReplicaSet(pod.Namespace, owner.Name); rs != nil && owner.APIVersion == "apps/v1" {
			ls = rs.Spec.Selector
		}
	case "StatefulSet":
		if ss := src.StatefulSet(pod.Namespace, owner.Name); ss != nil && owner.APIVersion == "apps/v1" {
			ls = ss.Spec.Selector
		}
	}
	if ls != nil {
		if other, err := metav1.LabelSelectorAsSelector(ls); err == nil {
			if reqs, ok := other.Requirements(); ok {
				sel = sel.Add(reqs...)
			}
		}
	}
	return sel
}

// PodTopologySpread enforces the pod's DoNotSchedule topology spread
// constraints and scores its ScheduleAnyway ones; pods with no constraints
// get SystemDefaultConstraints with DefaultSelector.
type PodTopologySpread struct {
	// Sources finds the objects selecting a pod, for the default
	// constraints; nil disables default spreading.
	Sources SpreadSources
}

var (
	_ framework.PreFilterPlugin = (*PodTopologySpread)(nil)
	_ framework.FilterPlugin    = (*PodTopologySpread)(nil)
	_ framework.PreScorePlugin  = (*PodTopologySpread)(nil)
	_ framework.ScorePlugin     = (*PodTopologySpread)(nil)
	_ framework.ScoreNormalizer = (*PodTopologySpread)(nil)

	_ framework.BatchScorePlugin = (*PodTopologySpread)(nil)
)

const (
	spreadPreFilterKey = "PreFilter" + NamePodTopologySpread
	spreadPreScoreKey  = "PreScore" + NamePodTopologySpread
)

// Name implements framework.Plugin.
func (p *PodTopologySpread) Name() string { return NamePodTopologySpread }

type spreadConstraint struct {
	maxSkew       int32
	key           string
	minDomains    int32
	selector      labels.Selector
	honorAffinity bool
	honorTaints   bool
}

// constraints returns the pod's hard or soft constraints, and whether they
// are the system defaults.
func (p *PodTopologySpread) constraints(pod *v1.Pod, hard bool) ([]spreadConstraint, bool) {
	want := v1.ScheduleAnyway
	if hard {
		want = v1.DoNotSchedule
	}
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		if hard || p.Sources == nil {
			return nil, true
		}
		sel := DefaultSelector(pod, p.Sources)
		if sel.Empty() {
			return nil, true
		}
		var out []spreadConstraint
		for _, c := range SystemDefaultConstraints() {
			out = append(out, spreadConstraint{maxSkew: c.MaxSkew, key: c.TopologyKey, minDomains: 1, selector: sel, honorAffinity: true})
		}
		return out, true
	}
	var out []spreadConstraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != want {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		if c.LabelSelector != nil {
			for _, k := range c.MatchLabelKeys {
				if v, ok := pod.Labels[k]; ok {
					if r, err := labels.NewRequirement(k, "in", []string{v}); err == nil {
						sel = sel.Add(*r)
					}
				}
			}
		}
		sc := spreadConstraint{maxSkew: c.MaxSkew, key: c.TopologyKey, minDomains: 1, selector: sel,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor}
		if c.MinDomains != nil {
			sc.minDomains = *c.MinDomains
		}
		out = append(out, sc)
	}
	return out, false
}

func hasKeys(node *v1.Node, cs []spreadConstraint) bool {
	for _, c := range cs {
		if _, ok := node.Labels[c.key]; !ok {
			return false
		}
	}
	return true
}

// included reports whether node counts for c under its node inclusion
// policies.
func (c *spreadConstraint) included(pod *v1.Pod, node *v1.Node, aff nodeaffinity.RequiredNodeAffinity) bool {
	if c.honorAffinity {
		// A required term that does not parse matches no node, as in
		// kube-scheduler, which drops the error too.
		if match, _ := aff.Match(node); !match {
			return false
		}
	}
	if c.honorTaints {
		if _, ok := untoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations); ok {
			return false
		}
	}
	return true
}

// countMatching counts the pods in namespace ns, not being deleted, that
// sel selects.
func countMatching(pods []*framework.PodInfo, sel labels.Selector, ns string) int64 {
	var n int64
	for _, pi := range pods {
		p := pi.Pod
		if p.Namespace == ns && p.DeletionTimestamp == nil && sel.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

type spreadFilterState struct {
	constraints []spreadConstraint
	// counts[i] maps each domain (topology value) of constraint i to its
	// matching pods; minimum[i] is the smallest.
	counts  []map[string]int64
	minimum []int64
}

// PreFilter implements framework.PreFilterPlugin.
func (p *PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	cs, _ := p.constraints(pod, true)
	if len(cs) == 0 {
		return statusSkip
	}
	s := &spreadFilterState{constraints: cs, counts: make([]map[string]int64, len(cs)), minimum: make([]int64, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int64{}
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range state.Snapshot.Nodes() {
		if !hasKeys(ni.Node, cs) {
			continue
		}
		for i := range cs {
			if !cs[i].included(pod, ni.Node, aff) {
				continue
			}
			s.counts[i][ni.Labels[cs[i].key]] += countMatching(ni.Pods, cs[i].selector, pod.Namespace)
		}
	}
	for i := range cs {
		m := int64(math.MaxInt64)
		for _, n := range s.counts[i] {
			m = min(m, n)
		}
		s.minimum[i] = m
	}
	state.Write(spreadPreFilterKey, s)
	return nil
}

// Filter implements framework.FilterPlugin: placing the pod must keep each
// constraint's skew (matching pods in the node's domain, plus 1 if the pod
// matches itself, minus the global minimum, taken as 0 while there are
// fewer domains than minDomains) within maxSkew.
func (p *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	s, ok := state.Read(spreadPreFilterKey).(*spreadFilterState)
	if !ok {
		return nil
	}
	podLabels := labels.Set(pod.Labels)
	for i, c := range s.constraints {
		v, ok := node.Labels[c.key]
		if !ok {
			return statusSpreadMissing
		}
		minimum := s.minimum[i]
		if int32(len(s.counts[i])) < c.minDomains {
			minimum = 0
		}
		var self int64
		if c.selector.Matches(podLabels) {
			self = 1
		}
		if s.counts[i][v]+self-minimum > int64(c.maxSkew) {
			return statusSpread
		}
	}
	return nil
}

type spreadScoreState struct {
	constraints []spreadConstraint
	ignored     map[string]struct{}
	// pairCounts maps key → value → matching pods, for keys other than
	// the hostname (counted per node in Score).
	pairCounts []map[string]int64
	weights    []float64
}

// PreScore implements framework.PreScorePlugin.
func (p *PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	cs, systemDefaulted := p.constraints(pod, false)
	if len(cs) == 0 || len(nodes) == 0 {
		return statusSkip
	}
	// System default constraints do not require every key, so nodes
	// without a zone label still spread by hostname.
	requireAll := !systemDefaulted
	s := &spreadScoreState{constraints: cs, ignored: map[string]struct{}{}, pairCounts: make([]map[string]int64, len(cs)), weights: make([]float64, len(cs))}
	for i := range cs {
		s.pairCounts[i] = map[string]int64{}
	}
	for _, ni := range nodes {
		if requireAll && !hasKeys(ni.Node, cs) {
			s.ignored[ni.Node.Name] = struct{}{}
			continue
		}
		for i, c := range cs {
			if c.key == v1.LabelHostname {
				continue
			}
			if v, ok := ni.Labels[c.key]; ok || !requireAll {
				s.pairCounts[i][v] = 0
			}
		}
	}
	for i, c := range cs {
		size := len(s.pairCounts[i])
		if c.key == v1.LabelHostname {
			size = len(nodes) - len(s.ignored)
		}
		s.weights[i] = math.Log(float64(size + 2))
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range state.Snapshot.Nodes() {
		if requireAll && !hasKeys(ni.Node, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if c.key == v1.LabelHostname || !c.included(pod, ni.Node, aff) {
				continue
			}
			v := ni.Labels[c.key]
			if _, ok := s.pairCounts[i][v]; !ok {
				continue
			}
			s.pairCounts[i][v] += countMatching(ni.Pods, c.selector, pod.Namespace)
		}
	}
	state.Write(spreadPreScoreKey, s)
	return nil
}

// Score implements framework.ScorePlugin: for each constraint whose key the
// node has, matching pods in its domain × log(domains + 2) + maxSkew − 1,
// summed and rounded. Fewer matching pods means a lower (better) raw score.
func (p *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := state.Read(spreadPreScoreKey).(*spreadScoreState)
	if !ok {
		return 0, nil
	}
	return s.score(pod, node), nil
}

// ScoreNodes implements framework.BatchScorePlugin.
func (p *PodTopologySpread) ScoreNodes(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	s, ok := state.Read(spreadPreScoreKey).(*spreadScoreState)
	for i, node := range nodes {
		if ok {
			scores[i] = s.score(pod, node)
		} else {
			scores[i] = 0
		}
	}
	return nil
}

func (s *spreadScoreState) score(pod *v1.Pod, node *framework.NodeInfo) int64 {
	if _, ok := s.ignored[node.Name()]; ok {
		return 0
	}
	var score float64
	for i, c := range s.constraints {
		v, ok := node.Labels[c.key]
		if !ok {
			continue
		}
		var n int64
		if c.key == v1.LabelHostname {
			n = countMatching(node.Pods, c.selector, pod.Namespace)
		} else {
			n = s.pairCounts[i][v]
		}
		score += float64(n)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score))
}

// NormalizeScore implements framework.ScoreNormalizer: 100·(max + min −
// s)/max over the scored nodes (all 100 when max is 0); ignored nodes
// (missing a required key) get 0.
func (p *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	s, ok := state.Read(spreadPreScoreKey).(*spreadScoreState)
	if !ok {
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for i, sc := range scores {
		if _, ok := s.ignored[nodes[i].Node.Name]; ok {
			continue
		}
		lo, hi = min(lo, sc), max(hi, sc)
	}
	for i, sc := range scores {
		switch _, ignored := s.ignored[nodes[i].Node.Name]; {
		case ignored:
			scores[i] = 0
		case hi == 0:
			scores[i] = framework.MaxNodeScore
		default:
			scores[i] = framework.MaxNodeScore * (hi + lo - sc) / hi
		}
	}
	return nil
}

package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AffinityTerm is a parsed pod (anti-)affinity term.
type AffinityTerm struct {
	// Selector selects the pods the term is about.
	Selector labels.Selector
	// Namespaces are the namespaces the selected pods may be in. With
	// AllNamespaces set they may be in any.
	Namespaces    map[string]struct{}
	AllNamespaces bool
	TopologyKey   string
	// Weight is the preferred term's weight; 0 for a required term.
	Weight int32
}

// Matches reports whether pod is selected by the term.
func (t *AffinityTerm) Matches(pod *v1.Pod) bool {
	if !t.AllNamespaces {
		if _, ok := t.Namespaces[pod.Namespace]; !ok {
			return false
		}
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

// PodInfo is a pod with what the scheduler derives from it once.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is what the pod requests (PodRequests); NonZeroCPU and
	// NonZeroMemory are cpu and memory with the scoring defaults applied.
	Requests      Resource
	NonZeroCPU    int64
	NonZeroMemory int64

	RequiredAffinity      []AffinityTerm
	RequiredAntiAffinity  []AffinityTerm
	PreferredAffinity     []AffinityTerm
	PreferredAntiAffinity []AffinityTerm
	// ParseErr is set when an affinity term has an invalid selector; such a
	// pod fits nowhere.
	ParseErr error
}

// HasAffinity reports whether the pod has any pod (anti-)affinity term.
func (p *PodInfo) HasAffinity() bool {
	return len(p.RequiredAffinity)+len(p.RequiredAntiAffinity)+len(p.PreferredAffinity)+len(p.PreferredAntiAffinity) > 0
}

// NewPodInfo parses pod.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod}
	pi.Requests, pi.NonZeroCPU, pi.NonZeroMemory = PodRequests(pod)
	a := pod.Spec.Affinity
	if a == nil {
		return pi
	}
	if pa := a.PodAffinity; pa != nil {
		pi.RequiredAffinity = pi.parseTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, nil)
		pi.PreferredAffinity = pi.parseTerms(nil, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		pi.RequiredAntiAffinity = pi.parseTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, nil)
		pi.PreferredAntiAffinity = pi.parseTerms(nil, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return pi
}

func (pi *PodInfo) parseTerms(req []v1.PodAffinityTerm, pref []v1.WeightedPodAffinityTerm) []AffinityTerm {
	n := len(req) + len(pref)
	if n == 0 {
		return nil
	}
	out := make([]AffinityTerm, 0, n)
	add := func(t *v1.PodAffinityTerm, w int32) {
		at, err := pi.parseTerm(t)
		if err != nil {
			if pi.ParseErr == nil {
				pi.ParseErr = err
			}
			return
		}
		at.Weight = w
		out = append(out, at)
	}
	for i := range req {
		add(&req[i], 0)
	}
	for i := range pref {
		add(&pref[i].PodAffinityTerm, pref[i].Weight)
	}
	return out
}

// parseTerm follows kube-scheduler: no namespaces and no namespace selector
// means the pod's own namespace; an empty namespace selector means all
// namespaces. A non-empty namespace selector needs namespace labels, which
// the scheduler does not watch, so it adds no namespace beyond the listed
// ones. matchLabelKeys and mismatchLabelKeys add requirements on the pod's
// own label values.
func (pi *PodInfo) parseTerm(t *v1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("pod %s/%s: affinity term label selector: %w", pi.Pod.Namespace, pi.Pod.Name, err)
	}
	if t.LabelSelector == nil {
		sel = labels.Nothing()
	}
	if t.LabelSelector != nil {
		for _, k := range t.MatchLabelKeys {
			if v, ok := pi.Pod.Labels[k]; ok {
				r, err := labels.NewRequirement(k, "in", []string{v})
				if err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		for _, k := range t.MismatchLabelKeys {
			if v, ok := pi.Pod.Labels[k]; ok {
				r, err := labels.NewRequirement(k, "notin", []string{v})
				if err == nil {
					sel = sel.Add(*r)
				}
			}
		}
	}
	at := AffinityTerm{Selector: sel, TopologyKey: t.TopologyKey}
	if t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0 {
		at.AllNamespaces = true
		return at, nil
	}
	at.Namespaces = make(map[string]struct{}, max(1, len(t.Namespaces)))
	for _, ns := range t.Namespaces {
		at.Namespaces[ns] = struct{}{}
	}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		at.Namespaces[pi.Pod.Namespace] = struct{}{}
	}
	return at, nil
}

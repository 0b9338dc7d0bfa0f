// Package plugins holds kube-scheduler's default filter and score plugins,
// with its formulas, weights and rejection messages, and builds the default
// profile.
package plugins

import (
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// statusSkip is what PreFilter and PreScore return for a pod the plugin has
// nothing to do for (statuses are never modified, so one is shared).
var statusSkip = framework.NewStatus(framework.Skip)

// Plugin names, as in KubeSchedulerConfiguration.
const (
	NameNodeUnschedulable               = "NodeUnschedulable"
	NameNodeName                        = "NodeName"
	NameTaintToleration                 = "TaintToleration"
	NameNodeAffinity                    = "NodeAffinity"
	NameNodePorts                       = "NodePorts"
	NameNodeResourcesFit                = "NodeResourcesFit"
	NamePodTopologySpread               = "PodTopologySpread"
	NameInterPodAffinity                = "InterPodAffinity"
	NameNodeResourcesBalancedAllocation = "NodeResourcesBalancedAllocation"
	NameImageLocality                   = "ImageLocality"
)

// Args configures the plugins that take arguments.
type Args struct {
	// Fit is NodeResourcesFit's scoring strategy (zero: LeastAllocated
	// over cpu and memory).
	Fit ScoringStrategy
	// BalancedResources are NodeResourcesBalancedAllocation's resources
	// (nil: cpu and memory).
	BalancedResources []ResourceSpec
	// Spread finds the objects selecting a pod for the default topology
	// spreading; nil turns default spreading off.
	Spread SpreadSources
	// Volumes are the claims, volumes and classes VolumeBinding and
	// VolumeZone read; nil turns both off.
	Volumes VolumeSources
	// VolumeClient writes VolumeBinding's volume bindings and node
	// selections; nil: it only waits for them.
	VolumeClient kubernetes.Interface
}

// Set is one instance of every default plugin.
type Set struct {
	ByName  map[string]framework.Plugin
	Filters []string // default filter order
	Weights []NameWeight
}

// NameWeight is a score plugin name and its weight.
type NameWeight struct {
	Name   string
	Weight int64
}

// DefaultWeights are the default score plugins, in kube-scheduler's order,
// with their weights (section "default profile" of kube-scheduler's
// configuration reference).
func DefaultWeights() []NameWeight {
	return []NameWeight{
		{NameTaintToleration, 3},
		{NameNodeAffinity, 2},
		{NameNodeResourcesFit, 1},
		{NamePodTopologySpread, 2},
		{NameInterPodAffinity, 2},
		{NameNodeResourcesBalancedAllocation, 1},
		{NameImageLocality, 1},
	}
}

// DefaultFilters are the default filter plugins in kube-scheduler's order.
func DefaultFilters() []string {
	return []string{
		NameNodeUnschedulable, NameNodeName, NameTaintToleration, NameNodeAffinity,
		NameNodePorts, NameNodeResourcesFit, NameVolumeBinding, NameVolumeZone, NamePodTopologySpread, NameInterPodAffinity,
	}
}

// NewSet builds every plugin with args.
func NewSet(args Args) (*Set, error) {
	fit, err := NewNodeResourcesFit(args.Fit)
	if err != nil {
		return nil, err
	}
	ps := []framework.Plugin{
		NodeUnschedulable{}, NodeName{}, TaintToleration{}, NodeAffinity{}, NodePorts{}, fit,
		&PodTopologySpread{Sources: args.Spread}, InterPodAffinity{},
		NewBalancedAllocation(args.BalancedResources), ImageLocality{}, NodePreferAvoidPods{},
		&VolumeBinding{Sources: args.Volumes, Client: args.VolumeClient}, VolumeZone{Sources: args.Volumes},
	}
	s := &Set{ByName: make(map[string]framework.Plugin, len(ps)), Filters: DefaultFilters(), Weights: DefaultWeights()}
	for _, p := range ps {
		s.ByName[p.Name()] = p
	}
	return s, nil
}

// Profile builds a profile from filter names and weighted score names.
func (s *Set) Profile(schedulerName string, pct int32, filters []string, scores []NameWeight) (framework.Profile, error) {
	p := framework.Profile{SchedulerName: schedulerName, PercentageOfNodesToScore: pct}
	for _, name := range filters {
		f, ok := s.ByName[name].(framework.FilterPlugin)
		if !ok {
			return p, fmt.Errorf("filter plugin %q: unknown", name)
		}
		p.Filters = append(p.Filters, f)
		if pb, ok := f.(framework.PreBindPlugin); ok {
			p.PreBinders = append(p.PreBinders, pb)
		}
	}
	for _, nw := range scores {
		sp, ok := s.ByName[nw.Name].(framework.ScorePlugin)
		if !ok {
			return p, fmt.Errorf("score plugin %q: unknown", nw.Name)
		}
		p.Scorers = append(p.Scorers, framework.WeightedScorer{Plugin: sp, Weight: nw.Weight})
	}
	return p, nil
}

// DefaultProfile is kube-scheduler's default profile with args.
func DefaultProfile(args Args) (framework.Profile, error) {
	s, err := NewSet(args)
	if err != nil {
		return framework.Profile{}, err
	}
	return s.Profile(framework.DefaultSchedulerName, 0, s.Filters, s.Weights)
}

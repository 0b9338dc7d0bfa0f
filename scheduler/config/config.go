// Package config reads the subset of KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1) that kubegate's scheduler understands:
// percentageOfNodesToScore, profiles[].schedulerName, score and filter
// plugins enabled or disabled with weights, and NodeResourcesFit's
// scoringStrategy. Unknown fields are errors.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/scheduler/framework"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

// APIVersion and Kind of the file.
const (
	APIVersion = "kubescheduler.config.k8s.io/v1"
	Kind       = "KubeSchedulerConfiguration"
)

// Configuration is the file.
type Configuration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// PercentageOfNodesToScore applies to profiles that set none; nil
	// means 0, the adaptive default.
	PercentageOfNodesToScore *int32    `json:"percentageOfNodesToScore,omitempty"`
	Profiles                 []Profile `json:"profiles,omitempty"`
}

// Profile is one entry of profiles.
type Profile struct {
	// SchedulerName defaults to default-scheduler.
	SchedulerName            string         `json:"schedulerName,omitempty"`
	PercentageOfNodesToScore *int32         `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *Plugins       `json:"plugins,omitempty"`
	PluginConfig             []PluginConfig `json:"pluginConfig,omitempty"`
}

// Plugins lists changes to the default plugins per extension point.
type Plugins struct {
	Filter PluginSet `json:"filter,omitempty"`
	Score  PluginSet `json:"score,omitempty"`
}

// PluginSet enables and disables plugins. Disabled "*" disables every
// default plugin of the extension point.
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin; Weight applies to score plugins (nil: the
// default weight, or 1 for a plugin without one).
type Plugin struct {
	Name   string `json:"name"`
	Weight *int32 `json:"weight,omitempty"`
}

// PluginConfig holds one plugin's arguments. Only NodeResourcesFit's and
// NodeResourcesBalancedAllocation's are understood.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FitArgs are NodeResourcesFit's arguments.
type FitArgs struct {
	ScoringStrategy *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

// BalancedArgs are NodeResourcesBalancedAllocation's arguments.
type BalancedArgs struct {
	Resources []Resource `json:"resources,omitempty"`
}

// ScoringStrategy is NodeResourcesFit's scoringStrategy.
type ScoringStrategy struct {
	Type                     string                    `json:"type,omitempty"`
	Resources                []Resource                `json:"resources,omitempty"`
	RequestedToCapacityRatio *RequestedToCapacityRatio `json:"requestedToCapacityRatio,omitempty"`
}

// Resource is a resource name and weight.
type Resource struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
}

// RequestedToCapacityRatio holds the shape.
type RequestedToCapacityRatio struct {
	Shape []ShapePoint `json:"shape"`
}

// ShapePoint is a utilisation (0..100) and its score (0..10).
type ShapePoint struct {
	Utilization int32 `json:"utilization"`
	Score       int32 `json:"score"`
}

// Default is a configuration with one default profile.
func Default() *Configuration {
	return &Configuration{APIVersion: APIVersion, Kind: Kind, Profiles: []Profile{{SchedulerName: framework.DefaultSchedulerName}}}
}

// Parse reads and validates a configuration from r.
func Parse(r io.Reader) (*Configuration, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty scheduler configuration")
	}
	var c Configuration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("parse scheduler configuration: %w", err)
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []Profile{{}}
	}
	for i := range c.Profiles {
		if c.Profiles[i].SchedulerName == "" {
			c.Profiles[i].SchedulerName = framework.DefaultSchedulerName
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// known plugin names; NodePreferAvoidPods is the pre-1.22 scorer, kept so
// old profiles can be reproduced (not enabled by default).
func knownScore(name string) bool {
	if name == plugins.NameNodePreferAvoidPods {
		return true
	}
	return slices.ContainsFunc(plugins.DefaultWeights(), func(nw plugins.NameWeight) bool { return nw.Name == name })
}

func knownFilter(name string) bool { return slices.Contains(plugins.DefaultFilters(), name) }

// Validate checks c, naming the failing field path.
func (c *Configuration) Validate() error {
	if c.APIVersion != APIVersion {
		return fmt.Errorf("apiVersion %q: want %s", c.APIVersion, APIVersion)
	}
	if c.Kind != Kind {
		return fmt.Errorf("kind %q: want %s", c.Kind, Kind)
	}
	if p := c.PercentageOfNodesToScore; p != nil && (*p < 0 || *p > 100) {
		return fmt.Errorf("percentageOfNodesToScore %d: want 0 to 100", *p)
	}
	names := map[string]bool{}
	for i, p := range c.Profiles {
		path := fmt.Sprintf("profiles[%d]", i)
		if names[p.SchedulerName] {
			return fmt.Errorf("%s.schedulerName %q: used by an earlier profile", path, p.SchedulerName)
		}
		names[p.SchedulerName] = true
		if v := p.PercentageOfNodesToScore; v != nil && (*v < 0 || *v > 100) {
			return fmt.Errorf("%s.percentageOfNodesToScore %d: want 0 to 100", path, *v)
		}
		if p.Plugins != nil {
			if err := validateSet(path+".plugins.filter", p.Plugins.Filter, knownFilter, false); err != nil {
				return err
			}
			if err := validateSet(path+".plugins.score", p.Plugins.Score, knownScore, true); err != nil {
				return err
			}
		}
		seen := map[string]bool{}
		for j, pc := range p.PluginConfig {
			f := fmt.Sprintf("%s.pluginConfig[%d]", path, j)
			if seen[pc.Name] {
				return fmt.Errorf("%s.name %q: configured twice", f, pc.Name)
			}
			seen[pc.Name] = true
			if _, err := pc.args(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateSet(path string, s PluginSet, known func(string) bool, score bool) error {
	for i, pl := range s.Enabled {
		f := fmt.Sprintf("%s.enabled[%d]", path, i)
		if !known(pl.Name) {
			return fmt.Errorf("%s.name %q: unknown plugin", f, pl.Name)
		}
		if pl.Weight != nil && (!score || *pl.Weight < 1) {
			if !score {
				return fmt.Errorf("%s.weight: only score plugins have weights", f)
			}
			return fmt.Errorf("%s.weight %d: want at least 1", f, *pl.Weight)
		}
	}
	for i, pl := range s.Disabled {
		if pl.Name != "*" && !known(pl.Name) {
			return fmt.Errorf("%s.disabled[%d].name %q: unknown plugin", path, i, pl.Name)
		}
	}
	return nil
}

// args decodes the plugin's arguments into the plugins package's form.
func (pc *PluginConfig) args(path string) (any, error) {
	dec := func(v any) error {
		if len(pc.Args) == 0 {
			return nil
		}
		d := json.NewDecoder(bytes.NewReader(pc.Args))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return fmt.Errorf("%s.args: %w", path, err)
		}
		return nil
	}
	switch pc.Name {
	case plugins.NameNodeResourcesFit:
		var a FitArgs
		if err := dec(&a); err != nil {
			return nil, err
		}
		var s plugins.ScoringStrategy
		if a.ScoringStrategy != nil {
			s.Type = plugins.ScoringStrategyType(a.ScoringStrategy.Type)
			s.Resources = resources(a.ScoringStrategy.Resources)
			if r := a.ScoringStrategy.RequestedToCapacityRatio; r != nil {
				for _, p := range r.Shape {
					s.Shape = append(s.Shape, plugins.UtilizationShapePoint{Utilization: p.Utilization, Score: p.Score})
				}
			}
		}
		if err := s.Validate(path + ".args.scoringStrategy"); err != nil {
			return nil, err
		}
		return s, nil
	case plugins.NameNodeResourcesBalancedAllocation:
		var a BalancedArgs
		if err := dec(&a); err != nil {
			return nil, err
		}
		s := plugins.ScoringStrategy{Resources: resources(a.Resources)}
		if err := s.Validate(path + ".args"); err != nil {
			return nil, err
		}
		return s.Resources, nil
	}
	return nil, fmt.Errorf("%s.name %q: no arguments understood for this plugin", path, pc.Name)
}

func resources(rs []Resource) []plugins.ResourceSpec {
	var out []plugins.ResourceSpec
	for _, r := range rs {
		out = append(out, plugins.ResourceSpec{Name: v1.ResourceName(r.Name), Weight: r.Weight})
	}
	return out
}

// Build returns the framework profile for each configured profile, with
// spread as the default spreading's object source.
func (c *Configuration) Build(spread plugins.SpreadSources) ([]framework.Profile, error) {
	return c.BuildWith(plugins.Args{Spread: spread})
}

// BuildWith is Build with base as the plugins' sources (the spreading's
// and the volumes'); each profile's plugin configuration sets the rest.
func (c *Configuration) BuildWith(base plugins.Args) ([]framework.Profile, error) {
	var out []framework.Profile
	for i, p := range c.Profiles {
		path := fmt.Sprintf("profiles[%d]", i)
		args := plugins.Args{Spread: base.Spread, Volumes: base.Volumes, VolumeClient: base.VolumeClient}
		for j, pc := range p.PluginConfig {
			a, err := pc.args(fmt.Sprintf("%s.pluginConfig[%d]", path, j))
			if err != nil {
				return nil, err
			}
			switch v := a.(type) {
			case plugins.ScoringStrategy:
				args.Fit = v
			case []plugins.ResourceSpec:
				args.BalancedResources = v
			}
		}
		set, err := plugins.NewSet(args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		filters, scores := set.Filters, set.Weights
		if p.Plugins != nil {
			filters = applyFilters(filters, p.Plugins.Filter)
			scores = applyScores(scores, p.Plugins.Score)
		}
		pct := int32(0)
		if c.PercentageOfNodesToScore != nil {
			pct = *c.PercentageOfNodesToScore
		}
		if p.PercentageOfNodesToScore != nil {
			pct = *p.PercentageOfNodesToScore
		}
		prof, err := set.Profile(p.SchedulerName, pct, filters, scores)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, prof)
	}
	return out, nil
}

func disabled(s PluginSet, name string) bool {
	return slices.ContainsFunc(s.Disabled, func(p Plugin) bool { return p.Name == "*" || p.Name == name })
}

func applyFilters(defaults []string, s PluginSet) []string {
	var out []string
	for _, name := range defaults {
		if !disabled(s, name) {
			out = append(out, name)
		}
	}
	for _, p := range s.Enabled {
		if !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

// applyScores drops disabled defaults; an enabled plugin that is already
// present takes the new weight, others are appended (weight 1 if unset).
func applyScores(defaults []plugins.NameWeight, s PluginSet) []plugins.NameWeight {
	var out []plugins.NameWeight
	for _, nw := range defaults {
		if !disabled(s, nw.Name) {
			out = append(out, nw)
		}
	}
	for _, p := range s.Enabled {
		i := slices.IndexFunc(out, func(nw plugins.NameWeight) bool { return nw.Name == p.Name })
		if i < 0 {
			w := int64(1)
			if dw := slices.IndexFunc(defaults, func(nw plugins.NameWeight) bool { return nw.Name == p.Name }); dw >= 0 {
				w = defaults[dw].Weight
			}
			out = append(out, plugins.NameWeight{Name: p.Name, Weight: w})
			i = len(out) - 1
		}
		if p.Weight != nil {
			out[i].Weight = int64(*p.Weight)
		}
	}
	return out
}

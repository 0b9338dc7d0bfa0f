package rbac

import (
	"cmp"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate returns roles with each cluster role that has an
// aggregationRule and no stored rules replaced by a copy whose Rules are
// gathered from the other cluster roles its selectors match, as
// kube-controller-manager's aggregation controller writes them: selector
// by selector, matching roles in name order, a role never gathering from
// itself, each distinct rule once. Gathering is transitive (admin gathers
// edit, which gathers view); a cycle is cut where it closes, the role met
// again contributing the rules it was given. A selector that does not
// parse matches nothing.
//
// A cluster role with stored rules keeps them, aggregationRule or not:
// kube-apiserver's authorizer reads only the stored rules, which the
// aggregation controller (controllers/clusterroleaggregation) keeps in
// step, so gathering here only stands in for a controller that has not
// written them yet or does not run, as under kubegate apiserver alone
// (docs/kubernetes-behaviour.md G.18). The input is not modified.
func Aggregate(roles []*rbacv1.ClusterRole) []*rbacv1.ClusterRole {
	byName := make(map[string]*rbacv1.ClusterRole, len(roles))
	sorted := make([]*rbacv1.ClusterRole, 0, len(roles))
	for _, r := range roles {
		if _, dup := byName[r.Name]; !dup {
			sorted = append(sorted, r)
		}
		byName[r.Name] = r
	}
	for i, r := range sorted {
		sorted[i] = byName[r.Name]
	}
	slices.SortFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return cmp.Compare(a.Name, b.Name) })

	g := aggregator{sorted: sorted, done: map[string][]rbacv1.PolicyRule{}, busy: map[string]bool{}}
	out := make([]*rbacv1.ClusterRole, len(roles))
	for i, r := range roles {
		if r.AggregationRule == nil || len(r.Rules) > 0 {
			out[i] = r
			continue
		}
		c := r.DeepCopy()
		c.Rules = g.rules(r)
		out[i] = c
	}
	return out
}

// RuleKey returns a key that two rules share exactly when they are
// semantically equal (equality.Semantic: field by field, a nil list equal
// to an empty one), so that gathering many rules costs a map lookup per
// rule rather than a comparison with every rule gathered before it.
func RuleKey(r rbacv1.PolicyRule) string {
	return fmt.Sprintf("%q|%q|%q|%q|%q", r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs)
}

type aggregator struct {
	sorted []*rbacv1.ClusterRole
	done   map[string][]rbacv1.PolicyRule
	busy   map[string]bool
}

// rules returns the effective rules of r: its stored rules, gathered when
// it has an aggregationRule and none are stored.
func (g *aggregator) rules(r *rbacv1.ClusterRole) []rbacv1.PolicyRule {
	if r.AggregationRule == nil || len(r.Rules) > 0 || g.busy[r.Name] {
		return r.Rules
	}
	if rules, ok := g.done[r.Name]; ok {
		return rules
	}
	g.busy[r.Name] = true
	var rules []rbacv1.PolicyRule
	seen := map[string]bool{}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&r.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			continue
		}
		for _, other := range g.sorted {
			if other.Name == r.Name || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, rule := range g.rules(other) {
				if k := RuleKey(rule); !seen[k] {
					seen[k] = true
					rules = append(rules, rule)
				}
			}
		}
	}
	delete(g.busy, r.Name)
	g.done[r.Name] = rules
	return rules
}

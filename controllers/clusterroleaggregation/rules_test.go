package clusterroleaggregation

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func role(name string, labels map[string]string, agg *rbacv1.AggregationRule, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, AggregationRule: agg, Rules: rules}
}

func matching(selectors ...metav1.LabelSelector) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
}

func labelled(k string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{k: "true"}}
}

// The rules an aggregationRule gathers, as kube's controller gathers
// them: selector by selector, the matching roles in name order (not the
// order given), the role itself left out, each rule once, a role's own
// rules replaced, the stored rules of an aggregated role taken as they
// are (docs/kubernetes-behaviour.md G.18).
func TestRulesGatherAsKubeDoes_G18(t *testing.T) {
	get, list, watch, del := rule("get", "pods"), rule("list", "pods"), rule("watch", "pods"), rule("delete", "pods")
	// A rule with a nil list equals the same rule with an empty one.
	getNilNames, getEmptyNames := get, get
	getEmptyNames.ResourceNames = []string{}
	a, b := map[string]string{"a": "true"}, map[string]string{"b": "true"}
	both := map[string]string{"a": "true", "b": "true"}
	tests := []struct {
		name  string
		role  *rbacv1.ClusterRole
		roles []*rbacv1.ClusterRole
		want  []rbacv1.PolicyRule
	}{
		{"name order, not the order given",
			role("agg", nil, matching(labelled("a"))),
			[]*rbacv1.ClusterRole{role("z", a, nil, list), role("m", a, nil, get)},
			[]rbacv1.PolicyRule{get, list}},
		{"a rule two roles grant comes once, where it is first met",
			role("agg", nil, matching(labelled("a"))),
			[]*rbacv1.ClusterRole{role("r2", a, nil, list, get), role("r1", a, nil, get, watch)},
			[]rbacv1.PolicyRule{get, watch, list}},
		{"nil and empty lists are the same rule",
			role("agg", nil, matching(labelled("a"))),
			[]*rbacv1.ClusterRole{role("r1", a, nil, getNilNames), role("r2", a, nil, getEmptyNames)},
			[]rbacv1.PolicyRule{getNilNames}},
		{"selector by selector: all of the first's roles, then the second's",
			role("agg", nil, matching(labelled("b"), labelled("a"))),
			[]*rbacv1.ClusterRole{role("r1", a, nil, get), role("r2", b, nil, list), role("r3", both, nil, watch)},
			[]rbacv1.PolicyRule{list, watch, get}},
		{"the role itself is left out and its own rules replaced",
			role("agg", a, matching(labelled("a")), del),
			[]*rbacv1.ClusterRole{role("agg", a, matching(labelled("a")), del), role("r1", a, nil, get)},
			[]rbacv1.PolicyRule{get}},
		{"an aggregated role contributes its stored rules",
			role("admin", nil, matching(labelled("to-admin"))),
			[]*rbacv1.ClusterRole{role("edit", map[string]string{"to-admin": "true"}, matching(labelled("to-edit")), list),
				role("part", map[string]string{"to-edit": "true"}, nil, get)},
			[]rbacv1.PolicyRule{list}},
		{"matchExpressions",
			role("agg", nil, matching(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "a", Operator: metav1.LabelSelectorOpExists}, {Key: "b", Operator: metav1.LabelSelectorOpDoesNotExist}}})),
			[]*rbacv1.ClusterRole{role("r1", a, nil, get), role("r2", both, nil, list)},
			[]rbacv1.PolicyRule{get}},
		{"an empty selector matches every role",
			role("agg", nil, matching(metav1.LabelSelector{})),
			[]*rbacv1.ClusterRole{role("r1", nil, nil, get), role("r2", b, nil, list)},
			[]rbacv1.PolicyRule{get, list}},
		{"no selector gathers nothing",
			role("agg", nil, matching()),
			[]*rbacv1.ClusterRole{role("r1", nil, nil, get)},
			[]rbacv1.PolicyRule{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rules(tc.role, tc.roles)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || got == nil {
				t.Errorf("Rules = %v, want %v", got, tc.want)
			}
		})
	}
	bad := role("agg", nil, matching(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}))
	if _, err := Rules(bad, nil); err == nil {
		t.Error("a selector that does not parse: no error")
	}
}

// sync writes only when the gathered rules differ from the stored ones
// (an empty result and no stored rules are equal), and then applies the
// rules alone, forcing, as clusterrole-aggregation-controller.
func TestSyncAppliesOnlyAChange_G18(t *testing.T) {
	a := map[string]string{"a": "true"}
	get := rule("get", "pods")
	tests := []struct {
		name  string
		roles []*rbacv1.ClusterRole
		apply string // the applied body; "" for no write
	}{
		{"in step", []*rbacv1.ClusterRole{role("agg", nil, matching(labelled("a")), get), role("r1", a, nil, get)}, ""},
		{"nothing to gather, nothing stored", []*rbacv1.ClusterRole{role("agg", nil, matching(labelled("a")))}, ""},
		{"no aggregationRule", []*rbacv1.ClusterRole{role("agg", nil, nil, get)}, ""},
		{"stale", []*rbacv1.ClusterRole{role("agg", nil, matching(labelled("a")), rule("delete", "pods")), role("r1", a, nil, get)},
			`{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"agg"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`},
		{"a hand-written rule and nothing to gather", []*rbacv1.ClusterRole{role("agg", nil, matching(labelled("a")), get)},
			`{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"agg"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, r := range tc.roles {
				if err := indexer.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			client := fake.NewClientset()
			var applied []string
			client.PrependReactor("patch", "clusterroles", func(a k8stesting.Action) (bool, runtime.Object, error) {
				p := a.(k8stesting.PatchActionImpl)
				if o := p.GetPatchOptions(); o.FieldManager != FieldManager || o.Force == nil || !*o.Force {
					t.Errorf("apply options %+v, want field manager %s and force", o, FieldManager)
				}
				applied = append(applied, fmt.Sprintf("%s %s", p.GetPatchType(), p.GetPatch()))
				return true, &rbacv1.ClusterRole{}, nil
			})
			c := &Controller{client: client, log: slog.New(slog.DiscardHandler), roles: rbaclisters.NewClusterRoleLister(indexer)}
			if err := c.sync(context.Background(), "agg"); err != nil {
				t.Fatal(err)
			}
			var want []string
			if tc.apply != "" {
				want = []string{"application/apply-patch+yaml " + tc.apply}
			}
			if fmt.Sprint(applied) != fmt.Sprint(want) {
				t.Errorf("writes %q, want %q", applied, want)
			}
		})
	}
}

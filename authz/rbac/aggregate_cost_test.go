package rbac

import (
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A user who may create ClusterRoles, but not escalate, can label as many
// roles as it likes with a selector of view (kube's
// rbac.authorization.k8s.io/aggregate-to-view), each holding distinct
// rules it holds itself. When view has no stored rules (kubegate apiserver
// alone, or before the aggregation controller has written them), every
// snapshot of the authorizer, rebuilt after each RBAC write while every
// authorization waits for it, gathers them. Gathering must cost time in
// proportion to the rules, not to their square: 20,000 rules compared
// pairwise take minutes (G.18).
func TestAggregateManyRulesInLinearTime_G18(t *testing.T) {
	const roles, perRole = 200, 100
	sel := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"to-view": "true"}}}}
	all := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"to-admin": "true"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "view", Labels: map[string]string{"to-admin": "true"}}, AggregationRule: sel},
	}
	for i := range roles {
		r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%03d", i), Labels: map[string]string{"to-view": "true"}}}
		for j := range perRole {
			r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""},
				Resources: []string{"configmaps"}, ResourceNames: []string{fmt.Sprintf("cm-%d-%d", i, j)}})
		}
		// The same rule again, once with nil and once with empty lists:
		// kept once.
		r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{}, NonResourceURLs: []string{}})
		all = append(all, r)
	}
	done := make(chan []*rbacv1.ClusterRole, 1)
	start := time.Now()
	go func() { done <- Aggregate(all) }()
	select {
	case out := <-done:
		t.Logf("gathered %d rules twice in %v", roles*perRole+1, time.Since(start))
		for _, r := range out[:2] {
			if got, want := len(r.Rules), roles*perRole+1; got != want {
				t.Errorf("%s gathered %d rules, want %d", r.Name, got, want)
			}
		}
		if first := out[1].Rules[0]; first.ResourceNames[0] != "cm-0-0" {
			t.Errorf("view's first rule is %v, want the one for cm-0-0", first)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("gathering %d rules took more than 10s", roles*perRole+1)
	}
}

// RuleKey is equal for two rules exactly when equality.Semantic says
// they are.
func TestRuleKeyIsSemanticEquality(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{},
		{Verbs: []string{}, APIGroups: []string{}, Resources: []string{}, ResourceNames: []string{}, NonResourceURLs: []string{}},
		{Verbs: []string{"get"}},
		{APIGroups: []string{"get"}},
		{Verbs: []string{"get", "list"}},
		{Verbs: []string{"get list"}},
		{Verbs: []string{`get" "list`}},
		{Verbs: []string{"get|"}, APIGroups: []string{""}},
		{Verbs: []string{"get"}, APIGroups: []string{"|"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}},
		{Verbs: []string{"get"}, APIGroups: []string{"", ""}},
		{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}},
	}
	for _, a := range rules {
		for _, b := range rules {
			if same, keys := equality.Semantic.DeepEqual(a, b), RuleKey(a) == RuleKey(b); same != keys {
				t.Errorf("%+v and %+v: semantically equal %v, same key %v", a, b, same, keys)
			}
		}
	}
}

package clusterroleaggregation

import (
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Any ClusterRole's change makes the controller gather the rules of every
// aggregated role again, and a user who may create ClusterRoles can label
// many for view: gathering costs time in proportion to the rules, not to
// their square (20,000 rules compared pairwise take minutes), and keeps
// the first of semantically equal rules (a nil list equal to an empty
// one), in order (G.18).
func TestRulesGatherManyInLinearTime_G18(t *testing.T) {
	const roles, perRole = 200, 100
	all := []*rbacv1.ClusterRole{role("view", nil, matching(labelled("to-view")))}
	for i := range roles {
		r := role(fmt.Sprintf("r%03d", i), map[string]string{"to-view": "true"}, nil)
		for j := range perRole {
			r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""},
				Resources: []string{"configmaps"}, ResourceNames: []string{fmt.Sprintf("cm-%d-%d", i, j)}})
		}
		r.Rules = append(r.Rules, rule("list", "pods"),
			rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{}})
		all = append(all, r)
	}
	type result struct {
		rules []rbacv1.PolicyRule
		err   error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() { r, err := Rules(all[0], all); done <- result{r, err} }()
	select {
	case r := <-done:
		t.Logf("gathered %d rules in %v", len(r.rules), time.Since(start))
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got, want := len(r.rules), roles*perRole+1; got != want {
			t.Errorf("gathered %d rules, want %d", got, want)
		}
		if got := r.rules[perRole]; got.ResourceNames != nil || got.Verbs[0] != "list" {
			t.Errorf("rule %d is %+v, want the first list of pods as r000 gives it", perRole, got)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("gathering %d rules took more than 10s", roles*perRole+1)
	}
}

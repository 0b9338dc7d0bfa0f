package manager_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testwait"
)

// kube-controller-manager's ClusterRole aggregation controller, run by
// the manager as "clusterrole-aggregation": a ClusterRole with an
// aggregationRule is stored with the rules of the roles its selector
// matches, in name order and each rule once, by server-side apply as
// clusterrole-aggregation-controller; a hand edit of those rules is put
// back (docs/kubernetes-behaviour.md G.18).
func TestManagerRunsTheClusterRoleAggregator_G18(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	roles := s.Client.RbacV1().ClusterRoles()
	const label = "example.com/aggregate-to-team"
	getPods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	listPods := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	watchSvc := rbacv1.PolicyRule{Verbs: []string{"watch"}, APIGroups: []string{""}, Resources: []string{"services"}}
	for _, r := range []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "team"}, AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-part-b", Labels: map[string]string{label: "true"}}, Rules: []rbacv1.PolicyRule{getPods, listPods}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-part-a", Labels: map[string]string{label: "true"}}, Rules: []rbacv1.PolicyRule{getPods, watchSvc}},
	} {
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	apiservertest.Run(t, func(ctx context.Context) error {
		return manager.Run(ctx, manager.Options{Config: s.Config, Controllers: []string{"clusterrole-aggregation"},
			Logger: slog.New(slog.DiscardHandler)})
	})
	stored := func(what string, want ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		t.Helper()
		var got *rbacv1.ClusterRole
		testwait.For(t, 30*time.Second, "team's rules "+what, func() (bool, string) {
			var err error
			if got, err = roles.Get(ctx, "team", metav1.GetOptions{}); err != nil {
				return false, err.Error()
			}
			return fmt.Sprint(got.Rules) == fmt.Sprint(want), fmt.Sprint(got.Rules)
		})
		return got
	}
	team := stored("gathered from part-a, then part-b", getPods, watchSvc, listPods)
	var managers []string
	for _, f := range team.ManagedFields {
		managers = append(managers, fmt.Sprintf("%s %s", f.Manager, f.Operation))
	}
	found := false
	for _, f := range team.ManagedFields {
		if f.Manager == "clusterrole-aggregation-controller" && f.Operation == metav1.ManagedFieldsOperationApply {
			found = true
		}
	}
	if !found {
		t.Errorf("managedFields %v: want the rules applied by clusterrole-aggregation-controller", managers)
	}

	// A hand edit is put back.
	team.Rules = []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
	if _, err := roles.Update(ctx, team, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored("put back after a hand edit", getPods, watchSvc, listPods)

	// A role that loses the label no longer contributes.
	partA, err := roles.Get(ctx, "team-part-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	partA.Labels = nil
	if _, err := roles.Update(ctx, partA, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored("without part-a", getPods, listPods)
}

package clusterroleaggregation_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/clusterroleaggregation"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testwait"
)

// settled waits until every aggregated ClusterRole the server holds is
// stored with the rules its aggregationRule gathers from the others, and
// returns the roles by name.
func settled(t *testing.T, s *apiservertest.Server, what string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	var byName map[string]*rbacv1.ClusterRole
	testwait.For(t, 30*time.Second, what, func() (bool, string) {
		list, err := s.Client.RbacV1().ClusterRoles().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		byName = map[string]*rbacv1.ClusterRole{}
		var all []*rbacv1.ClusterRole
		for i := range list.Items {
			all = append(all, &list.Items[i])
			byName[list.Items[i].Name] = &list.Items[i]
		}
		for _, r := range all {
			want, err := clusterroleaggregation.Rules(r, all)
			if err != nil {
				return false, err.Error()
			}
			if r.AggregationRule != nil && fmt.Sprint(want) != fmt.Sprint(r.Rules) {
				return false, fmt.Sprintf("%s: %v, want %v", r.Name, r.Rules, want)
			}
		}
		return true, ""
	})
	return byName
}

func contains(have []rbacv1.PolicyRule, want rbacv1.PolicyRule) bool {
	for _, r := range have {
		if fmt.Sprint(r) == fmt.Sprint(want) {
			return true
		}
	}
	return false
}

// With kube-apiserver's default ClusterRoles: view is stored with
// system:aggregate-to-view's rules, edit with those and
// system:aggregate-to-edit's, admin with edit's and
// system:aggregate-to-admin's. A labelled role added, changed or deleted
// changes them; a hand edit of an aggregated role is put back
// (docs/kubernetes-behaviour.md G.18).
func TestAggregatedRolesFollowTheirSources_G18(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	roles := s.Client.RbacV1().ClusterRoles()
	for _, r := range bootstrap.ClusterRoles() {
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	controllertest.Run(t, s, manager.Options{Logger: slog.New(slog.DiscardHandler),
		Descriptors: []controllers.Descriptor{clusterroleaggregation.Descriptor}})

	got := settled(t, s, "admin, edit and view aggregated")
	view, edit, admin := got["view"].Rules, got["edit"].Rules, got["admin"].Rules
	if len(view) == 0 || len(edit) <= len(view) || len(admin) <= len(edit) {
		t.Fatalf("view %d rules, edit %d, admin %d: want each more than the last", len(view), len(edit), len(admin))
	}
	for _, r := range view {
		if !contains(edit, r) {
			t.Errorf("edit lacks view's rule %v", r)
		}
	}
	for _, r := range edit {
		if !contains(admin, r) {
			t.Errorf("admin lacks edit's rule %v", r)
		}
	}

	// A role labelled to aggregate into view reaches view, edit and admin.
	widgets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	extra := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{bootstrap.AggregateToViewLabel: "true"}},
		Rules: []rbacv1.PolicyRule{widgets}}
	if _, err := roles.Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = settled(t, s, "widgets-view aggregated")
	for _, name := range []string{"view", "edit", "admin"} {
		if !contains(got[name].Rules, widgets) {
			t.Errorf("%s lacks the added role's rule", name)
		}
	}

	// Its rules changed: the new one replaces the old everywhere.
	gadgets := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{"example.com"}, Resources: []string{"gadgets"}}
	extra = got["widgets-view"]
	extra.Rules = []rbacv1.PolicyRule{gadgets}
	if _, err := roles.Update(ctx, extra, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = settled(t, s, "widgets-view changed")
	for _, name := range []string{"view", "edit", "admin"} {
		if contains(got[name].Rules, widgets) || !contains(got[name].Rules, gadgets) {
			t.Errorf("%s: %v; want gadgets, not widgets", name, got[name].Rules)
		}
	}

	// A hand edit of view is put back.
	hand := got["view"]
	hand.Rules = append(hand.Rules, rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"secrets"}})
	if _, err := roles.Update(ctx, hand, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = settled(t, s, "view put back")
	if fmt.Sprint(got["view"].Rules) == fmt.Sprint(hand.Rules) {
		t.Error("view keeps the hand edit")
	}

	// Deleted: its rule goes from all three.
	if err := roles.Delete(ctx, "widgets-view", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got = settled(t, s, "widgets-view deleted")
	for _, name := range []string{"view", "edit", "admin"} {
		if contains(got[name].Rules, gadgets) {
			t.Errorf("%s keeps the deleted role's rule", name)
		}
	}
	if fmt.Sprint(got["view"].Rules) != fmt.Sprint(view) || fmt.Sprint(got["admin"].Rules) != fmt.Sprint(admin) {
		t.Error("view and admin are not as they were before the role was added")
	}
}

package rbac_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// largeRoleWrite is a namespace admin (bound to the default admin
// ClusterRole in namespace team, so allowed to create Roles there but not
// to escalate) and a Role of 1,000 rules, each granting get, list and
// watch on 100 core resources that admin reads: 300,000 permissions, all
// held, so that every one of them is checked.
func largeRoleWrite(tb testing.TB) (*rbac.Guard, authn.User, []rbacv1.PolicyRule) {
	tb.Helper()
	mem := rbac.NewMemory(bootstrap.Policy())
	mem.SetRoleBinding(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "lead-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "lead"}},
	})
	az := rbac.New(mem)
	lead := authn.User{Name: "lead", Groups: []string{authn.AllAuthenticated}}
	escalate := authz.Attributes{User: lead, Verb: "escalate", ResourceRequest: true, APIGroup: rbacv1.GroupName, Resource: "roles", Namespace: "team", Name: "big"}
	if d, _, _ := az.Authorize(context.Background(), escalate); d == authz.Allow {
		tb.Fatal("admin may escalate roles; the write would not be checked")
	}
	owner, err := az.RulesFor(lead, "team")
	if err != nil {
		tb.Fatal(err)
	}
	var readable []string
	for _, o := range owner {
		if len(o.ResourceNames) == 0 && slices.Contains(o.APIGroups, "") && slices.Contains(o.Verbs, "get") && slices.Contains(o.Verbs, "list") && slices.Contains(o.Verbs, "watch") {
			for _, r := range o.Resources {
				if !slices.Contains(readable, r) {
					readable = append(readable, r)
				}
			}
		}
	}
	if len(readable) < 10 {
		tb.Fatalf("admin reads %d core resources; want at least 10", len(readable))
	}
	resources := make([]string, 100)
	for i := range resources {
		resources[i] = readable[i%len(readable)]
	}
	rules := make([]rbacv1.PolicyRule, 1000)
	for i := range rules {
		rules[i] = rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: resources}
	}
	return rbac.NewGuard(az, nil), lead, rules
}

// TestLargeRoleWriteAllocatesLittle_C2: the escalation check of a Role
// runs on a user's request, so its cost must not grow with allocations
// per permission: one of 300,000 held permissions costs fewer than 100
// allocations, as many as resolving the writer's rules does.
func TestLargeRoleWriteAllocatesLittle_C2(t *testing.T) {
	g, lead, rules := largeRoleWrite(t)
	ctx := context.Background()
	if err := g.ConfirmRoleWrite(ctx, lead, "team", "big", rules, false); err != nil {
		t.Fatalf("ConfirmRoleWrite() = %v; want nil, admin holds every permission", err)
	}
	allocs := testing.AllocsPerRun(3, func() {
		if err := g.ConfirmRoleWrite(ctx, lead, "team", "big", rules, false); err != nil {
			t.Fatal(err)
		}
	})
	if allocs >= 100 {
		t.Errorf("one check of 300,000 permissions allocates %.0f times; want fewer than 100", allocs)
	}
}

func BenchmarkConfirmRoleWriteLargeRole(b *testing.B) {
	g, lead, rules := largeRoleWrite(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := g.ConfirmRoleWrite(ctx, lead, "team", "big", rules, false); err != nil {
			b.Fatal(err)
		}
	}
}

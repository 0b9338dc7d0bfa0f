package rbac_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchPolicy is the bootstrap policy plus n role bindings, each binding
// one user to edit in one of 100 namespaces, and n/10 cluster role
// bindings of groups to view.
func benchPolicy(n int) rbac.Objects {
	objs := bootstrap.Policy()
	for i := range n {
		ns := fmt.Sprintf("ns-%d", i%100)
		objs.RoleBindings = append(objs.RoleBindings, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("user-%d-edit", i)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: fmt.Sprintf("user-%d", i)}},
		})
	}
	for i := range n / 10 {
		objs.ClusterRoleBindings = append(objs.ClusterRoleBindings, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%d-view", i)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: fmt.Sprintf("team-%d", i)}},
		})
	}
	return objs
}

func BenchmarkAuthorize(b *testing.B) {
	u := authn.User{Name: "user-500", Groups: []string{"team-7", authn.AllAuthenticated}}
	cases := []struct {
		name  string
		attrs authz.Attributes
		want  authz.Decision
	}{
		{"allow-rolebinding", authz.Attributes{User: u, Verb: "create", Namespace: "ns-0", Resource: "pods", ResourceRequest: true}, authz.Allow},
		{"allow-group-view", authz.Attributes{User: u, Verb: "list", Namespace: "ns-42", APIGroup: "apps", Resource: "deployments", ResourceRequest: true}, authz.Allow},
		{"allow-nonresource", authz.Attributes{User: u, Verb: "get", Path: "/version"}, authz.Allow},
		{"deny-scan-all-rules", authz.Attributes{User: u, Verb: "delete", Resource: "nodes", Name: "n1", ResourceRequest: true}, authz.NoOpinion},
	}
	for _, n := range []int{1000, 10000} {
		mem := rbac.NewMemory(benchPolicy(n))
		sources := []struct {
			name string
			src  rbac.RuleSource
		}{{"indexed", mem}}
		if n == 1000 {
			sources = append(sources, struct {
				name string
				src  rbac.RuleSource
			}{"scan", scanAll{mem, mem.Objects()}})
		}
		for _, s := range sources {
			az := rbac.New(s.src)
			for _, c := range cases {
				b.Run(fmt.Sprintf("bindings=%d/%s/%s", n, s.name, c.name), func(b *testing.B) {
					if d, reason, _ := az.Authorize(context.Background(), c.attrs); d != c.want {
						b.Fatalf("decision %v (%s), want %v", d, reason, c.want)
					}
					b.ReportAllocs()
					for b.Loop() {
						az.Authorize(context.Background(), c.attrs)
					}
				})
			}
		}
	}
	b.Run("bindings=1000/indexed/parallel-allow", func(b *testing.B) {
		az := rbac.New(rbac.NewMemory(benchPolicy(1000)))
		a := cases[0].attrs
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				az.Authorize(context.Background(), a)
			}
		})
	})
	b.Run("system-masters-union", func(b *testing.B) {
		az := authz.Union(authz.PrivilegedGroups(authz.SystemMasters), rbac.New(rbac.NewMemory(benchPolicy(1000))))
		a := authz.Attributes{User: authn.User{Name: "admin", Groups: []string{authz.SystemMasters}}, Verb: "delete", Resource: "nodes", ResourceRequest: true}
		b.ReportAllocs()
		for b.Loop() {
			az.Authorize(context.Background(), a)
		}
	})
}

// scanAll answers every list with every binding, as an unindexed store
// would; it shows what the subject index saves.
type scanAll struct {
	*rbac.Memory
	objs rbac.Objects
}

func (s scanAll) ListClusterRoleBindings(authn.User) ([]*rbacv1.ClusterRoleBinding, error) {
	return s.objs.ClusterRoleBindings, nil
}

func (s scanAll) ListRoleBindings(ns string, _ authn.User) ([]*rbacv1.RoleBinding, error) {
	return s.objs.RoleBindings, nil
}

func BenchmarkMemoryRebuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("bindings=%d", n), func(b *testing.B) {
			objs := benchPolicy(n)
			m := rbac.NewMemory(objs)
			u := authn.User{Name: "x"}
			b.ReportAllocs()
			for b.Loop() {
				// One write, then the read that rebuilds the snapshot.
				m.SetRoleBinding(objs.RoleBindings[0])
				m.ListClusterRoleBindings(u)
			}
		})
	}
}

func BenchmarkConfirmNoEscalation(b *testing.B) {
	az := rbac.New(rbac.NewMemory(benchPolicy(1000)))
	g := rbac.NewGuard(az, nil)
	u := authn.User{Name: "user-500", Groups: []string{authn.AllAuthenticated}}
	edit, err := rbac.NewMemory(bootstrap.Policy()).GetClusterRole("view")
	if err != nil {
		b.Fatal(err)
	}
	if err := g.ConfirmNoEscalation(context.Background(), u, edit.Rules, "ns-0"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		g.ConfirmNoEscalation(context.Background(), u, edit.Rules, "ns-0")
	}
}

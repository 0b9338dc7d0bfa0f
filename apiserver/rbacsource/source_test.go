package rbacsource

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
	"github.com/kubegate/kubegate/store"
	"github.com/kubegate/kubegate/store/bolt"
)

func openStore(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var gv = rbacv1.SchemeGroupVersion

// put writes obj under its key, creating or replacing it, and returns the
// revision of the write.
func put(t *testing.T, st store.Store, resource, namespace, name string, obj any) int64 {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	key := apiserver.Key(gv.WithResource(resource), namespace, name)
	rev, err := st.Create(context.Background(), key, data)
	if errors.Is(err, store.ErrExists) {
		rev, err = st.Update(context.Background(), key, data, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func del(t *testing.T, st store.Store, resource, namespace, name string) int64 {
	t.Helper()
	_, rev, err := st.Delete(context.Background(), apiserver.Key(gv.WithResource(resource), namespace, name), 0)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: gv.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func roleBinding(ns, name string, ref rbacv1.RoleRef, users ...string) *rbacv1.RoleBinding {
	b := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: gv.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, RoleRef: ref}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: u})
	}
	return b
}

func clusterRole(name string, labels map[string]string, agg *rbacv1.AggregationRule, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: gv.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, AggregationRule: agg, Rules: rules}
}

func clusterRoleBinding(name, roleName string, groups ...string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: gv.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName}}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: g})
	}
	return b
}

func getPods() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
}

func startSource(t *testing.T, st store.Store) *Source {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	src := New(st, Options{})
	if err := src.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return src
}

func wait(t *testing.T, src *Source, rev int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := src.WaitForRevision(ctx, rev); err != nil {
		t.Fatalf("rules never reached revision %d: %v", rev, err)
	}
}

func decide(t *testing.T, az authz.Authorizer, user, verb, ns, resource string) authz.Decision {
	t.Helper()
	d, _, err := az.Authorize(context.Background(), authz.Attributes{
		User: authn.User{Name: user, Groups: []string{authn.AllAuthenticated}}, Verb: verb, Namespace: ns,
		Resource: resource, APIVersion: "v1", ResourceRequest: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSourceFollowsStore(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"}
	put(t, st, "roles", "dev", "reader", role("dev", "reader", getPods()))
	src := startSource(t, st)
	az := rbac.New(src)

	if got := decide(t, az, "alice", "get", "dev", "pods"); got != authz.NoOpinion {
		t.Fatalf("before any binding: got %v, want NoOpinion", got)
	}
	wait(t, src, put(t, st, "rolebindings", "dev", "alice-reads", roleBinding("dev", "alice-reads", ref, "alice")))
	if got := decide(t, az, "alice", "get", "dev", "pods"); got != authz.Allow {
		t.Fatalf("after the binding was added: got %v, want Allow", got)
	}
	wait(t, src, put(t, st, "roles", "dev", "reader", role("dev", "reader")))
	if got := decide(t, az, "alice", "get", "dev", "pods"); got != authz.NoOpinion {
		t.Fatalf("after the role lost its rule: got %v, want NoOpinion", got)
	}
	wait(t, src, put(t, st, "roles", "dev", "reader", role("dev", "reader", getPods())))
	if got := decide(t, az, "alice", "get", "dev", "pods"); got != authz.Allow {
		t.Fatalf("after the rule came back: got %v, want Allow", got)
	}
	wait(t, src, del(t, st, "rolebindings", "dev", "alice-reads"))
	if got := decide(t, az, "alice", "get", "dev", "pods"); got != authz.NoOpinion {
		t.Fatalf("after the binding was deleted: got %v, want NoOpinion", got)
	}
}

func TestSourceAggregatesClusterRoles(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	sel := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"agg": "yes"}}}}
	put(t, st, "clusterroles", "", "combined", clusterRole("combined", nil, sel))
	put(t, st, "clusterrolebindings", "", "devs-combined", clusterRoleBinding("devs-combined", "combined", "devs"))
	src := startSource(t, st)
	az := rbac.New(src)
	u := authn.User{Name: "bob", Groups: []string{"devs"}}
	can := func() authz.Decision {
		d, _, _ := az.Authorize(context.Background(), authz.Attributes{User: u, Verb: "list", Resource: "nodes", APIVersion: "v1", ResourceRequest: true})
		return d
	}
	if got := can(); got != authz.NoOpinion {
		t.Fatalf("nothing aggregated yet: got %v, want NoOpinion", got)
	}
	rule := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}
	wait(t, src, put(t, st, "clusterroles", "", "node-lister", clusterRole("node-lister", map[string]string{"agg": "yes"}, nil, rule)))
	if got := can(); got != authz.Allow {
		t.Fatalf("after a labelled role appeared: got %v, want Allow", got)
	}
}

// compactingStore fails the first watch with ErrCompacted, as a store does
// when the watch asks for history that is gone.
type compactingStore struct {
	store.Store
	watches atomic.Int32
}

func (c *compactingStore) Watch(ctx context.Context, prefix string, from int64) (store.Watcher, error) {
	if c.watches.Add(1) == 1 {
		return nil, &store.RevisionError{Requested: from, Err: store.ErrCompacted}
	}
	return c.Store.Watch(ctx, prefix, from)
}

func TestSourceRelistsAfterCompaction(t *testing.T) {
	t.Parallel()
	st := &compactingStore{Store: openStore(t)}
	src := startSource(t, st)
	az := rbac.New(src)
	rev := put(t, st, "clusterrolebindings", "", "ops-admin", clusterRoleBinding("ops-admin", "cluster-admin", "ops"))
	put(t, st, "clusterroles", "", "cluster-admin", clusterRole("cluster-admin", nil, nil,
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}))
	wait(t, src, rev+1)
	d, _, _ := az.Authorize(context.Background(), authz.Attributes{User: authn.User{Name: "o", Groups: []string{"ops"}},
		Verb: "delete", Resource: "nodes", Name: "n1", APIVersion: "v1", ResourceRequest: true})
	if d != authz.Allow {
		t.Fatalf("after relisting: got %v, want Allow", d)
	}
	if n := st.watches.Load(); n < 2 {
		t.Fatalf("watches started: got %d, want at least 2 (one refused, one after the relist)", n)
	}
}

func TestEnsurePolicy(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	policy := bootstrap.Policy()
	created, err := EnsurePolicy(ctx, st, policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := len(policy.ClusterRoles) + len(policy.ClusterRoleBindings) + len(policy.Roles) + len(policy.RoleBindings)
	if len(created) != want {
		t.Fatalf("first start created %d objects, want %d", len(created), want)
	}

	// An administrator narrows a default role; a restart must keep it.
	put(t, st, "clusterroles", "", "view", clusterRole("view", nil, nil))
	del(t, st, "clusterrolebindings", "", "system:basic-user")
	created, err = EnsurePolicy(ctx, st, bootstrap.Policy(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if wantKey := apiserver.Key(gv.WithResource("clusterrolebindings"), "", "system:basic-user"); !slices.Equal(created, []string{wantKey}) {
		t.Fatalf("second start created %q, want only %q", created, wantKey)
	}
	src := startSource(t, st)
	view, err := src.GetClusterRole("view")
	if err != nil {
		t.Fatal(err)
	}
	if view.AggregationRule != nil {
		t.Fatal("the changed view role was overwritten by the default")
	}
	admin, err := src.GetClusterRole(bootstrap.ClusterAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if admin.UID == "" || admin.CreationTimestamp.IsZero() {
		t.Fatalf("seeded cluster-admin lacks system fields: uid %q, created %v", admin.UID, admin.CreationTimestamp)
	}
	if admin.ResourceVersion == "" {
		t.Fatal("decoded cluster-admin has no resourceVersion")
	}
	// The seeded policy makes system:masters and kubeadm:cluster-admins
	// all-powerful, and lets every authenticated user ask who they are.
	az := rbac.New(src)
	for _, g := range []string{"system:masters", bootstrap.KubeadmClusterAdmins} {
		if d, _, _ := az.Authorize(ctx, authz.Attributes{User: authn.User{Name: "x", Groups: []string{g}},
			Verb: "delete", Resource: "nodes", APIVersion: "v1", ResourceRequest: true}); d != authz.Allow {
			t.Errorf("group %s delete nodes: got %v, want Allow", g, d)
		}
	}
}

// TestCustomResourcesInTheRBACGroupGrantNothing_C2: a CRD may serve a
// resource of its own in rbac.authorization.k8s.io, whose objects are
// stored under the same key prefix and may well say they are
// ClusterRoleBindings; the rules come only from the four RBAC resources,
// whether the object is there when the Source lists or written after, and
// a ClusterRoleBinding written under another RBAC resource's key counts
// for nothing either.
func TestCustomResourcesInTheRBACGroupGrantNothing_C2(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	put(t, st, "clusterroles", "", "reader", clusterRole("reader", nil, nil, getPods()))
	put(t, st, "notes", "", "listed", clusterRoleBinding("listed", "reader", authn.AllAuthenticated))
	src := startSource(t, st)
	az := rbac.New(src)
	put(t, st, "notes", "", "watched", clusterRoleBinding("watched", "reader", authn.AllAuthenticated))
	put(t, st, "clusterroles", "", "misfiled", clusterRoleBinding("misfiled", "reader", authn.AllAuthenticated))
	// The rules follow the store in order: once this binding counts,
	// the writes before it have been seen.
	wait(t, src, put(t, st, "clusterrolebindings", "", "bob-reads", &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: gv.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "bob-reads"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"}}}))
	if got := decide(t, az, "bob", "get", "dev", "pods"); got != authz.Allow {
		t.Fatalf("bob, bound by a real ClusterRoleBinding: got %v, want Allow", got)
	}
	if got := decide(t, az, "alice", "get", "dev", "pods"); got != authz.NoOpinion {
		t.Fatalf("alice, bound only by custom resources and a misfiled object: got %v, want NoOpinion", got)
	}
}

package rbacsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
	"github.com/kubegate/kubegate/store"
)

// rbacServer is an API server with the RBAC authorizer and escalation
// checks over a store seeded with the bootstrap policy, behind an
// httptest server. The bearer token is the user name; the token "admin"
// is a member of system:masters.
type rbacServer struct {
	st  store.Store
	src *Source
	url string
}

func newRBACServer(t *testing.T, admission ...apiserver.Admission) *rbacServer {
	t.Helper()
	st := openStore(t)
	if _, err := EnsurePolicy(context.Background(), st, bootstrap.Policy(), nil); err != nil {
		t.Fatal(err)
	}
	src := startSource(t, st)
	rules := rbac.New(src)
	az := authz.Union(authz.PrivilegedGroups(authz.SystemMasters), rules)
	s, err := apiserver.New(apiserver.Config{
		Store:     st,
		Resources: registry.Resources(),
		Authenticator: authn.RequestFunc(func(r *http.Request) (*authn.Response, bool, error) {
			name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				return nil, false, nil
			}
			u := authn.User{Name: name, Groups: []string{authn.AllAuthenticated}}
			if name == "admin" {
				u.Groups = append(u.Groups, authz.SystemMasters)
			}
			return &authn.Response{User: u}, true, nil
		}),
		Authorizer: az,
		Escalation: Escalation{Guard: rbac.NewGuard(rules, az), Authorizer: az},
		Admission:  admission,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		s.Close()
	})
	return &rbacServer{st: st, src: src, url: hs.URL}
}

func (rs *rbacServer) client(t *testing.T, token string) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: rs.url, BearerToken: token, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// settle waits until the authorizer's rules reflect every write so far.
func (rs *rbacServer) settle(t *testing.T) {
	t.Helper()
	rev, err := rs.st.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wait(t, rs.src, rev)
}

// wantInvalid fails unless err is a 422 Invalid with a cause on field
// whose message contains msg.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("got %v, want 422 Invalid", err)
		return
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Errorf("got %v, want a cause on %s containing %q", err, field, msg)
}

// newMalloryServer is an rbacServer where the user mallory may create,
// update and patch bindings and holds every verb on every resource of the
// API group example.com, and nothing else.
func newMalloryServer(t *testing.T) (*rbacServer, *kubernetes.Clientset) {
	t.Helper()
	rs := newRBACServer(t)
	ctx := context.Background()
	admin := rs.client(t, "admin")
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, clusterRole("example-all", nil, nil,
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"example.com"}, Resources: []string{"*"}},
		rbacv1.PolicyRule{Verbs: []string{"create", "get", "update", "patch"}, APIGroups: []string{rbacv1.GroupName},
			Resources: []string{"rolebindings", "clusterrolebindings"}},
	), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mallory"}, RoleRef: exampleAll, Subjects: mallorySubjects,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mallory := rs.client(t, "mallory")
	rs.wantNoSecrets(t, mallory)
	return rs, mallory
}

var (
	exampleAll      = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "example-all"}
	mallorySubjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}
	// foreignAdmin names cluster-admin with an API group mallory holds
	// every verb in.
	foreignAdmin = rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "cluster-admin"}
)

// wantNoSecrets fails if cs may list secrets in namespace default or in
// all namespaces, once the authorizer has seen every write so far.
func (rs *rbacServer) wantNoSecrets(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	rs.settle(t)
	for _, ns := range []string{"default", ""} {
		if _, err := cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("list secrets in %q: got %v, want 403", ns, err)
		}
	}
}

const unsupportedExample = `Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`

// The attack: mallory references cluster-admin under the API group
// example.com, hoping the bind check asks about that group and the role
// is then found by kind and name alone.
func TestRoleBindingToForeignRoleRefGroup(t *testing.T) {
	t.Parallel()
	rs, mallory := newMalloryServer(t)
	_, err := mallory.RbacV1().RoleBindings("default").Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"}, RoleRef: foreignAdmin, Subjects: mallorySubjects}, metav1.CreateOptions{})
	wantInvalid(t, err, "roleRef.apiGroup", unsupportedExample)
	rs.wantNoSecrets(t, mallory)
}

func TestClusterRoleBindingToForeignRoleRefGroup(t *testing.T) {
	t.Parallel()
	rs, mallory := newMalloryServer(t)
	_, err := mallory.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"}, RoleRef: foreignAdmin, Subjects: mallorySubjects}, metav1.CreateOptions{})
	wantInvalid(t, err, "roleRef.apiGroup", unsupportedExample)
	rs.wantNoSecrets(t, mallory)
}

// mallory binds a role she holds, then points the binding at cluster-admin.
func TestBindingRoleRefChangeRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		change func(rbs rbacv1client.RoleBindingInterface, b *rbacv1.RoleBinding) error
	}{
		{"update", func(rbs rbacv1client.RoleBindingInterface, b *rbacv1.RoleBinding) error {
			b.RoleRef = foreignAdmin
			_, err := rbs.Update(ctx, b, metav1.UpdateOptions{})
			return err
		}},
		{"merge patch", func(rbs rbacv1client.RoleBindingInterface, _ *rbacv1.RoleBinding) error {
			_, err := rbs.Patch(ctx, "mine", types.MergePatchType,
				[]byte(`{"roleRef":{"apiGroup":"example.com","name":"cluster-admin"}}`), metav1.PatchOptions{})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs, mallory := newMalloryServer(t)
			rbs := mallory.RbacV1().RoleBindings("default")
			b, err := rbs.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				RoleRef: exampleAll, Subjects: mallorySubjects}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("binding a role she holds: %v", err)
			}
			wantInvalid(t, tt.change(rbs, b), "roleRef", "field is immutable")
			rs.wantNoSecrets(t, mallory)
		})
	}
}

func TestBindingWithBadSubjectRefused(t *testing.T) {
	t.Parallel()
	_, mallory := newMalloryServer(t)
	_, err := mallory.RbacV1().RoleBindings("default").Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "robots"}, RoleRef: exampleAll,
		Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r2"}}}, metav1.CreateOptions{})
	wantInvalid(t, err, "subjects[0].kind", `Unsupported value: "Robot"`)
}

// A valid reference to a role that does not exist, by a user with no bind
// verb on it, is answered with the role's 404.
func TestBindingToMissingRole(t *testing.T) {
	t.Parallel()
	rs, mallory := newMalloryServer(t)
	_, err := mallory.RbacV1().RoleBindings("default").Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "no-such-role"},
		Subjects:   mallorySubjects}, metav1.CreateOptions{})
	if want := `clusterroles.rbac.authorization.k8s.io "no-such-role" not found`; !apierrors.IsNotFound(err) || err.Error() != want {
		t.Errorf("got %v, want 404 %s", err, want)
	}
	rs.wantNoSecrets(t, mallory)
}

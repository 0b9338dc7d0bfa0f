package authorization

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
)

var alice = authn.User{Name: "alice", UID: "uid-a", Groups: []string{"devs", authn.AllAuthenticated},
	Extra: map[string][]string{"scopes": {"read", "write"}}}

// env is a Config over in-memory RBAC rules.
type env struct {
	cfg Config
}

func newEnv(t *testing.T) *env {
	t.Helper()
	policy := bootstrap.Policy()
	policy.Roles = []*rbacv1.Role{{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}}
	policy.RoleBindings = []*rbacv1.RoleBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "devs-read"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "devs"}}}}
	rules := rbac.New(rbac.NewMemory(policy))
	return &env{cfg: Config{
		Authorizer: authz.Union(authz.PrivilegedGroups(authz.SystemMasters), rules),
		Rules:      rules,
	}}
}

func (e *env) create(t *testing.T, key string, u authn.User, ns, name string, obj runtime.Object) (runtime.Object, error) {
	t.Helper()
	c, ok := Creators(e.cfg)[key]
	if !ok {
		t.Fatalf("no creator for %s", key)
	}
	if got, want := reflect.TypeOf(c.New()), reflect.TypeOf(obj); got != want {
		t.Fatalf("%s New() = %v, want %v", key, got, want)
	}
	return c.Create(context.Background(), &apiserver.CreateRequest{Namespace: ns, Name: name, User: u, Object: obj})
}

func wantStatus(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	se, ok := err.(*apierrors.StatusError)
	if !ok {
		t.Fatalf("got %v (%T), want a %d StatusError", err, err, code)
	}
	if se.ErrStatus.Code != code || !strings.Contains(se.ErrStatus.Message, msg) {
		t.Fatalf("got %d %q, want %d containing %q", se.ErrStatus.Code, se.ErrStatus.Message, code, msg)
	}
}

func TestCreatorsDiscovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := map[string]struct {
		kind       string
		namespaced bool
	}{
		SelfSubjectAccessReviewsKey:  {"SelfSubjectAccessReview", false},
		SelfSubjectRulesReviewsKey:   {"SelfSubjectRulesReview", false},
		SubjectAccessReviewsKey:      {"SubjectAccessReview", false},
		LocalSubjectAccessReviewsKey: {"LocalSubjectAccessReview", true},
	}
	got := Creators(e.cfg)
	if len(got) != len(want) {
		t.Fatalf("got %d creators, want %d", len(got), len(want))
	}
	for k, w := range want {
		c := got[k]
		if c == nil || c.Kind() != w.kind || c.Namespaced() != w.namespaced {
			t.Errorf("%s: got %v, want kind %s namespaced %v", k, c, w.kind, w.namespaced)
		}
	}
	if n := len(Creators(Config{})); n != 0 {
		t.Errorf("with nothing configured: got %d creators, want none", n)
	}
}

func TestSelfSubjectAccessReview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := func(verb, ns, resource string) authorizationv1.SelfSubjectAccessReviewSpec {
		return authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Namespace: ns, Resource: resource}}
	}
	tests := []struct {
		name    string
		user    authn.User
		spec    authorizationv1.SelfSubjectAccessReviewSpec
		allowed bool
	}{
		{"group member reads pods in dev", alice, res("list", "dev", "pods"), true},
		{"group member cannot delete pods in dev", alice, res("delete", "dev", "pods"), false},
		{"group member cannot read pods elsewhere", alice, res("list", "prod", "pods"), false},
		{"masters may do anything", authn.User{Name: "root", Groups: []string{"system:masters"}}, res("delete", "", "nodes"), true},
		{"discovery for the authenticated", alice, authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/api"}}, true},
		{"no metrics for the authenticated", alice, authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := e.create(t, SelfSubjectAccessReviewsKey, tt.user, "", "", &authorizationv1.SelfSubjectAccessReview{Spec: tt.spec})
			if err != nil {
				t.Fatal(err)
			}
			st := obj.(*authorizationv1.SelfSubjectAccessReview).Status
			if st.Allowed != tt.allowed || st.Denied {
				t.Fatalf("got allowed %v denied %v (reason %q), want allowed %v", st.Allowed, st.Denied, st.Reason, tt.allowed)
			}
			if tt.allowed && tt.user.Name == "alice" && !strings.Contains(st.Reason, "RBAC: allowed by") {
				t.Fatalf("reason: got %q", st.Reason)
			}
		})
	}
	t.Run("no attributes", func(t *testing.T) {
		_, err := e.create(t, SelfSubjectAccessReviewsKey, alice, "", "", &authorizationv1.SelfSubjectAccessReview{})
		wantStatus(t, err, http.StatusUnprocessableEntity, "exactly one of nonResourceAttributes or resourceAttributes must be specified")
	})
	t.Run("both attributes", func(t *testing.T) {
		spec := res("get", "dev", "pods")
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/api"}
		_, err := e.create(t, SelfSubjectAccessReviewsKey, alice, "", "", &authorizationv1.SelfSubjectAccessReview{Spec: spec})
		wantStatus(t, err, http.StatusUnprocessableEntity, `spec: Invalid value: {"Path":"/api","Verb":"get"}: exactly one of nonResourceAttributes or resourceAttributes must be specified`)
	})
}

func TestSubjectAccessReview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ra := &authorizationv1.ResourceAttributes{Verb: "get", Namespace: "dev", Resource: "pods", Name: "x"}
	tests := []struct {
		name    string
		spec    authorizationv1.SubjectAccessReviewSpec
		allowed bool
	}{
		{"by group", authorizationv1.SubjectAccessReviewSpec{Groups: []string{"devs"}, ResourceAttributes: ra}, true},
		{"by user without groups", authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: ra}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := e.create(t, SubjectAccessReviewsKey, alice, "", "", &authorizationv1.SubjectAccessReview{Spec: tt.spec})
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.(*authorizationv1.SubjectAccessReview).Status.Allowed; got != tt.allowed {
				t.Fatalf("allowed: got %v, want %v", got, tt.allowed)
			}
		})
	}
	t.Run("no subject", func(t *testing.T) {
		_, err := e.create(t, SubjectAccessReviewsKey, alice, "", "", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: ra}})
		wantStatus(t, err, http.StatusUnprocessableEntity, "at least one of user or group must be specified")
	})
}

// An access review's answer is the request with its status: its
// metadata, which may hold nothing but the managedFields of the create (and
// a local review's namespace), and no creationTimestamp (B.3).
func TestAccessReviewMetadata_B3(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ra := &authorizationv1.ResourceAttributes{Verb: "get", Namespace: "dev", Resource: "pods"}
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	obj, err := e.create(t, SubjectAccessReviewsKey, alice, "", "", &authorizationv1.SubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{ManagedFields: mf},
		Spec:       authorizationv1.SubjectAccessReviewSpec{Groups: []string{"devs"}, ResourceAttributes: ra}})
	if err != nil {
		t.Fatal(err)
	}
	if m := obj.(*authorizationv1.SubjectAccessReview).ObjectMeta; len(m.ManagedFields) != 1 || !m.CreationTimestamp.IsZero() {
		t.Errorf("answer metadata %+v, want the request's managedFields and no creationTimestamp", m)
	}
	_, err = e.create(t, SubjectAccessReviewsKey, alice, "", "", &authorizationv1.SubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: ra}})
	wantStatus(t, err, http.StatusUnprocessableEntity, `.authorization.k8s.io "" is invalid: metadata: Invalid value: {"name":"mine"}: must be empty`)

	local := func(ns string, spec authorizationv1.SubjectAccessReviewSpec) (runtime.Object, error) {
		return e.create(t, LocalSubjectAccessReviewsKey, alice, "dev", "", &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: spec})
	}
	obj, err = local("dev", authorizationv1.SubjectAccessReviewSpec{Groups: []string{"devs"}, ResourceAttributes: ra})
	if err != nil || !obj.(*authorizationv1.LocalSubjectAccessReview).Status.Allowed {
		t.Errorf("local review in dev: %v, %+v; want allowed as the cluster-wide review", err, obj)
	}
	_, err = local("dev", authorizationv1.SubjectAccessReviewSpec{User: "bob",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Namespace: "prod", Resource: "pods"}})
	wantStatus(t, err, http.StatusUnprocessableEntity, `spec.resourceAttributes.namespace: Invalid value: "prod": must match metadata.namespace`)
	_, err = local("prod", authorizationv1.SubjectAccessReviewSpec{User: "bob",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Namespace: "prod", Resource: "pods"}})
	wantStatus(t, err, http.StatusBadRequest, "spec.resourceAttributes.namespace must match namespace: dev")
	_, err = local("dev", authorizationv1.SubjectAccessReviewSpec{User: "bob",
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}})
	wantStatus(t, err, http.StatusUnprocessableEntity, `spec.nonResourceAttributes: Invalid value: {"Path":"/healthz","Verb":"get"}: disallowed on this kind of request`)
}

func TestSelfSubjectRulesReview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	obj, err := e.create(t, SelfSubjectRulesReviewsKey, alice, "", "", &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	st := obj.(*authorizationv1.SelfSubjectRulesReview).Status
	var podRule, selfReview bool
	for _, r := range st.ResourceRules {
		podRule = podRule || (slices.Equal(r.Resources, []string{"pods"}) && slices.Equal(r.Verbs, []string{"get", "list"}))
		selfReview = selfReview || slices.Contains(r.Resources, "selfsubjectaccessreviews")
	}
	if !podRule || !selfReview || len(st.NonResourceRules) == 0 || st.Incomplete || st.EvaluationError != "" {
		t.Fatalf("got %+v, want the pod-reader rule, system:basic-user's rules and non-resource rules", st)
	}
	masters := authn.User{Name: "root", Groups: []string{"system:masters"}}
	obj, err = e.create(t, SelfSubjectRulesReviewsKey, masters, "", "", &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if rr := obj.(*authorizationv1.SelfSubjectRulesReview).Status.ResourceRules; len(rr) == 0 || !slices.Equal(rr[0].Resources, []string{"*"}) {
		t.Fatalf("system:masters rules: got %+v, want * first", rr)
	}
	_, err = e.create(t, SelfSubjectRulesReviewsKey, alice, "", "", &authorizationv1.SelfSubjectRulesReview{})
	wantStatus(t, err, http.StatusBadRequest, "no namespace on request")
}

package rbacsource

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
)

const rbacAPI = "/apis/rbac.authorization.k8s.io/v1/"

// newOrderServer is an rbacServer where the users updater and binder may
// create, read, update and patch roles and bindings of every kind and read
// config maps, and binder may also bind cluster-admin. It holds the Role,
// ClusterRole, RoleBinding (in default) and ClusterRoleBinding "base",
// granting or binding reading config maps; the RoleBinding "kept", bound
// to cluster-admin with a finalizer; and the aggregating ClusterRole
// "gathered".
func newOrderServer(t *testing.T, admission ...apiserver.Admission) *rbacServer {
	t.Helper()
	rs := newRBACServer(t, admission...)
	ctx := context.Background()
	rbacClient := rs.client(t, "admin").RbacV1()
	getConfigMaps := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	users := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "updater"}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "binder"}}
	binder := users[1:]
	clusterRef := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	for _, r := range []*rbacv1.ClusterRole{
		clusterRole("rbac-writer", nil, nil, getConfigMaps, rbacv1.PolicyRule{Verbs: []string{"create", "get", "update", "patch"},
			APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"}}),
		clusterRole("bind-cluster-admin", nil, nil, rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName},
			Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}}),
		clusterRole("base", nil, nil, getConfigMaps),
		clusterRole("gathered", nil, &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"gather": "me"}}}}),
	} {
		if _, err := rbacClient.ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "rbac-writers"}, RoleRef: clusterRef("rbac-writer"), Subjects: users},
		{ObjectMeta: metav1.ObjectMeta{Name: "binders"}, RoleRef: clusterRef("bind-cluster-admin"), Subjects: binder},
		{ObjectMeta: metav1.ObjectMeta{Name: "base"}, RoleRef: clusterRef("base"), Subjects: binder},
	} {
		if _, err := rbacClient.ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rbacClient.Roles("default").Create(ctx, role("default", "base", getConfigMaps), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "base"}, RoleRef: clusterRef("base"), Subjects: binder},
		{ObjectMeta: metav1.ObjectMeta{Name: "kept", Finalizers: []string{"example.com/keep"}}, RoleRef: clusterRef("cluster-admin"), Subjects: binder},
	} {
		if _, err := rbacClient.RoleBindings("default").Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rs.settle(t)
	return rs
}

// send makes one request as user and returns the status code and the
// message of the Status answered (empty for an object).
func (rs *rbacServer) send(t *testing.T, user, method, path, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, rs.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	if json.Unmarshal(data, &st) == nil && st.Kind == "Status" {
		return resp.StatusCode, st.Message
	}
	return resp.StatusCode, ""
}

// kube-apiserver's RBAC storage checks a write of a role or binding for
// escalation after mutating admission and before the object is prepared,
// validated and compared with the stored resourceVersion (C.2): an invalid
// write that escalates is a 403, one that does not is a 422, and a change
// of nothing but finalizers and owner references is not checked.
func TestEscalationCheckedBeforeValidation_C2(t *testing.T) {
	t.Parallel()
	rs := newOrderServer(t)
	const (
		rbs      = rbacAPI + "namespaces/default/rolebindings"
		held     = "is attempting to grant RBAC permissions not currently held"
		adminRef = `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}`
		subjects = `"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"binder"}]`
		immut    = "field is immutable"
		merge    = "application/merge-patch+json"
		jsonType = "application/json"
		apply    = "application/apply-patch+yaml"
	)
	binding := func(kind, name, extraMeta, roleRef, subjects string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"` + extraMeta + `},` + roleRef + `,` + subjects + `}`
	}
	escalatingInvalidRules := `"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]},{"apiGroups":[""],"resources":["pods"]}]`
	for _, tt := range []struct {
		name, user, method, path, contentType, body string
		wantCode                                    int
		wantMsg                                     string
	}{
		{"rolebinding update to cluster-admin without bind", "updater", "PUT", rbs + "/base", jsonType,
			binding("RoleBinding", "base", "", adminRef, subjects), 403, held},
		{"rolebinding update to cluster-admin with bind", "binder", "PUT", rbs + "/base", jsonType,
			binding("RoleBinding", "base", "", adminRef, subjects), 422, immut},
		{"rolebinding merge patch without bind", "updater", "PATCH", rbs + "/base", merge, `{"roleRef":{"name":"cluster-admin"}}`, 403, held},
		{"rolebinding merge patch with bind", "binder", "PATCH", rbs + "/base", merge, `{"roleRef":{"name":"cluster-admin"}}`, 422, immut},
		{"rolebinding JSON patch without bind", "updater", "PATCH", rbs + "/base", "application/json-patch+json",
			`[{"op":"replace","path":"/roleRef/name","value":"cluster-admin"}]`, 403, held},
		{"rolebinding apply without bind", "updater", "PATCH", rbs + "/base?fieldManager=order&force=true", apply,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"base"},` + adminRef + `}`, 403, held},
		{"rolebinding apply with bind", "binder", "PATCH", rbs + "/base?fieldManager=order&force=true", apply,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"base"},` + adminRef + `}`, 422, immut},
		{"rolebinding update with a stale resourceVersion without bind", "updater", "PUT", rbs + "/base", jsonType,
			binding("RoleBinding", "base", `,"resourceVersion":"1"`, adminRef, subjects), 403, held},
		{"rolebinding update with a stale resourceVersion with bind", "binder", "PUT", rbs + "/base", jsonType,
			binding("RoleBinding", "base", `,"resourceVersion":"1"`, adminRef, subjects), 409, "the object has been modified"},
		{"clusterrolebinding update to cluster-admin without bind", "updater", "PUT", rbacAPI + "clusterrolebindings/base", jsonType,
			binding("ClusterRoleBinding", "base", "", adminRef, subjects), 403, held},
		{"clusterrolebinding update to cluster-admin with bind", "binder", "PUT", rbacAPI + "clusterrolebindings/base", jsonType,
			binding("ClusterRoleBinding", "base", "", adminRef, subjects), 422, immut},
		{"clusterrolebinding merge patch without bind", "updater", "PATCH", rbacAPI + "clusterrolebindings/base", merge,
			`{"roleRef":{"name":"cluster-admin"}}`, 403, held},
		{"invalid rolebinding create without bind", "updater", "POST", rbs, jsonType,
			binding("RoleBinding", "robots", "", adminRef, `"subjects":[{"kind":"Robot","name":"r2"}]`), 403, held},
		{"invalid rolebinding create with bind", "binder", "POST", rbs, jsonType,
			binding("RoleBinding", "robots", "", adminRef, `"subjects":[{"kind":"Robot","name":"r2"}]`), 422, `Unsupported value: "Robot"`},
		{"rolebinding of another group's role not held", "updater", "POST", rbs, jsonType,
			binding("RoleBinding", "foreign", "", `"roleRef":{"apiGroup":"example.com","kind":"ClusterRole","name":"cluster-admin"}`, subjects), 403, held},
		{"rolebinding of another group's role held", "updater", "POST", rbs, jsonType,
			binding("RoleBinding", "foreign", "", `"roleRef":{"apiGroup":"example.com","kind":"ClusterRole","name":"base"}`, subjects), 422, `Unsupported value: "example.com"`},
		{"rolebinding of an unknown kind", "binder", "POST", rbs, jsonType,
			binding("RoleBinding", "widget", "", `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Widget","name":"base"}`, subjects), 500, `unsupported role reference kind: "Widget"`},
		{"invalid escalating role update", "updater", "PUT", rbacAPI + "namespaces/default/roles/base", jsonType,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"base"},` + escalatingInvalidRules + `}`, 403, held},
		{"invalid escalating clusterrole create", "updater", "POST", rbacAPI + "clusterroles", jsonType,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"bad"},` + escalatingInvalidRules + `}`, 403, held},
		{"clusterrole with an aggregationRule of no selectors", "updater", "POST", rbacAPI + "clusterroles", jsonType,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"empty"},"aggregationRule":{}}`, 422, "at least one clusterRoleSelector required"},
		{"clusterrole losing its aggregationRule", "updater", "PUT", rbacAPI + "clusterroles/gathered", jsonType,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"gathered"}}`, 403, "must have cluster-admin privileges to use the aggregationRule"},
		{"label on a binding to cluster-admin", "updater", "PATCH", rbs + "/kept", merge, `{"metadata":{"labels":{"a":"b"}}}`, 403, held},
		{"finalizer off a binding to cluster-admin", "updater", "PATCH", rbs + "/kept", merge, `{"metadata":{"finalizers":null}}`, 200, ""},
	} {
		code, msg := rs.send(t, tt.user, tt.method, tt.path, tt.contentType, tt.body)
		if code != tt.wantCode || !strings.Contains(msg, tt.wantMsg) {
			t.Errorf("%s: got %d %q, want %d with %q", tt.name, code, msg, tt.wantCode, tt.wantMsg)
		}
	}
}

// stampKept is a mutating admission plugin that labels the RoleBinding
// "kept" on every update.
type stampKept struct{}

func (stampKept) Admit(_ context.Context, a *apiserver.AdmissionAttributes) error {
	if a.Operation != apiserver.Update || a.Resource.Resource != "rolebindings" || a.Name != "kept" {
		return nil
	}
	acc, err := meta.Accessor(a.Object)
	if err != nil {
		return err
	}
	acc.SetLabels(map[string]string{"stamped": "yes"})
	return nil
}

// Whether an update changes nothing but finalizers and owner references,
// and so is not checked for escalation, is decided on the object mutating
// admission returns, as kube's RBAC storage decides it (C.2): a plugin
// that changes more has the write checked.
func TestGCOnlyUpdateDecidedAfterMutatingAdmission_C2(t *testing.T) {
	t.Parallel()
	rs := newOrderServer(t, stampKept{})
	code, msg := rs.send(t, "updater", "PATCH", rbacAPI+"namespaces/default/rolebindings/kept", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`)
	if code != http.StatusForbidden || !strings.Contains(msg, "is attempting to grant RBAC permissions not currently held") {
		t.Errorf("finalizer off a binding to cluster-admin that admission labels: %d %q, want the escalation 403", code, msg)
	}
}

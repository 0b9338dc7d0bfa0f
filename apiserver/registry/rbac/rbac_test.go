package rbac_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

// namePartMsg is what kube says of a label key's name part that is not one.
const namePartMsg = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`

func TestRoleValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	required, invalidV := metav1.CauseTypeFieldValueRequired, metav1.CauseTypeFieldValueInvalid
	const (
		rolePath    = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
		clusterPath = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	)
	tests := []struct {
		name   string
		kind   string
		body   string
		causes []metav1.StatusCause
	}{
		{"no verbs", "Role", `"rules":[{"apiGroups":[""],"resources":["pods"]}]`, []metav1.StatusCause{
			rt.Cause(required, "rules[0].verbs", "Required value")}},
		{"no groups or resources", "Role", `"rules":[{"verbs":["get"]}]`, []metav1.StatusCause{
			rt.Cause(required, "rules[0].apiGroups", "Required value: resource rules must supply at least one api group"),
			rt.Cause(required, "rules[0].resources", "Required value: resource rules must supply at least one resource")}},
		{"non-resource URLs in a Role, with resources", "Role", `"rules":[{"verbs":["get"],"nonResourceURLs":["/x"],"resources":["pods"]}]`, []metav1.StatusCause{
			rt.Cause(invalidV, "rules[0].nonResourceURLs", `Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`),
			rt.Cause(invalidV, "rules[0].nonResourceURLs", `Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`)}},
		{"non-resource URLs with API groups", "ClusterRole", `"rules":[{"verbs":["get"],"nonResourceURLs":["/x"],"apiGroups":[""]}]`, []metav1.StatusCause{
			rt.Cause(invalidV, "rules[0].nonResourceURLs", `Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`)}},
		{"missing verbs come last", "ClusterRole", `"rules":[{"nonResourceURLs":["/x"]},{}]`, []metav1.StatusCause{
			rt.Cause(required, "rules[1].apiGroups", "Required value: resource rules must supply at least one api group"),
			rt.Cause(required, "rules[1].resources", "Required value: resource rules must supply at least one resource"),
			rt.Cause(required, "rules[0].verbs", "Required value"),
			rt.Cause(required, "rules[1].verbs", "Required value")}},
		{"aggregation rule without selectors", "ClusterRole", `"aggregationRule":{}`, []metav1.StatusCause{
			rt.Cause(required, "aggregationRule.clusterRoleSelectors", "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil")}},
		{"aggregation rule selectors", "ClusterRole", `"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"bad key!":"v"}},{"matchExpressions":[{"key":"a","operator":"Bad"}]}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "aggregationRule.clusterRoleSelectors[0].matchLabels", `Invalid value: "bad key!": `+namePartMsg),
			rt.Cause(invalidV, "aggregationRule.clusterRoleSelectors[0]", "Invalid value: null: invalid label selector."),
			rt.Cause(invalidV, "aggregationRule.clusterRoleSelectors[1].matchExpressions[0].operator", `Invalid value: "Bad": not a valid selector operator`),
			rt.Cause(invalidV, "aggregationRule.clusterRoleSelectors[1]", "Invalid value: null: invalid label selector.")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("r%d", i)
			path := rolePath
			if tt.kind == "ClusterRole" {
				path = clusterPath
			}
			code, body := rt.Do(t, srv, http.MethodPost, path, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"`+tt.kind+`","metadata":{"name":"`+name+`"},`+tt.body+`}`, nil)
			rt.WantInvalid(t, code, body, tt.kind+".rbac.authorization.k8s.io", name, tt.causes...)
		})
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

// wantInvalid fails unless err is a 422 Invalid with a cause on field
// whose message contains msg.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	se, ok := err.(apierrors.APIStatus)
	if !ok || se.Status().Details == nil {
		t.Fatalf("got %v, want a Status with details", err)
	}
	for _, c := range se.Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Fatalf("causes %+v: want one on %s containing %q", se.Status().Details.Causes, field, msg)
}

func TestBindingValidation(t *testing.T) {
	t.Parallel()
	cs := apiservertest.Start(t).Client
	ctx := context.Background()
	foreignRef := rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "cluster-admin"}
	tests := []struct {
		name      string
		cluster   bool
		ref       rbacv1.RoleRef
		subjects  []rbacv1.Subject
		wantField string // "" when the binding is valid
		wantMsg   string
	}{
		{"role binding to a role of another API group", false, foreignRef, []rbacv1.Subject{userSubject("u")},
			"roleRef.apiGroup", `Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`},
		{"cluster role binding to a role of another API group", true, foreignRef, []rbacv1.Subject{userSubject("u")},
			"roleRef.apiGroup", `Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`},
		{"role binding to an unknown kind", false, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Policy", Name: "x"}, nil,
			"roleRef.kind", `supported values: "Role", "ClusterRole"`},
		{"cluster role binding to a Role", true, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "x"}, nil,
			"roleRef.kind", `Unsupported value: "Role": supported values: "ClusterRole"`},
		{"role reference without a name", false, clusterRoleRef(""), nil, "roleRef.name", "Required value"},
		{"role reference with a slash", false, clusterRoleRef("a/b"), nil, "roleRef.name", "may not contain '/'"},
		{"subject without a name", false, clusterRoleRef("view"), []rbacv1.Subject{userSubject("")},
			"subjects[0].name", "Required value"},
		{"subject of an unknown kind", false, clusterRoleRef("view"), []rbacv1.Subject{{Kind: "Robot", Name: "r"}},
			"subjects[0].kind", `Unsupported value: "Robot"`},
		{"user subject of another API group", false, clusterRoleRef("view"),
			[]rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: "example.com", Name: "u"}},
			"subjects[0].apiGroup", `supported values: "rbac.authorization.k8s.io"`},
		{"group subject of another API group", true, clusterRoleRef("view"),
			[]rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: "example.com", Name: "g"}},
			"subjects[0].apiGroup", `supported values: "rbac.authorization.k8s.io"`},
		{"service account subject with an API group", false, clusterRoleRef("view"),
			[]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, APIGroup: rbacv1.GroupName, Name: "sa", Namespace: "default"}},
			"subjects[0].apiGroup", `supported values: ""`},
		{"service account subject with a bad name", false, clusterRoleRef("view"),
			[]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "Not_A_Name", Namespace: "default"}},
			"subjects[0].name", "Invalid value"},
		{"cluster-wide service account subject without a namespace", true, clusterRoleRef("view"),
			[]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sa"}}, "subjects[0].namespace", "Required value"},
		{"service account subject in a role binding takes the binding's namespace", false, clusterRoleRef("view"),
			[]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sa"}}, "", ""},
		{"empty API groups are defaulted", false, rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			[]rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "u"}, {Kind: rbacv1.GroupKind, Name: "g"}}, "", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i)}
			var err error
			var ref rbacv1.RoleRef
			var subjects []rbacv1.Subject
			if tt.cluster {
				var got *rbacv1.ClusterRoleBinding
				got, err = cs.RbacV1().ClusterRoleBindings().Create(ctx,
					&rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: tt.ref, Subjects: tt.subjects}, metav1.CreateOptions{})
				if err == nil {
					ref, subjects = got.RoleRef, got.Subjects
				}
			} else {
				var got *rbacv1.RoleBinding
				got, err = cs.RbacV1().RoleBindings("default").Create(ctx,
					&rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: tt.ref, Subjects: tt.subjects}, metav1.CreateOptions{})
				if err == nil {
					ref, subjects = got.RoleRef, got.Subjects
				}
			}
			if tt.wantField != "" {
				wantInvalid(t, err, tt.wantField, tt.wantMsg)
				return
			}
			if err != nil {
				t.Fatalf("got %v, want created", err)
			}
			if ref.APIGroup != rbacv1.GroupName {
				t.Errorf("roleRef.apiGroup = %q, want %q", ref.APIGroup, rbacv1.GroupName)
			}
			for i, s := range subjects {
				want := rbacv1.GroupName
				if s.Kind == rbacv1.ServiceAccountKind {
					want = ""
				}
				if s.APIGroup != want {
					t.Errorf("subjects[%d].apiGroup = %q, want %q", i, s.APIGroup, want)
				}
			}
		})
	}
}

func TestBindingRoleRefImmutable(t *testing.T) {
	t.Parallel()
	cs := apiservertest.Start(t).Client
	ctx := context.Background()
	rbs := cs.RbacV1().RoleBindings("default")
	if _, err := rbs.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev"},
		RoleRef: clusterRoleRef("view"), Subjects: []rbacv1.Subject{userSubject("dev")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	edit := `{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}`
	apply := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"dev"},` +
		`"roleRef":` + edit + `}`
	changes := []struct {
		name   string
		change func() error
	}{
		{"update", func() error {
			b, err := rbs.Get(ctx, "dev", metav1.GetOptions{})
			if err != nil {
				return err
			}
			b.RoleRef.Name = "edit"
			_, err = rbs.Update(ctx, b, metav1.UpdateOptions{})
			return err
		}},
		{"update to another API group", func() error {
			b, err := rbs.Get(ctx, "dev", metav1.GetOptions{})
			if err != nil {
				return err
			}
			b.RoleRef.APIGroup = "example.com"
			_, err = rbs.Update(ctx, b, metav1.UpdateOptions{})
			return err
		}},
		{"merge patch", func() error {
			_, err := rbs.Patch(ctx, "dev", types.MergePatchType, []byte(`{"roleRef":`+edit+`}`), metav1.PatchOptions{})
			return err
		}},
		{"json patch", func() error {
			_, err := rbs.Patch(ctx, "dev", types.JSONPatchType,
				[]byte(`[{"op":"replace","path":"/roleRef/name","value":"edit"}]`), metav1.PatchOptions{})
			return err
		}},
		{"strategic merge patch", func() error {
			_, err := rbs.Patch(ctx, "dev", types.StrategicMergePatchType, []byte(`{"roleRef":`+edit+`}`), metav1.PatchOptions{})
			return err
		}},
		{"server-side apply", func() error {
			_, err := rbs.Patch(ctx, "dev", types.ApplyPatchType, []byte(apply),
				metav1.PatchOptions{FieldManager: "test", Force: new(true)})
			return err
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			wantInvalid(t, c.change(), "roleRef", "field is immutable")
		})
	}
	b, err := rbs.Get(ctx, "dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.RoleRef != clusterRoleRef("view") {
		t.Fatalf("stored roleRef = %+v, want the original", b.RoleRef)
	}

	// Subjects may change, and so may a ClusterRoleBinding's, but not its roleRef.
	b.Subjects = append(b.Subjects, userSubject("ops"))
	if _, err := rbs.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update of subjects: %v", err)
	}
	crbs := cs.RbacV1().ClusterRoleBindings()
	if _, err := crbs.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev"},
		RoleRef: clusterRoleRef("view"), Subjects: []rbacv1.Subject{userSubject("dev")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = crbs.Patch(ctx, "dev", types.MergePatchType, []byte(`{"roleRef":{"name":"cluster-admin"}}`), metav1.PatchOptions{})
	wantInvalid(t, err, "roleRef", `Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"cluster-admin"}: field is immutable`)
}

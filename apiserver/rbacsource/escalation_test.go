package rbacsource

import (
	"context"
	"net/http"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
)

func TestEscalation(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	if _, err := EnsurePolicy(context.Background(), st, bootstrap.Policy(), nil); err != nil {
		t.Fatal(err)
	}
	editRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}
	adminRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}
	gather := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"gather": "me"}}}}
	rev := put(t, st, "rolebindings", "dev", "carol-admin", roleBinding("dev", "carol-admin", adminRef, "carol"))
	src := startSource(t, st)
	wait(t, src, rev)
	rules := rbac.New(src)
	esc := Escalation{Guard: rbac.NewGuard(rules, nil)}

	user := func(name string, groups ...string) authn.User {
		return authn.User{Name: name, Groups: append(groups, authn.AllAuthenticated)}
	}
	tests := []struct {
		name   string
		user   authn.User
		obj    runtime.Object
		old    runtime.Object // nil: a create
		ns     string
		denied bool
	}{
		{"masters bind anything", user("root", "system:masters"), clusterRoleBinding("x", "cluster-admin", "y"), nil, "", false},
		{"admin of a namespace binds edit there", user("carol"), roleBinding("dev", "b", editRef, "dave"), nil, "dev", false},
		{"admin of a namespace cannot bind edit elsewhere", user("carol"), roleBinding("prod", "b", editRef, "dave"), nil, "prod", true},
		{"admin of a namespace cannot bind cluster-admin cluster-wide", user("carol"), clusterRoleBinding("b", "cluster-admin", "dave"), nil, "", true},
		{"a role within held permissions", user("carol"), role("dev", "r", getPods()), nil, "dev", false},
		{"a role beyond held permissions", user("dave"), role("dev", "r", getPods()), nil, "dev", true},
		{"an aggregating cluster role needs full authority", user("carol"),
			clusterRole("agg", nil, gather), nil, "", true},
		{"dropping an aggregationRule needs full authority", user("carol"),
			clusterRole("agg", nil, nil), clusterRole("agg", nil, gather), "", true},
		// validation refuses it next
		{"an aggregationRule without selectors gathers nothing", user("carol"),
			clusterRole("agg", nil, &rbacv1.AggregationRule{}), nil, "", false},
		{"other objects pass", user("dave"), &rbacv1.RoleList{}, nil, "dev", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := esc.CheckRBACWrite(context.Background(), tt.user, tt.obj, tt.old, tt.ns)
			if !tt.denied {
				if err != nil {
					t.Fatalf("got %v, want allowed", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want a 403 Forbidden", err)
			}
			if code := apierrors.ReasonForError(err); code != "Forbidden" {
				t.Fatalf("reason: got %s", code)
			}
			if se := err.(*apierrors.StatusError); se.ErrStatus.Code != http.StatusForbidden ||
				!strings.Contains(se.ErrStatus.Message, "rbac.authorization.k8s.io") {
				t.Fatalf("status: got %d %q", se.ErrStatus.Code, se.ErrStatus.Message)
			}
		})
	}
}

package rbac

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func urls(verbs []string, u ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: u}
}

func TestCovers(t *testing.T) {
	t.Parallel()
	getPods := rule(s("get"), s(""), s("pods"))
	tests := []struct {
		name        string
		owner       []rbacv1.PolicyRule
		servant     []rbacv1.PolicyRule
		want        bool
		wantMissing []rbacv1.PolicyRule
	}{
		{"C.2 same rule covered", []rbacv1.PolicyRule{getPods}, []rbacv1.PolicyRule{getPods}, true, nil},
		{"C.2 nothing to grant is covered", nil, nil, true, nil},
		{"C.2 missing verb listed", []rbacv1.PolicyRule{getPods}, []rbacv1.PolicyRule{rule(s("get", "list"), s(""), s("pods"))}, false,
			[]rbacv1.PolicyRule{rule(s("list"), s(""), s("pods"))}},
		{"C.2 star owner covers all", []rbacv1.PolicyRule{rule(s("*"), s("*"), s("*")), urls(s("*"), "*")},
			[]rbacv1.PolicyRule{rule(s("*"), s("*"), s("*")), named(rule(s("get"), s("x"), s("y/z")), "n"), urls(s("get"), "/metrics")}, true, nil},
		{"C.2 */status owner covers pods/status", []rbacv1.PolicyRule{rule(s("update"), s(""), s("*/status"))},
			[]rbacv1.PolicyRule{rule(s("update"), s(""), s("pods/status", "nodes/status"))}, true, nil},
		{"C.2 */status owner does not cover pods", []rbacv1.PolicyRule{rule(s("update"), s(""), s("*/status"))},
			[]rbacv1.PolicyRule{rule(s("update"), s(""), s("pods"))}, false, []rbacv1.PolicyRule{rule(s("update"), s(""), s("pods"))}},
		{"C.2 pods owner does not cover pods/log", []rbacv1.PolicyRule{rule(s("get"), s(""), s("pods"))},
			[]rbacv1.PolicyRule{rule(s("get"), s(""), s("pods/log"))}, false, []rbacv1.PolicyRule{rule(s("get"), s(""), s("pods/log"))}},
		{"C.2 wildcard servant resource needs wildcard owner", []rbacv1.PolicyRule{getPods},
			[]rbacv1.PolicyRule{rule(s("get"), s(""), s("*"))}, false, []rbacv1.PolicyRule{rule(s("get"), s(""), s("*"))}},
		{"C.2 wildcard servant verb needs wildcard owner", []rbacv1.PolicyRule{rule(s("get", "list", "watch"), s(""), s("pods"))},
			[]rbacv1.PolicyRule{rule(s("*"), s(""), s("pods"))}, false, []rbacv1.PolicyRule{rule(s("*"), s(""), s("pods"))}},
		{"C.2 wildcard servant group needs wildcard owner", []rbacv1.PolicyRule{getPods},
			[]rbacv1.PolicyRule{rule(s("get"), s("*"), s("pods"))}, false, []rbacv1.PolicyRule{rule(s("get"), s("*"), s("pods"))}},
		{"C.2 named owner covers same name", []rbacv1.PolicyRule{named(getPods, "a", "b")},
			[]rbacv1.PolicyRule{named(getPods, "a")}, true, nil},
		{"C.2 named owner does not cover other name", []rbacv1.PolicyRule{named(getPods, "a")},
			[]rbacv1.PolicyRule{named(getPods, "a", "b")}, false, []rbacv1.PolicyRule{named(getPods, "b")}},
		{"C.2 named owner does not cover unnamed", []rbacv1.PolicyRule{named(getPods, "a")},
			[]rbacv1.PolicyRule{getPods}, false, []rbacv1.PolicyRule{getPods}},
		{"C.2 unnamed owner covers named", []rbacv1.PolicyRule{getPods}, []rbacv1.PolicyRule{named(getPods, "a")}, true, nil},
		{"C.2 path star owner covers sub-paths", []rbacv1.PolicyRule{urls(s("get"), "/healthz/*")},
			[]rbacv1.PolicyRule{urls(s("get"), "/healthz/etcd", "/healthz/*")}, true, nil},
		{"C.2 exact path owner does not cover sub-path", []rbacv1.PolicyRule{urls(s("get"), "/healthz")},
			[]rbacv1.PolicyRule{urls(s("get"), "/healthz/etcd")}, false, []rbacv1.PolicyRule{urls(s("get"), "/healthz/etcd")}},
		{"C.2 resource owner does not cover paths", []rbacv1.PolicyRule{rule(s("*"), s("*"), s("*"))},
			[]rbacv1.PolicyRule{urls(s("get"), "/healthz")}, false, []rbacv1.PolicyRule{urls(s("get"), "/healthz")}},
		{"C.2 coverage may come from several owner rules", []rbacv1.PolicyRule{getPods, rule(s("list"), s(""), s("pods"))},
			[]rbacv1.PolicyRule{rule(s("get", "list"), s(""), s("pods"))}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, missing := Covers(tt.owner, tt.servant)
			if got != tt.want || !reflect.DeepEqual(missing, tt.wantMissing) {
				t.Errorf("Covers() = %v, %+v; want %v, %+v", got, missing, tt.want, tt.wantMissing)
			}
		})
	}
}

func TestCoversBoundsMissing(t *testing.T) {
	t.Parallel()
	var verbs, resources []string
	for i := range 100 {
		verbs = append(verbs, fmt.Sprintf("v%d", i))
		resources = append(resources, fmt.Sprintf("r%d", i))
	}
	ok, missing := Covers(nil, []rbacv1.PolicyRule{rule(verbs, s("", "apps"), resources)})
	if ok || len(missing) != maxMissing {
		t.Errorf("Covers(nothing, 20000 permissions) = %v, %d missing; want false, %d", ok, len(missing), maxMissing)
	}
}

func guardObjects() Objects {
	return Objects{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("pod-admin", rule(s("*"), s(""), s("pods"))),
			clusterRole("cluster-admin", rule(s("*"), s("*"), s("*")), urls(s("*"), "*")),
			clusterRole("escalator", rule(s("escalate"), s(rbacv1.GroupName), s("roles"))),
			clusterRole("binder", named(rule(s("bind"), s(rbacv1.GroupName), s("clusterroles")), "cluster-admin")),
		},
		Roles: []*rbacv1.Role{role("ns1", "reader", rule(s("get"), s(""), s("pods")))},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			crb("binder", "binder", subject("User", "binder")),
			crb("root", "cluster-admin", subject("User", "root")),
		},
		RoleBindings: []*rbacv1.RoleBinding{
			rb("ns1", "bob", "ClusterRole", "pod-admin", subject("User", "bob")),
			rb("ns1", "eve", "ClusterRole", "escalator", subject("User", "eve")),
		},
	}
}

func TestConfirmRoleWrite(t *testing.T) {
	t.Parallel()
	az := New(NewMemory(guardObjects()))
	g := NewGuard(az, authz.Union(authz.PrivilegedGroups(authz.SystemMasters), az))
	everything := []rbacv1.PolicyRule{rule(s("*"), s("*"), s("*"))}
	getPods := []rbacv1.PolicyRule{rule(s("get"), s(""), s("pods"))}
	tests := []struct {
		name        string
		user        authn.User
		namespace   string
		rules       []rbacv1.PolicyRule
		aggregation bool
		wantErr     string // "" for allowed
	}{
		{"C.2 writer holding every permission may grant it", user("bob"), "ns1", getPods, false, ""},
		{"C.2 writer may not grant what it lacks", user("bob"), "ns1", []rbacv1.PolicyRule{rule(s("get"), s(""), s("secrets"))}, false,
			"user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"},
		{"C.2 permissions held in one namespace do not count in another", user("bob"), "ns2", getPods, false, "attempting to grant"},
		{"C.2 namespaced permissions do not count for a cluster role", user("bob"), "", getPods, false, "attempting to grant"},
		{"C.2 escalate verb allows granting anything", user("eve"), "ns1", everything, false, ""},
		{"C.2 escalate on roles is not escalate on clusterroles", user("eve"), "", everything, false, "attempting to grant"},
		{"C.2 escalate in ns1 is not escalate in ns2", user("eve"), "ns2", everything, false, "attempting to grant"},
		{"C.4 system:masters may write anything", user("m", authz.SystemMasters), "", everything, true, ""},
		{"C.2 cluster-admin holder may grant anything", user("root"), "", everything, true, ""},
		{"C.2 aggregationRule needs full authority", user("bob"), "", nil, true, "must have cluster-admin privileges to use the aggregationRule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := g.ConfirmRoleWrite(context.Background(), tt.user, tt.namespace, "r", tt.rules, tt.aggregation)
			checkErr(t, err, tt.wantErr)
		})
	}
}

func TestCanBind(t *testing.T) {
	t.Parallel()
	az := New(NewMemory(guardObjects()))
	g := NewGuard(az, nil)
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	tests := []struct {
		name      string
		user      authn.User
		ref       rbacv1.RoleRef
		namespace string
		wantErr   string
	}{
		{"C.2 holder of every permission of the role may bind it", user("bob"), ref("ClusterRole", "pod-admin"), "ns1", ""},
		{"C.2 holder may bind a namespaced role", user("bob"), ref("Role", "reader"), "ns1", ""},
		{"C.2 binding a bigger role is escalation", user("bob"), ref("ClusterRole", "cluster-admin"), "ns1",
			"user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"},
		{"C.2 cluster role binding needs cluster permissions", user("bob"), ref("ClusterRole", "pod-admin"), "", "attempting to grant"},
		{"C.2 bind verb on the role allows binding it", user("binder"), ref("ClusterRole", "cluster-admin"), "ns7", ""},
		{"C.2 bind verb on the role allows a cluster role binding", user("binder"), ref("ClusterRole", "cluster-admin"), "", ""},
		{"C.2 bind verb is per role name", user("binder"), ref("ClusterRole", "pod-admin"), "ns1", "attempting to grant"},
		{"C.2 missing role refused", user("bob"), ref("Role", "gone"), "ns1", `roles.rbac.authorization.k8s.io "gone" not found`},
		{"C.2 unsupported kind refused", user("bob"), ref("Robot", "x"), "ns1", `unsupported role reference kind: "Robot"`},
		{"C.4 system:masters may bind anything", user("m", authz.SystemMasters), ref("ClusterRole", "missing-too"), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkErr(t, g.CanBind(context.Background(), tt.user, tt.ref, tt.namespace), tt.wantErr)
		})
	}
}

// The bind verb is asked about roles of rbac.authorization.k8s.io, never
// of the API group the roleRef names: holding every verb in another group
// does not let a user bind cluster-admin.
func TestCanBindAsksAboutRBACRoles(t *testing.T) {
	t.Parallel()
	objs := guardObjects()
	objs.ClusterRoles = append(objs.ClusterRoles, clusterRole("example-all", rule(s("*"), s("example.com"), s("*"))))
	objs.ClusterRoleBindings = append(objs.ClusterRoleBindings, crb("mallory", "example-all", subject("User", "mallory")))
	az := New(NewMemory(objs))
	g := NewGuard(az, authz.Union(authz.PrivilegedGroups(authz.SystemMasters), az))
	for _, tt := range []struct {
		ref       rbacv1.RoleRef
		namespace string
	}{
		{rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "cluster-admin"}, ""},
		{rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "cluster-admin"}, "ns1"},
		{rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, "ns1"},
		{rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role", Name: "reader"}, "ns1"},
	} {
		if err := g.CanBind(context.Background(), user("mallory"), tt.ref, tt.namespace); err == nil {
			t.Errorf("CanBind(mallory, %+v, %q) = nil, want refused", tt.ref, tt.namespace)
		}
	}
	// binder holds bind on the cluster role cluster-admin of
	// rbac.authorization.k8s.io, which is what a roleRef naming it means.
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}
	if err := g.CanBind(context.Background(), user("binder"), ref, ""); err != nil {
		t.Errorf("CanBind(binder, %+v) = %v, want allowed", ref, err)
	}
}

// A role that does not exist is a 404 on roles or clusterroles, the answer
// a read of that role would get.
func TestCanBindMissingRole(t *testing.T) {
	t.Parallel()
	g := NewGuard(New(NewMemory(guardObjects())), nil)
	for _, tt := range []struct {
		kind, want string
	}{
		{"ClusterRole", `clusterroles.rbac.authorization.k8s.io "gone" not found`},
		{"Role", `roles.rbac.authorization.k8s.io "gone" not found`},
	} {
		err := g.CanBind(context.Background(), user("bob"), rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: tt.kind, Name: "gone"}, "ns1")
		if !apierrors.IsNotFound(err) || err.Error() != tt.want {
			t.Errorf("CanBind(bob, %s gone) = %v, want 404 %s", tt.kind, err, tt.want)
		}
	}
}

func TestForbiddenEscalation(t *testing.T) {
	t.Parallel()
	g := NewGuard(New(NewMemory(guardObjects())), nil)
	err := g.CanBind(context.Background(), user("bob"), rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-admin"}, "ns2")
	var esc *EscalationError
	if !errors.As(err, &esc) || len(esc.Missing) != 1 || esc.Missing[0].Verbs[0] != "*" {
		t.Fatalf("CanBind() error = %#v, want an EscalationError missing * on pods", err)
	}
	se := Forbidden("rolebindings", "dev", err)
	want := "rolebindings.rbac.authorization.k8s.io \"dev\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"*\"]}"
	if !apierrors.IsForbidden(se) || se.Error() != want {
		t.Errorf("Forbidden()\n got %s\nwant %s", se.Error(), want)
	}
	if d := se.ErrStatus.Details; d.Group != rbacv1.GroupName || d.Kind != "rolebindings" || d.Name != "dev" {
		t.Errorf("details = %+v", d)
	}
}

func TestEscalationErrorCompacts(t *testing.T) {
	t.Parallel()
	_, missing := Covers(nil, []rbacv1.PolicyRule{
		rule(s("get", "list"), s(""), s("pods", "secrets")),
		named(rule(s("get"), s(""), s("configmaps")), "a"),
		rule(s("watch"), s(""), s("pods")),
	})
	err := &EscalationError{User: authn.User{Name: "u"}, Missing: missing, ResolutionErr: errors.New("boom")}
	want := "user \"u\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n" +
		"{APIGroups:[\"\"], Resources:[\"configmaps\"], ResourceNames:[\"a\"], Verbs:[\"get\"]}\n" +
		"{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\" \"watch\"]}\n" +
		"{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}; resolution errors: boom"
	if got := err.Error(); got != want {
		t.Errorf("Error()\n got %s\nwant %s", got, want)
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error = %v, want nil", err)
	case want != "" && err == nil:
		t.Errorf("error = nil, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error\n got %s\nwant it to contain %s", err, want)
	}
}

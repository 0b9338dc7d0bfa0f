package rbac

import (
	"github.com/kubegate/kubegate/authn"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func user(name string, groups ...string) authn.User {
	return authn.User{Name: name, Groups: append(groups, authn.AllAuthenticated)}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func subject(kind, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: kind, Name: name}
}

func saSubject(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func crb(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   subjects,
	}
}

func rb(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName},
		Subjects:   subjects,
	}
}

// scanSource returns every binding whatever the user, as a store-backed
// source without an index would.
type scanSource struct{ m *Memory }

func (s scanSource) ListClusterRoleBindings(authn.User) ([]*rbacv1.ClusterRoleBinding, error) {
	return s.m.Objects().ClusterRoleBindings, nil
}

func (s scanSource) ListRoleBindings(ns string, _ authn.User) ([]*rbacv1.RoleBinding, error) {
	var out []*rbacv1.RoleBinding
	for _, b := range s.m.Objects().RoleBindings {
		if b.Namespace == ns {
			out = append(out, b)
		}
	}
	return out, nil
}

func (s scanSource) GetRole(ns, name string) (*rbacv1.Role, error) { return s.m.GetRole(ns, name) }

func (s scanSource) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	return s.m.GetClusterRole(name)
}

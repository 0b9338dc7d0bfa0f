package rbac

import (
	"github.com/kubegate/kubegate/authn"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RuleSource is where the authorizer reads RBAC objects. The apiserver
// backs it with its store; Memory is the in-memory implementation.
//
// The List methods are given the user being authorized so that a source
// can return only the bindings that may name it; returning more is
// correct (the authorizer checks every subject itself), only slower.
// An aggregated ClusterRole with no stored rules is returned with the
// rules it gathers already in Rules (see Aggregate). A missing role is
// reported with NotFoundError, whose text ends up in 403 reasons. Callers never modify what is returned.
type RuleSource interface {
	ListClusterRoleBindings(u authn.User) ([]*rbacv1.ClusterRoleBinding, error)
	ListRoleBindings(namespace string, u authn.User) ([]*rbacv1.RoleBinding, error)
	GetRole(namespace, name string) (*rbacv1.Role, error)
	GetClusterRole(name string) (*rbacv1.ClusterRole, error)
}

// NotFoundError is the error for a missing role or cluster role:
// role.rbac.authorization.k8s.io "NAME" not found, as kube-apiserver words
// it in authorization reasons. kind is "role" or "clusterrole".
func NotFoundError(kind, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: kind}, name)
}

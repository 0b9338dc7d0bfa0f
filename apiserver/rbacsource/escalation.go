package rbacsource

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz/rbac"
)

// Escalation is the apiserver.EscalationChecker of RBAC writes: a Role or
// ClusterRole may only grant what the writer holds (or may escalate),
// a binding may only reference a role whose permissions the writer holds
// (or may bind).
type Escalation struct {
	Guard *rbac.Guard
}

var _ apiserver.EscalationChecker = Escalation{}

// CheckRBACWrite implements apiserver.EscalationChecker. Objects that are
// not RBAC objects pass.
func (e Escalation) CheckRBACWrite(ctx context.Context, u authn.User, obj runtime.Object, namespace string) error {
	var resource, name string
	var err error
	switch o := obj.(type) {
	case *rbacv1.Role:
		resource, name = "roles", o.Name
		err = e.Guard.ConfirmRoleWrite(ctx, u, namespace, o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		resource, name = "clusterroles", o.Name
		err = e.Guard.ConfirmRoleWrite(ctx, u, "", o.Name, o.Rules, o.AggregationRule != nil)
	case *rbacv1.RoleBinding:
		resource, name = "rolebindings", o.Name
		err = e.Guard.CanBind(ctx, u, o.RoleRef, namespace)
	case *rbacv1.ClusterRoleBinding:
		resource, name = "clusterrolebindings", o.Name
		err = e.Guard.CanBind(ctx, u, o.RoleRef, "")
	default:
		return nil
	}
	if err == nil {
		return nil
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return rbac.Forbidden(resource, name, err)
}

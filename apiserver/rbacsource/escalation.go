package rbacsource

import (
	"context"
	"fmt"
	"net/http"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/rbac"
)

// Escalation is the apiserver.EscalationChecker of RBAC writes: a Role or
// ClusterRole may only grant what the writer holds (or may escalate),
// a binding may only reference a role whose permissions the writer holds
// (or may bind).
//
// The API server checks before it validates, as kube-apiserver does
// (C.2), so Escalation also sees references validation will refuse, and
// answers them as kube-apiserver's RBAC storage does: a roleRef of another
// API group passes when the writer may bind that group's role of that
// name, and is otherwise checked against the RBAC role of its kind and
// name; a roleRef of any kind but Role and ClusterRole is a 500.
type Escalation struct {
	Guard *rbac.Guard
	// Authorizer is asked whether the writer may bind a role of a
	// roleRef's API group when that is not rbac.authorization.k8s.io. Nil
	// asks nobody: such a reference is checked as one to the RBAC role.
	Authorizer authz.Authorizer
}

var _ apiserver.EscalationChecker = Escalation{}

// CheckRBACWrite implements apiserver.EscalationChecker. Objects that are
// not RBAC objects pass.
func (e Escalation) CheckRBACWrite(ctx context.Context, u authn.User, obj, old runtime.Object, namespace string) error {
	var resource, name string
	var err error
	switch o := obj.(type) {
	case *rbacv1.Role:
		resource, name = "roles", o.Name
		err = e.Guard.ConfirmRoleWrite(ctx, u, namespace, o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		// Setting, changing or dropping an aggregationRule needs full
		// authority.
		oldRole, _ := old.(*rbacv1.ClusterRole)
		resource, name = "clusterroles", o.Name
		err = e.Guard.ConfirmRoleWrite(ctx, u, "", o.Name, o.Rules, aggregates(o) || aggregates(oldRole))
	case *rbacv1.RoleBinding:
		resource, name = "rolebindings", o.Name
		err = e.canBind(ctx, u, o.RoleRef, namespace)
	case *rbacv1.ClusterRoleBinding:
		resource, name = "clusterrolebindings", o.Name
		err = e.canBind(ctx, u, o.RoleRef, "")
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

// aggregates reports whether r gathers the rules of other cluster roles:
// an aggregationRule without selectors gathers none (and is invalid).
func aggregates(r *rbacv1.ClusterRole) bool {
	return r != nil && r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// canBind is Guard.CanBind for a roleRef as the client sent it, which
// may not be valid.
func (e Escalation) canBind(ctx context.Context, u authn.User, ref rbacv1.RoleRef, namespace string) error {
	var resource string
	switch ref.Kind {
	case "Role":
		resource = "roles"
	case "ClusterRole":
		resource = "clusterroles"
	default:
		if authz.InGroup(u, authz.SystemMasters) {
			return nil
		}
		// kube-apiserver fails to resolve the role and answers with its
		// resolver's error as it is.
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Reason: metav1.StatusReasonUnknown, Message: fmt.Sprintf("unsupported role reference kind: %q", ref.Kind)}}
	}
	if ref.APIGroup != "" && ref.APIGroup != rbacv1.GroupName {
		if e.Authorizer != nil {
			d, _, _ := e.Authorizer.Authorize(ctx, authz.Attributes{User: u, Verb: "bind", ResourceRequest: true,
				APIGroup: ref.APIGroup, APIVersion: "*", Resource: resource, Namespace: namespace, Name: ref.Name})
			if d == authz.Allow {
				return nil
			}
		}
		// Roles are found by kind and name.
		ref.APIGroup = rbacv1.GroupName
	}
	return e.Guard.CanBind(ctx, u, ref, namespace)
}

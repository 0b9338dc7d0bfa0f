// Package rbac evaluates rbac.authorization.k8s.io/v1 Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings with kube-apiserver's semantics, and
// guards writes of those objects against privilege escalation.
//
// RBAC only grants: a request is allowed when any rule of any role bound
// to the user allows it, and otherwise RBAC has no opinion. Cluster role
// bindings apply everywhere; role bindings only to requests in their own
// namespace, where a referenced ClusterRole's rules are limited to that
// namespace. Cluster-scoped requests use cluster role bindings only.
package rbac

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Authorizer is the RBAC authorizer over a RuleSource.
type Authorizer struct {
	source RuleSource
}

var _ authz.Authorizer = (*Authorizer)(nil)

// New returns the RBAC authorizer reading from source.
func New(source RuleSource) *Authorizer {
	return &Authorizer{source: source}
}

// Authorize allows a when a rule bound to a.User allows it, with the
// reason naming the binding (RBAC: allowed by ClusterRoleBinding "b" of
// ClusterRole "r" to User "u"). Otherwise it has no opinion, and the
// reason lists any roles or bindings it could not read (RBAC:
// role.rbac.authorization.k8s.io "x" not found). It never returns an
// error: what it could not read is only a reason.
func (az *Authorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	var (
		allowed   bool
		allowedBy Grant
		errs      []error
	)
	az.VisitRules(a.User, a.Namespace, func(g *Grant, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
			return true
		}
		if RuleAllows(&a, rule) {
			allowed, allowedBy = true, *g
			return false
		}
		return true
	})
	if allowed {
		return authz.Allow, string(allowedBy.appendTo(append(make([]byte, 0, 160), "RBAC: allowed by "...))), nil
	}
	if len(errs) > 0 {
		return authz.NoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authz.NoOpinion, "", nil
}

// Grant says how a rule reaches a user: through which binding, of which
// role, to which of its subjects. Exactly one of ClusterRoleBinding and
// RoleBinding is set.
type Grant struct {
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	RoleBinding        *rbacv1.RoleBinding
	Subject            *rbacv1.Subject
}

// String describes g as kube-apiserver does in authorization reasons:
// ClusterRoleBinding "NAME" of ClusterRole "ROLE" to Group "GROUP", or
// RoleBinding "NAME/NS" of Role "ROLE" to ServiceAccount "SA/NS".
func (g *Grant) String() string {
	return string(g.appendTo(make([]byte, 0, 128)))
}

// appendTo appends String() to b. It is on every allowed request's path,
// so it avoids fmt.
func (g *Grant) appendTo(b []byte) []byte {
	var ref rbacv1.RoleRef
	namespace := ""
	if g.ClusterRoleBinding != nil {
		ref = g.ClusterRoleBinding.RoleRef
		b = append(b, "ClusterRoleBinding "...)
		b = strconv.AppendQuote(b, g.ClusterRoleBinding.Name)
	} else {
		ref, namespace = g.RoleBinding.RoleRef, g.RoleBinding.Namespace
		b = append(b, "RoleBinding "...)
		b = strconv.AppendQuote(b, g.RoleBinding.Name+"/"+namespace)
	}
	b = append(b, " of "...)
	b = append(b, ref.Kind...)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, ref.Name)
	b = append(b, " to "...)
	b = append(b, g.Subject.Kind...)
	b = append(b, ' ')
	if g.Subject.Kind == rbacv1.ServiceAccountKind {
		if g.Subject.Namespace != "" {
			namespace = g.Subject.Namespace
		}
		return strconv.AppendQuote(b, g.Subject.Name+"/"+namespace)
	}
	return strconv.AppendQuote(b, g.Subject.Name)
}

// VisitRules calls visit with every rule granted to u for requests in
// namespace ("" for cluster-scoped requests): those of cluster role
// bindings first, then those of role bindings in namespace. A binding
// whose role cannot be read, or a source that cannot list, is reported
// once through err with a nil grant and rule, and visiting goes on.
// Visiting stops when visit returns false. The Grant passed to visit is
// only valid during the call.
func (az *Authorizer) VisitRules(u authn.User, namespace string, visit func(g *Grant, rule *rbacv1.PolicyRule, err error) bool) {
	var g Grant
	crbs, err := az.source.ListClusterRoleBindings(u)
	if err != nil && !visit(nil, nil, err) {
		return
	}
	for _, b := range crbs {
		s := appliesTo(u, b.Subjects, "")
		if s < 0 {
			continue
		}
		rules, err := az.RoleRefRules(b.RoleRef, "")
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		g = Grant{ClusterRoleBinding: b, Subject: &b.Subjects[s]}
		for i := range rules {
			if !visit(&g, &rules[i], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := az.source.ListRoleBindings(namespace, u)
	if err != nil && !visit(nil, nil, err) {
		return
	}
	for _, b := range rbs {
		s := appliesTo(u, b.Subjects, namespace)
		if s < 0 {
			continue
		}
		rules, err := az.RoleRefRules(b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		g = Grant{RoleBinding: b, Subject: &b.Subjects[s]}
		for i := range rules {
			if !visit(&g, &rules[i], nil) {
				return
			}
		}
	}
}

// RulesFor returns every rule granted to u for requests in namespace, and
// the errors met reading the roles (the rules are then incomplete).
func (az *Authorizer) RulesFor(u authn.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	az.VisitRules(u, namespace, func(_ *Grant, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		} else {
			rules = append(rules, *rule)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// RoleRefRules returns the rules of the role ref points at: a Role in
// namespace, or a ClusterRole, of rbac.authorization.k8s.io. A reference
// to any other API group is an error, so that a binding that slipped past
// validation grants nothing; an empty group counts as
// rbac.authorization.k8s.io, the default clients may leave out.
func (az *Authorizer) RoleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	if ref.APIGroup != rbacv1.GroupName && ref.APIGroup != "" {
		return nil, fmt.Errorf("unsupported role reference API group: %q", ref.APIGroup)
	}
	switch ref.Kind {
	case "Role":
		r, err := az.source.GetRole(namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "ClusterRole":
		r, err := az.source.GetClusterRole(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// appliesTo returns the index of the first subject that names u, or -1.
// namespace is what a ServiceAccount subject without a namespace defaults
// to; with neither, such a subject names nobody.
func appliesTo(u authn.User, subjects []rbacv1.Subject, namespace string) int {
	for i := range subjects {
		s := &subjects[i]
		switch s.Kind {
		case rbacv1.UserKind:
			if u.Name == s.Name {
				return i
			}
		case rbacv1.GroupKind:
			if authz.InGroup(u, s.Name) {
				return i
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			if ns != "" && isServiceAccountUser(u.Name, ns, s.Name) {
				return i
			}
		}
	}
	return -1
}

const serviceAccountPrefix = "system:serviceaccount:"

// serviceAccountUser returns the user name of service account ns/name.
func serviceAccountUser(ns, name string) string {
	return serviceAccountPrefix + ns + ":" + name
}

// isServiceAccountUser reports whether user is serviceAccountUser(ns,
// name), without building the string.
func isServiceAccountUser(user, ns, name string) bool {
	return len(user) == len(serviceAccountPrefix)+len(ns)+1+len(name) &&
		user[:len(serviceAccountPrefix)] == serviceAccountPrefix &&
		user[len(serviceAccountPrefix):len(serviceAccountPrefix)+len(ns)] == ns &&
		user[len(serviceAccountPrefix)+len(ns)] == ':' &&
		user[len(serviceAccountPrefix)+len(ns)+1:] == name
}

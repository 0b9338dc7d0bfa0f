package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Guard decides whether a user may write a Role, ClusterRole, RoleBinding
// or ClusterRoleBinding without gaining permissions it does not hold, as
// kube-apiserver's RBAC storage does:
//
//   - members of system:masters may write anything;
//   - a role may be written by a user holding every permission it grants,
//     or allowed the escalate verb on it; a ClusterRole with an
//     aggregationRule needs full authority (* on everything) instead;
//   - a binding may be written by a user holding every permission of the
//     role it references, or allowed the bind verb on that role.
//
// These checks come on top of authorizing the write request itself
// (create rolebindings, update clusterroles, ...), which the apiserver does
// first. Errors are meant to be returned as 403 Forbidden on the object
// being written; see Forbidden.
type Guard struct {
	rules *Authorizer
	verbs authz.Authorizer
}

// NewGuard returns a Guard reading the writer's permissions from rules and
// asking verbs (the apiserver's whole authorizer chain) about the escalate
// and bind verbs. A nil verbs asks rules.
func NewGuard(rules *Authorizer, verbs authz.Authorizer) *Guard {
	if verbs == nil {
		verbs = rules
	}
	return &Guard{rules: rules, verbs: verbs}
}

var errAggregationRule = errors.New("must have cluster-admin privileges to use the aggregationRule")

// fullAuthority is what setting an aggregationRule requires, since it can
// gather any rule.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// ConfirmNoEscalation returns nil when u holds, through RBAC in namespace
// ("" for cluster role bindings only), every permission rules grant, and
// an *EscalationError listing what it lacks otherwise. It does not
// consider system:masters or the escalate and bind verbs; ConfirmRoleWrite
// and CanBind do.
func (g *Guard) ConfirmNoEscalation(_ context.Context, u authn.User, rules []rbacv1.PolicyRule, namespace string) error {
	owner, resolveErr := g.rules.RulesFor(u, namespace)
	ok, missing := Covers(owner, rules)
	if ok {
		return nil
	}
	return &EscalationError{User: u, Missing: missing, ResolutionErr: resolveErr}
}

// ConfirmRoleWrite decides whether u may create or update the role
// namespace/name (a ClusterRole when namespace is "") so that it grants
// rules, with aggregation set when a ClusterRole has an aggregationRule.
func (g *Guard) ConfirmRoleWrite(ctx context.Context, u authn.User, namespace, name string, rules []rbacv1.PolicyRule, aggregation bool) error {
	if authz.InGroup(u, authz.SystemMasters) {
		return nil
	}
	resource := "roles"
	if namespace == "" {
		resource = "clusterroles"
	}
	if g.allowed(ctx, authz.Attributes{
		User: u, Verb: "escalate", ResourceRequest: true,
		APIGroup: rbacv1.GroupName, APIVersion: "*", Resource: resource, Namespace: namespace, Name: name,
	}) {
		return nil
	}
	if err := g.ConfirmNoEscalation(ctx, u, rules, namespace); err != nil {
		return err
	}
	if aggregation {
		if err := g.ConfirmNoEscalation(ctx, u, fullAuthority, ""); err != nil {
			return errAggregationRule
		}
	}
	return nil
}

// CanBind decides whether u may create or update a binding in namespace
// ("" for a ClusterRoleBinding) that references ref: u must be allowed the
// bind verb on the referenced role (checked in namespace), or hold every
// permission the role grants there. The bind verb is always asked about
// roles or clusterroles of rbac.authorization.k8s.io, whatever API group
// ref names: roles are only ever resolved in that group. A role that does
// not exist is refused with a 404 NotFound on roles or clusterroles, any
// other role that cannot be read with the error that says so.
func (g *Guard) CanBind(ctx context.Context, u authn.User, ref rbacv1.RoleRef, namespace string) error {
	if authz.InGroup(u, authz.SystemMasters) {
		return nil
	}
	var resource string
	switch ref.Kind {
	case "ClusterRole":
		resource = "clusterroles"
	case "Role":
		resource = "roles"
	}
	if resource != "" && g.allowed(ctx, authz.Attributes{
		User: u, Verb: "bind", ResourceRequest: true,
		APIGroup: rbacv1.GroupName, Resource: resource, Namespace: namespace, Name: ref.Name,
	}) {
		return nil
	}
	rules, err := g.rules.RoleRefRules(ref, namespace)
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(rbacv1.Resource(resource), ref.Name)
	}
	if err != nil {
		return err
	}
	return g.ConfirmNoEscalation(ctx, u, rules, namespace)
}

func (g *Guard) allowed(ctx context.Context, a authz.Attributes) bool {
	d, _, _ := g.verbs.Authorize(ctx, a)
	return d == authz.Allow
}

// Forbidden wraps err, from the Guard, as the 403 kube-apiserver answers
// a refused write of the RBAC object resource/name with, for example
// rolebindings.rbac.authorization.k8s.io "dev" is forbidden: user "bob"
// (groups=["system:authenticated"]) is attempting to grant RBAC
// permissions not currently held: ….
func Forbidden(resource, name string, err error) *apierrors.StatusError {
	return apierrors.NewForbidden(rbacv1.Resource(resource), name, err)
}

// EscalationError is the refusal of a write that would grant permissions
// the writer does not hold.
type EscalationError struct {
	User authn.User
	// Missing are the permissions not held, one verb of one resource (or
	// path) each before Error compacts them.
	Missing []rbacv1.PolicyRule
	// ResolutionErr, when not nil, is why the writer's own permissions
	// could not all be read.
	ResolutionErr error
}

func (e *EscalationError) Error() string {
	var lines []string
	for _, r := range compactRules(e.Missing) {
		if s := compactString(r); !slices.Contains(lines, s) {
			lines = append(lines, s)
		}
	}
	slices.Sort(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		e.User.Name, e.User.Groups, strings.Join(lines, "\n"))
	if e.ResolutionErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", e.ResolutionErr)
	}
	return msg
}

// compactRules merges rules of one group, one resource and at most one
// name that differ only in verbs.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct {
		group, resource, name string
		named                 bool
	}
	var out []rbacv1.PolicyRule
	at := map[key]int{}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 {
			out = append(out, r)
			continue
		}
		k := key{group: r.APIGroups[0], resource: r.Resources[0]}
		if len(r.ResourceNames) == 1 {
			k.name, k.named = r.ResourceNames[0], true
		}
		if i, ok := at[k]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		at[k] = len(out)
		r.Verbs = slices.Clone(r.Verbs)
		out = append(out, r)
	}
	return out
}

// compactString formats r as kube-apiserver does in escalation errors:
// {APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"APIGroups", r.APIGroups},
		{"Resources", r.Resources},
		{"NonResourceURLs", r.NonResourceURLs},
		{"ResourceNames", r.ResourceNames},
		{"Verbs", r.Verbs},
	} {
		if len(f.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

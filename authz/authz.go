// Package authz decides what an authenticated user may do, with
// kube-apiserver's semantics. It defines the request Attributes an
// authorizer sees, the parser that derives them from an HTTP request
// (RequestInfo), the one-method Authorizer interface with its three-valued
// Decision, the union that chains authorizers, the system:masters
// authorizer, the 403 Status body, and the authorization of Impersonate-*
// headers. RBAC lives in authz/rbac and the default policy in
// authz/bootstrap.
package authz

import (
	"context"
	"errors"
	"strings"

	"github.com/kubegate/kubegate/authn"
)

// Decision is an authorizer's answer. The zero value is NoOpinion, so a
// forgotten assignment never allows anything.
type Decision int

const (
	// NoOpinion means the authorizer neither allows nor denies; the next
	// authorizer in a union is asked, and if none allows, the request is
	// forbidden.
	NoOpinion Decision = iota
	// Allow ends the chain and lets the request through.
	Allow
	// Deny ends the chain and forbids the request.
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	default:
		return "no opinion"
	}
}

// Attributes describe one request as an authorizer sees it.
//
// A resource request (ResourceRequest true) is described by Verb,
// Namespace ("" for cluster-scoped requests), APIGroup ("" for the core
// group), APIVersion, Resource, Subresource ("" for the object itself) and
// Name ("" for collections). A non-resource request is described by Verb
// (the lower-cased HTTP method) and Path.
type Attributes struct {
	User            authn.User
	Verb            string
	Namespace       string
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Name            string
	ResourceRequest bool
	Path            string
}

// Authorizer decides whether a request may proceed. The reason is a short
// human-readable explanation, appended to the 403 message when not empty.
// An error means the authorizer could not decide fully; it may still
// return a decision (for example Allow from the rules it could read).
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f(ctx, a).
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// Union returns an Authorizer that asks each authorizer in turn and
// returns the first Allow or Deny with that authorizer's reason and error.
// When every one has no opinion, it returns NoOpinion with the non-empty
// reasons joined by newlines and the errors joined.
func Union(authorizers ...Authorizer) Authorizer {
	return union(authorizers)
}

type union []Authorizer

func (u union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var (
		reasons []string
		errs    []error
	)
	for _, az := range u {
		d, reason, err := az.Authorize(ctx, a)
		if d == Allow || d == Deny {
			return d, reason, err
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return NoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// SystemMasters is the group whose members are allowed everything, ahead
// of RBAC and even with every RBAC object deleted.
const SystemMasters = "system:masters"

// PrivilegedGroups returns an Authorizer that allows every request from a
// member of any of groups and has no opinion otherwise. kube-apiserver puts
// PrivilegedGroups(SystemMasters) first in its chain.
func PrivilegedGroups(groups ...string) Authorizer {
	groups = append([]string(nil), groups...)
	return AuthorizerFunc(func(_ context.Context, a Attributes) (Decision, string, error) {
		for _, g := range groups {
			if InGroup(a.User, g) {
				return Allow, "", nil
			}
		}
		return NoOpinion, "", nil
	})
}

// InGroup reports whether u is a member of group.
func InGroup(u authn.User, group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

var (
	_ Authorizer = AuthorizerFunc(nil)
	_ Authorizer = union(nil)
)

// Package authapi serves the API server's virtual authentication and
// authorization resources, which are answered and never stored:
//
//   - authentication.k8s.io/v1 selfsubjectreviews (kubectl auth whoami) and
//     tokenreviews;
//   - authorization.k8s.io/v1 selfsubjectaccessreviews (kubectl auth can-i),
//     selfsubjectrulesreviews (kubectl auth can-i --list),
//     subjectaccessreviews and localsubjectaccessreviews;
//   - serviceaccounts/token (TokenRequest, kubectl create token).
//
// Each is an apiserver.Creator; Creators returns them keyed as
// apiserver.Config.Creators expects.
package authapi

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authz"
)

// RulesResolver lists the rules granted to a user in a namespace, as
// rbac.Authorizer does. An error means the list may be incomplete.
type RulesResolver interface {
	RulesFor(u authn.User, namespace string) ([]rbacv1.PolicyRule, error)
}

// Config is what the resources need.
type Config struct {
	// Authorizer answers access reviews; it should be the server's whole
	// chain. Required for the authorization.k8s.io resources.
	Authorizer authz.Authorizer
	// Rules answers rules reviews; nil leaves selfsubjectrulesreviews out.
	Rules RulesResolver
	// Tokens authenticates the token of a TokenReview, given as a bearer
	// token on a request that carries nothing else; it should be built from
	// the server's own token authenticators, without API audiences (the
	// review sets the audiences to check in the request's context). Nil
	// leaves tokenreviews out.
	Tokens authn.Request
	// APIAudiences are the audiences a TokenReview without spec.audiences
	// checks, and static tokens are taken to have.
	APIAudiences []string
	// Issuer signs TokenRequest tokens; nil leaves serviceaccounts/token out.
	Issuer *serviceaccount.Issuer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (c *Config) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// The keys of Creators.
const (
	SelfSubjectReviewsKey        = "authentication.k8s.io/v1/selfsubjectreviews"
	TokenReviewsKey              = "authentication.k8s.io/v1/tokenreviews"
	SelfSubjectAccessReviewsKey  = "authorization.k8s.io/v1/selfsubjectaccessreviews"
	SelfSubjectRulesReviewsKey   = "authorization.k8s.io/v1/selfsubjectrulesreviews"
	SubjectAccessReviewsKey      = "authorization.k8s.io/v1/subjectaccessreviews"
	LocalSubjectAccessReviewsKey = "authorization.k8s.io/v1/localsubjectaccessreviews"
	TokenRequestKey              = "/v1/serviceaccounts/token"
)

// Creators returns the resources c makes possible, keyed by
// GROUP/VERSION/RESOURCE[/SUBRESOURCE].
func Creators(c Config) map[string]apiserver.Creator {
	cp := &c
	m := map[string]apiserver.Creator{SelfSubjectReviewsKey: &selfSubjectReviews{cp}}
	if c.Tokens != nil {
		m[TokenReviewsKey] = &tokenReviews{cp}
	}
	if c.Authorizer != nil {
		m[SelfSubjectAccessReviewsKey] = &selfSubjectAccessReviews{cp}
		m[SubjectAccessReviewsKey] = &subjectAccessReviews{cp}
		m[LocalSubjectAccessReviewsKey] = &localSubjectAccessReviews{cp}
	}
	if c.Rules != nil {
		m[SelfSubjectRulesReviewsKey] = &selfSubjectRulesReviews{cp}
	}
	if c.Issuer != nil {
		m[TokenRequestKey] = &tokenRequests{cp}
	}
	return m
}

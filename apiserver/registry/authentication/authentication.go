// Package authentication is the authentication.k8s.io/v1 API group as the
// API server serves it: its virtual resources, answered and never stored,
//
//   - selfsubjectreviews (kubectl auth whoami) and tokenreviews;
//   - serviceaccounts/token, the core service accounts' subresource whose
//     kind is this group's TokenRequest (kubectl create token);
//
// and the Getter through which the server's service-account and bootstrap
// token authenticators read the objects a token names.
//
// Each resource is an apiserver.Creator, as it needs the server's token
// authenticators and issuer; Creators returns them keyed as
// apiserver.Config.Creators expects.
package authentication

import (
	"time"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
)

// Config is what the resources need.
type Config struct {
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
	SelfSubjectReviewsKey = "authentication.k8s.io/v1/selfsubjectreviews"
	TokenReviewsKey       = "authentication.k8s.io/v1/tokenreviews"
	TokenRequestKey       = "/v1/serviceaccounts/token"
)

// Creators returns the resources c makes possible, keyed by
// GROUP/VERSION/RESOURCE[/SUBRESOURCE]: selfsubjectreviews always.
func Creators(c Config) map[string]apiserver.Creator {
	cp := &c
	m := map[string]apiserver.Creator{SelfSubjectReviewsKey: &selfSubjectReviews{cp}}
	if c.Tokens != nil {
		m[TokenReviewsKey] = &tokenReviews{cp}
	}
	if c.Issuer != nil {
		m[TokenRequestKey] = &tokenRequests{cp}
	}
	return m
}

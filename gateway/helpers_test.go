package gateway

import (
	"context"
	"crypto"
	"crypto/x509"
	"slices"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

type (
	x509ExtKeyUsage    = x509.ExtKeyUsage
	cryptoPublicKey    = crypto.PublicKey
	authorizationAttrs = authz.Attributes
)

const serverAuth = x509.ExtKeyUsageServerAuth

var x509Parse = x509.ParseCertificate

// impersonationFunc adapts a yes-or-no function of the requester and the
// checked attributes to an authz.Authorizer.
type impersonationFunc func(ctx context.Context, u *authn.User, a authz.Attributes) (bool, string, error)

func (f impersonationFunc) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	ok, reason, err := f(ctx, &a.User, a)
	if err != nil || !ok {
		return authz.NoOpinion, reason, err
	}
	return authz.Allow, reason, nil
}

// allowUsers allows the named users to get /metrics and nothing else.
func allowUsers(names ...string) authz.Authorizer {
	return impersonationFunc(func(_ context.Context, u *authn.User, a authz.Attributes) (bool, string, error) {
		if a.ResourceRequest || a.Verb != "get" || a.Path != "/metrics" {
			return false, "", nil
		}
		return slices.Contains(names, u.Name), "", nil
	})
}

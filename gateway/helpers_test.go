package gateway

import (
	"context"
	"crypto"
	"crypto/x509"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubegate/kubegate/authn"
)

type (
	x509ExtKeyUsage    = x509.ExtKeyUsage
	cryptoPublicKey    = crypto.PublicKey
	authorizationAttrs = authorizationv1.ResourceAttributes
)

const serverAuth = x509.ExtKeyUsageServerAuth

var x509Parse = x509.ParseCertificate

type impersonationFunc func(ctx context.Context, u *authn.User, a authorizationv1.ResourceAttributes) (bool, string, error)

func (f impersonationFunc) AuthorizeImpersonation(ctx context.Context, u *authn.User, a authorizationv1.ResourceAttributes) (bool, string, error) {
	return f(ctx, u, a)
}

type nonResourceFunc func(ctx context.Context, u *authn.User, a authorizationv1.NonResourceAttributes) (bool, string, error)

func (f nonResourceFunc) AuthorizeNonResource(ctx context.Context, u *authn.User, a authorizationv1.NonResourceAttributes) (bool, string, error) {
	return f(ctx, u, a)
}

// allowUsers allows the named users to get /metrics and nothing else.
func allowUsers(names ...string) NonResourceAuthorizer {
	return nonResourceFunc(func(_ context.Context, u *authn.User, a authorizationv1.NonResourceAttributes) (bool, string, error) {
		if a.Verb != "get" || a.Path != "/metrics" {
			return false, "", nil
		}
		return slices.Contains(names, u.Name), "", nil
	})
}

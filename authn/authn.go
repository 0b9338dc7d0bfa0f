// Package authn decides who a request comes from, with kube-apiserver's
// semantics. It defines the identity (User), the result (Response), the two
// authenticator interfaces and the small wrappers that compose them. Each
// concrete authenticator lives in its own sub-package and none imports
// another.
//
// Every authenticator answers in one of three ways:
//
//	(nil, false, nil)  the request carries no credential of my kind
//	(nil, false, err)  it carries one of my kind, and it is bad
//	(resp, true, nil)  authenticated
package authn

import (
	"context"
	"net/http"
)

// Well-known names, as kube-apiserver uses them.
const (
	AllAuthenticated   = "system:authenticated"
	AllUnauthenticated = "system:unauthenticated"
	Anonymous          = "system:anonymous"

	// CredentialIDKey is the extra key carrying a non-secret fingerprint of
	// the credential that authenticated the request.
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
)

// User is an authenticated identity. A nil Extra means no extra values.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Response is a successful authentication. An authenticator may hand the
// same Response to many callers (from a cache or a static table): callers
// read it, and copy it before changing anything in it. Audiences, when non-empty, are
// the audiences the credential was accepted for. Authenticator names which
// authenticator matched (for metrics, audit and whoami), for example
// "x509", "tokenfile", "serviceaccount", "requestheader", "anonymous".
type Response struct {
	User          User
	Audiences     []string
	Authenticator string
}

// Request authenticates an HTTP request.
type Request interface {
	AuthenticateRequest(r *http.Request) (*Response, bool, error)
}

// Token authenticates a bearer token.
type Token interface {
	AuthenticateToken(ctx context.Context, token string) (*Response, bool, error)
}

// RequestFunc adapts a function to Request.
type RequestFunc func(r *http.Request) (*Response, bool, error)

// AuthenticateRequest calls f(r).
func (f RequestFunc) AuthenticateRequest(r *http.Request) (*Response, bool, error) { return f(r) }

// TokenFunc adapts a function to Token.
type TokenFunc func(ctx context.Context, token string) (*Response, bool, error)

// AuthenticateToken calls f(ctx, token).
func (f TokenFunc) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	return f(ctx, token)
}

type ctxKey struct{}

// WithResponse returns a copy of ctx carrying resp.
func WithResponse(ctx context.Context, resp *Response) context.Context {
	return context.WithValue(ctx, ctxKey{}, resp)
}

// ResponseFrom returns the authentication response stored in ctx.
func ResponseFrom(ctx context.Context) (*Response, bool) {
	r, ok := ctx.Value(ctxKey{}).(*Response)
	return r, ok && r != nil
}

// UserFrom returns the authenticated user stored in ctx.
func UserFrom(ctx context.Context) (User, bool) {
	r, ok := ResponseFrom(ctx)
	if !ok {
		return User{}, false
	}
	return r.User, true
}

var (
	_ Request = RequestFunc(nil)
	_ Token   = TokenFunc(nil)
)

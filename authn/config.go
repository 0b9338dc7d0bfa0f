package authn

import "slices"

// Config lists the authenticators to combine. A nil or empty field turns
// that authenticator off.
type Config struct {
	// RequestHeader authenticates requests from a front proxy; it runs
	// first.
	RequestHeader Request
	// X509 authenticates client certificates; it runs second.
	X509 Request
	// StaticTokens are tried first, in order, and never cached: a lookup
	// in a static token file is cheaper than a cache hit, and a token
	// removed from the file must stop working as soon as the file is
	// reloaded, not when a cache entry expires.
	StaticTokens []Token
	// Tokens are tried after StaticTokens, in order, as one cached token
	// union. All tokens are read from the Authorization header and from the
	// WebSocket bearer sub-protocol.
	Tokens []Token
	// TokenCache caches the Tokens union when either TTL is positive.
	TokenCache CacheOptions
	// APIAudiences, when set, are the audiences tokens are checked against,
	// and a response naming other audiences only is refused.
	APIAudiences []string
	// Anonymous makes a request without any credential the anonymous user.
	// A request with a bad credential is refused all the same.
	Anonymous bool
	// AnonymousPaths, when set, limit Anonymous to requests for these
	// paths exactly, as an authentication configuration's conditions do.
	AnonymousPaths []string
	// AnonymousTrees, when set and AnonymousPaths are not, limit
	// Anonymous to requests for these paths and the paths under them
	// (NewAnonymousUnder).
	AnonymousTrees []string
}

// New assembles kube-apiserver's authenticator from c, composing the
// exported decorators in kube-apiserver's order (A.0):
//
//	WithAPIAudiences(                      when c.APIAudiences are set
//	  FailOnError(                         when c.Anonymous is set
//	    WithAuthenticatedGroup(
//	      Union(request-header, x509, Bearer(tokens), WebSocketBearer(tokens))),
//	    NewAnonymous()))
//
// where tokens is the union of the static tokens and the cached union of
// the other tokens (CacheTokens), given the API audiences. With nothing
// configured and anonymous off, no request authenticates.
//
// As in kube-apiserver, removing the credential and identity headers after
// a success is the job of the HTTP filter that passes the request on
// (StripCredentials or ClearIdentityHeaders, with c.IdentityHeaders()), not
// of the authenticator: a proxy that writes its upstream request from a
// filtered copy of the headers need not pay for it twice.
func New(c Config) Request {
	var rs []Request
	if c.RequestHeader != nil {
		rs = append(rs, c.RequestHeader)
	}
	if c.X509 != nil {
		rs = append(rs, c.X509)
	}
	if t := c.tokens(); t != nil {
		rs = append(rs, Bearer(t), WebSocketBearer(t))
	}
	a := WithAuthenticatedGroup(Union(rs...))
	if c.Anonymous {
		// A bad credential is refused, never anonymous.
		anon := NewAnonymousOnPaths(c.AnonymousPaths)
		if len(c.AnonymousPaths) == 0 && len(c.AnonymousTrees) > 0 {
			anon = NewAnonymousUnder(c.AnonymousTrees)
		}
		a = FailOnError(a, anon)
	}
	if len(c.APIAudiences) > 0 {
		a = WithAPIAudiences(a, c.APIAudiences)
	}
	return a
}

// tokens returns the token authenticator of c, or nil: the static tokens,
// then the other tokens as one union, cached when c.TokenCache says so
// and given the API audiences.
func (c Config) tokens() Token {
	var ts []Token
	ts = append(ts, c.StaticTokens...)
	if len(c.Tokens) > 0 {
		t := UnionTokens(c.Tokens...)
		var auds []string // nil: none
		if len(c.APIAudiences) > 0 {
			auds = slices.Clone(c.APIAudiences)
		}
		switch {
		case c.TokenCache.SuccessTTL > 0 || c.TokenCache.FailureTTL > 0:
			// The cache gives lookups the audiences itself, so that a
			// hit needs no context of its own.
			t = newTokenCache(t, c.TokenCache, auds)
		case len(auds) > 0:
			t = newTokenAudiences(t, auds)
		}
		// Static tokens carry no audiences, so they sit outside the
		// audience wrapper: same outcome, no context per request.
		ts = append(ts, t)
	}
	switch len(ts) {
	case 0:
		return nil
	case 1:
		return ts[0]
	}
	return UnionTokens(ts...)
}

// IdentityHeaders returns the configured authenticators that name
// identity headers of their own: the request-header authenticator, if it
// does. Pass them to StripCredentials or ClearIdentityHeaders.
func (c Config) IdentityHeaders() []IdentityHeaders {
	if id, ok := c.RequestHeader.(IdentityHeaders); ok {
		return []IdentityHeaders{id}
	}
	return nil
}

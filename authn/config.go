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
}

// New assembles kube-apiserver's authenticator from c:
//
//	check the API audiences (
//	  fail on error (
//	    authenticated group (
//	      union (request-header, x509, bearer(tokens), websocket(tokens))),
//	    anonymous))
//
// where tokens is the union of the static tokens and the cached union of
// the other tokens, given the API audiences. The result behaves as
// FailOnError, WithAuthenticatedGroup and Union nested so, in one call
// instead of one per wrapper.
// With nothing configured and anonymous off, no request authenticates.
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
	if len(c.StaticTokens)+len(c.Tokens) > 0 {
		var t Token
		if len(c.Tokens) > 0 {
			t = UnionTokens(c.Tokens...)
			var auds []string // nil: none
			if len(c.APIAudiences) > 0 {
				auds = slices.Clone(c.APIAudiences)
			}
			switch {
			case c.TokenCache.SuccessTTL > 0 || c.TokenCache.FailureTTL > 0:
				// The cache gives lookups the audiences itself, so
				// that a hit needs no context of its own.
				t = newTokenCache(t, c.TokenCache, auds)
			case len(auds) > 0:
				t = newTokenAudiences(t, auds)
			}
		}
		// Static tokens carry no audiences, so they sit outside the
		// audience wrapper: same outcome, no context per request.
		if len(c.StaticTokens) > 0 {
			ts := slices.Clone(c.StaticTokens)
			if t != nil {
				ts = append(ts, t)
			}
			t = UnionTokens(ts...)
		}
		rs = append(rs, Bearer(t), WebSocketBearer(t))
	}

	ch := &chain{union: newUnion(rs), anonymous: c.Anonymous}
	if len(c.APIAudiences) > 0 {
		ch.auds = slices.Clone(c.APIAudiences)
	}
	return ch
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

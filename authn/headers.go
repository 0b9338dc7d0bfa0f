package authn

import (
	"net/http"
	"slices"
	"strings"
)

// IdentityHeaders is implemented by authenticators that read identity
// headers, such as a request-header authenticator with configured names,
// so that those headers can be removed from every authenticated request.
type IdentityHeaders interface {
	// IsIdentityHeader reports whether the header named name (in any
	// case) carries identity this authenticator would believe.
	IsIdentityHeader(name string) bool
}

// IdentityHeadersFunc adapts a function to IdentityHeaders.
type IdentityHeadersFunc func(name string) bool

// IsIdentityHeader calls f(name).
func (f IdentityHeadersFunc) IsIdentityHeader(name string) bool { return f(name) }

var _ IdentityHeaders = IdentityHeadersFunc(nil)

// IdentityHeaderNames returns the IdentityHeaders of the header names and
// name prefixes given, compared in any case: those configured for
// request-header authentication, for instance, whether or not a
// request-header authenticator runs.
func IdentityHeaderNames(names, prefixes []string) IdentityHeaders {
	names, prefixes = slices.Clone(names), slices.Clone(prefixes)
	return IdentityHeadersFunc(func(name string) bool {
		for _, n := range names {
			if n != "" && strings.EqualFold(name, n) {
				return true
			}
		}
		for _, p := range prefixes {
			if p != "" && len(name) >= len(p) && strings.EqualFold(name[:len(p)], p) {
				return true
			}
		}
		return false
	})
}

// The identity headers a front proxy sets, as kubeadm configures
// kube-apiserver's --requestheader-* flags: the one place kubegate names
// them. They are removed after every successful authentication whatever
// the configuration.
const (
	RemoteUserHeader        = "X-Remote-User"
	RemoteUIDHeader         = "X-Remote-Uid"
	RemoteGroupHeader       = "X-Remote-Group"
	RemoteExtraHeaderPrefix = "X-Remote-Extra-"
)

// StripCredentials returns a Request that, when a authenticates a request,
// clears its identity headers as ClearIdentityHeaders does: the step
// kube-apiserver's authentication filter takes after every success.
func StripCredentials(a Request, ids ...IdentityHeaders) Request {
	return stripCredentials{a: a, ids: ids}
}

type stripCredentials struct {
	a   Request
	ids []IdentityHeaders
}

var _ Request = stripCredentials{}

func (s stripCredentials) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	resp, ok, err := s.a.AuthenticateRequest(r)
	if err != nil || !ok {
		return nil, false, err
	}
	ClearIdentityHeaders(r.Header, s.ids...)
	return resp, true, nil
}

// ClearIdentityHeaders deletes from h the Authorization header, the
// standard X-Remote-User, X-Remote-Uid, X-Remote-Group and X-Remote-Extra-*
// headers, and every header one of ids names, so that nothing downstream
// sees a credential or an identity header the client sent. One pass over
// the headers, names compared in any case, so that a header map built by
// hand with non-canonical keys is cleared too.
func ClearIdentityHeaders(h http.Header, ids ...IdentityHeaders) {
	for name := range h {
		if IsStandardIdentityHeader(name) || isIdentityHeader(ids, name) {
			delete(h, name)
		}
	}
}

func isIdentityHeader(ids []IdentityHeaders, name string) bool {
	for _, id := range ids {
		if id.IsIdentityHeader(name) {
			return true
		}
	}
	return false
}

// IsStandardIdentityHeader reports whether name, in any case, is
// Authorization or one of the standard front-proxy identity headers.
func IsStandardIdentityHeader(name string) bool {
	if name == "" {
		return false
	}
	if c := name[0] | 0x20; c != 'a' && c != 'x' { // most names stop here
		return false
	}
	switch len(name) { // then most of the rest: one comparison at most
	case len(RemoteUIDHeader):
		return strings.EqualFold(name, RemoteUIDHeader)
	case len(RemoteUserHeader): // and of Authorization
		return strings.EqualFold(name, RemoteUserHeader) || strings.EqualFold(name, "Authorization")
	case len(RemoteGroupHeader):
		return strings.EqualFold(name, RemoteGroupHeader)
	}
	return len(name) >= len(RemoteExtraHeaderPrefix) && strings.EqualFold(name[:len(RemoteExtraHeaderPrefix)], RemoteExtraHeaderPrefix)
}

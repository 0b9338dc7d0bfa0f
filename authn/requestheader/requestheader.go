// Package requestheader authenticates requests forwarded by a trusted front
// proxy, as kube-apiserver's --requestheader-* flags do. The proxy's client
// certificate must verify against the front-proxy CA bundle (never the
// client CA) and its CN must be allowed; only then are the identity headers
// the proxy set believed. The proxy certificate's own CN and O are not the
// identity.
package requestheader

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/internal/chain"
)

// Name is the value of authn.Response.Authenticator for this package.
const Name = "requestheader"

// The header names kubeadm configures and API aggregation expects.
const (
	UserHeader        = authn.RemoteUserHeader
	UIDHeader         = authn.RemoteUIDHeader
	GroupHeader       = authn.RemoteGroupHeader
	ExtraHeaderPrefix = authn.RemoteExtraHeaderPrefix
)

// Options configure an Authenticator.
type Options struct {
	// AllowedNames lists the proxy certificate CNs accepted; empty means
	// any certificate that verifies.
	AllowedNames []string
	// UsernameHeaders are tried in order; the first non-empty value is the
	// user name. At least one is required.
	UsernameHeaders []string
	// UIDHeaders are tried in order; the first non-empty value is the UID.
	UIDHeaders []string
	// GroupHeaders each contribute every non-empty value, in order. A value
	// is one group; commas are not separators.
	GroupHeaders []string
	// ExtraHeaderPrefixes: a header named <prefix><key> adds its values to
	// extra[<key>], the key lower-cased and then percent-decoded.
	ExtraHeaderPrefixes []string
	// CacheSize bounds the proxy-certificate verification cache; zero means
	// the default and a negative value turns the cache off.
	CacheSize int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Default returns the header names kubeadm uses, with the UID header, and
// no restriction on the proxy CN.
func Default() Options {
	return Options{
		UsernameHeaders:     []string{UserHeader},
		UIDHeaders:          []string{UIDHeader},
		GroupHeaders:        []string{GroupHeader},
		ExtraHeaderPrefixes: []string{ExtraHeaderPrefix},
	}
}

// Authenticator authenticates requests from a front proxy.
type Authenticator struct {
	v        *chain.Verifier[error]
	user     []string // canonical header keys
	uid      []string
	group    []string
	prefixes []string // lower-cased
	// firsts marks the lower-cased first bytes of every name and prefix
	// above, so IsIdentityHeader rejects most header names in one lookup.
	firsts [256]bool
}

var (
	_ authn.Request         = (*Authenticator)(nil)
	_ authn.IdentityHeaders = (*Authenticator)(nil)
)

// New returns an Authenticator trusting the PEM front-proxy CA bundle caPEM.
func New(caPEM []byte, o Options) (*Authenticator, error) {
	a := &Authenticator{}
	var err error
	if a.user, err = canonical("UsernameHeaders", o.UsernameHeaders); err != nil {
		return nil, err
	}
	if len(a.user) == 0 {
		return nil, errors.New("requestheader: UsernameHeaders: at least one header name is required")
	}
	if a.uid, err = canonical("UIDHeaders", o.UIDHeaders); err != nil {
		return nil, err
	}
	if a.group, err = canonical("GroupHeaders", o.GroupHeaders); err != nil {
		return nil, err
	}
	if a.prefixes, err = canonical("ExtraHeaderPrefixes", o.ExtraHeaderPrefixes); err != nil {
		return nil, err
	}
	for i, p := range a.prefixes {
		a.prefixes[i] = strings.ToLower(p)
	}
	for _, names := range [][]string{a.user, a.uid, a.group, a.prefixes} {
		for _, n := range names {
			a.firsts[lowerByte(n[0])] = true
		}
	}
	allowed := slices.Clone(o.AllowedNames)
	for i, n := range allowed {
		if strings.TrimSpace(n) == "" {
			return nil, fmt.Errorf("requestheader: AllowedNames[%d]: empty name", i)
		}
	}
	check := func(leaf *x509.Certificate, _ [][]*x509.Certificate) error {
		if len(allowed) == 0 || slices.Contains(allowed, leaf.Subject.CommonName) {
			return nil
		}
		return fmt.Errorf("x509: subject with cn=%s is not in the allowed list", leaf.Subject.CommonName)
	}
	a.v, err = chain.New(caPEM, check, chain.Options{CacheSize: o.CacheSize, Now: o.Now})
	if err != nil {
		return nil, fmt.Errorf("front-proxy CA bundle: %w", err)
	}
	return a, nil
}

func canonical(field string, names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for i, n := range names {
		if strings.TrimSpace(n) == "" {
			return nil, fmt.Errorf("requestheader: %s[%d]: empty header name", field, i)
		}
		out = append(out, http.CanonicalHeaderKey(n))
	}
	return out, nil
}

// Load replaces the front-proxy CA bundle atomically; on error the previous
// bundle stays in force. Cached verifications are dropped.
func (a *Authenticator) Load(caPEM []byte) error {
	if err := a.v.Load(caPEM); err != nil {
		return fmt.Errorf("front-proxy CA bundle: %w", err)
	}
	return nil
}

// AuthenticateRequest verifies the proxy certificate, then reads the
// identity headers. No certificate, or a trusted proxy that sent no user
// name, is not this authenticator's kind of credential. On success the
// identity headers are removed from r.
// CanSucceed reports whether r could authenticate here at all: it needs
// a client certificate and a non-empty username header. A union asks this
// authenticator last (for its error only) when it cannot.
func (a *Authenticator) CanSucceed(r *http.Request) bool {
	return r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && first(r.Header, a.user) != ""
}

var _ authn.Prechecker = (*Authenticator)(nil)

func (a *Authenticator) AuthenticateRequest(r *http.Request) (*authn.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	notAllowed, err := a.v.Verify(r.TLS.PeerCertificates)
	if err != nil {
		return nil, false, err
	}
	if notAllowed != nil {
		return nil, false, notAllowed
	}
	name := first(r.Header, a.user)
	if name == "" {
		return nil, false, nil
	}
	resp := &authn.Response{
		User: authn.User{
			Name: name,
			UID:  first(r.Header, a.uid),
			// The chain adds system:authenticated to the groups of most
			// users; adding it here, where the groups are gathered,
			// spares the chain a copy of the response.
			Groups: authn.AddAuthenticated(name, all(r.Header, a.group)),
			Extra:  a.extra(r.Header),
		},
		Authenticator: Name,
	}
	a.ClearHeaders(r.Header)
	return resp, true, nil
}

// ClearHeaders deletes every header this authenticator reads. Names are
// compared case-insensitively, so a header map built by hand with
// non-canonical keys is cleared too.
func (a *Authenticator) ClearHeaders(h http.Header) {
	for name := range h {
		if a.IsIdentityHeader(name) {
			delete(h, name)
		}
	}
}

// IsIdentityHeader reports whether name, in any case, is one of the
// configured user, UID or group headers or starts with an extra prefix.
func (a *Authenticator) IsIdentityHeader(name string) bool {
	if name == "" || !a.firsts[lowerByte(name[0])] {
		return false
	}
	if a.extraKey(name) >= 0 {
		return true
	}
	for _, names := range [][]string{a.user, a.uid, a.group} {
		for _, n := range names {
			if strings.EqualFold(name, n) {
				return true
			}
		}
	}
	return false
}

// first returns the first non-empty value of the first header in keys
// that has one.
func first(h http.Header, keys []string) string {
	for _, k := range keys {
		if v := h[k]; len(v) > 0 && v[0] != "" {
			return v[0]
		}
	}
	return ""
}

// all returns every non-empty value of every header in keys, in order,
// with room for one more.
func all(h http.Header, keys []string) []string {
	n := 1
	for _, k := range keys {
		n += len(h[k])
	}
	out := make([]string, 0, n)
	for _, k := range keys {
		for _, v := range h[k] {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// extraKey returns the length of the configured prefix name starts with,
// compared case-insensitively, or -1.
func (a *Authenticator) extraKey(name string) int {
	for _, p := range a.prefixes {
		if len(name) >= len(p) && strings.EqualFold(name[:len(p)], p) {
			return len(p)
		}
	}
	return -1
}

// extra collects the extra headers; nil when there are none. Header names
// are visited in sorted order so values gathered under one key from
// several headers come out in a stable order.
func (a *Authenticator) extra(h http.Header) map[string][]string {
	if len(a.prefixes) == 0 {
		return nil
	}
	var extra map[string][]string
	for _, p := range a.prefixes {
		var names []string
		for name := range h {
			if len(name) >= len(p) && strings.EqualFold(name[:len(p)], p) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			key := ExtraKey(name[len(p):])
			if extra == nil {
				extra = make(map[string][]string)
			}
			extra[key] = append(extra[key], h[name]...)
		}
	}
	return extra
}

// ExtraKey decodes the part of a header name after an extra prefix into an
// extra key: lower-cased, then percent-decoded. A key that does not decode
// is kept lower-cased as it is.
func ExtraKey(encoded string) string {
	lower := strings.ToLower(encoded)
	key, err := url.PathUnescape(lower)
	if err != nil {
		return lower
	}
	return key
}

// lowerByte lower-cases an ASCII letter and leaves any other byte alone.
func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

package gateway

import (
	"net/http"
	"slices"
	"strings"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// remotePrefix starts every request-header identity header name.
const remotePrefix = "X-Remote-"

// scrubber recognises every header through which a client could claim
// an identity: Authorization and the standard identity headers
// (authn.IsStandardIdentityHeader), the whole X-Remote-* family, and the
// headers of ids, such as the names configured for request-header
// authentication. Names are matched case-insensitively, so odd
// spellings cannot slip through.
type scrubber struct {
	ids []authn.IdentityHeaders
}

// matches reports whether the header named k is removed. Besides the
// identity names, every name with an underscore goes, as nginx drops
// them by default: a server or middlebox that reads X_Remote_User as
// X-Remote-User would take a client's header for an identity. No
// Kubernetes client sends such names.
func (s scrubber) matches(k string) bool {
	if strings.IndexByte(k, '_') >= 0 || hasPrefixFold(k, remotePrefix) || authn.IsStandardIdentityHeader(k) {
		return true
	}
	for _, id := range s.ids {
		if id.IsIdentityHeader(k) {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// setRemoteIdentity sets u as request-header identity headers on h: one
// X-Remote-Group line per group and X-Remote-Extra-<escaped key> per extra
// value. h must already be scrubbed. The values share u's slices, capped
// so that an append to one copies it: nothing that writes h changes u.
func setRemoteIdentity(h http.Header, u *authn.User) {
	setIdentity(h, u, authn.RemoteUserHeader, authn.RemoteUIDHeader, authn.RemoteGroupHeader, authn.RemoteExtraHeaderPrefix, u.Groups)
}

// setImpersonation sets u as Impersonate-* headers on h, as
// setRemoteIdentity does. The group system:authenticated is left out:
// the upstream adds it to every impersonated user that is not anonymous.
func setImpersonation(h http.Header, u *authn.User) {
	groups := u.Groups
	if slices.Contains(groups, authn.AllAuthenticated) {
		groups = slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == authn.AllAuthenticated })
	}
	setIdentity(h, u, authz.ImpersonateUserHeader, authz.ImpersonateUIDHeader, authz.ImpersonateGroupHeader, authz.ImpersonateExtraHeaderPrefix, groups)
}

func setIdentity(h http.Header, u *authn.User, userKey, uidKey, groupKey, extraPrefix string, groups []string) {
	vals := []string{u.Name, u.UID}
	h[userKey] = vals[0:1:1]
	if u.UID != "" {
		h[uidKey] = vals[1:2:2]
	}
	if len(groups) > 0 {
		h[groupKey] = groups[:len(groups):len(groups)]
	}
	for k, vs := range u.Extra {
		h[extraPrefix+escapeHeaderKey(k)] = vs[:len(vs):len(vs)]
	}
}

// escapeHeaderKey percent-encodes every byte of an extra key that may not
// appear in a header name, and '%' itself, so that the receiver's
// lower-case-then-unescape recovers the key exactly. Go canonicalises
// header names, which is why receivers lower-case keys; upper-case letters
// are escaped for the same reason.
func escapeHeaderKey(k string) string {
	need := false
	for i := 0; i < len(k); i++ {
		if !plainKeyByte(k[i]) {
			need = true
			break
		}
	}
	if !need {
		return k
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(k) + 8)
	for i := 0; i < len(k); i++ {
		c := k[i]
		if plainKeyByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// plainKeyByte reports whether c is a header-name character that survives
// canonicalisation and lower-casing unchanged.
func plainKeyByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-!#$&'*+.^_`|~", c) >= 0
}

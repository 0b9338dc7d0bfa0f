// Package x509 authenticates requests by their TLS client certificate, as
// kube-apiserver's --client-ca-file does: the presented chain must verify
// against a bundle of CAs for client authentication, the subject CN is the
// user name and each O is a group, in order.
//
// Unlike kube-apiserver, verification results are cached (see
// Options.CacheSize). As in kube-apiserver, a leaf that is itself a CA
// certificate is accepted when it verifies for client authentication: the
// CA's own self-signed certificate, or one it issued, names a user by its
// CN like any other.
package x509

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/internal/chain"
)

// Name is the value of authn.Response.Authenticator for this package.
const Name = "x509"

// UIDOID is the subject attribute carrying the user's UID
// (CNCF private enterprise number 57683, arc 2).
var UIDOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

// Options configure an Authenticator. The zero value is ready to use.
type Options struct {
	// CacheSize bounds the verification cache; zero means
	// chain.DefaultCacheSize entries and a negative value turns the cache
	// off, so every request is verified afresh.
	CacheSize int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Authenticator authenticates requests by client certificate.
type Authenticator struct {
	v *chain.Verifier[result]
}

var _ authn.Request = (*Authenticator)(nil)

// result is what a verified leaf maps to; it is cached with the chain.
type result struct {
	resp *authn.Response // nil: not my kind of credential
	err  error
}

// New returns an Authenticator trusting the PEM CA bundle caPEM.
func New(caPEM []byte, o Options) (*Authenticator, error) {
	v, err := chain.New(caPEM, convert, chain.Options{CacheSize: o.CacheSize, Now: o.Now})
	if err != nil {
		return nil, fmt.Errorf("client CA bundle: %w", err)
	}
	return &Authenticator{v: v}, nil
}

// Load replaces the CA bundle atomically; on error the previous bundle
// stays in force. Cached verifications are dropped.
func (a *Authenticator) Load(caPEM []byte) error {
	if err := a.v.Load(caPEM); err != nil {
		return fmt.Errorf("client CA bundle: %w", err)
	}
	return nil
}

// AuthenticateRequest verifies the request's client certificate chain.
// The returned User's slices and map are shared with the cache: read them,
// do not modify them.
// No TLS or no certificate, or a verified certificate with an empty CN, is
// not this authenticator's kind of credential.
func (a *Authenticator) AuthenticateRequest(r *http.Request) (*authn.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	res, err := a.v.Verify(r.TLS.PeerCertificates)
	if err != nil {
		return nil, false, err
	}
	if res.err != nil || res.resp == nil {
		return nil, false, res.err
	}
	// The cached response is shared: like every authenticator's, it is
	// the caller's to read, and to copy before changing (see authn.Response).
	return res.resp, true, nil
}

// convert maps a verified leaf to an identity as kube-apiserver's
// CommonNameUserConversion does.
func convert(leaf *x509.Certificate, _ [][]*x509.Certificate) result {
	if leaf.Subject.CommonName == "" {
		return result{}
	}
	uid, err := subjectUID(leaf)
	if err != nil {
		return result{err: fmt.Errorf("certificate %s: %w", chain.Identify(leaf), err)}
	}
	sum := sha256.Sum256(leaf.Raw)
	return result{resp: &authn.Response{
		User: authn.User{
			Name: leaf.Subject.CommonName,
			UID:  uid,
			// The chain adds system:authenticated to the groups of most
			// users; adding it here, once per cached verification,
			// spares the chain a copy per request.
			Groups: authn.AddAuthenticated(leaf.Subject.CommonName, slices.Clone(leaf.Subject.Organization)),
			Extra:  map[string][]string{authn.CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(sum[:])}},
		},
		Authenticator: Name,
	}}
}

// subjectUID returns the UID attribute of the leaf's subject, "" if absent.
func subjectUID(leaf *x509.Certificate) (string, error) {
	var uid string
	found := false
	for _, atv := range leaf.Subject.Names {
		if !atv.Type.Equal(UIDOID) {
			continue
		}
		if found {
			return "", errors.New("subject has more than one UID attribute")
		}
		found = true
		s, ok := atv.Value.(string)
		if !ok {
			return "", errors.New("subject UID attribute is not a string")
		}
		if s == "" {
			return "", errors.New("subject UID attribute is empty")
		}
		uid = s
	}
	return uid, nil
}

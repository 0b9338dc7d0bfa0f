// Package chain verifies client-certificate chains presented in a TLS
// handshake against a reloadable CA bundle, and caches what it concluded.
//
// The cache is keyed on the SHA-256 of the presented chain. In front of it
// sits a memo keyed on the identity of the parsed certificates, which is
// the same for every request on one TLS connection, so repeated requests
// skip the hash too. A cached success never outlives the earliest NotAfter
// of any certificate in the verified chains. A cached failure lasts at most
// FailureTTL and never past the next NotBefore of a certificate in play, the
// only way a failure can turn into a success. The caches belong to one CA
// bundle (loading a new bundle starts with empty ones), and each holds a
// bounded number of entries. In the hash-keyed cache failures are kept
// apart from successes, so a flood of bad chains cannot evict good ones; at
// worst it evicts identity memo entries, which only saves hashing. The
// memo keeps up to CacheSize parsed chains alive after their connections
// close.
package chain

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubegate/kubegate/authn/internal/ttlmap"
	"github.com/kubegate/kubegate/internal/pemutil"
)

// DefaultCacheSize is the number of chains remembered per CA bundle when
// Options.CacheSize is zero. It covers a large fleet of distinct clients;
// a full cache only costs re-verification.
const DefaultCacheSize = 4096

// memoChain is the longest presented chain the identity memo handles;
// longer chains go straight to the hash-keyed cache.
const memoChain = 4

// Convert turns a verified leaf into the value the caller caches, for
// example an identity or an error saying the leaf is not acceptable.
type Convert[T any] func(leaf *x509.Certificate, chains [][]*x509.Certificate) T

// Options configure a Verifier.
type Options struct {
	// CacheSize bounds each cache; zero means DefaultCacheSize and a
	// negative value turns caching off.
	CacheSize int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Verifier verifies chains against the CA bundle most recently loaded.
type Verifier[T any] struct {
	convert Convert[T]
	size    int
	now     func() time.Time
	b       atomic.Pointer[bundle[T]]
}

// bundle is one loaded CA bundle with the caches that belong to it.
type bundle[T any] struct {
	roots *x509.CertPool
	certs []*x509.Certificate
	// Verified and failed chains by hash, and both by identity.
	ok, fail *ttlmap.Map[[sha256.Size]byte, cached[T]]
	memo     *ttlmap.Map[memoKey, cached[T]]
}

type cached[T any] struct {
	v       T
	err     error
	expires int64 // unixNanos: kept with the entry to copy it to the memo
}

// memoKey identifies a presented chain by the identity of its parsed
// certificates. Identical pointers mean identical contents.
type memoKey struct {
	certs [memoChain]*x509.Certificate
	n     int
}

// New returns a Verifier with the CA bundle caPEM.
func New[T any](caPEM []byte, convert Convert[T], o Options) (*Verifier[T], error) {
	v := &Verifier[T]{convert: convert, size: o.CacheSize, now: o.Now}
	if v.size == 0 {
		v.size = DefaultCacheSize
	}
	if v.now == nil {
		v.now = time.Now
	}
	if err := v.Load(caPEM); err != nil {
		return nil, err
	}
	return v, nil
}

// Load parses a PEM CA bundle and, if it is valid, swaps it in atomically
// with empty caches. On error the previous bundle stays in force.
func (v *Verifier[T]) Load(caPEM []byte) error {
	certs, err := ParseCerts(caPEM)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	b := &bundle[T]{roots: pool, certs: certs}
	if v.size > 0 {
		b.ok = ttlmap.New[[sha256.Size]byte, cached[T]](v.size)
		b.fail = ttlmap.New[[sha256.Size]byte, cached[T]](v.size)
		b.memo = ttlmap.New[memoKey, cached[T]](v.size)
	}
	v.b.Store(b)
	return nil
}

// ParseCerts returns every CERTIFICATE block in data (pemutil.Certificates).
// Blocks of other types are skipped; a CERTIFICATE block that does not
// parse is an error, and so is data without any certificate.
func ParseCerts(data []byte) ([]*x509.Certificate, error) {
	return pemutil.Certificates(data)
}

// FailureTTL bounds how long a failed verification is remembered. A
// failure can only turn into a success when a certificate in play reaches
// its NotBefore, and the cache entry ends then too; the bound is a second
// line of defence.
const FailureTTL = 10 * time.Second

// Verify verifies certs (the leaf first, then any intermediates the client
// sent) for client authentication and returns the converted leaf. The
// error names the leaf by serial number and key identifiers.
func (v *Verifier[T]) Verify(certs []*x509.Certificate) (T, error) {
	var zero T
	if len(certs) == 0 {
		return zero, errors.New("no client certificate presented")
	}
	now := v.now()
	b := v.b.Load()
	if b.ok == nil {
		t, _, err := v.verify(b, certs, now)
		return t, err
	}
	at := unixNanos(now)
	key, memo := memoKeyOf(certs)
	if memo {
		if c, ok := b.memo.Get(key, at); ok {
			return c.v, c.err
		}
	}
	sum := chainSum(certs)
	for _, m := range [...]*ttlmap.Map[[sha256.Size]byte, cached[T]]{b.ok, b.fail} {
		if c, ok := m.Get(sum, at); ok {
			if memo {
				b.memo.Set(key, c, c.expires, at)
			}
			return c.v, c.err
		}
	}
	t, until, err := v.verify(b, certs, now)
	m := b.ok
	if err != nil {
		m, until = b.fail, failureUntil(b, certs, now)
	}
	c := cached[T]{v: t, err: err, expires: unixNanos(until)}
	m.Set(sum, c, c.expires, at)
	if memo {
		b.memo.Set(key, c, c.expires, at)
	}
	return t, err
}

// verify runs crypto/x509 verification at now, converts the leaf and says
// until when a success holds.
//
// The leaf may be a CA certificate: one in the bundle (its own root) or
// one the bundle issued verifies like any other certificate, provided its
// extended key usages allow client authentication. Refusing it would
// protect nothing, since whoever holds a CA's key can issue a client
// certificate with any name.
func (v *Verifier[T]) verify(b *bundle[T], certs []*x509.Certificate, now time.Time) (T, time.Time, error) {
	var zero T
	leaf := certs[0]
	opts := x509.VerifyOptions{
		Roots:       b.roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := leaf.Verify(opts)
	if err != nil {
		return zero, time.Time{}, fmt.Errorf("verifying certificate %s failed: %w", Identify(leaf), err)
	}
	return v.convert(leaf, chains), validUntil(chains), nil
}

// validUntil is when a successful verification stops holding: the
// earliest NotAfter of any certificate in any verified chain.
func validUntil(chains [][]*x509.Certificate) time.Time {
	var until time.Time
	for _, chain := range chains {
		for _, c := range chain {
			if until.IsZero() || c.NotAfter.Before(until) {
				until = c.NotAfter
			}
		}
	}
	return until
}

// failureUntil is when a failed verification may stop holding: the
// earliest NotBefore after now of any certificate in play, at most
// FailureTTL away.
func failureUntil[T any](b *bundle[T], certs []*x509.Certificate, now time.Time) time.Time {
	until := now.Add(FailureTTL)
	for _, set := range [][]*x509.Certificate{certs, b.certs} {
		for _, c := range set {
			if c.NotBefore.After(now) && c.NotBefore.Before(until) {
				until = c.NotBefore
			}
		}
	}
	return until
}

func memoKeyOf(certs []*x509.Certificate) (memoKey, bool) {
	var k memoKey
	if len(certs) > memoChain {
		return k, false
	}
	k.n = copy(k.certs[:], certs)
	return k, true
}

// chainSum is SHA-256 over the count of certificates and the SHA-256 of
// each one's DER, so the encoding of a chain is unambiguous.
func chainSum(certs []*x509.Certificate) [sha256.Size]byte {
	var stack [8 + memoChain*sha256.Size]byte
	buf := stack[:8]
	binary.BigEndian.PutUint64(buf, uint64(len(certs)))
	for _, c := range certs {
		d := sha256.Sum256(c.Raw)
		buf = append(buf, d[:]...)
	}
	return sha256.Sum256(buf)
}

// Identify names a certificate without revealing anything secret: its
// serial number and its subject and authority key identifiers.
func Identify(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", c.SerialNumber, colonHex(c.SubjectKeyId), colonHex(c.AuthorityKeyId))
}

func colonHex(b []byte) string {
	var sb strings.Builder
	for i, x := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02X", x)
	}
	return sb.String()
}

// maxUnixNanos is the last time whose nanoseconds since 1970 fit an int64.
var maxUnixNanos = time.Unix(0, math.MaxInt64)

// unixNanos returns t as the caches keep times, nanoseconds since 1970,
// with times past 2262 (a NotAfter of 9999-12-31) as the last one.
func unixNanos(t time.Time) int64 {
	if t.After(maxUnixNanos) {
		return math.MaxInt64
	}
	return t.UnixNano()
}

package authn

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/kubegate/kubegate/authn/internal/ttlmap"
)

// Token cache defaults, as kube-apiserver hard-codes them.
const (
	DefaultSuccessTTL     = 10 * time.Second
	DefaultFailureTTL     = 0
	DefaultTokenCacheSize = 32768
	// SharedLookupTimeout bounds a lookup shared by concurrent callers,
	// which runs detached from any one caller's context.
	SharedLookupTimeout = 30 * time.Second
)

// CacheOptions configure CacheTokens. The zero value caches nothing but
// still collapses concurrent lookups of one token; DefaultCacheOptions
// gives kube-apiserver's settings.
type CacheOptions struct {
	// SuccessTTL is how long a success is remembered; zero: not at all.
	SuccessTTL time.Duration
	// FailureTTL is how long a failure (error or unknown token) is
	// remembered; zero: not at all.
	FailureTTL time.Duration
	// SkipErrors leaves errors out of the cache: only successes and
	// unknown tokens are remembered, so an outage of the authenticator
	// lasts no longer than the outage itself (kube-apiserver caches its
	// webhook token authenticator so, A.9). False: errors are failures.
	SkipErrors bool
	// Size bounds the number of remembered tokens; zero means
	// DefaultTokenCacheSize.
	Size int
	// Now returns the current time; nil means the monotonic clock.
	Now func() time.Time
}

// DefaultCacheOptions returns kube-apiserver's token cache settings:
// successes for 10 s, failures not at all, 32768 entries.
func DefaultCacheOptions() CacheOptions {
	return CacheOptions{SuccessTTL: DefaultSuccessTTL, FailureTTL: DefaultFailureTTL, Size: DefaultTokenCacheSize}
}

// CacheTokens returns a Token that remembers t's answers, per token and
// per audiences in the context. Concurrent lookups of one token for the
// same audiences run t once. Responses returned from the cache are shared:
// callers must copy before changing them.
//
// The cache never holds a token: an entry is found by the HMAC-SHA256 of
// the token under a key drawn at random when the cache is made, as
// kube-apiserver's token cache keys its entries, so that a memory dump of
// the process yields no credential. Entries are per audiences too: the
// key includes a hash of them, and the entry holds them, compared on
// every hit.
func CacheTokens(t Token, o CacheOptions) Token { return newTokenCache(t, o, nil) }

// newTokenCache is CacheTokens with audiences used when the context has
// none, as if t were wrapped in withTokenAudiences, without a context per
// request on a hit.
func newTokenCache(t Token, o CacheOptions, auds []string) *tokenCache {
	if o.Size <= 0 {
		o.Size = DefaultTokenCacheSize
	}
	macKey := make([]byte, sha256.Size)
	if _, err := rand.Read(macKey); err != nil {
		panic(fmt.Sprintf("authn: token cache key: %v", err))
	}
	c := &tokenCache{t: t, o: o, auds: auds, m: ttlmap.New[uint64, *record](o.Size), seed: maphash.MakeSeed(), epoch: time.Now()}
	if o.Now != nil {
		c.epoch = o.Now()
	}
	c.audsHash = c.hashAudiences(auds)
	c.macs.New = func() any { return &mac{h: hmac.New(sha256.New, macKey)} }
	return c
}

type tokenCache struct {
	t        Token
	o        CacheOptions
	auds     []string                     // used when the context has none; nil: none
	audsHash uint64                       // of auds
	m        *ttlmap.Map[uint64, *record] // by cacheKey.index
	seed     maphash.Seed                 // of audiences hashes
	epoch    time.Time                    // of the clock now reads
	group    singleflight.Group
	macs     sync.Pool // of *mac, HMAC-SHA256 under the cache's key
}

var _ Token = (*tokenCache)(nil)

// cacheKey identifies an answer: the HMAC of the token, and a hash of the
// audiences, so that a token used with several audiences has an entry for
// each.
type cacheKey struct {
	mac  [sha256.Size]byte
	auds uint64
}

// index is where k is kept in the map: 64 bits of it are as good as all,
// and cheaper to hash. Records hold the whole key, compared on every hit,
// so keys that share an index only take each other's place.
func (k *cacheKey) index() uint64 {
	return binary.LittleEndian.Uint64(k.mac[:8]) ^ k.auds
}

// record is one remembered answer, with its key and audiences.
type record struct {
	key     cacheKey
	auds    []string
	hasAuds bool
	resp    *Response
	ok      bool
	err     error
}

// query is one lookup.
type query struct {
	token   string
	key     cacheKey
	auds    []string
	hasAuds bool
}

func (c *tokenCache) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	q := query{token: token}
	q.auds, q.hasAuds = AudiencesFrom(ctx)
	if q.hasAuds {
		q.key.auds = c.hashAudiences(q.auds)
	} else if c.auds != nil {
		q.auds, q.hasAuds, q.key.auds = c.auds, true, c.audsHash
	}
	q.key.mac = c.mac(token)
	if rec, ok := c.get(&q); ok {
		return rec.resp, rec.ok, rec.err
	}
	return c.lookup(ctx, q)
}

// get returns the remembered answer to q.
func (c *tokenCache) get(q *query) (*record, bool) {
	rec, ok := c.m.Get(q.key.index(), c.now())
	if ok && rec.key == q.key && rec.hasAuds == q.hasAuds && slices.Equal(rec.auds, q.auds) {
		return rec, true
	}
	return nil, false
}

// hashAudiences spreads entries for different audiences over the map
// (a query without audiences keeps 0); records compare audiences in full,
// so collisions cost nothing but room.
func (c *tokenCache) hashAudiences(auds []string) uint64 {
	h := uint64(len(auds)) + 1
	for _, a := range auds {
		h = h*31 + maphash.String(c.seed, a)
	}
	return h
}

// lookup asks the wrapped authenticator, once for all concurrent callers
// with the same question, and remembers the answer.
func (c *tokenCache) lookup(ctx context.Context, q query) (*Response, bool, error) {
	ch := c.group.DoChan(q.flightKey(), func() (val any, err error) {
		// The lookup runs on its own goroutine: a panic there would end
		// the process, so turn it into an error for every waiting caller.
		defer func() {
			if recover() != nil { // the panic value may quote the token: never report it
				val = &record{err: errors.New("token authenticator panicked")}
			}
		}()
		if rec, ok := c.get(&q); ok {
			return rec, nil
		}
		// The lookup may serve several callers: detach it from this one's
		// cancellation, but keep the audiences.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SharedLookupTimeout)
		defer cancel()
		if q.hasAuds {
			lctx = WithAudiences(lctx, q.auds)
		}
		rec := &record{key: q.key, auds: slices.Clone(q.auds), hasAuds: q.hasAuds}
		rec.resp, rec.ok, rec.err = c.t.AuthenticateToken(lctx, q.token)
		c.remember(rec)
		return rec, nil
	})
	select {
	case res := <-ch:
		rec := res.Val.(*record)
		return rec.resp, rec.ok, rec.err
	case <-ctx.Done():
		return nil, false, fmt.Errorf("token lookup: %w", context.Cause(ctx))
	}
}

// remember stores rec for the TTL of its kind.
func (c *tokenCache) remember(rec *record) {
	if rec.err != nil && c.o.SkipErrors {
		return
	}
	ttl := c.o.FailureTTL
	if rec.ok {
		ttl = c.o.SuccessTTL
	}
	if ttl <= 0 {
		return
	}
	now := c.now()
	c.m.Set(rec.key.index(), rec, now+int64(ttl), now)
}

// flightKey identifies q exactly among concurrent lookups. It holds no
// secret: the key is an HMAC, the audiences are public.
func (q *query) flightKey() string {
	n := len(q.key.mac) + binary.MaxVarintLen64
	for _, a := range q.auds {
		n += binary.MaxVarintLen64 + len(a)
	}
	b := make([]byte, 0, n)
	b = append(b, q.key.mac[:]...)
	if q.hasAuds {
		b = binary.AppendUvarint(b, uint64(len(q.auds))+1)
	}
	for _, a := range q.auds {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	return string(b)
}

// now returns the nanoseconds since the cache was made, on o.Now's clock
// or else the monotonic clock alone: one clock read, half of time.Now's
// two, and an integer every expiry is compared with.
func (c *tokenCache) now() int64 {
	if c.o.Now != nil {
		return int64(c.o.Now().Sub(c.epoch))
	}
	return int64(time.Since(c.epoch))
}

// mac is a pooled HMAC with scratch space, so computing a key does not
// allocate.
type mac struct {
	h   hash.Hash
	buf [256]byte
	sum [sha256.Size]byte
}

// mac returns HMAC-SHA256 of token under the cache's key.
func (c *tokenCache) mac(token string) [sha256.Size]byte {
	m := c.macs.Get().(*mac) // reset, as new or as put back below
	for s := token; len(s) > 0; {
		n := copy(m.buf[:], s)
		m.h.Write(m.buf[:n])
		s = s[n:]
	}
	out := [sha256.Size]byte(m.h.Sum(m.sum[:0]))
	// Leave no part of the token in the pool: the scratch space and the
	// hash's own buffer of the last partial block, which Reset restores
	// to the state after the key.
	clear(m.buf[:min(len(token), len(m.buf))])
	m.h.Reset()
	c.macs.Put(m)
	return out
}

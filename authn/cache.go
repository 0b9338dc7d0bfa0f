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
	"strings"
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
// The cache never holds a token, nor anything from which one that passes a
// cache hit can be rebuilt, so a memory dump of the process does not yield
// credentials (kube-apiserver keys its cache by HMAC for the same reason).
// An entry is found by a one-way function, under keys drawn at random
// when the cache is made, of the token's secret part, and holds only its
// public part, compared in full on every hit:
//
//   - A JWT (a header starting `eyJ`, the encoding of `{"`, at least two
//     dots and a last segment, the signature, of at least 43 characters,
//     256 bits) is secret only in its signature; its header and payload
//     are public, useless without it. A success is keyed by
//     SHA-256(key || signature) and holds header.payload. A hit needs the
//     same header and payload, and a signature with the same SHA-256,
//     which nobody can find without the token. Hashing only the signature
//     keeps a hit at two SHA-256 blocks for ES256 instead of one per 64
//     bytes of token.
//   - Any other token, and every failure, is keyed by HMAC-SHA256(key,
//     token) and holds no part of it. Failures and JWT successes thus never
//     share a key: a bad token carrying a good token's signature cannot
//     evict or shadow its entry, and a flood of bad tokens holds nothing
//     but keys and errors.
//
// Entries are per audiences too: the key includes a hash of them, and the
// entry holds them, compared on every hit.
func CacheTokens(t Token, o CacheOptions) Token { return newTokenCache(t, o, nil) }

// minSignature is the shortest JWT signature keyed by its hash alone: 43
// base64url characters carry 256 bits. Real ones are longer or as long
// (HS256 43, ES256 86, RS256 342); a shorter last segment is no signature
// to rely on, and the whole token is hashed instead.
const minSignature = 43

// newTokenCache is CacheTokens with audiences used when the context has
// none, as if t were wrapped in withTokenAudiences, without a context per
// request on a hit.
func newTokenCache(t Token, o CacheOptions, auds []string) *tokenCache {
	if o.Size <= 0 {
		o.Size = DefaultTokenCacheSize
	}
	var keys [2 * sha256.Size]byte
	if _, err := rand.Read(keys[:]); err != nil {
		panic(fmt.Sprintf("authn: token cache key: %v", err))
	}
	c := &tokenCache{t: t, o: o, auds: auds, m: ttlmap.New[uint64, *record](o.Size), seed: maphash.MakeSeed(), epoch: time.Now()}
	if o.Now != nil {
		c.epoch = o.Now()
	}
	c.audsHash = c.hashAudiences(auds)
	c.sigKey = [sha256.Size]byte(keys[:sha256.Size])
	macKey := keys[sha256.Size:]
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
	sigKey   [sha256.Size]byte // prefix of the hashed JWT signature
	macs     sync.Pool         // of *mac, HMAC-SHA256 under the other key
}

var _ Token = (*tokenCache)(nil)

// cacheKey identifies an answer: a one-way function of the token's secret
// part, and a hash of the audiences, so that a token used with several
// audiences has an entry for each.
type cacheKey struct {
	secret [sha256.Size]byte
	auds   uint64
}

// index is where k is kept in the map: 64 bits of it are as good as all,
// and cheaper to hash. Records hold the whole key, compared on every hit,
// so keys that share an index only take each other's place.
func (k *cacheKey) index() uint64 {
	return binary.LittleEndian.Uint64(k.secret[:8]) ^ k.auds
}

// record is one remembered answer, with the public parts of the question.
type record struct {
	key     cacheKey
	public  string // JWT header.payload; "" when the key covers the whole token
	auds    []string
	hasAuds bool
	resp    *Response
	ok      bool
	err     error
}

// query is one lookup: the token's keys and public parts.
type query struct {
	token   string
	public  string // JWT header.payload, "" for other tokens
	key     cacheKey
	auds    []string
	hasAuds bool
	mac     [sha256.Size]byte // of the token, for failureKey; computed when first needed
	hasMAC  bool
}

func (c *tokenCache) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	q := query{token: token}
	q.auds, q.hasAuds = AudiencesFrom(ctx)
	if q.hasAuds {
		q.key.auds = c.hashAudiences(q.auds)
	} else if c.auds != nil {
		q.auds, q.hasAuds, q.key.auds = c.auds, true, c.audsHash
	}
	if sig := signatureAt(token); sig > 0 {
		q.public, q.key.secret = token[:sig-1], c.hashSignature(token[sig:])
	} else {
		q.key.secret = c.mac(token)
	}
	if rec, ok := c.get(&q); ok {
		return rec.resp, rec.ok, rec.err
	}
	return c.lookup(ctx, q)
}

// get returns the remembered answer to q: a success or, when failures
// are remembered, a failure.
func (c *tokenCache) get(q *query) (*record, bool) {
	now := c.now()
	if rec, ok := c.m.Get(q.key.index(), now); ok && rec.answers(q.key, q.public, q) {
		return rec, true
	}
	if c.o.FailureTTL <= 0 || q.public == "" { // "": the key above is the failure key too
		return nil, false
	}
	key := c.failureKey(q)
	if rec, ok := c.m.Get(key.index(), now); ok && rec.answers(key, "", q) {
		return rec, true
	}
	return nil, false
}

// failureKey returns the key of a failure to answer q: the HMAC of the
// whole token.
func (c *tokenCache) failureKey(q *query) cacheKey {
	if q.public == "" {
		return q.key
	}
	if !q.hasMAC {
		q.mac, q.hasMAC = c.mac(q.token), true
	}
	return cacheKey{secret: q.mac, auds: q.key.auds}
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

// answers reports whether r answers q, looked up under key with public
// as its public part.
func (r *record) answers(key cacheKey, public string, q *query) bool {
	return r.key == key && r.public == public && r.hasAuds == q.hasAuds && slices.Equal(r.auds, q.auds)
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
		rec := &record{auds: slices.Clone(q.auds), hasAuds: q.hasAuds}
		rec.resp, rec.ok, rec.err = c.t.AuthenticateToken(lctx, q.token)
		c.remember(&q, rec)
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

// remember stores rec, the answer to q, for the TTL of its kind.
func (c *tokenCache) remember(q *query, rec *record) {
	ttl := c.o.FailureTTL
	if rec.ok {
		ttl = c.o.SuccessTTL
	}
	if ttl <= 0 {
		return
	}
	key := q.key
	if rec.ok {
		// A copy: a substring would keep the whole token, signature
		// included, in memory.
		rec.public = strings.Clone(q.public)
	} else {
		key = c.failureKey(q)
	}
	rec.key = key
	now := c.now()
	c.m.Set(key.index(), rec, now+int64(ttl), now)
}

// flightKey identifies q exactly among concurrent lookups. It holds no
// secret: the key is a hash, the rest is public.
func (q *query) flightKey() string {
	n := len(q.key.secret) + 2*binary.MaxVarintLen64 + len(q.public)
	for _, a := range q.auds {
		n += binary.MaxVarintLen64 + len(a)
	}
	b := make([]byte, 0, n)
	b = append(b, q.key.secret[:]...)
	b = binary.AppendUvarint(b, uint64(len(q.public)))
	b = append(b, q.public...)
	if q.hasAuds {
		b = binary.AppendUvarint(b, uint64(len(q.auds))+1)
	}
	for _, a := range q.auds {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	return string(b)
}

// signatureAt returns the offset of token's signature, its last segment,
// if token has the shape of a JWT whose signature can stand for it (see
// CacheTokens), and 0 otherwise.
//
// Tokens the cache remembers as JWTs have exactly two dots, because only
// valid tokens are remembered so, but a hit does not need to check: its
// header and payload are compared with a remembered pair, which has one
// dot. So the signature is found from the end when its length is that of
// a common algorithm's, without reading the payload, the longest part.
func signatureAt(token string) int {
	if !strings.HasPrefix(token, "eyJ") {
		return 0
	}
	for _, n := range signatureLengths {
		if dot := len(token) - n - 1; dot > 0 && token[dot] == '.' {
			if strings.IndexByte(token[dot+1:], '.') >= 0 || strings.IndexByte(token[:dot], '.') < 0 {
				break // not the last dot, or the only one
			}
			return dot + 1
		}
	}
	dot := strings.IndexByte(token, '.')
	if dot < 0 {
		return 0
	}
	sig := 0
	for i := dot + 1; ; {
		j := strings.IndexByte(token[i:], '.')
		if j < 0 {
			break
		}
		sig = i + j + 1
		i = sig
	}
	if sig == 0 || len(token)-sig < minSignature {
		return 0
	}
	return sig
}

// signatureLengths are the base64url lengths of ES256, ES384 and ES512
// signatures, and of RS256 signatures by 2048-, 3072- and 4096-bit keys.
var signatureLengths = [...]int{86, 128, 176, 342, 512, 683}

// now returns the nanoseconds since the cache was made, on o.Now's clock
// or else the monotonic clock alone: one clock read, half of time.Now's
// two, and an integer every expiry is compared with.
func (c *tokenCache) now() int64 {
	if c.o.Now != nil {
		return int64(c.o.Now().Sub(c.epoch))
	}
	return int64(time.Since(c.epoch))
}

// hashSignature returns SHA-256(c.sigKey || sig).
func (c *tokenCache) hashSignature(sig string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(c.sigKey[:])
	var chunk [128]byte // a string cannot be hashed without a copy
	for s := sig; len(s) > 0; {
		n := copy(chunk[:], s)
		h.Write(chunk[:n])
		s = s[n:]
	}
	clear(chunk[:]) // leave no copy of the signature behind
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// mac is a pooled HMAC with scratch space, so computing a key does not
// allocate.
type mac struct {
	h   hash.Hash
	buf [256]byte
	sum [sha256.Size]byte
}

// mac returns HMAC-SHA256 of token under the cache's other key.
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

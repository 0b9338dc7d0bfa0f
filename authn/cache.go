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
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// DefaultCacheOptions returns kube-apiserver's token cache settings:
// successes for 10 s, failures not at all, 32768 entries.
func DefaultCacheOptions() CacheOptions {
	return CacheOptions{SuccessTTL: DefaultSuccessTTL, FailureTTL: DefaultFailureTTL, Size: DefaultTokenCacheSize}
}

// CacheTokens returns a Token that remembers t's answers. Entries are keyed
// by HMAC-SHA256, under a key drawn at random when the cache is made, of
// the token and the audiences in the context, so tokens are never held in
// memory in the clear. Concurrent lookups of one key run t once.
// Responses returned from the cache are shared: callers must copy before
// changing them.
func CacheTokens(t Token, o CacheOptions) Token {
	if o.Size <= 0 {
		o.Size = DefaultTokenCacheSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key := make([]byte, sha256.Size)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Sprintf("authn: token cache key: %v", err))
	}
	c := &tokenCache{t: t, o: o, m: ttlmap.New[[sha256.Size]byte, *record](o.Size)}
	c.hashes.New = func() any { return &hasher{mac: hmac.New(sha256.New, key)} }
	return c
}

type tokenCache struct {
	t      Token
	o      CacheOptions
	m      *ttlmap.Map[[sha256.Size]byte, *record]
	group  singleflight.Group
	hashes sync.Pool // of *hasher (HMAC-SHA256 under the cache key)
}

var _ Token = (*tokenCache)(nil)

// record is one remembered answer.
type record struct {
	resp *Response
	ok   bool
	err  error
}

func (c *tokenCache) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	auds, hasAuds := AudiencesFrom(ctx)
	key := c.key(token, auds)
	if rec, ok := c.m.Get(key, c.o.Now()); ok {
		return rec.resp, rec.ok, rec.err
	}
	return c.lookup(ctx, token, key, auds, hasAuds)
}

// lookup asks the wrapped authenticator, once for all concurrent callers
// with the same key, and remembers the answer.
func (c *tokenCache) lookup(ctx context.Context, token string, key [sha256.Size]byte, auds []string, hasAuds bool) (*Response, bool, error) {
	ch := c.group.DoChan(string(key[:]), func() (val any, err error) {
		// The lookup runs on its own goroutine: a panic there would end
		// the process, so turn it into an error for every waiting caller.
		defer func() {
			if recover() != nil { // the panic value may quote the token: never report it
				val = &record{err: errors.New("token authenticator panicked")}
			}
		}()
		if rec, ok := c.m.Get(key, c.o.Now()); ok {
			return rec, nil
		}
		// The lookup may serve several callers: detach it from this one's
		// cancellation, but keep the audiences.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SharedLookupTimeout)
		defer cancel()
		if hasAuds {
			lctx = WithAudiences(lctx, auds)
		}
		rec := &record{}
		rec.resp, rec.ok, rec.err = c.t.AuthenticateToken(lctx, token)
		ttl := c.o.FailureTTL
		if rec.ok {
			ttl = c.o.SuccessTTL
		}
		if ttl > 0 {
			now := c.o.Now()
			c.m.Set(key, rec, now.Add(ttl), now)
		}
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

// hasher is a pooled HMAC with scratch space, so computing a key does not
// allocate.
type hasher struct {
	mac hash.Hash
	buf [256]byte
	sum [sha256.Size]byte
}

func (h *hasher) field(s string) {
	binary.BigEndian.PutUint64(h.buf[:8], uint64(len(s)))
	h.mac.Write(h.buf[:8])
	for len(s) > 0 {
		n := copy(h.buf[:], s)
		h.mac.Write(h.buf[:n])
		s = s[n:]
	}
}

// key is HMAC-SHA256 over the length-prefixed token and audiences.
func (c *tokenCache) key(token string, auds []string) [sha256.Size]byte {
	h := c.hashes.Get().(*hasher)
	h.mac.Reset()
	h.field(token)
	for _, a := range auds {
		h.field(a)
	}
	out := [sha256.Size]byte(h.mac.Sum(h.sum[:0]))
	c.hashes.Put(h)
	return out
}

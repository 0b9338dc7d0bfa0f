package authn_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// counting is a Token authenticator that knows "good" and counts lookups.
type counting struct {
	calls atomic.Int64
	err   error
}

func (c *counting) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	c.calls.Add(1)
	if token == "good" {
		auds, _ := authn.AudiencesFrom(ctx)
		return &authn.Response{User: authn.User{Name: "alice"}, Audiences: auds}, true, nil
	}
	return nil, false, c.err
}

func TestCacheTokens(t *testing.T) {
	t.Parallel()
	type step struct {
		advance   time.Duration
		token     string
		wantOK    bool
		wantCalls int64 // total lookups after this step
	}
	tests := []struct {
		name  string
		opts  authn.CacheOptions
		steps []step
	}{
		{name: "A.0 successes are cached for 10s by default", opts: authn.DefaultCacheOptions(), steps: []step{
			{token: "good", wantOK: true, wantCalls: 1},
			{advance: 9 * time.Second, token: "good", wantOK: true, wantCalls: 1},
			{advance: time.Second, token: "good", wantOK: true, wantCalls: 2},
		}},
		{name: "A.0 failures are not cached by default", opts: authn.DefaultCacheOptions(), steps: []step{
			{token: "bad", wantCalls: 1},
			{token: "bad", wantCalls: 2},
		}},
		{name: "A.0 failures are cached for the failure TTL", opts: authn.CacheOptions{SuccessTTL: 10 * time.Second, FailureTTL: 5 * time.Second}, steps: []step{
			{token: "bad", wantCalls: 1},
			{advance: 4 * time.Second, token: "bad", wantCalls: 1},
			{advance: time.Second, token: "bad", wantCalls: 2},
		}},
		{name: "A.0 distinct tokens are distinct entries", opts: authn.DefaultCacheOptions(), steps: []step{
			{token: "good", wantOK: true, wantCalls: 1},
			{token: "bad", wantCalls: 2},
			{token: "good", wantOK: true, wantCalls: 2},
		}},
		{name: "A.0 the cache is bounded", opts: authn.CacheOptions{SuccessTTL: time.Minute, FailureTTL: time.Minute, Size: 1}, steps: []step{
			{token: "good", wantOK: true, wantCalls: 1},
			{token: "bad", wantCalls: 2},
			{token: "good", wantOK: true, wantCalls: 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			tt.opts.Now = clk.Now
			inner := &counting{}
			c := authn.CacheTokens(inner, tt.opts)
			for i, s := range tt.steps {
				clk.Add(s.advance)
				_, ok, _ := c.AuthenticateToken(context.Background(), s.token)
				if ok != s.wantOK {
					t.Errorf("step %d: ok = %v, want %v", i, ok, s.wantOK)
				}
				if got := inner.calls.Load(); got != s.wantCalls {
					t.Errorf("step %d: %d lookups, want %d", i, got, s.wantCalls)
				}
			}
		})
	}
}

func TestCacheTokensSkipErrors(t *testing.T) {
	t.Parallel()
	clk := newClock()
	inner := &counting{}
	c := authn.CacheTokens(inner, authn.CacheOptions{SuccessTTL: time.Minute, FailureTTL: time.Minute, SkipErrors: true, Now: clk.Now})
	// An unknown token is a failure, and is remembered.
	for range 2 {
		if _, ok, err := c.AuthenticateToken(context.Background(), "unknown"); ok || err != nil {
			t.Fatalf("unknown token: (%v, %v), want (false, nil)", ok, err)
		}
	}
	if got := inner.calls.Load(); got != 1 {
		t.Fatalf("A.9 an unknown token was looked up %d times, want 1", got)
	}
	// An error is not remembered.
	inner.err = errors.New("review service unavailable")
	for i := range 2 {
		if _, _, err := c.AuthenticateToken(context.Background(), "broken"); err == nil {
			t.Fatalf("lookup %d: no error, want one", i)
		}
	}
	if got := inner.calls.Load(); got != 3 {
		t.Fatalf("A.9 an error was looked up %d times in all, want 3: errors are not cached", got)
	}
}

func TestCacheTokensAudiences(t *testing.T) {
	t.Parallel()
	t.Run("A.0 the audiences are part of the cache key", func(t *testing.T) {
		t.Parallel()
		inner := &counting{}
		c := authn.CacheTokens(inner, authn.DefaultCacheOptions())
		for i, auds := range [][]string{{"a"}, {"b"}, {"a"}, {"a", "b"}, {"ab"}} {
			resp, ok, err := c.AuthenticateToken(authn.WithAudiences(context.Background(), auds), "good")
			if !ok || err != nil {
				t.Fatalf("lookup %d: (%v, %v), want success", i, ok, err)
			}
			if len(resp.Audiences) != len(auds) || resp.Audiences[0] != auds[0] {
				t.Errorf("lookup %d: audiences %q, want %q", i, resp.Audiences, auds)
			}
		}
		if got := inner.calls.Load(); got != 4 {
			t.Errorf("%d lookups, want 4 (the third repeats the first)", got)
		}
	})
}

// blocking is a Token authenticator that waits for release and counts.
type blocking struct {
	calls   atomic.Int64
	started chan struct{}
	release chan struct{}
}

func (b *blocking) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	if b.calls.Add(1) == 1 {
		close(b.started)
	}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return &authn.Response{User: authn.User{Name: token}}, true, nil
}

func TestCacheTokensSingleflight(t *testing.T) {
	t.Parallel()
	t.Run("A.0 concurrent lookups of one token run once", func(t *testing.T) {
		t.Parallel()
		inner := &blocking{started: make(chan struct{}), release: make(chan struct{})}
		// With the default cache a caller that arrives after the shared
		// lookup finished is a cache hit, so only a missing collapse can
		// make more than one lookup.
		c := authn.CacheTokens(inner, authn.DefaultCacheOptions())
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		ctx, cancel := context.WithCancel(context.Background())
		// The first caller gives up; the shared lookup must still serve the rest.
		go func() {
			_, _, err := c.AuthenticateToken(ctx, "tok")
			if !errors.Is(err, context.Canceled) {
				errs <- err
			}
		}()
		<-inner.started
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, ok, err := c.AuthenticateToken(context.Background(), "tok")
				if !ok || err != nil || resp.User.Name != "tok" {
					errs <- errors.New("waiting caller did not get the shared result")
				}
			}()
		}
		cancel()
		// Let the waiters reach the in-flight lookup before it ends.
		time.Sleep(50 * time.Millisecond)
		close(inner.release)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if got := inner.calls.Load(); got != 1 {
			t.Errorf("%d lookups for %d concurrent callers, want 1", got, n+1)
		}
	})
}

func TestCacheTokensPanic(t *testing.T) {
	t.Parallel()
	t.Run("A.0 a panicking lookup is an error that does not quote the token", func(t *testing.T) {
		t.Parallel()
		c := authn.CacheTokens(authn.TokenFunc(func(context.Context, string) (*authn.Response, bool, error) {
			panic("lookup of secret-token broke")
		}), authn.DefaultCacheOptions())
		_, ok, err := c.AuthenticateToken(context.Background(), "secret-token")
		if ok || err == nil {
			t.Fatalf("got (%v, %v), want an error", ok, err)
		}
		if strings.Contains(err.Error(), "secret-token") {
			t.Errorf("error %q quotes the token", err)
		}
	})
}

// jwtShaped returns header.payload.signature with the given payload and a
// header that starts like a JSON object, as every JWT's does.
func jwtShaped(payload, sig string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256"}`)) + "." + payload + "." + sig
}

// randomSignature returns 86 random base64url characters, the length of an
// ES256 signature.
func randomSignature(t testing.TB) string {
	t.Helper()
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// known is a Token authenticator for a fixed set of tokens that counts its
// lookups; any other token is an error.
type known struct {
	users map[string]string // token -> user name
	calls atomic.Int64
}

func (k *known) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	k.calls.Add(1)
	if name, ok := k.users[token]; ok {
		auds, _ := authn.AudiencesFrom(ctx)
		return &authn.Response{User: authn.User{Name: name}, Audiences: auds}, true, nil
	}
	return nil, false, errors.New("unknown token")
}

func TestCacheTokensKeys(t *testing.T) {
	t.Parallel()
	sig1, sig2 := randomSignature(t), randomSignature(t)
	good := jwtShaped("eyJzdWIiOiJhbGljZSJ9", sig1)
	otherSig := jwtShaped("eyJzdWIiOiJhbGljZSJ9", sig2)
	otherPayload := jwtShaped("eyJzdWIiOiJyb290In0", sig1)
	// The same signature but for its last character.
	lastChar := map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(sig1, "A")]
	otherSigEnd := jwtShaped("eyJzdWIiOiJhbGljZSJ9", sig1[:len(sig1)-1]+lastChar)
	longTail := strings.Repeat("s", 43)
	type step struct {
		token     string
		auds      []string // nil: none in the context
		wantUser  string   // "": refused
		wantCalls int64    // total lookups after this step
	}
	tests := []struct {
		name  string
		opts  authn.CacheOptions
		users map[string]string
		steps []step
	}{
		{name: "A.0 a JWT hit returns the cached response", opts: authn.DefaultCacheOptions(), users: map[string]string{good: "alice"}, steps: []step{
			{token: good, wantUser: "alice", wantCalls: 1},
			{token: good, wantUser: "alice", wantCalls: 1},
		}},
		{name: "A.0 a JWT with the same header and payload and another signature misses", opts: authn.DefaultCacheOptions(), users: map[string]string{good: "alice"}, steps: []step{
			{token: good, wantUser: "alice", wantCalls: 1},
			{token: otherSig, wantCalls: 2},
			{token: otherSigEnd, wantCalls: 3},
			{token: good, wantUser: "alice", wantCalls: 3},
		}},
		{name: "A.0 a JWT with the same signature and another payload misses", opts: authn.DefaultCacheOptions(), users: map[string]string{good: "alice"}, steps: []step{
			{token: good, wantUser: "alice", wantCalls: 1},
			{token: otherPayload, wantCalls: 2},
			{token: good, wantUser: "alice", wantCalls: 2},
		}},
		{name: "A.0 a JWT for other audiences misses, and each audience keeps its entry", opts: authn.DefaultCacheOptions(), users: map[string]string{good: "alice"}, steps: []step{
			{token: good, auds: []string{"a"}, wantUser: "alice", wantCalls: 1},
			{token: good, auds: []string{"b"}, wantUser: "alice", wantCalls: 2},
			{token: good, wantUser: "alice", wantCalls: 3},
			{token: good, auds: []string{}, wantUser: "alice", wantCalls: 4},
			{token: good, auds: []string{"a"}, wantUser: "alice", wantCalls: 4},
			{token: good, auds: []string{"b"}, wantUser: "alice", wantCalls: 4},
		}},
		{name: "A.0 a failure sharing a success's signature neither evicts nor shadows it", opts: authn.CacheOptions{SuccessTTL: time.Minute, FailureTTL: time.Minute, Size: 8}, users: map[string]string{good: "alice"}, steps: []step{
			{token: good, wantUser: "alice", wantCalls: 1},
			{token: otherPayload, wantCalls: 2},
			{token: good, wantUser: "alice", wantCalls: 2},
			{token: otherPayload, wantCalls: 2},
		}},
		{name: "A.0 a cached failure of a JWT is found again", opts: authn.CacheOptions{SuccessTTL: time.Minute, FailureTTL: time.Minute}, steps: []step{
			{token: otherSig, wantCalls: 1},
			{token: otherSig, wantCalls: 1},
			{token: otherPayload, wantCalls: 2},
		}},
		{name: "A.0 tokens of any shape are keyed whole", opts: authn.DefaultCacheOptions(), users: map[string]string{"x.y." + longTail: "xavier", "z.y." + longTail: "zoe", "eyJ.y.z." + longTail: "eve"}, steps: []step{
			{token: "x.y." + longTail, wantUser: "xavier", wantCalls: 1},
			{token: "z.y." + longTail, wantUser: "zoe", wantCalls: 2},
			{token: "eyJ.y.z." + longTail, wantUser: "eve", wantCalls: 3},
			{token: "x.y." + longTail, wantUser: "xavier", wantCalls: 3},
			{token: "eyJ.y.z." + longTail, wantUser: "eve", wantCalls: 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inner := &known{users: tt.users}
			c := authn.CacheTokens(inner, tt.opts)
			first := map[string]*authn.Response{}
			for i, s := range tt.steps {
				ctx := context.Background()
				if s.auds != nil {
					ctx = authn.WithAudiences(ctx, s.auds)
				}
				resp, ok, err := c.AuthenticateToken(ctx, s.token)
				switch {
				case s.wantUser == "" && (ok || err == nil):
					t.Errorf("step %d: got (%v, %v), want an error", i, ok, err)
				case s.wantUser != "" && (!ok || resp.User.Name != s.wantUser):
					t.Errorf("step %d: got (%+v, %v, %v), want %q", i, resp, ok, err, s.wantUser)
				case ok && !slices.Equal(resp.Audiences, s.auds):
					t.Errorf("step %d: audiences %q, want %q", i, resp.Audiences, s.auds)
				}
				if got := inner.calls.Load(); got != s.wantCalls {
					t.Errorf("step %d: %d lookups, want %d", i, got, s.wantCalls)
				}
				// A hit returns the very response the lookup gave.
				key := fmt.Sprintf("%s %q %v", s.token, s.auds, s.auds == nil)
				hit := i > 0 && s.wantCalls == tt.steps[i-1].wantCalls
				if prev, seen := first[key]; ok && hit && seen && prev != resp {
					t.Errorf("step %d: hit returned %p, want the cached %p", i, resp, prev)
				} else if ok && !seen {
					first[key] = resp
				}
			}
		})
	}
}

// TestCacheTokensHoldNoToken dumps the heap after tokens went through the
// cache, with their only copies gone, and searches it for their secret
// parts. It is not parallel: the dump stops the world.
func TestCacheTokensHoldNoToken(t *testing.T) {
	t.Run("A.0 a memory dump holds no secret part of a cached token", func(t *testing.T) {
		// The control: the user name of a cached success, drawn at
		// random, is in the dump.
		var public string
		c := authn.CacheTokens(authn.TokenFunc(func(_ context.Context, token string) (*authn.Response, bool, error) {
			if strings.Contains(token, "bad") {
				return nil, false, errors.New("bad token")
			}
			return &authn.Response{User: authn.User{Name: strings.Clone(public)}}, true, nil
		}), authn.CacheOptions{SuccessTTL: time.Minute, FailureTTL: time.Minute})

		// The tokens exist only inside this goroutine; what leaves it is
		// the public part and the secret parts masked, so that the dump
		// can hold them only through the cache.
		const mask = 0x5a
		type secret struct {
			name   string
			masked []byte
		}
		raw := make([]byte, 5*64)
		if _, err := rand.Read(raw); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var secrets []secret
		go func() {
			defer close(done)
			randomText := func() string {
				s := base64.RawURLEncoding.EncodeToString(raw[:64])
				raw = raw[64:]
				return s
			}
			public = "public-" + randomText()[:20]
			jwtSig, badSig, opaque, head := randomText(), randomText(), "ok-"+randomText(), "eyJ"+randomText()[:40]
			tokens := []string{
				jwtShaped("eyJwYXlsb2FkIjoxfQ", jwtSig), // success
				jwtShaped("bad-payload", badSig),        // failure
				opaque,                                  // success
				head + "." + strings.Repeat("p", 50),    // success
			}
			for _, tok := range tokens {
				for range 2 {
					c.AuthenticateToken(context.Background(), tok)
				}
			}
			for name, s := range map[string]string{"JWT signature": jwtSig, "failed JWT signature": badSig, "opaque token": opaque, "secret head of a one-dot token": head} {
				m := []byte(s)
				for i := range m {
					m[i] ^= mask
				}
				secrets = append(secrets, secret{name, m})
			}
		}()
		<-done
		// One collection frees the tokens' garbage; pooled objects survive
		// it, as they would between lookups.
		runtime.GC()

		path := filepath.Join(t.TempDir(), "heap")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		debug.WriteHeapDump(f.Fd())
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(c)
		dump, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(dump, []byte(public)) {
			t.Fatalf("the dump (%d bytes) lacks the cached user's name: the search proves nothing", len(dump))
		}
		for _, s := range secrets {
			text := make([]byte, len(s.masked))
			for i, b := range s.masked {
				text[i] = b ^ mask
			}
			// Any 16 characters in a row, of which the dump would hold
			// at least one window if it held 23 or more.
			for i := 0; i+16 <= len(text); i += 8 {
				if bytes.Contains(dump, text[i:i+16]) {
					t.Errorf("the dump holds characters %d to %d of the %s", i, i+16, s.name)
				}
			}
		}
	})
}

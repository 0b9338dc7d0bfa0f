package authn_test

import (
	"context"
	"errors"
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

package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authz"
)

// The gateway's clientset asks once for each lookup and review, as the
// hand-written requests before it did: an upstream answering 429 with a
// Retry-After (kube-apiserver's priority and fairness) refuses the
// client's request at once instead of holding it while client-go waits
// and asks again (A.3, A.6).
func TestUpstreamClientAsksOnceOnRetryAfter_A3(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`))
	}))
	defer srv.Close()
	up, _ := url.Parse(srv.URL)

	g := newGetter(t, up, srv.Client().Transport, RequestHeaderIdentity, time.Hour)
	_, err := g.GetServiceAccount(context.Background(), "default", "builder")
	if err == nil || !strings.Contains(err.Error(), "upstream answered 429") {
		t.Errorf("lookup: %v, want the 429", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("lookup: %d requests, want 1", n)
	}

	requests.Store(0)
	s := newReviewer(t, up, srv.Client().Transport, RequestHeaderIdentity)
	d, _, err := s.Authorize(context.Background(), authz.Attributes{User: authn.User{Name: "alice"}, Verb: "get", Path: "/metrics"})
	if d != authz.NoOpinion || err == nil || !strings.Contains(err.Error(), "upstream answered 429") {
		t.Errorf("review: %v %v, want no opinion and the 429", d, err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("review: %d requests, want 1", n)
	}
}

// A redirect from the upstream is an answer, not a place to send the
// gateway's credential (A.3).
func TestUpstreamClientFollowsNoRedirect_A3(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(`{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"uid":"forged"}}`))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	up, _ := url.Parse(srv.URL)
	g := newGetter(t, up, http.DefaultTransport, RequestHeaderIdentity, time.Hour)
	sa, err := g.GetServiceAccount(context.Background(), "default", "builder")
	if err == nil || sa.UID != "" || !strings.Contains(err.Error(), "upstream answered 307") {
		t.Errorf("redirected lookup: %+v, %v; want the 307 as an error", sa, err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want none", n)
	}
}

// The clientset has no client-side rate limit: lookups and reviews are
// made for client requests, and queueing them behind client-go's default
// of 5 a second would hold those (A.3).
func TestUpstreamClientHasNoRateLimit_A3(t *testing.T) {
	up, _ := url.Parse("https://upstream.example")
	c := newUpstreamClient(t, up, http.DefaultTransport, RequestHeaderIdentity)
	for name, rc := range map[string]rest.Interface{
		"core/v1":          c.CoreV1().RESTClient(),
		"authorization/v1": c.AuthorizationV1().RESTClient(),
	} {
		if l := rc.GetRateLimiter(); l != nil {
			t.Errorf("%s: rate limiter %T, want none", name, l)
		}
	}
}

// A name or namespace that cannot be a path segment names no object: the
// lookup is "not found" without a request, and cannot reach another path
// (".." would name the namespace itself) (A.3).
func TestUpstreamGetterNamesThatAreNoObject_A3(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default","uid":"namespace-uid"}}`))
	}))
	defer srv.Close()
	up, _ := url.Parse(srv.URL)
	g := newGetter(t, up, srv.Client().Transport, RequestHeaderIdentity, time.Hour)
	ctx := context.Background()
	for _, tt := range []struct{ ns, name string }{
		{"default", ".."}, {"default", "."}, {"default", "a/b"}, {"default", "a%2Fb"}, {"default", ""},
		{"..", "builder"}, {"", "builder"}, {"a/b", "builder"},
	} {
		sa, err := g.GetServiceAccount(ctx, tt.ns, tt.name)
		if !errors.Is(err, serviceaccount.ErrNotFound) || sa.UID != "" {
			t.Errorf("service account %q/%q: %+v, %v; want not found", tt.ns, tt.name, sa, err)
		}
		s, err := g.GetSecret(ctx, tt.ns, tt.name)
		if !errors.Is(err, serviceaccount.ErrNotFound) || s.UID != "" {
			t.Errorf("secret %q/%q: %+v, %v; want not found", tt.ns, tt.name, s.Object, err)
		}
	}
	for _, name := range []string{"..", "", "a/b"} {
		if n, err := g.GetNode(ctx, name); !errors.Is(err, serviceaccount.ErrNotFound) || n.UID != "" {
			t.Errorf("node %q: %+v, %v; want not found", name, n, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the upstream got %d requests, want none", n)
	}
}

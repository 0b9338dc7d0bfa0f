package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn/bootstrap"
)

// The gateway reads bootstrap token Secrets from its upstream as
// LookupUser, and remembers each answer for the lookup TTL (A.10).
func TestUpstreamGetterReadsBootstrapSecrets_A10(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if got := r.Header.Get("X-Remote-User"); got != LookupUser {
			t.Errorf("X-Remote-User = %q, want %q", got, LookupUser)
		}
		switch r.URL.Path {
		case "/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"bootstrap-token-abcdef","namespace":"kube-system",
"deletionTimestamp":"2030-01-01T00:00:00Z"},"type":"bootstrap.kubernetes.io/token","data":{"token-id":"YWJjZGVm"}}`))
		default:
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
		}
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	g := &UpstreamGetter{Upstream: u, Transport: http.DefaultTransport, Identity: RequestHeaderIdentity, TTL: time.Hour}
	ctx := context.Background()

	for range 2 {
		s, err := g.GetSecretData(ctx, "kube-system", "bootstrap-token-abcdef")
		if err != nil || s.Namespace != "kube-system" || s.Name != "bootstrap-token-abcdef" || s.Type != "bootstrap.kubernetes.io/token" ||
			string(s.Data["token-id"]) != "abcdef" || !s.DeletionTimestamp.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("got %+v, %v", s, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("upstream asked %d times, want 1 (the answer is cached)", n)
	}
	if _, err := g.GetSecretData(ctx, "kube-system", "bootstrap-token-zzzzzz"); !errors.Is(err, bootstrap.ErrNotFound) {
		t.Errorf("missing secret: got %v, want bootstrap.ErrNotFound", err)
	}
}

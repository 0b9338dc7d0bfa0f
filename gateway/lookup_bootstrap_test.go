package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/authn/bootstrap"
	"github.com/kubegate/kubegate/internal/testwait"
)

// fakeSecretsUpstream serves a list and a watch of kube-system's Secrets,
// and counts the requests of any other kind.
type fakeSecretsUpstream struct {
	t      *testing.T
	events chan string // watch events, as JSON lines
	others atomic.Int32
	mu     sync.Mutex
	query  url.Values
	user   string
}

func (f *fakeSecretsUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/kube-system/secrets" {
		f.others.Add(1)
		http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
		return
	}
	f.mu.Lock()
	f.query, f.user = r.URL.Query(), r.Header.Get("X-Remote-User")
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") != "true" {
		_, _ = w.Write([]byte(`{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		// a watch that starts with the current state: there is none
		_, _ = w.Write([]byte(`{"type":"BOOKMARK","object":{"kind":"Secret","apiVersion":"v1","metadata":{"resourceVersion":"1",` +
			`"annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"))
	}
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-f.events:
			_, _ = w.Write([]byte(ev + "\n"))
			w.(http.Flusher).Flush()
		}
	}
}

func secretEvent(t *testing.T, typ string, s corev1.Secret) string {
	s.APIVersion, s.Kind = "v1", "Secret"
	b, err := json.Marshal(map[string]any{"type": typ, "object": s})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The gateway learns bootstrap token Secrets from a watch of kube-system
// through its upstream, as its lookup identity, and answers every token
// from it: no token, good or bad, makes it ask the upstream (A.10).
func TestBootstrapSecretsComeFromAWatch_A10(t *testing.T) {
	t.Parallel()
	f := &fakeSecretsUpstream{t: t, events: make(chan string, 4)}
	upstream := httptest.NewServer(f)
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := NewBootstrapSecrets(ctx, newUpstreamClient(t, u, http.DefaultTransport, RequestHeaderIdentity))
	secret := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Namespace: "kube-system", ResourceVersion: "2"},
		Type: corev1.SecretTypeBootstrapToken, Data: map[string][]byte{"token-id": []byte("abcdef")}}
	f.events <- secretEvent(t, "ADDED", secret)
	testwait.For(t, 30*time.Second, "the secret from the watch", func() (bool, string) {
		s, err := b.GetSecretData(ctx, "kube-system", "bootstrap-token-abcdef")
		return err == nil && s.Type == string(corev1.SecretTypeBootstrapToken) && string(s.Data["token-id"]) == "abcdef", fmt.Sprint(s, err)
	})
	f.mu.Lock()
	if got := f.query.Get("fieldSelector"); got != "type=bootstrap.kubernetes.io/token" {
		t.Errorf("fieldSelector %q, want only bootstrap token Secrets", got)
	}
	if f.user != LookupUser {
		t.Errorf("X-Remote-User %q, want %q", f.user, LookupUser)
	}
	f.mu.Unlock()
	for _, name := range []string{"bootstrap-token-zzzzzz", "bootstrap-token-qqqqqq", "other"} {
		if _, err := b.GetSecretData(ctx, "kube-system", name); !errors.Is(err, bootstrap.ErrNotFound) {
			t.Errorf("%s: %v, want not found", name, err)
		}
	}
	if _, err := b.GetSecretData(ctx, "default", "bootstrap-token-abcdef"); !errors.Is(err, bootstrap.ErrNotFound) {
		t.Errorf("another namespace: %v, want not found", err)
	}
	f.events <- secretEvent(t, "DELETED", secret)
	testwait.For(t, 30*time.Second, "the secret gone", func() (bool, string) {
		_, err := b.GetSecretData(ctx, "kube-system", "bootstrap-token-abcdef")
		return errors.Is(err, bootstrap.ErrNotFound), fmt.Sprint(err)
	})
	if n := f.others.Load(); n != 0 {
		t.Errorf("the upstream got %d requests besides the list and the watch", n)
	}
}

package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/authn/serviceaccount"
)

// objectsUpstream answers GETs of the paths in objects with their code
// and body, and anything else with 404, and remembers what it was asked.
type objectsUpstream struct {
	objects map[string]cannedAnswer

	mu       sync.Mutex
	requests map[string]int // by path
	users    []string       // X-Remote-User of each request
	methods  []string
}

type cannedAnswer struct {
	code int
	body string
}

func (u *objectsUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	if u.requests == nil {
		u.requests = map[string]int{}
	}
	u.requests[r.URL.Path]++
	u.users = append(u.users, r.Header.Get("X-Remote-User"))
	u.methods = append(u.methods, r.Method)
	u.mu.Unlock()
	a, ok := u.objects[r.URL.Path]
	if !ok {
		a = cannedAnswer{http.StatusNotFound, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	_, _ = io.WriteString(w, a.body)
}

func (u *objectsUpstream) count(path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests[path]
}

func (u *objectsUpstream) seen() (users, methods []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.users...), append([]string(nil), u.methods...)
}

const (
	saPath     = "/api/v1/namespaces/default/serviceaccounts/builder"
	podPath    = "/api/v1/namespaces/default/pods/web-0"
	nodePath   = "/api/v1/nodes/node-1"
	secretPath = "/api/v1/namespaces/default/secrets/builder-token"
	brokenPath = "/api/v1/namespaces/default/secrets/broken"
	// secretToken is the token in the Secret at secretPath, and the text
	// of the upstream's failure at brokenPath: neither may appear in an
	// error.
	secretToken = "c2VjcmV0LXRva2VuLXZhbHVl" // base64 of secret-token-value
)

func newObjectsUpstream(t *testing.T) (*objectsUpstream, *url.URL, http.RoundTripper) {
	t.Helper()
	f := &objectsUpstream{objects: map[string]cannedAnswer{
		saPath: {200, `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"builder","namespace":"default","uid":"sa-uid"}}`},
		podPath: {200, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"default","uid":"pod-uid",` +
			`"deletionTimestamp":"2026-03-01T10:00:00Z"},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"i"}]}}`},
		nodePath: {200, `{"kind":"Node","apiVersion":"v1","metadata":{"name":"node-1","uid":"node-uid"}}`},
		secretPath: {200, `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"builder-token","namespace":"default","uid":"secret-uid",` +
			`"labels":{"kubernetes.io/legacy-token-last-used":"2026-01-01"}},"type":"kubernetes.io/service-account-token",` +
			`"data":{"token":"` + secretToken + `"}}`},
		brokenPath: {http.StatusInternalServerError, "internal error near secret-token-value " + secretToken},
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return f, u, srv.Client().Transport
}

// The gateway's service-account lookups read each object through the
// upstream as its lookup identity, and reuse every answer, found or not,
// for the TTL (A.3).
func TestUpstreamGetterReadsObjectsThroughTheUpstream_A3(t *testing.T) {
	t.Parallel()
	f, up, rt := newObjectsUpstream(t)
	g := newGetter(t, up, rt, RequestHeaderIdentity, time.Hour)
	ctx := context.Background()

	sa, err := g.GetServiceAccount(ctx, "default", "builder")
	if err != nil || sa.UID != "sa-uid" || !sa.DeletionTimestamp.IsZero() {
		t.Errorf("service account: %+v, %v; want UID sa-uid, not being deleted", sa, err)
	}
	pod, err := g.GetPod(ctx, "default", "web-0")
	if want := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC); err != nil || pod.UID != "pod-uid" || !pod.DeletionTimestamp.Equal(want) {
		t.Errorf("pod: %+v, %v; want UID pod-uid, deleted at %v", pod, err, want)
	}
	node, err := g.GetNode(ctx, "node-1")
	if err != nil || node.UID != "node-uid" {
		t.Errorf("node: %+v, %v; want UID node-uid", node, err)
	}
	s, err := g.GetSecret(ctx, "default", "builder-token")
	if err != nil || s.UID != "secret-uid" || string(s.Token) != "secret-token-value" || s.Labels["kubernetes.io/legacy-token-last-used"] != "2026-01-01" {
		t.Errorf("secret: UID %q, token %q, labels %v, %v; want the stored secret", s.UID, s.Token, s.Labels, err)
	}
	if _, err := g.GetServiceAccount(ctx, "default", "gone"); !errors.Is(err, serviceaccount.ErrNotFound) {
		t.Errorf("missing service account: %v, want ErrNotFound", err)
	}

	// Every answer is reused: none of these asks the upstream again.
	before := map[string]int{}
	for _, p := range []string{saPath, podPath, nodePath, secretPath, "/api/v1/namespaces/default/serviceaccounts/gone"} {
		before[p] = f.count(p)
		if before[p] != 1 {
			t.Errorf("%s read %d times, want once", p, before[p])
		}
	}
	_, _ = g.GetServiceAccount(ctx, "default", "builder")
	_, _ = g.GetPod(ctx, "default", "web-0")
	_, _ = g.GetNode(ctx, "node-1")
	_, _ = g.GetSecret(ctx, "default", "builder-token")
	if _, err := g.GetServiceAccount(ctx, "default", "gone"); !errors.Is(err, serviceaccount.ErrNotFound) {
		t.Errorf("missing service account from the cache: %v, want ErrNotFound", err)
	}
	for p, n := range before {
		if got := f.count(p); got != n {
			t.Errorf("%s read %d times within the TTL, want %d", p, got, n)
		}
	}
	users, methods := f.seen()
	for i := range users {
		if users[i] != LookupUser || methods[i] != http.MethodGet {
			t.Errorf("request %d: %s as X-Remote-User %q, want GET as %q", i, methods[i], users[i], LookupUser)
		}
	}
}

// Past its TTL an answer is read again (A.3).
func TestUpstreamGetterReadsAgainAfterTheTTL_A3(t *testing.T) {
	t.Parallel()
	f, up, rt := newObjectsUpstream(t)
	// A TTL of a nanosecond has run out by the next call.
	g := newGetter(t, up, rt, RequestHeaderIdentity, time.Nanosecond)
	for i := 1; i <= 3; i++ {
		if _, err := g.GetServiceAccount(context.Background(), "default", "builder"); err != nil {
			t.Fatal(err)
		}
		if got := f.count(saPath); got != i {
			t.Errorf("after %d lookups the upstream was asked %d times, want %d", i, got, i)
		}
	}
}

// A lookup that fails for another reason than "not found" is an error,
// so the token is refused, and it says neither the secret's data nor
// what the upstream answered; the next lookup asks again (A.3, A.10).
func TestUpstreamGetterFailureIsAnErrorWithoutTheAnswer_A3(t *testing.T) {
	t.Parallel()
	f, up, rt := newObjectsUpstream(t)
	g := newGetter(t, up, rt, RequestHeaderIdentity, time.Hour)
	for i := 0; i < 2; i++ {
		s, err := g.GetSecret(context.Background(), "default", "broken")
		if err == nil || errors.Is(err, serviceaccount.ErrNotFound) {
			t.Fatalf("secret behind a 500: %v, want an error other than not found", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "upstream answered 500") || strings.Contains(msg, "secret-token-value") || strings.Contains(msg, secretToken) {
			t.Errorf("error %q, want the status without the upstream's text", msg)
		}
		if s.UID != "" || s.Token != nil {
			t.Errorf("failed lookup returned %+v, want nothing", s)
		}
	}
	if n := f.count(brokenPath); n != 2 {
		t.Errorf("the failure was read %d times, want twice: a failure is not kept", n)
	}

	// An upstream that cannot be reached is an error too.
	gone, _ := url.Parse("http://127.0.0.1:1")
	g = newGetter(t, gone, http.DefaultTransport, RequestHeaderIdentity, time.Hour)
	if _, err := g.GetServiceAccount(context.Background(), "default", "builder"); err == nil || errors.Is(err, serviceaccount.ErrNotFound) {
		t.Errorf("unreachable upstream: %v, want an error other than not found", err)
	}
}

// In impersonate mode the lookups name nobody: the transport's own
// credential speaks.
func TestUpstreamGetterImpersonateModeSendsNoUserHeader_A6(t *testing.T) {
	t.Parallel()
	f, up, rt := newObjectsUpstream(t)
	g := newGetter(t, up, rt, ImpersonateIdentity, time.Hour)
	if _, err := g.GetServiceAccount(context.Background(), "default", "builder"); err != nil {
		t.Fatal(err)
	}
	if users, _ := f.seen(); len(users) != 1 || users[0] != "" {
		t.Errorf("X-Remote-User of the lookups %q, want one request without it", users)
	}
}

// newUpstreamClient returns the gateway's clientset for the upstream up
// reached over rt.
func newUpstreamClient(t testing.TB, up *url.URL, rt http.RoundTripper, identity UpstreamIdentity) kubernetes.Interface {
	t.Helper()
	c, err := NewUpstreamClient(up, rt, identity)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newGetter(t testing.TB, up *url.URL, rt http.RoundTripper, identity UpstreamIdentity, ttl time.Duration) *UpstreamGetter {
	t.Helper()
	return &UpstreamGetter{Client: newUpstreamClient(t, up, rt, identity), TTL: ttl}
}

func newReviewer(t testing.TB, up *url.URL, rt http.RoundTripper, identity UpstreamIdentity) *SubjectAccessReviewer {
	t.Helper()
	return &SubjectAccessReviewer{Client: newUpstreamClient(t, up, rt, identity)}
}

// heldUpstream answers every GET with code and body once release is
// closed, or fails it when its context ends, after saying on entered that
// a request arrived, and counts the requests and remembers the context
// of the last.
type heldUpstream struct {
	code     int
	body     string
	entered  chan struct{}
	release  chan struct{}
	requests atomic.Int32
	ctx      atomic.Value // context.Context
}

func newHeldUpstream(code int, body string) *heldUpstream {
	return &heldUpstream{code: code, body: body, entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (u *heldUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	u.requests.Add(1)
	u.ctx.Store(r.Context())
	u.entered <- struct{}{}
	select {
	case <-u.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: u.code, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(u.body)), ContentLength: int64(len(u.body)), Request: r}, nil
}

// waitingContext is a context that says on waiting when a lookup first
// waits on it, which it does only once it has joined a read.
type waitingContext struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *waitingContext) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// A client that hangs up during a lookup fails only its own request: the
// read goes on apart from its context, under a deadline of its own, and
// its answer serves the next client of that object without another
// request (A.3).
func TestUpstreamGetterClientHangingUpFailsOnlyItself_A3(t *testing.T) {
	t.Parallel()
	u := newHeldUpstream(http.StatusOK, `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"uid":"sa-uid"}}`)
	up, _ := url.Parse("https://upstream.example")
	g := newGetter(t, up, u, RequestHeaderIdentity, time.Hour)

	ctx, cancel := context.WithCancel(context.Background())
	failed := make(chan error)
	go func() {
		_, err := g.GetServiceAccount(ctx, "default", "builder")
		failed <- err
	}()
	<-u.entered
	cancel()
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Errorf("lookup of the client that hung up: %v, want context.Canceled", err)
	}
	rctx := u.ctx.Load().(context.Context)
	if rctx.Err() != nil {
		t.Errorf("the read was ended with its first client: %v", rctx.Err())
	}
	if d, ok := rctx.Deadline(); !ok || time.Until(d) > lookupTimeout {
		t.Errorf("the read's deadline %v (set %v), want within %v", d, ok, lookupTimeout)
	}
	close(u.release)

	sa, err := g.GetServiceAccount(context.Background(), "default", "builder")
	if err != nil || sa.UID != "sa-uid" {
		t.Errorf("next client: %+v, %v; want the service account", sa, err)
	}
	if n := u.requests.Load(); n != 1 {
		t.Errorf("the upstream was asked %d times, want once", n)
	}
}

// Lookups of one object made while it is being read wait for that read
// and share its answer, a failure included, which is not kept: a lookup
// after it asks again (A.3).
func TestUpstreamGetterConcurrentLookupsShareOneRead_A3(t *testing.T) {
	t.Parallel()
	u := newHeldUpstream(http.StatusInternalServerError, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`)
	up, _ := url.Parse("https://upstream.example")
	g := newGetter(t, up, u, RequestHeaderIdentity, time.Hour)

	const clients = 5
	errs := make(chan error, clients)
	lookup := func(ctx context.Context) {
		_, err := g.GetServiceAccount(ctx, "default", "builder")
		errs <- err
	}
	go lookup(context.Background())
	<-u.entered
	for range clients - 1 {
		ctx := &waitingContext{Context: context.Background(), waiting: make(chan struct{})}
		go lookup(ctx)
		<-ctx.waiting
	}
	close(u.release)
	for range clients {
		if err := <-errs; err == nil || !strings.HasSuffix(err.Error(), ": upstream answered 500") {
			t.Errorf("lookup: %v, want the 500", err)
		}
	}
	if n := u.requests.Load(); n != 1 {
		t.Errorf("%d concurrent lookups asked the upstream %d times, want once", clients, n)
	}

	go lookup(context.Background())
	<-u.entered
	if err := <-errs; err == nil {
		t.Error("lookup after the failure: no error, want the 500")
	}
	if n := u.requests.Load(); n != 2 {
		t.Errorf("after the failure the upstream was asked %d times in all, want twice", n)
	}
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/console"
	"github.com/kubegate/kubegate/internal/testpki"
)

// forbiddenPods is the upstream's 403 for listing pods in namespace b.
const forbiddenPods = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
	`"message":"pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"b\"",` +
	`"reason":"Forbidden","details":{"kind":"pods"},"code":403}`

// consoleEnv is a gateway with a console whose views only admin may
// open, in front of an upstream that refuses the pods of namespace b.
func consoleEnv(t *testing.T, proto string) *env {
	t.Helper()
	adminViews := impersonationFunc(func(_ context.Context, u *authn.User, a authz.Attributes) (bool, string, error) {
		return u.Name == "admin" && !a.ResourceRequest && a.Verb == "get" &&
			(a.Path == console.PKIViewPath || a.Path == console.RequestsViewPath), "", nil
	})
	c, err := console.New(console.Config{Authorizer: adminViews, Feed: console.NewFeed(0)})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{proto: proto, console: c})
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/namespaces/b/pods" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(forbiddenPods))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"app"}}`))
	}
	return e
}

// stream opens the request stream as cert and returns its lines as they
// come.
func (e *env) stream(t *testing.T, cert *testpki.Cert) <-chan console.Line {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.gw.URL+console.RequestsPath, nil)
	resp, err := e.client(cert).Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		cancel()
		t.Fatalf("GET %s: %d %s, want 200 application/x-ndjson", console.RequestsPath, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan console.Line, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var l console.Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("stream line %q: %v", sc.Bytes(), err)
				return
			}
			lines <- l
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return lines
}

// waitLine reads lines until one matches, and returns those read before.
func waitLine(t *testing.T, lines <-chan console.Line, what string, match func(console.Line) bool) (console.Line, []console.Line) {
	t.Helper()
	var before []console.Line
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended before %s; lines seen: %+v", what, before)
			}
			if match(l) {
				return l, before
			}
			before = append(before, l)
		case <-deadline:
			t.Fatalf("no line for %s within 20s; lines seen: %+v", what, before)
		}
	}
}

// TestConsoleRequestStream_K3 checks that the stream shows a 403 with
// the upstream's Status message, the client getting the upstream's bytes
// unchanged, and a 401 with its authentication error, never the token,
// on every serving path.
func TestConsoleRequestStream_K3(t *testing.T) { forEachProtocol(t, testConsoleRequestStream) }

func testConsoleRequestStream(t *testing.T, proto string) {
	e := consoleEnv(t, proto)
	admin := e.clientCA.Issue(t, testpki.Options{CN: "admin"})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	lines := e.stream(t, admin)

	resp, body := e.do(t, e.client(alice), "GET", "/api/v1/namespaces/b/pods", nil)
	if resp.StatusCode != http.StatusForbidden || string(body) != forbiddenPods {
		t.Fatalf("alice's list: %d %s, want the upstream's 403 unchanged", resp.StatusCode, body)
	}
	// A HEAD answered 403 has a Content-Length and no body: its answer
	// must come back at once, not wait for body bytes that never come.
	head := e.client(alice)
	head.Timeout = 10 * time.Second
	hreq, _ := http.NewRequest("HEAD", e.gw.URL+"/api/v1/namespaces/b/pods", nil)
	hresp, err := head.Do(hreq)
	if err != nil {
		t.Fatalf("HEAD refused by the upstream: %v", err)
	}
	hresp.Body.Close()
	if hresp.StatusCode != http.StatusForbidden {
		t.Fatalf("HEAD: %d, want 403", hresp.StatusCode)
	}
	const token = "not-a-known-token-0123456789"
	resp, _ = e.do(t, e.client(nil), "GET", "/api/v1/pods", http.Header{"Authorization": {"Bearer " + token}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: %d, want 401", resp.StatusCode)
	}

	l, _ := waitLine(t, lines, "alice's 403", func(l console.Line) bool { return l.User == "alice" && l.Status == 403 && l.Method == "GET" })
	want := "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"b\""
	if l.Decision != console.DecisionForbidden || l.Reason != want || l.Verb != "list" || l.Resource != "pods" ||
		l.Namespace != "b" || l.Authenticator != "x509" || !strings.Contains(strings.Join(l.Groups, ","), "devs") {
		t.Errorf("403 line %+v, want decision forbidden, verb list, pods in b, x509, group devs and reason %q", l, want)
	}
	l, _ = waitLine(t, lines, "the 401", func(l console.Line) bool { return l.Status == 401 })
	if l.Decision != console.DecisionUnauthorized || l.Reason != "invalid bearer token" || l.User != "" || l.Path != "/api/v1/pods" {
		t.Errorf("401 line %+v, want decision unauthorized, no user and reason %q", l, "invalid bearer token")
	}
	b, _ := json.Marshal(l)
	if bytes.Contains(b, []byte(token)) {
		t.Errorf("401 line %s holds the token", b)
	}
}

// TestConsoleOwnRequests_K3 checks that a user who may not get
// /kubegate/ui/requests sees their own requests only, and that the
// stream does not list itself.
func TestConsoleOwnRequests_K3(t *testing.T) { forEachProtocol(t, testConsoleOwnRequests) }

func testConsoleOwnRequests(t *testing.T, proto string) {
	e := consoleEnv(t, proto)
	admin := e.clientCA.Issue(t, testpki.Options{CN: "admin"})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	own := e.stream(t, alice)
	all := e.stream(t, admin)

	e.do(t, e.client(admin), "GET", "/api/v1/namespaces/a/pods/admin-only", nil)
	e.do(t, e.client(nil), "GET", "/api/v1/namespaces/a/pods/anonymous", nil)
	e.do(t, e.client(alice), "GET", "/api/v1/namespaces/a/pods/alice-marker", nil)

	_, before := waitLine(t, own, "alice's marker", func(l console.Line) bool { return l.Name == "alice-marker" })
	for _, l := range before {
		if l.User != "alice" {
			t.Errorf("alice's stream got %s's line for %s", l.User, l.Path)
		}
	}
	_, before = waitLine(t, all, "alice's marker on admin's stream", func(l console.Line) bool { return l.Name == "alice-marker" })
	var sawAdmin, sawAnonymous bool
	for _, l := range before {
		sawAdmin = sawAdmin || l.Name == "admin-only"
		sawAnonymous = sawAnonymous || l.Name == "anonymous"
		if l.Path == console.RequestsPath {
			t.Errorf("the stream lists a stream: %+v", l)
		}
	}
	if !sawAdmin || !sawAnonymous {
		t.Errorf("admin's stream: admin's line %v, the anonymous line %v; want both before alice's marker", sawAdmin, sawAnonymous)
	}
}

// TestConsoleRoutes_K1 checks that the console's files are served to
// anyone and its endpoints only to authenticated users, every answer
// with the security headers, and that no path under /kubegate/ui/
// reaches anything but the console's files.
func TestConsoleRoutes_K1(t *testing.T) { forEachProtocol(t, testConsoleRoutes) }

func testConsoleRoutes(t *testing.T, proto string) {
	e := consoleEnv(t, proto)
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	before := e.up.count()
	for _, c := range []struct {
		path   string
		cert   *testpki.Cert
		status int
	}{
		{"/kubegate/ui/", nil, 200},
		{"/kubegate/ui/index.html", nil, 200},
		{"/kubegate/ui/api/session", nil, 401},
		{"/kubegate/ui/api/session", alice, 200},
		{"/kubegate/ui/api/pki", alice, 403},
		{"/kubegate/ui/api/nothing", alice, 404},
		{"/kubegate/ui/../kubegate/metrics", nil, 404},
		{"/kubegate/ui/%2e%2e/%2e%2e/kubegate/metrics", nil, 404},
		{"/kubegate/ui/..%2f..%2fgo.mod", nil, 404},
		{"/kubegate/ui/api/..%2f..%2f..%2fkubegate/metrics", alice, 404},
	} {
		resp, body := e.do(t, e.client(c.cert), "GET", c.path, nil)
		if resp.StatusCode != c.status {
			t.Errorf("GET %s: %d %.200s, want %d", c.path, resp.StatusCode, body, c.status)
		}
		h := resp.Header
		if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			!strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v, want the console's security headers", c.path, h)
		}
		if strings.HasPrefix(c.path, console.APIPrefix) && h.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", c.path, h.Get("Cache-Control"))
		}
		if bytes.Contains(body, []byte("kubegate_gateway_")) {
			t.Errorf("GET %s reached the gateway's metrics", c.path)
		}
	}
	if n := e.up.count() - before; n != 0 {
		t.Errorf("the upstream got %d requests for console paths, want none", n)
	}
}

package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/tokenfile"
	"github.com/kubegate/kubegate/internal/serving"
	"github.com/kubegate/kubegate/internal/testpki"
)

// apiServer is a plain-HTTP upstream for the tests of several upstreams
// (J.5): it answers GETs with its name, records POST bodies, serves
// /readyz as ready says, and can be killed (its listener and every
// connection closed at once, as by kill -9) and started again on the
// same address.
type apiServer struct {
	name string
	addr string
	srv  *httptest.Server

	ready  atomic.Bool
	readyz atomic.Int64 // /readyz requests served since the last start
	// hold, when set, is where POSTs wait after arrived is signalled.
	hold    chan struct{}
	arrived chan struct{}

	mu    sync.Mutex
	posts [][]byte
	gets  []string // each GET's URL and X-Request-Id
	// hangUp, when set, makes every GET close its connection without
	// an answer.
	hangUp bool
}

func newAPIServer(t *testing.T, name string) *apiServer {
	a := &apiServer{name: name}
	a.ready.Store(true)
	a.start(t, "127.0.0.1:0")
	t.Cleanup(a.kill)
	return a
}

func (a *apiServer) url() *url.URL { return &url.URL{Scheme: "http", Host: a.addr} }

func (a *apiServer) start(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a.addr = ln.Addr().String()
	a.readyz.Store(0)
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.Listener = ln
	a.srv.Start()
}

// kill closes the listener and every connection without waiting for
// the requests in flight.
func (a *apiServer) kill() {
	a.srv.Listener.Close()
	a.srv.CloseClientConnections()
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/readyz":
		a.readyz.Add(1)
		if r.Header.Get(authn.RemoteUserHeader) != LookupUser {
			http.Error(w, "the probe is not the gateway's own", http.StatusForbidden)
			return
		}
		if !a.ready.Load() {
			http.Error(w, "not ready", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	case r.Method == http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		if a.arrived != nil {
			a.arrived <- struct{}{}
			<-a.hold
		}
		a.mu.Lock()
		a.posts = append(a.posts, body)
		a.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q}}`, a.name)
	default:
		a.mu.Lock()
		a.gets = append(a.gets, r.URL.String()+" "+r.Header.Get("X-Request-Id"))
		hangUp := a.hangUp
		a.mu.Unlock()
		if hangUp {
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q}}`, a.name)
	}
}

func (a *apiServer) postCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.posts)
}

// upstreamsEnv is a gateway in front of several apiServers, served on
// one serving path: "net/http" (httputil.ReverseProxy for every
// request), "fast-HTTP/1.1" (the fast path's server loop) or
// "fast-HTTP/2" (Go's HTTP/2 server, plain requests over the fast path's
// pools). Bodies always take ReverseProxy.
type upstreamsEnv struct {
	gw      *Gateway
	url     string
	client  *http.Client
	reg     *prometheus.Registry
	servers []*apiServer
}

var upstreamPaths = []string{"net/http", "fast-HTTP/1.1", "fast-HTTP/2"}

func forEachUpstreamPath(t *testing.T, test func(t *testing.T, path string)) {
	for _, p := range upstreamPaths {
		t.Run(p, func(t *testing.T) { test(t, p) })
	}
}

func newUpstreamsEnv(t *testing.T, path string, check HealthCheck, servers ...*apiServer) *upstreamsEnv {
	t.Helper()
	e := &upstreamsEnv{servers: servers, reg: prometheus.NewRegistry()}
	var ups []*url.URL
	for _, s := range servers {
		ups = append(ups, s.url())
	}
	rt, err := NewUpstreamTransport(UpstreamTransportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var fast *FastPath
	if path != "net/http" {
		if fast, err = NewFastPaths(ups, UpstreamTransportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tokens, _, err := tokenfile.Parse(strings.NewReader("token-alice,alice,uid-alice,devs\n"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.gw, err = New(Config{
		Upstreams: ups, HealthCheck: check, Transport: rt, FastPath: fast,
		Authenticator: authn.New(authn.Config{StaticTokens: []authn.Token{tokens}}),
		Registry:      e.reg, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.gw.Close)
	ca := testpki.NewCA(t, "server-ca")
	c := ca.Issue(t, testpki.Options{CN: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}})
	pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serving.NewHTTPServer(e.gw, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}}, quiet)
	_, shutdown := serve(e.gw, srv, ln)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, MaxIdleConnsPerHost: 64}
	if path == "fast-HTTP/2" {
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
	})
	e.client = &http.Client{Transport: tr, Timeout: 20 * time.Second}
	e.url = "https://" + ln.Addr().String()
	return e
}

// do sends a request as alice and returns the status and body, or fails
// the test if no answer came.
func (e *upstreamsEnv) do(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer token-alice")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *upstreamsEnv) healthy(s *apiServer) float64 {
	return testutil.ToFloat64(e.gw.ups.m.healthy.WithLabelValues(s.addr))
}

// waitFor waits up to a generous deadline for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noChecks keeps the active checks out of a test's way, so that only
// connection failures eject.
var noChecks = HealthCheck{Interval: time.Hour, Timeout: time.Second}

// One upstream dies while GETs run through the gateway: not one GET
// fails, and the dead upstream is ejected at its first refused
// connection.
func TestUpstreams_GETsSurviveADeadUpstream_J5(t *testing.T) {
	forEachUpstreamPath(t, func(t *testing.T, path string) {
		a, b := newAPIServer(t, "a"), newAPIServer(t, "b")
		e := newUpstreamsEnv(t, path, noChecks, a, b)
		var sent atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		errs := make(chan string, 64)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					req, _ := http.NewRequest("GET", e.url+"/api/v1/namespaces/default/pods/app", nil)
					req.Header.Set("Authorization", "Bearer token-alice")
					resp, err := e.client.Do(req)
					if err != nil {
						errs <- err.Error()
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						errs <- fmt.Sprintf("status %d: %s", resp.StatusCode, body)
						return
					}
					sent.Add(1)
				}
			}()
		}
		waitFor(t, "GETs before the kill", func() bool { return sent.Load() > 200 })
		b.kill()
		killedAt := sent.Load()
		waitFor(t, "GETs after the kill", func() bool { return sent.Load() > killedAt+200 || len(errs) > 0 })
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("a GET failed: %s", err)
		}
		if got := e.healthy(b); got != 0 {
			t.Errorf("dead upstream healthy = %v, want 0 (ejected)", got)
		}
		if got := e.healthy(a); got != 1 {
			t.Errorf("live upstream healthy = %v, want 1", got)
		}
		if got := testutil.ToFloat64(e.gw.ups.m.ejections.WithLabelValues(b.addr, ejectConnection)); got != 1 {
			t.Errorf("ejections of the dead upstream = %v, want 1", got)
		}
	})
}

// A POST in flight on an upstream that dies is answered 502, saying it
// may have been applied, and is not sent to the other upstream.
func TestUpstreams_POSTInFlightIs502NotRetried_J5(t *testing.T) {
	forEachUpstreamPath(t, func(t *testing.T, path string) {
		a, b := newAPIServer(t, "a"), newAPIServer(t, "b")
		for _, s := range []*apiServer{a, b} {
			s.arrived, s.hold = make(chan struct{}, 1), make(chan struct{})
		}
		e := newUpstreamsEnv(t, path, noChecks, a, b)
		type answer struct {
			code int
			body []byte
		}
		answers := make(chan answer, 2)
		for range 2 {
			go func() {
				code, body := e.do(t, "POST", "/api/v1/namespaces/default/configmaps", []byte(`{"kind":"ConfigMap"}`))
				answers <- answer{code, body}
			}()
		}
		// Round robin sends one POST to each; b dies with its POST in
		// flight, a answers its own.
		<-a.arrived
		<-b.arrived
		b.kill()
		close(a.hold)
		var got []answer
		for range 2 {
			got = append(got, <-answers)
		}
		codes := map[int]int{}
		for _, g := range got {
			codes[g.code]++
			if g.code == http.StatusBadGateway && !bytes.Equal(g.body, badGatewayBody) {
				t.Errorf("502 body %s, want %s", g.body, badGatewayBody)
			}
		}
		if codes[http.StatusCreated] != 1 || codes[http.StatusBadGateway] != 1 {
			t.Fatalf("answers %v, want one 201 and one 502", codes)
		}
		if !bytes.Contains(badGatewayBody, []byte("may have been applied")) {
			t.Errorf("502 body %s does not say the request may have been applied", badGatewayBody)
		}
		if n := a.postCount(); n != 1 {
			t.Errorf("live upstream received %d POSTs, want 1: a POST sent to the dead one must not go again", n)
		}
		close(b.hold)
	})
}

// A POST whose first upstream refuses the connection goes to the other
// with the same bytes; the refusing upstream is ejected at once and gets
// no more requests.
func TestUpstreams_RefusedIsRetriedWithTheSameBytes_J5(t *testing.T) {
	forEachUpstreamPath(t, func(t *testing.T, path string) {
		a, b := newAPIServer(t, "a"), newAPIServer(t, "b")
		e := newUpstreamsEnv(t, path, noChecks, a, b)
		b.kill()
		// Both are healthy at first: of two requests in turn, one goes
		// to b first.
		var bodies [][]byte
		for i := range 2 {
			body := []byte(fmt.Sprintf(`{"kind":"ConfigMap","metadata":{"name":"cm-%d"}}`, i))
			bodies = append(bodies, body)
			if code, got := e.do(t, "POST", "/api/v1/namespaces/default/configmaps", body); code != http.StatusCreated {
				t.Fatalf("POST %d: status %d %s, want 201", i, code, got)
			}
		}
		a.mu.Lock()
		posts := a.posts
		a.mu.Unlock()
		if len(posts) != 2 || !bytes.Equal(posts[0], bodies[0]) || !bytes.Equal(posts[1], bodies[1]) {
			t.Errorf("live upstream received %q, want %q", posts, bodies)
		}
		for i := range 4 {
			if code, body := e.do(t, "GET", "/api/v1/pods", nil); code != http.StatusOK {
				t.Fatalf("GET %d: status %d %s", i, code, body)
			}
		}
		if got := e.healthy(b); got != 0 {
			t.Errorf("refusing upstream healthy = %v, want 0", got)
		}
		if got := testutil.ToFloat64(e.gw.ups.m.retries.WithLabelValues(b.addr, "connection")); got != 1 {
			t.Errorf("retries away from the refusing upstream = %v, want 1: once ejected it gets no request", got)
		}
	})
}

// A GET that an upstream received and dropped without an answer goes to
// the other, the same request: URL and request ID.
func TestUpstreams_DroppedGETIsRetriedAsItWas_J5(t *testing.T) {
	forEachUpstreamPath(t, func(t *testing.T, path string) {
		a, b := newAPIServer(t, "a"), newAPIServer(t, "b")
		b.hangUp = true
		e := newUpstreamsEnv(t, path, noChecks, a, b)
		// Both are healthy at first: of two requests in turn, one goes
		// to b first.
		for i := range 2 {
			code, body := e.do(t, "GET", fmt.Sprintf("/api/v1/namespaces/default/pods?labelSelector=app%%3Dweb&n=%d", i), nil)
			if code != http.StatusOK || !bytes.Contains(body, []byte(`"a"`)) {
				t.Fatalf("GET %d: status %d %s, want 200 from a", i, code, body)
			}
		}
		a.mu.Lock()
		b.mu.Lock()
		got, dropped := append([]string{}, a.gets...), append([]string{}, b.gets...)
		b.mu.Unlock()
		a.mu.Unlock()
		if len(got) != 2 || len(dropped) == 0 {
			t.Fatalf("a received %q and b %q, want two on a and b's dropped ones", got, dropped)
		}
		for _, d := range dropped {
			if d != got[0] && d != got[1] {
				t.Errorf("b dropped %q, which a never received as it was: %q", d, got)
			}
		}
		if got := e.healthy(b); got != 0 {
			t.Errorf("upstream that dropped the connection healthy = %v, want 0", got)
		}
	})
}

// When no upstream can be reached, the answer is a 503 saying the
// request was not applied, for a write as for a read.
func TestUpstreams_AllDownIs503_J5(t *testing.T) {
	forEachUpstreamPath(t, func(t *testing.T, path string) {
		a, b := newAPIServer(t, "a"), newAPIServer(t, "b")
		e := newUpstreamsEnv(t, path, noChecks, a, b)
		a.kill()
		b.kill()
		for _, m := range []string{"GET", "POST", "GET"} {
			var body []byte
			if m == "POST" {
				body = []byte(`{}`)
			}
			code, got := e.do(t, m, "/api/v1/namespaces/default/configmaps", body)
			if code != http.StatusServiceUnavailable || !bytes.Equal(got, notSentBody) {
				t.Errorf("%s: status %d %s, want 503 %s", m, code, got, notSentBody)
			}
		}
		if code, _ := e.do(t, "GET", "/kubegate/readyz", nil); code != http.StatusServiceUnavailable {
			t.Errorf("/kubegate/readyz with every upstream ejected = %d, want 503", code)
		}
	})
}

// A dead upstream is readmitted only after Rise passed checks in a row
// once it is back; one whose /readyz fails is ejected after Fall.
func TestUpstreams_HealthCheckFallAndRise_J5(t *testing.T) {
	a, b := newAPIServer(t, "a"), newAPIServer(t, "b")
	check := HealthCheck{Interval: 20 * time.Millisecond, Timeout: time.Second, Rise: 3, Fall: 4}
	e := newUpstreamsEnv(t, "fast-HTTP/1.1", check, a, b)

	b.ready.Store(false)
	before := b.readyz.Load()
	waitFor(t, "b ejected by its checks", func() bool { return e.healthy(b) == 0 })
	if n := b.readyz.Load() - before; n < int64(check.Fall) {
		t.Errorf("ejected after %d checks, want at least fall = %d", n, check.Fall)
	}
	if got := testutil.ToFloat64(e.gw.ups.m.ejections.WithLabelValues(b.addr, ejectHealthCheck)); got != 1 {
		t.Errorf("health check ejections = %v, want 1", got)
	}
	for i := range 4 {
		if code, body := e.do(t, "GET", "/api/v1/pods", nil); code != http.StatusOK || !bytes.Contains(body, []byte(`"a"`)) {
			t.Fatalf("GET %d with b ejected: %d %s, want a's answer", i, code, body)
		}
	}

	b.kill()
	b.ready.Store(true)
	b.start(t, b.addr)
	waitFor(t, "b readmitted", func() bool { return e.healthy(b) == 1 })
	if n := b.readyz.Load(); n < int64(check.Rise) {
		t.Errorf("readmitted after %d checks, want at least rise = %d", n, check.Rise)
	}
	names := map[string]bool{}
	for range 4 {
		_, body := e.do(t, "GET", "/api/v1/pods", nil)
		names[string(body)] = true
	}
	if len(names) != 2 {
		t.Errorf("answers after readmission %v, want both upstreams in turn", names)
	}
}

// One upstream is not checked and never ejected: every request tries it,
// so that it serves again from the first request after it returns.
func TestUpstreams_OneUpstreamIsNeverEjected_J5(t *testing.T) {
	a := newAPIServer(t, "a")
	e := newUpstreamsEnv(t, "fast-HTTP/1.1", HealthCheck{Interval: 10 * time.Millisecond}, a)
	a.kill()
	if code, body := e.do(t, "GET", "/api/v1/pods", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("status %d %s, want 503", code, body)
	}
	a.start(t, a.addr)
	if code, body := e.do(t, "GET", "/api/v1/pods", nil); code != http.StatusOK {
		t.Fatalf("after the upstream returned: status %d %s, want 200", code, body)
	}
	if n := a.readyz.Load(); n != 0 {
		t.Errorf("a single upstream was checked %d times, want none", n)
	}
}

func TestUpstreams_ListIsChecked_J5(t *testing.T) {
	u := func(s string) *url.URL { v, _ := url.Parse(s); return v }
	for _, tc := range []struct {
		ups  []*url.URL
		want string
	}{
		{[]*url.URL{u("https://a:6443"), u("http://b:6443")}, `upstream "http://b:6443" has another scheme`},
		{[]*url.URL{u("https://a:6443/x"), u("https://b:6443/y")}, `upstream "https://b:6443/y" has another path`},
		{[]*url.URL{u("https://a:6443"), u("https://a:6443")}, `upstream "https://a:6443" is given twice`},
		{[]*url.URL{u("https://a:6443"), u("https://u:p@b:6443")}, `upstream "https://u:xxxxx@b:6443" has a user name`},
		{[]*url.URL{u("https://a:6443"), u("b:6443")}, `upstream "b:6443" is not an absolute`},
	} {
		err := checkUpstreams(tc.ups)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("checkUpstreams(%v) = %v, want %s…", tc.ups, err, tc.want)
		}
	}
	if err := checkUpstreams([]*url.URL{u("https://a:6443/"), u("https://b:6443")}); err != nil {
		t.Errorf("same scheme, same empty path: %v", err)
	}
}

// With every upstream out of rotation, requests still try them in turn:
// upstreams ejected for a failed connection that are back serve at once,
// before any health check readmits them (J.5).
func TestUpstreams_AllEjectedAreStillTried_J5(t *testing.T) {
	forEachUpstreamPath(t, func(t *testing.T, path string) {
		a, b := newAPIServer(t, "a"), newAPIServer(t, "b")
		e := newUpstreamsEnv(t, path, noChecks, a, b)
		a.kill()
		b.kill()
		if code, _ := e.do(t, "GET", "/api/v1/pods", nil); code != http.StatusServiceUnavailable {
			t.Fatalf("with both down: status %d, want 503", code)
		}
		if e.healthy(a) != 0 || e.healthy(b) != 0 {
			t.Fatalf("healthy a=%v b=%v after failed connections, want both ejected", e.healthy(a), e.healthy(b))
		}
		a.start(t, a.addr)
		b.start(t, b.addr)
		for i := range 4 {
			if code, body := e.do(t, "GET", "/api/v1/pods", nil); code != http.StatusOK {
				t.Fatalf("GET %d with both back but ejected: %d %s, want 200", i, code, body)
			}
		}
		if code, body := e.do(t, "POST", "/api/v1/namespaces/default/configmaps", []byte(`{}`)); code/100 != 2 {
			t.Fatalf("POST with both back but ejected: %d %s, want it served", code, body)
		}
	})
}

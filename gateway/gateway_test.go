package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	authx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/console"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

// seen is what the upstream received for one request.
type seen struct {
	method string
	path   string
	header http.Header
}

// upstream is a TLS server that requires the front-proxy client cert (in
// request-header mode) and records every request it receives.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
	// handler, when set, answers instead of the default echo.
	handler http.HandlerFunc
}

func (u *upstream) last(t *testing.T) seen {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("upstream received no request")
	}
	return u.reqs[len(u.reqs)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

// env is a gateway in front of a recording upstream, with the PKI and
// credentials for each authenticator.
type env struct {
	clientCA, frontProxyCA, serverCA *testpki.Cert
	up                               *upstream
	gw                               struct{ URL string }
	cleanup                          func(func())
	proto                            string
	gateway                          *Gateway
	issuer                           *serviceaccount.Issuer
	tokens                           *tokenfile.Authenticator
	audit                            *testwait.Buffer
	revoked                          *Revocation
}

type envOptions struct {
	identity      UpstreamIdentity
	impersonation authz.Authorizer
	metricsAuthz  authz.Authorizer
	console       *console.Console
	maxBodyBytes  int64
	bodyTimeout   time.Duration
	// headerTimeout and idleTimeout replace the server's, when set.
	headerTimeout, idleTimeout time.Duration
	// proto is the protocol clients speak: "HTTP/1.1" (the lean path,
	// and the default), "HTTP/2.0" (Go's HTTP/2 server, as kubegate
	// gateway serves HTTP/2 by default) or "HTTP/2.0-fast" (HTTP/2 served
	// by the fast path's own HTTP/2 server, gateway/internal/h2, as with
	// --http2-fast-path).
	proto string
}

// protocols are the client protocols tests run over: HTTP/1.1 is served
// by the lean path, HTTP/2 by net/http's HTTP/2 server (the default) and,
// as HTTP/2.0-fast, by gateway/internal/h2 (the opt-in).
var protocols = []string{"HTTP/1.1", "HTTP/2.0", "HTTP/2.0-fast"}

// forEachProtocol runs test once per client protocol.
func forEachProtocol(t *testing.T, test func(t *testing.T, proto string)) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) { test(t, proto) })
	}
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{
		clientCA:     testpki.NewCA(t, "kubernetes"),
		frontProxyCA: testpki.NewCA(t, "front-proxy-ca"),
		serverCA:     testpki.NewCA(t, "server-ca"),
		audit:        &testwait.Buffer{},
	}
	servingCert := func() tls.Certificate {
		c := e.serverCA.Issue(t, testpki.Options{CN: "localhost", DNSNames: []string{"localhost"},
			IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}})
		pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}

	// The upstream: trusts only front-proxy client certs in request-header mode.
	e.up = &upstream{}
	e.up.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.up.mu.Lock()
		e.up.reqs = append(e.up.reqs, seen{method: r.Method, path: r.URL.Path, header: r.Header.Clone()})
		h := e.up.handler
		e.up.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"app"}}`)
	}))
	upTLS := &tls.Config{Certificates: []tls.Certificate{servingCert()}, ClientCAs: e.frontProxyCA.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	e.up.TLS = upTLS
	e.up.StartTLS()
	t.Cleanup(e.up.Close)

	// The gateway's files.
	dir := t.TempDir()
	proxyCert, proxyKey := e.frontProxyCA.Issue(t, testpki.Options{CN: "front-proxy-client"}).WriteFiles(t, dir, "front-proxy-client")
	proxyPair, err := serving.LoadKeyPair(proxyCert, proxyKey)
	if err != nil {
		t.Fatal(err)
	}
	upURL, _ := url.Parse(e.up.URL)
	upOpts := UpstreamTransportOptions{CAPEM: e.serverCA.CertPEM, ClientCert: proxyPair}
	rt, err := NewUpstreamTransport(upOpts)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := NewFastPath(upURL, upOpts)
	if err != nil {
		t.Fatal(err)
	}
	fast.HTTP2 = o.proto == "HTTP/2.0-fast"

	// The authenticators, as kube-apiserver orders them.
	x, err := authx509.New(e.clientCA.CertPEM, authx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rhOpts := requestheader.Default()
	rhOpts.AllowedNames = []string{"front-proxy-client"}
	rhOpts.UsernameHeaders = append(rhOpts.UsernameHeaders, "X-Custom-User")
	rhOpts.GroupHeaders = append(rhOpts.GroupHeaders, "X-Custom-Group")
	rhOpts.ExtraHeaderPrefixes = append(rhOpts.ExtraHeaderPrefixes, "X-Custom-Extra-")
	rh, err := requestheader.New(e.frontProxyCA.CertPEM, rhOpts)
	if err != nil {
		t.Fatal(err)
	}
	e.tokens, _, err = tokenfile.Parse(strings.NewReader("token-alice,alice,uid-alice,\"devs,ops\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	key := testpki.NewCA(t, "sa").Key
	e.issuer, err = serviceaccount.NewIssuer(key, serviceaccount.IssuerOptions{Issuer: issuer})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := serviceaccount.New(serviceaccount.Options{Issuers: []string{issuer}}, []cryptoPublicKey{key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	a := authn.New(authn.Config{
		RequestHeader: rh,
		X509:          x,
		StaticTokens:  []authn.Token{e.tokens},
		Tokens:        []authn.Token{sa},
		TokenCache:    authn.DefaultCacheOptions(),
	})
	e.revoked, _ = NewRevocation(nil)

	up, _ := url.Parse(e.up.URL)
	e.gateway, err = New(Config{
		Upstream:             up,
		Transport:            rt,
		FastPath:             fast,
		Authenticator:        a,
		Identity:             o.identity,
		IdentityHeaders:      []authn.IdentityHeaders{authn.IdentityHeaderNames([]string{"X-Custom-User", "X-Custom-Group"}, []string{"X-Custom-Extra-"})},
		Impersonation:        o.impersonation,
		MetricsAuthorization: o.metricsAuthz,
		Console:              o.console,
		Revoked:              e.revoked,
		AuditLog:             e.audit,
		MaxBodyBytes:         o.maxBodyBytes,
		BodyTimeout:          o.bodyTimeout,
		Logger:               slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	servingPair := servingCert()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{servingPair}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"h2", "http/1.1"}}
	srv := serving.NewHTTPServer(e.gateway, tc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv.ReadHeaderTimeout = cmp.Or(o.headerTimeout, srv.ReadHeaderTimeout)
	srv.IdleTimeout = cmp.Or(o.idleTimeout, srv.IdleTimeout)
	_, shutdown := serve(e.gateway, srv, ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	e.gw.URL = "https://" + ln.Addr().String()
	e.cleanup = t.Cleanup
	e.proto = o.proto
	return e
}

// client returns an HTTPS client for the gateway, presenting cert if set.
func (e *env) client(cert *testpki.Cert) *http.Client {
	tc := &tls.Config{RootCAs: e.serverCA.Pool()}
	if cert != nil {
		pair, _ := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		tc.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{TLSClientConfig: tc}
	if strings.HasPrefix(e.proto, "HTTP/2.0") {
		tr.ForceAttemptHTTP2 = true
	} else {
		tc.NextProtos = []string{"http/1.1"}
	}
	// Closing the client's connections first lets the server shut down
	// at once rather than wait for HTTP/2 clients to leave.
	e.cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func (e *env) do(t *testing.T, c *http.Client, method, path string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.gw.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if want := strings.TrimSuffix(e.proto, "-fast"); want != "" && resp.Proto != want {
		t.Fatalf("response protocol %s, want %s", resp.Proto, want)
	}
	return resp, body
}

func wantUnauthorized(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401; body %s", resp.StatusCode, body)
	}
	var st struct {
		Kind, Status, Message, Reason string
		Code                          int
	}
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Reason != "Unauthorized" || st.Code != 401 || st.Message != "Unauthorized" {
		t.Fatalf("401 body = %s, want a metav1.Status with reason Unauthorized", body)
	}
	if resp.Header.Get("WWW-Authenticate") != "" {
		t.Error("401 carries WWW-Authenticate; kube-apiserver sends none (A.5)")
	}
}

// identityHeaders returns the identity-bearing headers the upstream saw.
func identityHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-remote-") || strings.HasPrefix(lk, "x-custom-") || strings.HasPrefix(lk, "impersonate-") || lk == "authorization" {
			out[k] = v
		}
	}
	return out
}

func TestForwardsEachCredentialType(t *testing.T) { forEachProtocol(t, testForwardsEachCredentialType) }

func testForwardsEachCredentialType(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	saTok, err := e.issuer.Issue(serviceaccount.TokenRequest{Namespace: "ns1", Name: "builder", UID: "sa-uid"})
	if err != nil {
		t.Fatal(err)
	}
	// Go encodes several O values as one sorted RDN set; pick names whose
	// sorted order is the order written.
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs", "opsx"}})
	proxy := e.frontProxyCA.Issue(t, testpki.Options{CN: "front-proxy-client"})

	tests := []struct {
		name   string
		cert   *testpki.Cert
		header http.Header
		want   http.Header
	}{
		{
			name: "x509 client cert",
			cert: alice,
			want: http.Header{
				"X-Remote-User":  {"alice"},
				"X-Remote-Group": {"devs", "opsx", "system:authenticated"},
			},
		},
		{
			name:   "static token",
			header: http.Header{"Authorization": {"Bearer token-alice"}},
			want: http.Header{
				"X-Remote-User":  {"alice"},
				"X-Remote-Uid":   {"uid-alice"},
				"X-Remote-Group": {"devs", "ops", "system:authenticated"},
			},
		},
		{
			name:   "service-account token",
			header: http.Header{"Authorization": {"Bearer " + saTok.Token}},
			want: http.Header{
				"X-Remote-User":  {"system:serviceaccount:ns1:builder"},
				"X-Remote-Uid":   {"sa-uid"},
				"X-Remote-Group": {"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
			},
		},
		{
			name: "front proxy in front of the gateway",
			cert: proxy,
			header: http.Header{"X-Remote-User": {"bob"}, "X-Remote-Group": {"g1", "g2"},
				"X-Remote-Extra-Scopes": {"s1"}},
			want: http.Header{
				"X-Remote-User":         {"bob"},
				"X-Remote-Group":        {"g1", "g2", "system:authenticated"},
				"X-Remote-Extra-Scopes": {"s1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do(t, e.client(tt.cert), "GET", "/api/v1/namespaces/default/pods/app", tt.header)
			if resp.StatusCode != 200 {
				t.Fatalf("status = %d, body %s", resp.StatusCode, body)
			}
			got := e.up.last(t).header
			if got.Get("Authorization") != "" {
				t.Error("upstream saw Authorization")
			}
			for k, v := range tt.want {
				if v == nil {
					continue
				}
				if g := got.Values(k); strings.Join(g, "|") != strings.Join(v, "|") {
					t.Errorf("upstream %s = %q, want %q", k, g, v)
				}
			}
			if tt.cert == alice {
				ids := got.Values("X-Remote-Extra-Authentication.kubernetes.io%2Fcredential-Id")
				if len(ids) != 1 || !strings.HasPrefix(ids[0], "X509SHA256=") {
					t.Errorf("credential-id extra = %q, want X509SHA256=…; headers %v", ids, identityHeaders(got))
				}
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("response has no X-Request-Id")
			}
			if xff := got.Values("X-Forwarded-For"); len(xff) != 1 || xff[0] != "127.0.0.1" {
				t.Errorf("upstream X-Forwarded-For = %q, want [127.0.0.1]", xff)
			}
		})
	}
}

func TestSpoofingMatrix(t *testing.T) { forEachProtocol(t, testSpoofingMatrix) }

func testSpoofingMatrix(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	expired := e.clientCA.Issue(t, testpki.Options{CN: "alice", NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	wrongProxy := e.clientCA.Issue(t, testpki.Options{CN: "front-proxy-client"})

	creds := []struct {
		name   string
		cert   *testpki.Cert
		header http.Header
		valid  bool
		user   string
	}{
		{name: "valid cert", cert: alice, valid: true, user: "alice"},
		{name: "valid token", header: http.Header{"Authorization": {"Bearer token-alice"}}, valid: true, user: "alice"},
		{name: "unknown token", header: http.Header{"Authorization": {"Bearer nope"}}},
		{name: "expired cert", cert: expired},
		// A client-CA cert named like the proxy fails request-header (wrong
		// CA) but is a valid client cert: it authenticates as itself, and
		// its identity headers are dropped (A.0, A.4).
		{name: "client-CA cert posing as proxy", cert: wrongProxy, valid: true, user: "front-proxy-client"},
		{name: "no credential"},
	}
	spoofs := []struct {
		name   string
		header http.Header
	}{
		{"X-Remote-User", http.Header{"X-Remote-User": {"admin"}}},
		{"mixed case x-REMOTE-group", http.Header{"x-REMOTE-group": {"system:masters"}}},
		{"X-Remote-Extra", http.Header{"X-REMOTE-EXTRA-Scopes": {"all"}}},
		{"X-Remote-Uid", http.Header{"X-Remote-Uid": {"0"}}},
		{"custom user header", http.Header{"X-Custom-User": {"admin"}}},
		{"custom group header", http.Header{"x-custom-group": {"system:masters"}}},
		{"custom extra prefix", http.Header{"X-Custom-Extra-Foo": {"bar"}}},
		{"duplicate user headers", http.Header{"X-Remote-User": {"admin", "root"}, "X-Remote-Group": {"system:masters", "system:masters"}}},
	}
	cases := 0
	for _, c := range creds {
		for _, s := range spoofs {
			cases++
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				h := http.Header{}
				for k, v := range c.header {
					h[k] = v
				}
				for k, v := range s.header {
					h[k] = v
				}
				before := e.up.count()
				resp, body := e.do(t, e.client(c.cert), "GET", "/api/v1/pods", h)
				if !c.valid {
					wantUnauthorized(t, resp, body)
					if e.up.count() != before {
						t.Fatal("an unauthenticated request reached the upstream")
					}
					return
				}
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				got := identityHeaders(e.up.last(t).header)
				if u := got.Values("X-Remote-User"); len(u) != 1 || u[0] != c.user {
					t.Errorf("upstream X-Remote-User = %q, want [%s]", u, c.user)
				}
				for k, vs := range got {
					for _, v := range vs {
						if v == "admin" || v == "root" || v == "system:masters" || v == "all" || v == "bar" || v == "0" {
							t.Errorf("client-supplied identity reached the upstream: %s: %s", k, v)
						}
					}
					if strings.HasPrefix(strings.ToLower(k), "x-custom-") {
						t.Errorf("custom identity header reached the upstream: %s", k)
					}
				}
			})
		}
	}
	if cases < 25 {
		t.Fatalf("matrix has %d cases, want at least 25", cases)
	}
}

func TestImpersonateModeRefusesUnauthorizedImpersonation(t *testing.T) {
	forEachProtocol(t, testImpersonateModeRefusesUnauthorizedImpersonation)
}

func testImpersonateModeRefusesUnauthorizedImpersonation(t *testing.T, proto string) {
	var asked []string
	var mu sync.Mutex
	az := impersonationFunc(func(_ context.Context, u *authn.User, a authorizationAttrs) (bool, string, error) {
		mu.Lock()
		asked = append(asked, u.Name+":"+a.Resource+"/"+a.Name)
		mu.Unlock()
		return u.Name == "alice" && a.Resource == "users" && a.Name == "bob", "", nil
	})
	e := newEnv(t, envOptions{proto: proto, identity: ImpersonateIdentity, impersonation: az})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs"}})

	// No impersonation: the gateway impersonates alice herself.
	resp, body := e.do(t, e.client(alice), "GET", "/api/v1/pods", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := e.up.last(t).header
	if got.Get("Impersonate-User") != "alice" || strings.Join(got.Values("Impersonate-Group"), ",") != "devs" {
		t.Errorf("upstream impersonation headers = %v", identityHeaders(got))
	}
	if got.Get("X-Remote-User") != "" {
		t.Error("impersonate mode sent X-Remote-User")
	}

	// Allowed: alice may impersonate bob.
	resp, body = e.do(t, e.client(alice), "GET", "/api/v1/pods", http.Header{"Impersonate-User": {"bob"}})
	if resp.StatusCode != 200 {
		t.Fatalf("allowed impersonation: status %d: %s", resp.StatusCode, body)
	}
	if u := e.up.last(t).header.Values("Impersonate-User"); len(u) != 1 || u[0] != "bob" {
		t.Errorf("upstream Impersonate-User = %q, want [bob]", u)
	}

	// Refused: a group alice may not impersonate.
	before := e.up.count()
	resp, body = e.do(t, e.client(alice), "GET", "/api/v1/pods", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}})
	if resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte(`"reason":"Forbidden"`)) {
		t.Fatalf("refused impersonation: status %d: %s", resp.StatusCode, body)
	}
	// Group without user: 400, as kube-apiserver answers.
	resp, _ = e.do(t, e.client(alice), "GET", "/api/v1/pods", http.Header{"Impersonate-Group": {"system:masters"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("group without user: status %d, want 400", resp.StatusCode)
	}
	if e.up.count() != before {
		t.Fatal("a refused impersonation reached the upstream")
	}
}

func TestRequestHeaderModePassesClientImpersonation(t *testing.T) {
	forEachProtocol(t, testRequestHeaderModePassesClientImpersonation)
}

func testRequestHeaderModePassesClientImpersonation(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	resp, body := e.do(t, e.client(alice), "GET", "/api/v1/pods", http.Header{"Impersonate-User": {"bob"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := e.up.last(t).header
	if got.Get("X-Remote-User") != "alice" || got.Get("Impersonate-User") != "bob" {
		t.Errorf("upstream saw %v; want alice asking to impersonate bob, for the upstream to authorize", identityHeaders(got))
	}
}

func TestRevokedCertificateIsRefused(t *testing.T) {
	forEachProtocol(t, testRevokedCertificateIsRefused)
}

func testRevokedCertificateIsRefused(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	if resp, _ := e.do(t, e.client(alice), "GET", "/api/v1/pods", nil); resp.StatusCode != 200 {
		t.Fatalf("before revocation: status %d", resp.StatusCode)
	}
	if err := e.revoked.Load([]byte("# revoked\nserial:" + alice.Cert.SerialNumber.Text(16) + "\n")); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do(t, e.client(alice), "GET", "/api/v1/pods", nil)
	wantUnauthorized(t, resp, body)
}

// An upstream that refuses connections cannot have received the
// request: the answer is a 503 that says so (J.5).
func TestUnreachableUpstreamIs503Status_J5(t *testing.T) {
	forEachProtocol(t, testUnreachableUpstreamIs503Status)
}

func testUnreachableUpstreamIs503Status(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	e.up.Close()
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	resp, body := e.do(t, e.client(alice), "GET", "/api/v1/pods", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Equal(body, notSentBody) {
		t.Fatalf("status %d body %s, want a 503 Status %s", resp.StatusCode, body, notSentBody)
	}
	resp, _ = e.do(t, e.client(nil), "GET", "/kubegate/readyz", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/kubegate/readyz with the upstream down = %d, want 503", resp.StatusCode)
	}
}

func TestWhoamiHealthMetricsAudit(t *testing.T) { forEachProtocol(t, testWhoamiHealthMetricsAudit) }

func testWhoamiHealthMetricsAudit(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto, metricsAuthz: allowUsers("alice")})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	resp, body := e.do(t, e.client(alice), "GET", "/kubegate/whoami", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("whoami: %d %s", resp.StatusCode, body)
	}
	var w whoami
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	if w.Authenticator != "x509" || w.Username != "alice" || w.Forwarded.Get("X-Remote-User") != "alice" {
		t.Errorf("whoami = %+v", w)
	}
	resp, body = e.do(t, e.client(nil), "GET", "/kubegate/whoami", nil)
	wantUnauthorized(t, resp, body)

	for _, p := range []string{"/kubegate/healthz", "/kubegate/livez", "/kubegate/readyz"} {
		if resp, body := e.do(t, e.client(nil), "GET", p, nil); resp.StatusCode != 200 {
			t.Errorf("%s = %d %s", p, resp.StatusCode, body)
		}
	}
	e.do(t, e.client(alice), "GET", "/api/v1/pods", nil)
	// The lean path writes the audit line after the answer has gone out,
	// so the client can get here first: wait for the line. The request
	// counter goes up just before it.
	testwait.For(t, 5*time.Second, "a complete audit line for alice's request", func() (bool, string) {
		if err := e.gateway.Flush(); err != nil {
			t.Fatal(err)
		}
		log := e.audit.String()
		return hasCompleteAuditLine(t, log), "not in:\n" + log
	})
	_, metricsBody := e.do(t, e.client(alice), "GET", "/kubegate/metrics", nil)
	for _, want := range []string{
		`kubegate_gateway_requests_total{authenticator="x509",code="200",verb="GET"}`,
		`kubegate_gateway_requests_total{authenticator="",code="401",verb="GET"} 1`,
		"kubegate_gateway_authentication_duration_seconds_bucket",
		"kubegate_gateway_upstream_duration_seconds_bucket",
		"kubegate_gateway_client_certificate_expiration_seconds_bucket",
	} {
		if !bytes.Contains(metricsBody, []byte(want)) {
			t.Errorf("/kubegate/metrics lacks %s", want)
		}
	}
}

// hasCompleteAuditLine reports whether log holds a complete audit line for
// alice's proxied request; every line must be JSON.
func hasCompleteAuditLine(t *testing.T, log string) bool {
	t.Helper()
	found := false
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if ev.Path == "/api/v1/pods" && ev.User == "alice" && ev.Authenticator == "x509" && ev.Status == 200 && ev.UpstreamStatus == 200 &&
			strings.HasPrefix(ev.CredentialID, "X509SHA256=") && ev.RequestID != "" {
			found = true
		}
	}
	return found
}

func TestStreamsWatchEvents(t *testing.T) { forEachProtocol(t, testStreamsWatchEvents) }

func testStreamsWatchEvents(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	release := make(chan struct{})
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"type":"ADDED"}`)
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprintln(w, `{"type":"DELETED"}`)
	}
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	req, _ := http.NewRequest("GET", e.gw.URL+"/api/v1/pods?watch=true", nil)
	resp, err := e.client(alice).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "ADDED") {
		t.Fatalf("first event = %q, %v; want ADDED before the stream ends", line, err)
	}
	close(release)
	line, _ = br.ReadString('\n')
	if !strings.Contains(line, "DELETED") {
		t.Fatalf("second event = %q", line)
	}
}

func TestUpgradePassesThroughBothWays(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "want upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Upgrade"))
		brw.Flush()
		line, _ := brw.ReadString('\n')
		fmt.Fprintf(brw, "echo:%s", line)
		brw.Flush()
	}
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	for _, proto := range []string{"SPDY/3.1", "websocket"} {
		t.Run(proto, func(t *testing.T) {
			pair, _ := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
			conn, err := tls.Dial("tcp", strings.TrimPrefix(e.gw.URL, "https://"), &tls.Config{RootCAs: e.serverCA.Pool(), Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST /api/v1/namespaces/default/pods/app/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\nX-Remote-User: admin\r\n\r\n", proto)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %d", resp.StatusCode)
			}
			fmt.Fprintf(conn, "hello\n")
			got, _ := br.ReadString('\n')
			if got != "echo:hello\n" {
				t.Fatalf("echo = %q", got)
			}
			if u := e.up.last(t).header.Values("X-Remote-User"); len(u) != 1 || u[0] != "alice" {
				t.Errorf("upgrade forwarded X-Remote-User %q, want [alice]", u)
			}
		})
	}
}

func TestKeyPairReload(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	dir := t.TempDir()
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "one"}).WriteFiles(t, dir, "pair")
	kp, err := serving.LoadKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := kp.Watch(ctx, 20*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	two := ca.Issue(t, testpki.Options{CN: "two"})
	// Replace both files by rename, as an atomic writer does.
	for name, data := range map[string][]byte{certFile: two.CertPEM, keyFile: two.KeyPEM} {
		if err := fsutil.WriteFile(name, data, fsutil.ModeKey, true); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 2*time.Second, "serving cert replaced", func() (bool, string) {
		leaf, _ := x509Parse(kp.Certificate().Certificate[0])
		return leaf.Subject.CommonName == "two", strconv.Quote(leaf.Subject.CommonName)
	})
}

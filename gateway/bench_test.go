package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	authx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/console"
	"github.com/kubegate/kubegate/gateway/internal/h1"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"github.com/kubegate/kubegate/internal/testpki"
)

const benchPod = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"app","namespace":"default","uid":"7d0c9a6e-3f1b-4b8e-9a53-1c2f3e4d5a6b","resourceVersion":"12345","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"app"}},"spec":{"containers":[{"name":"app","image":"registry.example/app:latest","ports":[{"containerPort":2580,"protocol":"TCP"}]}],"nodeName":"node-1"},"status":{"phase":"Running","podIP":"10.244.1.7"}}`

// BenchmarkGatewayKeepAlive measures one mTLS keep-alive GET through the
// gateway to a plain-HTTP backend, client, gateway and backend all in this
// process: the figure to watch is allocs/op and the gateway's share of
// the CPU profile (-cpuprofile). cpu-ns/op is the process's CPU time (user
// and system, all three parties) per request: on a shared machine it is
// steadier than ns/op.
//
// path=h2 is HTTP/2: 64 requests in flight on one connection, served by
// net/http's HTTP/2 server; path=h2-fast by the fast path's own
// (gateway/internal/h2).
func BenchmarkGatewayKeepAlive(b *testing.B) {
	b.Run("path=lean", func(b *testing.B) { benchKeepAlive(b, true, false, false) })
	b.Run("path=net-http", func(b *testing.B) { benchKeepAlive(b, false, false, false) })
	b.Run("path=h2", func(b *testing.B) { benchKeepAlive(b, true, true, false) })
	b.Run("path=h2-fast", func(b *testing.B) { benchKeepAlive(b, true, true, true) })
}

// benchKeepAlive runs the benchmark served by serve (the lean path for
// HTTP/1.1; for HTTP/2 Go's server or, with fastH2, gateway/internal/h2)
// or by a plain net/http server, whose requests go upstream through
// net/http's Transport.
func benchKeepAlive(b *testing.B, lean, h2, fastH2 bool) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchPod)
	}))
	defer backend.Close()
	ca := testpki.NewCA(b, "ca")
	x, err := authx509.New(ca.CertPEM, authx509.Options{})
	if err != nil {
		b.Fatal(err)
	}
	up, _ := url.Parse(backend.URL)
	rt, err := NewUpstreamTransport(UpstreamTransportOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var fast *FastPath
	if lean {
		if fast, err = NewFastPath(up, UpstreamTransportOptions{}); err != nil {
			b.Fatal(err)
		}
		fast.HTTP2 = fastH2
	}
	g, err := New(Config{
		Upstream:      up,
		Transport:     rt,
		FastPath:      fast,
		Authenticator: authn.New(authn.Config{X509: x}),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	servingCert := ca.Issue(b, testpki.Options{CN: "gw", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}})
	pair, _ := tls.X509KeyPair(servingCert.CertPEM, servingCert.KeyPEM)
	tc := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"h2", "http/1.1"}}
	var gwURL string
	if lean {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		_, shutdown := serve(g, serving.NewHTTPServer(g, tc, slog.New(slog.NewTextHandler(io.Discard, nil))), ln)
		defer func() { _ = shutdown(context.Background()) }()
		gwURL = "https://" + ln.Addr().String()
	} else {
		srv := httptest.NewUnstartedServer(g)
		srv.TLS = tc
		srv.StartTLS()
		defer srv.Close()
		gwURL = srv.URL
	}
	user := ca.Issue(b, testpki.Options{CN: "bench-user", Orgs: []string{"devs", "devops"}})
	upair, _ := tls.X509KeyPair(user.CertPEM, user.KeyPEM)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{upair}},
		MaxIdleConnsPerHost: 64,
		ForceAttemptHTTP2:   h2,
	}}
	if h2 {
		b.SetParallelism(32)
	} else {
		client.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	target := gwURL + "/api/v1/namespaces/default/pods/app"
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(target)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || (resp.ProtoMajor == 2) != h2 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	cpu.Report(b)
}

// BenchmarkLeanServe measures the fast path's own work per keep-alive
// request, without sockets, TLS or other goroutines: one connection
// reads b.N request heads from memory, authenticates each by its client
// certificate and relays a canned answer from an upstream connection in
// memory. Its ns/op and allocs/op are the gateway's alone.
func BenchmarkLeanServe(b *testing.B) { benchLeanServe(b, nil) }

// BenchmarkLeanServeConsole is BenchmarkLeanServe with the web console's
// feed (docs/kubernetes-behaviour.md K.3): feed=idle with nobody reading
// it, which costs the ring alone, and feed=read with one request stream
// turning every record into its line.
func BenchmarkLeanServeConsole(b *testing.B) {
	b.Run("feed=idle", func(b *testing.B) {
		c, _ := console.New(console.Config{Feed: console.NewFeed(0)})
		benchLeanServe(b, c)
	})
	b.Run("feed=read", func(b *testing.B) {
		c, _ := console.New(console.Config{Feed: console.NewFeed(0), Authorizer: authz.AuthorizerFunc(
			func(context.Context, authz.Attributes) (authz.Decision, string, error) { return authz.Allow, "", nil })})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.ServeAPI(w, r, console.Identity{User: authn.User{Name: "reader"}})
		}))
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+console.RequestsPath, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
		benchLeanServe(b, c)
	})
}

func benchLeanServe(b *testing.B, c *console.Console) {
	ca := testpki.NewCA(b, "ca")
	x, err := authx509.New(ca.CertPEM, authx509.Options{})
	if err != nil {
		b.Fatal(err)
	}
	up, _ := url.Parse("http://backend:8080")
	answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\n" +
		"Content-Length: " + strconv.Itoa(len(benchPod)) + "\r\n\r\n" + benchPod
	upstream := &memConn{msg: []byte(answer), n: -1}
	pool := h1.NewUpstream(func(context.Context) (net.Conn, error) { return upstream, nil }, 1, 1)
	g, err := New(Config{
		FastPath:      &FastPath{up: pool, host: up.Host, pools: map[string]*h1.Upstream{up.Host: pool}},
		Upstream:      up,
		Authenticator: authn.New(authn.Config{X509: x}),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Console:       c,
	})
	if err != nil {
		b.Fatal(err)
	}
	user := ca.Issue(b, testpki.Options{CN: "bench-user", Orgs: []string{"devs", "devops"}})
	fs := h1.NewServer(h1.Options{
		Handler:      g.serveFast,
		Upstream:     pool,
		UpstreamHost: up.Host,
		HTTP:         &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute},
	}, &net.TCPAddr{})
	head := "GET /api/v1/namespaces/default/pods/app HTTP/1.1\r\nHost: 127.0.0.1:6443\r\n" +
		"User-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n"
	client := &memConn{msg: []byte(head), n: b.N}
	state := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{user.Cert}}
	b.ReportAllocs()
	b.ResetTimer()
	fs.ServeConn(client, client, state)
	b.StopTimer()
	if want := int64(b.N) * int64(len(answer)); client.written < want {
		b.Fatalf("wrote %d bytes to the client, want at least %d", client.written, want)
	}
}

// memConn is a connection in memory: each Read returns msg, n times (n
// < 0: always), then io.EOF; writes are counted and dropped.
type memConn struct {
	msg     []byte
	n       int
	written int64
}

func (c *memConn) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, io.EOF
	}
	if len(p) < len(c.msg) {
		return 0, io.ErrShortBuffer
	}
	c.n--
	return copy(p, c.msg), nil
}

func (c *memConn) Write(p []byte) (int, error)      { c.written += int64(len(p)); return len(p), nil }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

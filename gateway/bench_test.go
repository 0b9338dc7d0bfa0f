package gateway

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/kubegate/kubegate/authn"
	authx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

const benchPod = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"app","namespace":"default","uid":"7d0c9a6e-3f1b-4b8e-9a53-1c2f3e4d5a6b","resourceVersion":"12345","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"app"}},"spec":{"containers":[{"name":"app","image":"registry.example/app:latest","ports":[{"containerPort":2580,"protocol":"TCP"}]}],"nodeName":"node-1"},"status":{"phase":"Running","podIP":"10.244.1.7"}}`

// BenchmarkGatewayKeepAlive measures one mTLS keep-alive GET through the
// gateway to a plain-HTTP backend, client, gateway and backend all in this
// process: the figure to watch is allocs/op and the gateway's share of
// the CPU profile (-cpuprofile).
func BenchmarkGatewayKeepAlive(b *testing.B) {
	b.Run("path=lean", func(b *testing.B) { benchKeepAlive(b, true, true) })
	b.Run("path=net-http/transport=inline", func(b *testing.B) { benchKeepAlive(b, true, false) })
	b.Run("path=net-http/transport=http.Transport", func(b *testing.B) { benchKeepAlive(b, false, false) })
}

// benchKeepAlive runs the benchmark with the inline upstream transport or
// http.Transport, served by serve (the lean path for HTTP/1.1) or by a
// plain net/http server.
func benchKeepAlive(b *testing.B, inline, lean bool) {
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
	o := UpstreamTransportOptions{}
	if inline {
		o.Upstream = up
	}
	rt, err := NewUpstreamTransport(o)
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(Config{
		Upstream:      up,
		Transport:     rt,
		Authenticator: authn.New(authn.Config{X509: x}),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	serving := ca.Issue(b, testpki.Options{CN: "gw", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}})
	pair, _ := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	tc := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"http/1.1"}}
	var gwURL string
	if lean {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		_, shutdown := serve(g, NewHTTPServer(g, tc, slog.New(slog.NewTextHandler(io.Discard, nil))), ln)
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
	}}
	target := gwURL + "/api/v1/namespaces/default/pods/app"
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(target)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

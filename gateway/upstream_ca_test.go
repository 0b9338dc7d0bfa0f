package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/serving"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

// TestUpstreamTransportTrustsTheReloadedCABundle_H6: with a reloaded CA
// bundle, the upstream's certificate of a new CA is trusted from the
// handshake after the bundle names that CA, and the host name is still
// checked.
func TestUpstreamTransportTrustsTheReloadedCABundle_H6(t *testing.T) {
	t.Parallel()
	oldCA, newCA := testpki.NewCA(t, "kubernetes"), testpki.NewCA(t, "kubernetes")
	serve := func(ip string) *httptest.Server {
		cert := newCA.Issue(t, testpki.Options{CN: "kube-apiserver", IPs: []net.IP{net.ParseIP(ip)}, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	good, wrongName := serve("127.0.0.1"), serve("10.0.0.1")
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, oldCA.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	pool, err := serving.LoadCAPool(file)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewUpstreamTransport(UpstreamTransportOptions{CA: pool})
	if err != nil {
		t.Fatal(err)
	}
	get := func(srv *httptest.Server) error {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(good); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("with the old CA only: %v, want an unknown authority", err)
	}
	if err := pool.Load(append(append([]byte{}, oldCA.CertPEM...), newCA.CertPEM...)); err != nil {
		t.Fatal(err)
	}
	if err := get(good); err != nil {
		t.Errorf("with the old and the new CA: %v", err)
	}
	if err := get(wrongName); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("a trusted certificate for another address: %v, want a name mismatch", err)
	}
}

// TestUpstreamTransportPresentsAReplacedClientCertificate_H6: once the
// client certificate file is replaced, the next request presents the new
// certificate, even though a kept-alive connection with the old one is
// pooled (the upstream checks it on every request).
func TestUpstreamTransportPresentsAReplacedClientCertificate_H6(t *testing.T) {
	t.Parallel()
	serverCA, clientCA := testpki.NewCA(t, "kubernetes"), testpki.NewCA(t, "front-proxy-ca")
	srvCert := serverCA.Issue(t, testpki.Options{CN: "kube-apiserver", IPs: []net.IP{net.ParseIP("127.0.0.1")}, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	pair, err := tls.X509KeyPair(srvCert.CertPEM, srvCert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.TLS.PeerCertificates[0].SerialNumber.String()))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	first := clientCA.Issue(t, testpki.Options{CN: "front-proxy-client"})
	certFile, keyFile := first.WriteFiles(t, dir, "front-proxy-client")
	kp, err := serving.LoadKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := kp.Watch(ctx, 10*time.Millisecond, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	rt, err := NewUpstreamTransport(UpstreamTransportOptions{CAPEM: serverCA.CertPEM, ClientCert: kp})
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := serial(); got != first.Cert.SerialNumber.String() {
		t.Fatalf("first request presented serial %s, want %s", got, first.Cert.SerialNumber)
	}
	second := clientCA.Issue(t, testpki.Options{CN: "front-proxy-client"})
	for path, data := range map[string][]byte{keyFile: second.KeyPEM, certFile: second.CertPEM} {
		if err := fsutil.WriteFile(path, data, 0o600, true); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 5*time.Second, "the key pair reloaded", func() (bool, string) {
		return bytes.Equal(kp.Certificate().Certificate[0], second.Cert.Raw), "not yet"
	})
	if got := serial(); got != second.Cert.SerialNumber.String() {
		t.Errorf("after the certificate was replaced the request presented serial %s, want the new %s", got, second.Cert.SerialNumber)
	}
}

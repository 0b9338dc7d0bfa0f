package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/internal/serving"
	"github.com/kubegate/kubegate/internal/testpki"
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

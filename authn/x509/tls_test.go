package x509_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

// TestOverTLS authenticates real TLS clients: the server requests but does
// not verify client certificates, as kube-apiserver does, and verification
// happens per request in the authenticator.
func TestOverTLS(t *testing.T) {
	t.Parallel()
	ca := newCA(t, "client-ca")
	serverCA := newCA(t, "serving-ca")
	serving := issue(t, serverCA, testpki.Options{CN: "localhost", DNSNames: []string{"localhost"}, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	x, err := kx509.New(ca.CertPEM, kx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := authn.New(authn.Config{X509: x, Anonymous: true})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := a.AuthenticateRequest(r)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			t.Logf("refused: %v", err)
			return
		}
		fmt.Fprintf(w, "%s %s", resp.User.Name, strings.Join(resp.User.Groups, ","))
	}))
	servingPair, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{servingPair}, ClientAuth: tls.RequestClientCert, ClientCAs: ca.Pool()}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	now := time.Now()
	tests := []struct {
		name       string
		cert       *testpki.Cert
		wantStatus int
		wantBody   string
	}{
		{name: "A.7 a valid client cert authenticates over TLS", cert: issue(t, ca, testpki.Options{CN: "alice", Orgs: []string{"dev"}}), wantStatus: 200, wantBody: "alice dev,system:authenticated"},
		{name: "A.7 an expired client cert completes the handshake and gets 401", cert: issue(t, ca, testpki.Options{CN: "alice", NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(-time.Hour)}), wantStatus: 401},
		// Go clients only send a certificate issued by a CA the server
		// lists in its CertificateRequest (tls.Config.ClientCAs).
		{name: "A.7 a cert from an unlisted CA is not sent and the request is anonymous", cert: issue(t, serverCA, testpki.Options{CN: "alice"}), wantStatus: 200, wantBody: "system:anonymous system:unauthenticated"},
		{name: "A.7 no client cert is anonymous", wantStatus: 200, wantBody: "system:anonymous system:unauthenticated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := &tls.Config{RootCAs: serverCA.Pool(), ServerName: "localhost"}
			if tt.cert != nil {
				pair, err := tls.X509KeyPair(tt.cert.CertPEM, tt.cert.KeyPEM)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Certificates = []tls.Certificate{pair}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			defer client.CloseIdleConnections()
			for i := range 3 { // several requests on one connection: the cached path
				res, err := client.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != tt.wantStatus || (tt.wantBody != "" && string(body) != tt.wantBody) {
					t.Fatalf("request %d: %d %q, want %d %q", i, res.StatusCode, body, tt.wantStatus, tt.wantBody)
				}
			}
		})
	}
}

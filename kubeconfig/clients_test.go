package kubeconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testpki"
)

func requireKubectl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("kubectl is required in CI but is not installed")
	}
	t.Skip("kubectl not installed")
	return ""
}

// apiserverLike serves TLS with a kube-apiserver-like serving cert from
// ca and answers each request with the client cert's CN or the bearer
// token it was given.
func apiserverLike(t *testing.T, ca *testpki.Cert) *httptest.Server {
	t.Helper()
	serving := ca.Issue(t, testpki.Options{
		CN:       "kube-apiserver",
		DNSNames: []string{"kubernetes", "kubernetes.default", "localhost"},
		IPs:      []net.IP{net.ParseIP("127.0.0.1")},
		EKUs:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	pair, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			fmt.Fprintf(w, "cert:%s", r.TLS.PeerCertificates[0].Subject.CommonName)
			return
		}
		fmt.Fprintf(w, "auth:%s", r.Header.Get("Authorization"))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    ca.Pool(),
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestClientsAcceptBuiltConfigs writes certificate and token kubeconfigs
// with Build/Write and Merge, then has kubectl read each one and client-go
// connect with each to a TLS server whose cert is signed by the embedded
// CA.
func TestClientsAcceptBuiltConfigs(t *testing.T) {
	t.Parallel()
	kubectl := requireKubectl(t)
	ca := testpki.NewCA(t, "kubernetes")
	srv := apiserverLike(t, ca)
	client := ca.Issue(t, testpki.Options{CN: "nakam", Orgs: []string{"devs"}})
	dir := t.TempDir()

	certCfg, err := Build(Options{Server: srv.URL, CAPEM: ca.CertPEM, UserName: "nakam", CertPEM: client.CertPEM, KeyPEM: client.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	tokenCfg, err := Build(Options{ClusterName: "kg", Server: srv.URL, CAPEM: ca.CertPEM, UserName: "bot", ContextName: "bot", Token: "s3cr3t"})
	if err != nil {
		t.Fatal(err)
	}
	certPath, tokenPath := filepath.Join(dir, "cert.conf"), filepath.Join(dir, "token.conf")
	if err := Write(certPath, certCfg, false); err != nil {
		t.Fatal(err)
	}
	if err := Write(tokenPath, tokenCfg, false); err != nil {
		t.Fatal(err)
	}
	mergedPath := filepath.Join(dir, "merged.conf")
	if _, err := Merge(mergedPath, certCfg); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(mergedPath, tokenCfg); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, path, context, want string
	}{
		{name: "certificate user", path: certPath, context: "nakam@kubernetes", want: "cert:nakam"},
		{name: "token user", path: tokenPath, context: "bot", want: "auth:Bearer s3cr3t"},
		{name: "merged, first current context", path: mergedPath, context: "nakam@kubernetes", want: "cert:nakam"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			view := exec.Command(kubectl, "--kubeconfig", tt.path, "config", "view", "--raw")
			out, err := view.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "current-context: "+tt.context) {
				t.Fatalf("kubectl config view --raw: %v\n%s", err, out)
			}
			get := exec.Command(kubectl, "--kubeconfig", tt.path, "config", "get-contexts")
			out, err = get.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "*         "+tt.context) {
				t.Fatalf("kubectl config get-contexts: %v\n%s", err, out)
			}

			rc, err := clientcmd.BuildConfigFromFlags("", tt.path)
			if err != nil {
				t.Fatal(err)
			}
			hc, err := rest.HTTPClientFor(rc)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Get(rc.Host + "/version")
			if err != nil {
				t.Fatalf("GET through client-go's TLS config: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != tt.want {
				t.Errorf("server saw %q, want %q", body, tt.want)
			}
		})
	}

	t.Run("wrong CA is refused", func(t *testing.T) {
		t.Parallel()
		other := testpki.NewCA(t, "other")
		cfg, err := Build(Options{Server: srv.URL, CAPEM: other.CertPEM, UserName: "x", Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "x.conf")
		if err := Write(path, cfg, false); err != nil {
			t.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := hc.Get(rc.Host); err == nil {
			resp.Body.Close()
			t.Fatal("client-go accepted a server cert from a CA the kubeconfig does not carry")
		}
	})
}

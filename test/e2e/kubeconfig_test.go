package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// servePKIApiserver serves TLS with the apiserver cert `pki init` wrote,
// asking for client certs from the cluster CA, and answers with the
// client cert's CN or the bearer token it was given.
func servePKIApiserver(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "pki", "apiserver.crt"), filepath.Join(dir, "pki", "apiserver.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA in pki/ca.crt")
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			fmt.Fprintf(w, "cert:%s", r.TLS.PeerCertificates[0].Subject.CommonName)
			return
		}
		fmt.Fprintf(w, "auth:%s", r.Header.Get("Authorization"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// embeddedCertData returns the base64 client-certificate-data of the only
// user in the kubeconfig at path, read from the file as written.
func embeddedCertData(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "client-certificate-data: "); ok {
			return v
		}
	}
	return ""
}

// TestKubeconfigsWithRealClients writes every kind of kubeconfig kubegate
// makes, then checks each with kubectl, client-go and openssl.
func TestKubeconfigsWithRealClients(t *testing.T) {
	kubectl := requireTool(t, "kubectl")
	openssl := requireTool(t, "openssl")
	dir := t.TempDir()
	if res := kubegate(t, "pki", "init", "--dir", dir, "--node", "worker1"); res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", "nakam", "--org", "devops", "--org", "devs", "--server", "https://127.0.0.1:6443"); res.code != 0 {
		t.Fatalf("kubeconfig create: %+v", res)
	}
	tok := kubegate(t, "token", "create", "--dir", dir, "--namespace", "ci", "--service-account", "builder")
	if tok.code != 0 {
		t.Fatalf("token create: %+v", tok)
	}
	token := strings.TrimSpace(tok.stdout)
	if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", "builder", "--token", token, "--server", "https://127.0.0.1:6443", "--out", filepath.Join(dir, "builder.conf")); res.code != 0 {
		t.Fatalf("kubeconfig create --token: %+v", res)
	}
	merged := filepath.Join(dir, "merged", "config")
	for _, user := range []string{"alice", "bob"} {
		if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", user, "--org", "devs", "--server", "https://127.0.0.1:6443", "--merge", "--kubeconfig", merged); res.code != 0 {
			t.Fatalf("kubeconfig create --merge: %+v", res)
		}
	}
	srv := servePKIApiserver(t, dir)

	tests := []struct {
		file, context string
		subject       string // openssl's subject line; "" for a token user
		served        string // what the server saw
	}{
		{"admin.conf", "kubernetes-admin@kubernetes", "subject=O = kubeadm:cluster-admins, CN = kubernetes-admin", "cert:kubernetes-admin"},
		{"super-admin.conf", "kubernetes-super-admin@kubernetes", "subject=O = system:masters, CN = kubernetes-super-admin", "cert:kubernetes-super-admin"},
		{"scheduler.conf", "system:kube-scheduler@kubernetes", "subject=CN = system:kube-scheduler", "cert:system:kube-scheduler"},
		{"controller-manager.conf", "system:kube-controller-manager@kubernetes", "subject=CN = system:kube-controller-manager", "cert:system:kube-controller-manager"},
		{"kubelet-worker1.conf", "system:node:worker1@kubernetes", "subject=O = system:nodes, CN = system:node:worker1", "cert:system:node:worker1"},
		{"nakam.conf", "nakam@kubernetes", "subject=O = devops, O = devs, CN = nakam", "cert:nakam"},
		{"builder.conf", "builder@kubernetes", "", "auth:Bearer " + token},
		{"merged/config", "alice@kubernetes", "", "cert:alice"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
			}

			view := runCmd(t, nil, kubectl, "--kubeconfig", path, "config", "view", "--raw")
			if view.code != 0 || !strings.Contains(view.stdout, "current-context: "+tt.context) {
				t.Errorf("kubectl config view --raw: %+v", view)
			}
			get := runCmd(t, nil, kubectl, "--kubeconfig", path, "config", "get-contexts")
			if get.code != 0 || !strings.Contains(get.stdout, "*         "+tt.context) {
				t.Errorf("kubectl config get-contexts: %+v", get)
			}

			if tt.subject != "" {
				der, err := base64.StdEncoding.DecodeString(embeddedCertData(t, path))
				if err != nil {
					t.Fatal(err)
				}
				sub := runCmd(t, der, openssl, "x509", "-noout", "-subject")
				if sub.code != 0 || strings.TrimSpace(sub.stdout) != tt.subject {
					t.Errorf("openssl x509 -subject = %q (%s), want %q", sub.stdout, sub.stderr, tt.subject)
				}
			}

			rc, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatal(err)
			}
			if rc.Host != "https://127.0.0.1:6443" {
				t.Errorf("host = %s, want the --server URL", rc.Host)
			}
			rc.Host = srv.URL // same IP, so the apiserver cert's 127.0.0.1 SAN applies
			hc, err := rest.HTTPClientFor(rc)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Get(rc.Host + "/version")
			if err != nil {
				t.Fatalf("client-go did not accept the pki init apiserver cert: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != tt.served {
				t.Errorf("server saw %q, want %q", body, tt.served)
			}
		})
	}

	t.Run("merged file keeps both users", func(t *testing.T) {
		get := runCmd(t, nil, kubectl, "--kubeconfig", merged, "config", "get-contexts", "-o", "name")
		if got := strings.Fields(get.stdout); get.code != 0 || strings.Join(got, ",") != "alice@kubernetes,bob@kubernetes" {
			t.Errorf("contexts = %q (%s), want alice and bob", get.stdout, get.stderr)
		}
	})
}

func TestInspectBinary(t *testing.T) {
	dir := t.TempDir()
	if res := kubegate(t, "pki", "init", "--dir", dir); res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	tok := kubegate(t, "token", "create", "--dir", dir, "--namespace", "ci", "--service-account", "builder", "--audience", "vault")
	if tok.code != 0 {
		t.Fatalf("token create: %+v", tok)
	}
	t.Run("token on stdin", func(t *testing.T) {
		res := runCmd(t, []byte(tok.stdout), kubegateBin, "cert", "inspect", "-", "--key", filepath.Join(dir, "pki", "sa.pub"))
		for _, w := range []string{"JWT (bound service-account token)", "Signature:   verified with", "User:    system:serviceaccount:ci:builder", "Audiences:   vault"} {
			if res.code != 0 || !strings.Contains(res.stdout, w) {
				t.Errorf("output lacks %q: %+v", w, res)
			}
		}
	})
	t.Run("kubeconfig", func(t *testing.T) {
		res := kubegate(t, "kubeconfig", "inspect", filepath.Join(dir, "admin.conf"))
		if res.code != 0 || !strings.Contains(res.stdout, `verified against CA of cluster "kubernetes"`) {
			t.Errorf("kubeconfig inspect: %+v", res)
		}
	})
	bad := []struct {
		name  string
		stdin []byte
		want  string
	}{
		{"empty stdin", []byte{}, "input is empty"},
		{"binary garbage", []byte{0x30, 0x82, 0xff, 0x00, 0x13, 0x37}, "input is binary data"},
		{"truncated PEM", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n"), "truncated PEM"},
		{"JWT with two segments", []byte("eyJhbGciOiJFUzI1NiJ9.e30\n"), "JWT has 2 segments"},
		{"kubeconfig with no users", []byte("kind: Config\napiVersion: v1\nclusters: []\n"), "kubeconfig has no users"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			res := runCmd(t, tt.stdin, kubegateBin, "cert", "inspect", "-")
			if res.code != 1 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("got %+v, want exit 1 and one stderr line containing %q", res, tt.want)
			}
			if strings.Contains(res.stderr, "panic") || strings.Contains(res.stderr, "goroutine") {
				t.Errorf("panicked: %s", res.stderr)
			}
		})
	}
}

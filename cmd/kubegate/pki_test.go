package main

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/kubeconfig"
)

func TestPKIInitThenCheck(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	code, _, errOut := runCLI(t, "", "pki", "init", "--dir", dir, "--node", "n1", "--cluster-name", "prod", "--server", "https://10.0.0.1:6443")
	if code != 0 {
		t.Fatalf("pki init: code %d, stderr %q", code, errOut)
	}
	for _, f := range []string{"admin.conf", "super-admin.conf", "scheduler.conf", "controller-manager.conf", "kubelet-n1.conf", "pki/sa.pub", "pki/etcd/peer.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	cfg, err := kubeconfig.Load(filepath.Join(dir, "kubelet-n1.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "system:node:n1@prod" || cfg.Clusters["prod"].Server != "https://10.0.0.1:6443" {
		t.Errorf("kubelet-n1.conf context %q server %q", cfg.CurrentContext, cfg.Clusters["prod"].Server)
	}
	emb, _ := kubeconfig.EmbeddedCerts(filepath.Join(dir, "super-admin.conf"), "super-admin.conf")
	c, err := ca.ParseCertPEM("super-admin", emb[0].CertPEM)
	if err != nil || c.Subject.CommonName != "kubernetes-super-admin" || strings.Join(c.Subject.Organization, ",") != "system:masters" {
		t.Errorf("super-admin cert subject %v (err %v)", c.Subject, err)
	}

	code, out, errOut := runCLI(t, "", "pki", "check", "--dir", dir)
	if code != 0 || !strings.Contains(out, "no problems") {
		t.Errorf("pki check on a fresh tree: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "", "pki", "init", "--dir", dir, "--node", "n1")
	if code != 0 || !strings.Contains(errOut, "nothing to write") {
		t.Errorf("second init: code %d, stderr %q, want a no-op", code, errOut)
	}
	code, out, _ = runCLI(t, "", "pki", "plan", "--dir", dir, "--node", "n1", "--node", "n2")
	if code != 0 || !strings.Contains(out, "create   kubelet-n2.conf") || !strings.Contains(out, "keep     pki/ca.crt") {
		t.Errorf("pki plan: code %d, stdout:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "kubelet-n2.conf")); err == nil {
		t.Error("pki plan wrote kubelet-n2.conf")
	}
}

func TestPKICheckReportsProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, "", "pki", "init", "--dir", dir, "--service-cidr", "10.200.0.0/16"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, "", "pki", "check", "--dir", dir)
	if code != 1 || !strings.Contains(out, "pki/apiserver.crt: SANs lack the service IP 10.96.0.1") ||
		strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "1 problems found") {
		t.Errorf("check with default service CIDR: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "", "pki", "check", "--dir", dir, "--service-cidr", "10.200.0.0/16"); code != 0 {
		t.Errorf("check with the right service CIDR: code %d, stdout %q", code, out)
	}
}

func TestPKIInitConfigFileAndWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cfg, []byte("clusterName: lab\nnodes: [w1, w2]\nkeyAlgorithm: rsa-2048\nvalidity: 400d\napiServerSANs: [api.lab.example]\n"), 0o644)
	tree := filepath.Join(dir, "tree")
	code, _, errOut := runCLI(t, "", "pki", "init", "--dir", tree, "--config", cfg, "--node", "w9")
	if code != 0 {
		t.Fatalf("init --config: code %d, stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "warning: --validity 400d is longer than the default 365d") {
		t.Errorf("stderr %q lacks the validity warning", errOut)
	}
	// --node given explicitly replaces the file's nodes.
	if _, err := os.Stat(filepath.Join(tree, "kubelet-w9.conf")); err != nil {
		t.Error("flag --node did not apply")
	}
	if _, err := os.Stat(filepath.Join(tree, "kubelet-w1.conf")); err == nil {
		t.Error("file nodes applied although --node was given")
	}
	data, _ := os.ReadFile(filepath.Join(tree, "pki", "apiserver.crt"))
	c, _ := ca.ParseCertPEM("apiserver", data)
	if !strings.Contains(strings.Join(c.DNSNames, ","), "api.lab.example") || c.PublicKeyAlgorithm.String() != "RSA" {
		t.Errorf("apiserver SANs %v key %v, want the file's SAN and RSA", c.DNSNames, c.PublicKeyAlgorithm)
	}
	os.WriteFile(cfg, []byte("clusterName: lab\nnodez: [w1]\n"), 0o644)
	code, _, errOut = runCLI(t, "", "pki", "plan", "--dir", tree, "--config", cfg)
	if code == 0 || !strings.Contains(errOut, "nodez") {
		t.Errorf("unknown field in spec: code %d, stderr %q", code, errOut)
	}
}

func TestPKIInitBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad key algorithm", []string{"--key-algorithm", "ed448"}, `unknown key algorithm "ed448"`},
		{"bad server", []string{"--server", "http://x"}, "not an https:// URL"},
		{"bad validity", []string{"--validity", "1y"}, "invalid duration"},
		{"bad node", []string{"--node", "Bad_Node"}, "node name"},
		{"space before node", []string{"--node", " n1"}, `node name " n1": begins with whitespace (U+0020)`},
		{"control character in node", []string{"--node", "n1\t"}, `node name "n1\t": contains a control character (U+0009)`},
		{"missing config", []string{"--config", "/nonexistent.yaml"}, "read cluster spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "tree")
			code, _, errOut := runCLI(t, "", append([]string{"pki", "init", "--dir", dir}, tt.args...)...)
			if code == 0 || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("code %d, stderr %q, want one line containing %q", code, errOut, tt.want)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s was created", dir)
			}
		})
	}
}

func TestPKICheckFlagsUnsafeNames(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	// The CLI refuses to issue these names, so the certificate is made here.
	a, err := ca.LoadAuthority("ca", filepath.Join(dir, "pki", "ca.crt"), filepath.Join(dir, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, keyPEM, err := ca.GenerateKey(ca.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject: pkix.Name{CommonName: " kubernetes-admin ",
			Organization: []string{" system:masters", "devs\nX-Remote-Group: system:masters"}},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, key.Public(), a.Key)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "pki", "users")
	if err := os.MkdirAll(users, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(users, "bad.crt"), ca.EncodeCert(der), 0o644)
	os.WriteFile(filepath.Join(users, "bad.key"), keyPEM, 0o600)

	code, out, errOut := runCLI(t, "", "pki", "check", "--dir", dir)
	if code != 1 || !strings.Contains(errOut, "problems found") {
		t.Errorf("pki check: code %d, stderr %q, want exit 1", code, errOut)
	}
	for _, want := range []string{
		`pki/users/bad.crt: CN " kubernetes-admin ": begins with whitespace (U+0020), so identity headers would not carry it as written` + "\n",
		`pki/users/bad.crt: O " system:masters": begins with whitespace (U+0020), so identity headers would not carry it as written` + "\n",
		`pki/users/bad.crt: O "devs\nX-Remote-Group: system:masters": contains a control character (U+000A), so identity headers would not carry it as written` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pki check output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "", "pki", "check", "--dir", dir, "-o", "json")
	if want := `"problem": "CN \" kubernetes-admin \": begins with whitespace (U+0020)`; code != 1 || !strings.Contains(out, want) {
		t.Errorf("pki check -o json: code %d, output lacks %s:\n%s", code, want, out)
	}
}

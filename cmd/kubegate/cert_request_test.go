package main

import (
	"context"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testapi"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/kubeconfig"
)

// requestEnv is an API server with the CSR signer, and a kubeconfig
// that reaches it.
type requestEnv struct {
	s          *testapi.Server
	authority  *ca.Authority
	kubeconfig string
	dir        string
}

func startRequestEnv(t *testing.T) *requestEnv {
	t.Helper()
	dir := t.TempDir()
	authority, keyPEM, err := ca.CreateAuthority("ca", "kubegate-test-ca", ca.ECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, authority.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s := testapi.Start(t)
	testapi.Run(t, func(ctx context.Context) error {
		return manager.Run(ctx, manager.Options{Config: s.Config, Logger: slog.New(slog.DiscardHandler),
			Descriptors:     []controllers.Descriptor{csrsigning.Descriptor},
			SigningCertFile: certFile, SigningKeyFile: keyFile})
	})
	cfg, err := kubeconfig.Build(kubeconfig.Options{ClusterName: "test", Server: s.Config.Host, UserName: "admin", Token: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "admin.conf")
	if err := kubeconfig.Write(path, cfg, false); err != nil {
		t.Fatal(err)
	}
	return &requestEnv{s: s, authority: authority, kubeconfig: path, dir: dir}
}

// request runs kubegate cert request in the background; decide is then
// applied to the CSR name, and the command's result returned.
func (e *requestEnv) request(t *testing.T, name string, decide certificatesv1.RequestConditionType, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(t, "", append([]string{"cert", "request", "--kubeconfig", e.kubeconfig, "--name", name}, args...)...)
		done <- result{code, out, errOut}
	}()
	ctx := context.Background()
	csrs := e.s.Client.CertificatesV1().CertificateSigningRequests()
	var csr *certificatesv1.CertificateSigningRequest
	testwait.For(t, 30*time.Second, "certificate signing request "+name, func() (bool, string) {
		var err error
		csr, err = csrs.Get(ctx, name, metav1.GetOptions{})
		return err == nil, "not yet"
	})
	if decide != "" {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: decide, Status: corev1.ConditionTrue, Reason: "KubectlDecision", Message: "decided by a test"})
		if _, err := csrs.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-done:
		return r.code, r.out, r.errOut
	case <-time.After(60 * time.Second):
		t.Fatal("kubegate cert request did not end")
	}
	return 0, "", ""
}

// The key stays here; the request carries the CN and groups; once an
// administrator approves it the certificate and a kubeconfig for it are
// written (docs/kubernetes-behaviour.md H.3).
func TestCertRequestWritesTheIssuedCertificate_H3(t *testing.T) {
	e := startRequestEnv(t)
	prefix := filepath.Join(e.dir, "out", "jane")
	code, out, errOut := e.request(t, "jane-1", certificatesv1.CertificateApproved,
		"--cn", "jane", "--org", "dev", "--org", "ops", "--duration", "1h", "--out", prefix)
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if errOut != "waiting for approval: kubectl certificate approve jane-1\n" {
		t.Errorf("stderr %q", errOut)
	}
	csr, err := e.s.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "jane-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName || csr.Spec.ExpirationSeconds == nil || *csr.Spec.ExpirationSeconds != 3600 ||
		!slices.Equal(csr.Spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}) {
		t.Errorf("spec: signer %s, expirationSeconds %v, usages %v", csr.Spec.SignerName, csr.Spec.ExpirationSeconds, csr.Spec.Usages)
	}
	info, err := os.Stat(prefix + ".key")
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, info)
	}
	keyPEM, _ := os.ReadFile(prefix + ".key")
	key, err := ca.ParseKeyPEM("key", keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := os.ReadFile(prefix + ".crt")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.ParseCertPEM("crt", certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.KeyMatches(key, cert.PublicKey) || cert.Subject.CommonName != "jane" || !slices.Equal(cert.Subject.Organization, []string{"dev", "ops"}) {
		t.Errorf("certificate for %s does not match the key or the subject", cert.Subject)
	}
	roots := x509.NewCertPool()
	roots.AddCert(e.authority.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Error(err)
	}
	cfg, err := kubeconfig.Load(prefix + ".conf")
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || ctx.Cluster != "test" || cfg.Clusters["test"].Server != e.s.Config.Host ||
		string(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData) != string(certPEM) || string(cfg.AuthInfos[ctx.AuthInfo].ClientKeyData) != string(keyPEM) {
		t.Errorf("the kubeconfig does not hold the cluster and the new credentials: %+v", cfg)
	}

	// Nothing is overwritten without --force, and no request is sent.
	code, _, errOut = runCLI(t, "", "cert", "request", "--kubeconfig", e.kubeconfig, "--cn", "jane", "--out", prefix)
	if code != 1 || !strings.Contains(errOut, prefix+".key already exists") {
		t.Errorf("a second request: exit %d, stderr %q", code, errOut)
	}
}

// A denied request ends with one line naming it and its reason, exit 1,
// and leaves no key behind (H.3).
func TestCertRequestDenied_H3(t *testing.T) {
	e := startRequestEnv(t)
	prefix := filepath.Join(e.dir, "sam")
	code, out, errOut := e.request(t, "sam-1", certificatesv1.CertificateDenied, "--cn", "sam", "--out", prefix)
	want := "waiting for approval: kubectl certificate approve sam-1\n" +
		"kubegate: certificate request sam-1 was denied: KubectlDecision: decided by a test\n"
	if code != 1 || errOut != want || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", code, out, errOut, want)
	}
	for _, ext := range []string{".key", ".crt", ".conf"} {
		if _, err := os.Stat(prefix + ext); err == nil {
			t.Errorf("%s was left behind", prefix+ext)
		}
	}
}

// Nobody decides: the wait ends with one line (H.3).
func TestCertRequestTimesOut_H3(t *testing.T) {
	e := startRequestEnv(t)
	code, _, errOut := e.request(t, "pat-1", "", "--cn", "pat", "--wait", "2s", "--out", filepath.Join(e.dir, "pat"))
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 1 || len(lines) != 2 || lines[1] != "kubegate: certificate request pat-1 was not issued within 2s (approve it with kubectl certificate approve pat-1)" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// Bad flags are refused before anything is generated or sent.
func TestCertRequestFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--cn", "x", "--out", "p"}, "--kubeconfig is required"},
		{[]string{"--kubeconfig", "k", "--out", "p"}, "--cn is required"},
		{[]string{"--kubeconfig", "k", "--cn", "x"}, "--out is required"},
		{[]string{"--kubeconfig", "k", "--cn", "x", "--out", "p", "--duration", "5m"}, "--duration 5m0s: at least 10m0s"},
		{[]string{"--kubeconfig", "k", "--cn", "x\x01", "--out", "p"}, "--cn"},
		{[]string{"--kubeconfig", "k", "--cn", "x", "--out", "p", "--wait", "0s"}, "--wait 0s: want a positive duration"},
		{[]string{"--kubeconfig", "k", "--cn", "x", "--out", "p"}, "--kubeconfig: load kubeconfig k"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"cert", "request"}, tt.args...)...)
		if code != 1 || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tt.args, code, errOut, tt.want)
		}
	}
}

// The signer's flags of kubegate controllers are checked before anything
// runs.
func TestControllersSigningFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-signing-cert-file", "ca.crt"}, "--cluster-signing-cert-file and --cluster-signing-key-file go together"},
		{[]string{"--cluster-signing-key-file", "ca.key"}, "--cluster-signing-cert-file and --cluster-signing-key-file go together"},
		{[]string{"--cluster-signing-duration", "0s"}, "--cluster-signing-duration 0s: want a positive duration"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"controllers", "--kubeconfig", "none.conf"}, tt.args...)...)
		if code == 0 || errOut != "kubegate: "+tt.want+"\n" {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, errOut, tt.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/kubeconfig"
)

// requestEnv is an API server with the CSR signer, and a kubeconfig
// that reaches it.
type requestEnv struct {
	s          *apiservertest.Server
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
	s := apiservertest.Start(t)
	apiservertest.Run(t, func(ctx context.Context) error {
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

// running is a kubegate cert request running in the background.
type running struct {
	done chan result
}

type result struct {
	code        int
	out, errOut string
}

// start runs kubegate cert request with ctx in the background, as main
// would run it.
func (e *requestEnv) start(ctx context.Context, name string, args ...string) *running {
	r := &running{done: make(chan result, 1)}
	go func() {
		var out, errOut bytes.Buffer
		root := newRootCmd(streams{in: strings.NewReader(""), out: &out, err: &errOut})
		root.SetArgs(append([]string{"cert", "request", "--kubeconfig", e.kubeconfig, "--name", name}, args...))
		code := 0
		if err := root.ExecuteContext(ctx); err != nil {
			fmt.Fprintf(&errOut, "kubegate: %v\n", err)
			code = 1
		}
		r.done <- result{code, out.String(), errOut.String()}
	}()
	return r
}

// wait returns the command's result once it has ended.
func (r *running) wait(t *testing.T) (code int, stdout, stderr string) {
	t.Helper()
	select {
	case res := <-r.done:
		return res.code, res.out, res.errOut
	case <-time.After(60 * time.Second):
		t.Fatal("kubegate cert request did not end")
	}
	return 0, "", ""
}

// csr waits until the request name exists and returns it.
func (e *requestEnv) csr(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var csr *certificatesv1.CertificateSigningRequest
	testwait.For(t, 30*time.Second, "certificate signing request "+name, func() (bool, string) {
		var err error
		csr, err = e.s.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		return err == nil, "not yet"
	})
	return csr
}

// decide adds the condition to the request name once it exists:
// Approved and Denied as kubectl certificate approve and deny do, Failed
// as a signer does.
func (e *requestEnv) decide(t *testing.T, name string, decide certificatesv1.RequestConditionType) {
	t.Helper()
	csr := e.csr(t, name)
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: decide, Status: corev1.ConditionTrue, Reason: "KubectlDecision", Message: "decided by a test"})
	csrs := e.s.Client.CertificatesV1().CertificateSigningRequests()
	var err error
	if decide == certificatesv1.CertificateFailed {
		_, err = csrs.UpdateStatus(context.Background(), csr, metav1.UpdateOptions{})
	} else {
		_, err = csrs.UpdateApproval(context.Background(), name, csr, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// request runs kubegate cert request in the background; decide is then
// applied to the CSR name, and the command's result returned.
func (e *requestEnv) request(t *testing.T, name string, decide certificatesv1.RequestConditionType, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r := e.start(context.Background(), name, args...)
	if decide != "" {
		e.decide(t, name, decide)
	} else {
		e.csr(t, name)
	}
	return r.wait(t)
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
	_, cert := credentials(t, prefix)
	if cert.Subject.CommonName != "jane" || !slices.Equal(cert.Subject.Organization, []string{"dev", "ops"}) {
		t.Errorf("certificate for %s, want CN jane, O dev and ops", cert.Subject)
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
	if ctx := cfg.Contexts[cfg.CurrentContext]; ctx.Cluster != "test" || cfg.Clusters["test"].Server != e.s.Config.Host {
		t.Errorf("the kubeconfig does not name the cluster: %+v", cfg)
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

// existingSet writes PREFIX.key, PREFIX.crt and PREFIX.conf as an earlier
// request left them and returns their contents by file name.
func (e *requestEnv) existingSet(t *testing.T, prefix string) map[string][]byte {
	t.Helper()
	iss, err := e.authority.Issue(&ca.Request{CN: "jane", Profile: ca.ProfileClient})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kubeconfig.Build(kubeconfig.Options{ClusterName: "test", Server: e.s.Config.Host, CAPEM: e.authority.CertPEM,
		UserName: "jane", CertPEM: iss.CertPEM, KeyPEM: iss.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(prefix), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.Write(prefix+".conf", cfg, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefix+".key", iss.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefix+".crt", iss.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	set := map[string][]byte{}
	for _, ext := range []string{".key", ".crt", ".conf"} {
		data, err := os.ReadFile(prefix + ext)
		if err != nil {
			t.Fatal(err)
		}
		set[filepath.Base(prefix+ext)] = data
	}
	return set
}

// sameFiles fails t unless the directory of prefix holds exactly the
// files of set, byte for byte: no file changed, none gone, none added.
func sameFiles(t *testing.T, prefix string, set map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(prefix))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := slices.Sorted(maps.Keys(set))
	if !slices.Equal(names, want) {
		t.Errorf("%s holds %q, want %q", filepath.Dir(prefix), names, want)
	}
	for name, data := range set {
		got, err := os.ReadFile(filepath.Join(filepath.Dir(prefix), name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !bytes.Equal(got, data) {
			t.Errorf("%s changed", name)
		}
	}
}

// lastLine is the last line of a command's stderr.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	return lines[len(lines)-1]
}

// credentials reads PREFIX.key, .crt and .conf and fails t unless the
// certificate is for the key and the kubeconfig holds both.
func credentials(t *testing.T, prefix string) (crypto.Signer, *x509.Certificate) {
	t.Helper()
	keyPEM, err := os.ReadFile(prefix + ".key")
	if err != nil {
		t.Fatal(err)
	}
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
	if !ca.KeyMatches(key, cert.PublicKey) {
		t.Errorf("%s.crt is not the certificate of %s.key", prefix, prefix)
	}
	cfg, err := kubeconfig.Load(prefix + ".conf")
	if err != nil {
		t.Fatal(err)
	}
	user := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	if !bytes.Equal(user.ClientCertificateData, certPEM) || !bytes.Equal(user.ClientKeyData, keyPEM) {
		t.Errorf("%s.conf does not hold %s.crt and %s.key", prefix, prefix, prefix)
	}
	return key, cert
}

// With --force, the files of an earlier request are replaced only once
// the new certificate is issued: a request that is denied, failed, not
// issued in time or interrupted leaves the old key, certificate and
// kubeconfig as they were, and no new key behind (H.3).
func TestCertRequestForceKeepsTheOldFilesUnlessIssued_H3(t *testing.T) {
	e := startRequestEnv(t)
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, name, prefix string) (int, string)
		want string
	}{
		{"denied", func(t *testing.T, name, prefix string) (int, string) {
			code, _, errOut := e.request(t, name, certificatesv1.CertificateDenied, "--cn", "jane", "--force", "--out", prefix)
			return code, errOut
		}, "kubegate: certificate request denied-1 was denied: KubectlDecision: decided by a test"},
		{"failed", func(t *testing.T, name, prefix string) (int, string) {
			code, _, errOut := e.request(t, name, certificatesv1.CertificateFailed, "--cn", "jane", "--force", "--out", prefix)
			return code, errOut
		}, "kubegate: certificate request failed-1 failed: KubectlDecision: decided by a test"},
		{"not issued in time", func(t *testing.T, name, prefix string) (int, string) {
			code, _, errOut := e.request(t, name, "", "--cn", "jane", "--force", "--wait", "2s", "--out", prefix)
			return code, errOut
		}, "kubegate: certificate request not-issued-in-time-1 was not issued within 2s (approve it with kubectl certificate approve not-issued-in-time-1)"},
		{"interrupted", func(t *testing.T, name, prefix string) (int, string) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := e.start(ctx, name, "--cn", "jane", "--force", "--out", prefix)
			e.csr(t, name)
			cancel()
			code, _, errOut := r.wait(t)
			return code, errOut
		}, "kubegate: certificate request interrupted-1 was interrupted before a certificate was issued; nothing was written"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.ReplaceAll(tt.name, " ", "-") + "-1"
			prefix := filepath.Join(e.dir, name, "jane")
			set := e.existingSet(t, prefix)
			code, errOut := tt.run(t, name, prefix)
			if code != 1 || lastLine(errOut) != tt.want {
				t.Errorf("exit %d, stderr %q; want exit 1 and the last line %q", code, errOut, tt.want)
			}
			sameFiles(t, prefix, set)
		})
	}
}

// With --force, an issued certificate replaces the key, the certificate
// and the kubeconfig together (H.3).
func TestCertRequestForceReplacesAllThree_H3(t *testing.T) {
	e := startRequestEnv(t)
	prefix := filepath.Join(e.dir, "out", "jane")
	old := e.existingSet(t, prefix)
	code, out, errOut := e.request(t, "jane-2", certificatesv1.CertificateApproved, "--cn", "jane", "--force", "--out", prefix)
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for name, data := range old {
		if got, _ := os.ReadFile(filepath.Join(filepath.Dir(prefix), name)); bytes.Equal(got, data) {
			t.Errorf("%s was not replaced", name)
		}
	}
	key, _ := credentials(t, prefix)
	csr := e.csr(t, "jane-2")
	req, err := x509.ParseCertificateRequest(mustPEM(t, csr.Spec.Request))
	if err != nil {
		t.Fatal(err)
	}
	if !ca.KeyMatches(key, req.PublicKey) {
		t.Error("jane.key is not the key the request sent")
	}
	sameFiles(t, prefix, map[string][]byte{"jane.key": mustRead(t, prefix+".key"), "jane.crt": mustRead(t, prefix+".crt"), "jane.conf": mustRead(t, prefix+".conf")})
	if fi, err := os.Stat(prefix + ".key"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("jane.key: %v, mode %v; want 0600", err, fi)
	}
}

// A new key left by a request that was killed (PREFIX.key.new) is not
// ours: it is neither replaced nor removed, and no request is sent (H.3).
func TestCertRequestLeavesAStaleNewKey_H3(t *testing.T) {
	e := startRequestEnv(t)
	prefix := filepath.Join(e.dir, "out", "jane")
	set := e.existingSet(t, prefix)
	if err := os.WriteFile(prefix+".key.new", []byte("not ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	set["jane.key.new"] = []byte("not ours")
	code, _, errOut := runCLI(t, "", "cert", "request", "--kubeconfig", e.kubeconfig, "--name", "jane-3", "--cn", "jane",
		"--force", "--wait", "2s", "--out", prefix)
	want := "kubegate: " + prefix + ".key.new exists: another kubegate cert request for " + prefix +
		" is running, or one was stopped; remove the file once none runs"
	if code != 1 || errOut != want+"\n" {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
	sameFiles(t, prefix, set)
	if _, err := e.s.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "jane-3", metav1.GetOptions{}); err == nil {
		t.Error("the request was sent")
	}
}

// Two requests with --force for the same PREFIX: the second is refused
// while the first runs, so the key, certificate and kubeconfig that
// remain belong together (H.3).
func TestCertRequestRefusesASecondRequestForTheSamePrefix_H3(t *testing.T) {
	e := startRequestEnv(t)
	prefix := filepath.Join(e.dir, "out", "jane")
	e.existingSet(t, prefix)
	first := e.start(context.Background(), "jane-a", "--cn", "jane", "--force", "--out", prefix)
	e.csr(t, "jane-a")
	second := e.start(context.Background(), "jane-b", "--cn", "jane", "--force", "--out", prefix)
	var res *result
	testwait.For(t, 30*time.Second, "the second request to end or be sent", func() (bool, string) {
		select {
		case r := <-second.done:
			res = &r
			return true, ""
		default:
		}
		_, err := e.s.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "jane-b", metav1.GetOptions{})
		return err == nil, "running"
	})
	if res == nil {
		// Both were sent: the second is issued first, then the first.
		t.Error("the second request was sent while the first was running")
		e.decide(t, "jane-b", certificatesv1.CertificateApproved)
		if code, _, errOut := second.wait(t); code != 0 {
			t.Fatalf("second: exit %d, stderr %q", code, errOut)
		}
	} else if want := "kubegate: " + prefix + ".key.new exists: another kubegate cert request for " + prefix +
		" is running, or one was stopped; remove the file once none runs"; res.code != 1 || res.errOut != want+"\n" {
		t.Errorf("second: exit %d, stderr %q; want exit 1 and %q", res.code, res.errOut, want)
	}
	e.decide(t, "jane-a", certificatesv1.CertificateApproved)
	if code, _, errOut := first.wait(t); code != 0 {
		t.Fatalf("first: exit %d, stderr %q", code, errOut)
	}
	credentials(t, prefix)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustPEM(t *testing.T, data []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}

// When PREFIX.key cannot be replaced after the kubeconfig and the
// certificate were, the command says so in one line and keeps the new key
// in PREFIX.key.new (H.3).
func TestCertRequestSaysWhichFilesAreNew_H3(t *testing.T) {
	e := startRequestEnv(t)
	prefix := filepath.Join(e.dir, "out", "jane")
	e.existingSet(t, prefix)
	// A directory that is not empty cannot be replaced by a file.
	if err := os.Remove(prefix + ".key"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(prefix+".key", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := e.request(t, "jane-4", certificatesv1.CertificateApproved, "--cn", "jane", "--force", "--out", prefix)
	want := "kubegate: certificate request jane-4: " + prefix + ".conf and " + prefix + ".crt hold the new certificate, but " + prefix +
		".key could not be replaced: rename " + prefix + ".key.new " + prefix + ".key: file exists; the new key is " + prefix + ".key.new: move it to " + prefix + ".key"
	if code != 1 || lastLine(errOut) != want || strings.Count(errOut, "\n") != 2 {
		t.Errorf("exit %d, stderr %q; want exit 1 and the last line %q", code, errOut, want)
	}
	if err := os.RemoveAll(prefix + ".key"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(prefix+".key.new", prefix+".key"); err != nil {
		t.Fatal(err)
	}
	credentials(t, prefix)
}

// A request killed after it replaced PREFIX.crt but before it moved the
// key into place leaves PREFIX.key.new holding the key of PREFIX.crt; the
// next request says so, and to move the key, rather than to remove it
// (which would leave PREFIX.crt without its key), and changes nothing
// (H.3).
func TestCertRequestNamesAStoppedRequestsKey_H3(t *testing.T) {
	e := startRequestEnv(t)
	prefix := filepath.Join(e.dir, "out", "jane")
	e.existingSet(t, prefix)
	// PREFIX.crt is the new certificate, PREFIX.key.new its key, and
	// PREFIX.key still the earlier one.
	if err := os.Rename(prefix+".key", prefix+".key.new"); err != nil {
		t.Fatal(err)
	}
	_, oldKey, err := ca.GenerateKey(ca.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefix+".key", oldKey, 0o600); err != nil {
		t.Fatal(err)
	}
	set := map[string][]byte{"jane.key": oldKey, "jane.key.new": mustRead(t, prefix+".key.new"),
		"jane.crt": mustRead(t, prefix+".crt"), "jane.conf": mustRead(t, prefix+".conf")}
	code, _, errOut := runCLI(t, "", "cert", "request", "--kubeconfig", e.kubeconfig, "--name", "jane-5", "--cn", "jane",
		"--force", "--wait", "2s", "--out", prefix)
	want := "kubegate: " + prefix + ".key.new exists and holds the key of " + prefix + ".crt: a cert request for " + prefix +
		" was stopped before it moved the key into place; move it to " + prefix + ".key"
	if code != 1 || errOut != want+"\n" {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
	sameFiles(t, prefix, set)
	if _, err := e.s.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "jane-5", metav1.GetOptions{}); err == nil {
		t.Error("the request was sent")
	}
}

// While it waits, cert request says what for: the approval, then the
// signer (H.3); on a terminal a spinner shows it.
func TestCertRequestTellsWhatItWaitsFor_H3(t *testing.T) {
	s := apiservertest.Start(t) // no signer: the test signs
	authority, _, err := ca.CreateAuthority("ca", "kubegate-test-ca", ca.ECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := ca.GenerateKey(ca.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	subject, err := ca.EncodeSubject("jane", nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{RawSubject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	csrs := s.Client.CertificatesV1().CertificateSigningRequests()
	created, err := csrs.Create(context.Background(), &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "jane-waits"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: usagesFor(certificatesv1.KubeAPIServerClientSignerName)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var told testwait.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := waitForCertificate(context.Background(), s.Client, created, time.Minute, func(what string) { fmt.Fprintln(&told, what) })
		done <- err
	}()
	saw := func(want string) {
		t.Helper()
		testwait.For(t, 30*time.Second, "cert request to tell "+want, func() (bool, string) {
			return strings.Contains(told.String(), want+"\n"), fmt.Sprintf("%q", told.String())
		})
	}
	saw("waiting for approval of jane-waits")
	approved := created.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved,
		Status: corev1.ConditionTrue, Reason: "KubectlApprove", Message: "approved by a test"}}
	approved, err = csrs.UpdateApproval(context.Background(), "jane-waits", approved, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saw("jane-waits is approved; waiting for kubernetes.io/kube-apiserver-client to sign it")
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := authority.SignCSR(req, ca.ProfileClient, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	approved.Status.Certificate = iss.CertPEM
	if _, err := csrs.UpdateStatus(context.Background(), approved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waitForCertificate: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waitForCertificate did not return once the certificate was issued")
	}
}

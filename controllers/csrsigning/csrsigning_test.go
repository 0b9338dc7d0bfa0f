package csrsigning_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

// writeCA writes a new CA valid for validity to dir/ca.crt, with more
// certificates after it (a rotation's bundle), and its key to dir/ca.key.
func writeCA(t *testing.T, dir string, validity time.Duration, more ...*ca.Authority) *ca.Authority {
	t.Helper()
	authority, keyPEM, err := ca.CreateAuthority("ca", "kubegate-test-ca", ca.ECDSAP256, validity)
	if err != nil {
		t.Fatal(err)
	}
	bundle := slices.Clone(authority.CertPEM)
	for _, m := range more {
		bundle = append(bundle, m.CertPEM...)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return authority
}

// startSigner writes a CA valid for validity and runs the signer with it
// against a test API server.
func startSigner(t *testing.T, validity time.Duration) (*apiservertest.Server, *ca.Authority) {
	s, authority, _ := startSignerIn(t, validity)
	return s, authority
}

func startSignerIn(t *testing.T, validity time.Duration) (*apiservertest.Server, *ca.Authority, string) {
	t.Helper()
	dir := t.TempDir()
	authority := writeCA(t, dir, validity)
	s := controllertest.StartWith(t, manager.Options{Logger: slog.New(slog.DiscardHandler),
		Descriptors:     []controllers.Descriptor{csrsigning.Descriptor},
		SigningCertFile: filepath.Join(dir, "ca.crt"), SigningKeyFile: filepath.Join(dir, "ca.key")})
	return s, authority, dir
}

// request creates a CSR for a new key with subject cn, orgs.
func request(t *testing.T, client kubernetes.Interface, name, signer, cn string, orgs []string, usages []certificatesv1.KeyUsage, expirationSeconds *int32) {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Usages: usages, ExpirationSeconds: expirationSeconds,
			Request: testpki.CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}})}}
	if _, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// decide approves (or denies) the CSR name as an administrator would.
func decide(t *testing.T, client kubernetes.Interface, name string, cond certificatesv1.RequestConditionType) {
	t.Helper()
	ctx := context.Background()
	csr, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: cond, Status: corev1.ConditionTrue, Reason: "KubectlApprove", Message: "by a test"})
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor returns the CSR name once done says so.
func waitFor(t *testing.T, client kubernetes.Interface, name, what string, done func(*certificatesv1.CertificateSigningRequest) bool) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var csr *certificatesv1.CertificateSigningRequest
	testwait.For(t, 30*time.Second, name+" "+what, func() (bool, string) {
		var err error
		if csr, err = client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return done(csr), "conditions " + condTypes(csr)
	})
	return csr
}

func condTypes(csr *certificatesv1.CertificateSigningRequest) string {
	var out string
	for _, c := range csr.Status.Conditions {
		out += string(c.Type) + "(" + c.Reason + ": " + c.Message + ") "
	}
	return out
}

func issued(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) > 0
}

func parseIssued(t *testing.T, csr *certificatesv1.CertificateSigningRequest) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("status.certificate of %s is not a PEM certificate: %q", csr.Name, csr.Status.Certificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// An approved request of kube-apiserver-client gets a certificate the CA
// verifies for client auth, with the requested subject and a lifetime of
// its expirationSeconds (back-dated five minutes); a request nobody has
// approved, and a denied one, get none (docs/kubernetes-behaviour.md H.3).
func TestApprovedRequestsAreSigned_H3(t *testing.T) {
	s, authority := startSigner(t, 0)
	hour := int32(3600)
	client := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	request(t, s.Client, "waiting", certificatesv1.KubeAPIServerClientSignerName, "pat", nil, client, nil)
	request(t, s.Client, "denied", certificatesv1.KubeAPIServerClientSignerName, "sam", nil, client, nil)
	decide(t, s.Client, "denied", certificatesv1.CertificateDenied)
	request(t, s.Client, "jane", certificatesv1.KubeAPIServerClientSignerName, "jane", []string{"dev", "ops"}, client, &hour)
	before := time.Now()
	decide(t, s.Client, "jane", certificatesv1.CertificateApproved)
	csr := waitFor(t, s.Client, "jane", "issued", issued)
	after := time.Now()
	cert := parseIssued(t, csr)

	roots := x509.NewCertPool()
	roots.AddCert(authority.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate does not verify against the CA for client auth: %v", err)
	}
	if cert.Subject.CommonName != "jane" || !slices.Equal(cert.Subject.Organization, []string{"dev", "ops"}) {
		t.Errorf("subject %s, want CN=jane, O=dev, O=ops", cert.Subject)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("usages %b %v, want digital signature and client auth", cert.KeyUsage, cert.ExtKeyUsage)
	}
	if cert.IsCA {
		t.Error("the certificate is a CA")
	}
	if got := cert.NotAfter.Sub(cert.NotBefore); got != time.Hour+5*time.Minute {
		t.Errorf("lifetime %v, want 1h5m (an hour asked for, five minutes back-dated)", got)
	}
	if cert.NotAfter.Before(before.Add(time.Hour).Truncate(time.Second)) || cert.NotAfter.After(after.Add(time.Hour)) {
		t.Errorf("NotAfter %v, want an hour after the approval (%v to %v)", cert.NotAfter, before, after)
	}
	for _, name := range []string{"waiting", "denied"} {
		csr, err := s.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if issued(csr) {
			t.Errorf("%s, neither approved nor allowed, was signed", name)
		}
	}
}

// A request that breaks its signer's rules gets a Failed condition with
// reason SignerValidationFailure and the rule's message, and no
// certificate; a legacy-unknown one is left alone (H.3).
func TestRuleFailureMarksTheRequestFailed_H3(t *testing.T) {
	s, _ := startSigner(t, 0)
	request(t, s.Client, "node", certificatesv1.KubeAPIServerClientKubeletSignerName, "n1", []string{"system:nodes"},
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, nil)
	decide(t, s.Client, "node", certificatesv1.CertificateApproved)
	csr := waitFor(t, s.Client, "node", "failed", func(csr *certificatesv1.CertificateSigningRequest) bool {
		return csrsigning.HasTrueCondition(csr, certificatesv1.CertificateFailed)
	})
	if issued(csr) {
		t.Error("a failed request got a certificate")
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateFailed &&
			(c.Reason != "SignerValidationFailure" || c.Message != "subject common name does not begin with system:node:") {
			t.Errorf("Failed condition %s: %s, want SignerValidationFailure: subject common name does not begin with system:node:", c.Reason, c.Message)
		}
	}

	// A good kubelet client request signed after it shows the signer
	// is past the failed one.
	request(t, s.Client, "node-ok", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", []string{"system:nodes"},
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, nil)
	decide(t, s.Client, "node-ok", certificatesv1.CertificateApproved)
	cert := parseIssued(t, waitFor(t, s.Client, "node-ok", "issued", issued))
	if cert.Subject.CommonName != "system:node:n1" {
		t.Errorf("subject %s", cert.Subject)
	}
}

// The certificate ends when the CA does, if that is sooner than the
// signing duration (H.3).
func TestLifetimeEndsWithTheCA_H3(t *testing.T) {
	s, authority := startSigner(t, 2*time.Hour)
	request(t, s.Client, "jane", certificatesv1.KubeAPIServerClientSignerName, "jane", nil,
		[]certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, nil)
	decide(t, s.Client, "jane", certificatesv1.CertificateApproved)
	cert := parseIssued(t, waitFor(t, s.Client, "jane", "issued", issued))
	if !cert.NotAfter.Equal(authority.Cert.NotAfter) {
		t.Errorf("NotAfter %v, want the CA's %v", cert.NotAfter, authority.Cert.NotAfter)
	}
}

// Replaced CA files are read again: after a rotation's reissue phase
// (the new key, a bundle of new then old) the next request is signed by
// the new CA (H.3, H.6).
func TestSignsWithTheCAFilesHoldNow_H3(t *testing.T) {
	s, old, dir := startSignerIn(t, 0)
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}
	request(t, s.Client, "before", certificatesv1.KubeAPIServerClientSignerName, "jane", nil, usages, nil)
	decide(t, s.Client, "before", certificatesv1.CertificateApproved)
	if err := parseIssued(t, waitFor(t, s.Client, "before", "issued", issued)).CheckSignatureFrom(old.Cert); err != nil {
		t.Fatalf("signed by another CA than the files': %v", err)
	}
	rotated := writeCA(t, dir, 0, old)
	request(t, s.Client, "after", certificatesv1.KubeAPIServerClientSignerName, "jane", nil, usages, nil)
	decide(t, s.Client, "after", certificatesv1.CertificateApproved)
	if err := parseIssued(t, waitFor(t, s.Client, "after", "issued", issued)).CheckSignatureFrom(rotated.Cert); err != nil {
		t.Errorf("not signed by the new CA: %v", err)
	}
}

package certificates_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/internal/testpki"
)

// TestClusterTrustBundleValidation_H8: a signer's bundle is named after
// the signer; the PEM holds CA certificates only, none twice; the signer
// never changes.
func TestClusterTrustBundleValidation_H8(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	bundles := srv.Client.CertificatesV1().ClusterTrustBundles()
	ctx := context.Background()
	ca := string(testpki.NewCA(t, "bundle-ca").CertPEM)
	leaf := string(testCert(t))
	bundle := func(name, signer, pem string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pem}}
	}
	for _, c := range []struct {
		name string
		b    *certificatesv1.ClusterTrustBundle
		want string
	}{
		{"plain", bundle("plain", "", ca), ""},
		{"signer's", bundle("example.com:signer:a", "example.com/signer", ca), ""},
		{"wrong prefix", bundle("a", "example.com/signer", ca), "ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:"},
		{"colon without signer", bundle("a:b", "", ca), `ClusterTrustBundle without signer name must not have ":" in its name`},
		{"not a CA", bundle("leaf", "", ca+leaf), "entry 1 does not have the CA bit set"},
		{"twice", bundle("twice", "", ca+ca), "duplicate trust anchor (indices [0 1])"},
		{"empty", bundle("empty", "", ""), "at least one trust anchor must be provided"},
	} {
		_, err := bundles.Create(ctx, c.b, metav1.CreateOptions{})
		t.Run(c.name, func(t *testing.T) { wantCSRInvalid(t, err, c.want) })
	}
	b, err := bundles.Get(ctx, "example.com:signer:a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Spec.SignerName = "example.com/other"
	_, err = bundles.Update(ctx, b, metav1.UpdateOptions{})
	wantCSRInvalid(t, err, `spec.signerName: Invalid value: "example.com/other": field is immutable`)
}

// TestPodCertificateRequest_H8: a request's expiry defaults to a day; its
// spec never changes; a denial is final.
func TestPodCertificateRequest_H8(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	reqs := srv.Client.CertificatesV1().PodCertificateRequests("default")
	ctx := context.Background()
	block := testpki.CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "stub"}})
	der, err := pemBytes(block)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reqs.Create(ctx, &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/pods", PodName: "p", PodUID: "pu", ServiceAccountName: "sa",
			ServiceAccountUID: "su", NodeName: "n", NodeUID: "nu", StubPKCS10Request: der}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Spec.MaxExpirationSeconds; got == nil || *got != 86400 {
		t.Errorf("spec.maxExpirationSeconds = %v, want 86400", got)
	}
	r.Spec.PodName = "q"
	_, err = reqs.Update(ctx, r, metav1.UpdateOptions{})
	wantCSRInvalid(t, err, "field is immutable")

	r.Spec.PodName = "p"
	r.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue,
		Reason: "Test", Message: "m", LastTransitionTime: metav1.Now()}}
	if r, err = reqs.UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Status.Conditions[0].Type = certificatesv1.PodCertificateRequestConditionTypeFailed
	_, err = reqs.UpdateStatus(ctx, r, metav1.UpdateOptions{})
	wantCSRInvalid(t, err, "status: Invalid value: immutable after PodCertificateRequest is issued, denied, or failed")
}

// pemBytes returns the DER of the first PEM block of b.
func pemBytes(b []byte) ([]byte, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	return block.Bytes, nil
}

package csrpem

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	"github.com/kubegate/kubegate/internal/testpki"
)

// A CERTIFICATE REQUEST block parses; no PEM, another block type and a
// request that is not DER are errors, the first two with kube's text.
func TestParse(t *testing.T) {
	good := testpki.CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "ada"}})
	if req, err := Parse(good); err != nil || req.Subject.CommonName != "ada" {
		t.Errorf("Parse(a request) = %v, %v", req, err)
	}
	const want = "PEM block type must be CERTIFICATE REQUEST"
	for name, data := range map[string][]byte{
		"not PEM":    []byte("hello"),
		"a cert PEM": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}),
		"nothing":    nil,
	} {
		if _, err := Parse(data); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	if _, err := Parse(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{1, 2}})); err == nil {
		t.Error("a CERTIFICATE REQUEST block that is not DER parsed")
	}
}

package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
)

// A CA made by plain `openssl req -x509` has no keyUsage extension, which
// allows every usage (RFC 5280 4.2.1.3): pki check must not call it a CA
// without keyCertSign.
func TestHasKeyUsageExtension(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bare-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	bare, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if hasKeyUsageExtension(bare) {
		t.Error("a CA without the extension: hasKeyUsageExtension = true")
	}
	if withKU := testpki.NewCA(t, "ca").Cert; !hasKeyUsageExtension(withKU) {
		t.Error("a CA with keyUsage: hasKeyUsageExtension = false")
	}
}

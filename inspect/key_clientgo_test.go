package inspect

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// TestParseVerifyKeysAgainstKeyutil_A3 compares the --key reader with
// client-go's keyutil.ParsePublicKeysPEM, kube-apiserver's reader of
// --service-account-key-file: the same keys for the files a cluster holds
// (sa.pub, sa.key, certificates, bundles of them), and the differences of
// a reader that explains rather than skips shown: a block it cannot read,
// or of a type it does not know, is an error; a key of any type is read.
func TestParseVerifyKeysAgainstKeyutil_A3(t *testing.T) {
	t.Parallel()
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p8, _ := x509.MarshalPKCS8PrivateKey(p256)
	sec1, _ := x509.MarshalECPrivateKey(p256)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	edPKIX, _ := x509.MarshalPKIXPublicKey(ed.Public())
	block := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	tests := []struct {
		name    string
		data    []byte
		differs bool // keyutil's answer is not ParseVerifyKeys'
	}{
		{name: "sa.pub", data: readFixture(t, "sa.pub")},
		{name: "sa.key", data: readFixture(t, "sa.key")},
		{name: "a certificate", data: readFixture(t, "ca.crt")},
		{name: "a bundle", data: readFixture(t, "bundle.pem")},
		{name: "SEC 1 EC", data: block("EC PRIVATE KEY", sec1)},
		{name: "a CSR only", data: readFixture(t, "csr.pem")},
		{name: "an EC private key in PKCS #8 is read", data: block("PRIVATE KEY", p8), differs: true},
		{name: "a certificate and its PKCS #8 EC key: both read", data: readFixture(t, "cert-and-key.pem"), differs: true},
		{name: "an Ed25519 key is read", data: block("PUBLIC KEY", edPKIX), differs: true},
		{name: "EC PARAMETERS is an unknown type", data: bytes.Join([][]byte{block("EC PARAMETERS", []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}), block("EC PRIVATE KEY", sec1)}, nil), differs: true},
		{name: "a corrupt block is an error", data: bytes.Join([][]byte{block("PUBLIC KEY", []byte{0x30}), readFixture(t, "sa.pub")}, nil), differs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseVerifyKeys(tt.data)
			kube, kubeErr := keyutil.ParsePublicKeysPEM(tt.data)
			same := (err == nil) == (kubeErr == nil) && slices.EqualFunc(got, kube, func(a crypto.PublicKey, b any) bool {
				return a.(interface{ Equal(crypto.PublicKey) bool }).Equal(b)
			})
			if same == tt.differs {
				t.Errorf("ParseVerifyKeys = %d keys, %v; keyutil = %d keys, %v; want them to differ: %v", len(got), err, len(kube), kubeErr, tt.differs)
			}
		})
	}
}

// TestParseCAsAgainstClientGo compares the --ca reader with client-go's
// cert.ParseCertsPEM: the same certificates for certificate files and
// bundles, keys among them skipped; a block of a type inspect does not
// know is an error where client-go skips it.
func TestParseCAsAgainstClientGo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    []byte
		differs bool
	}{
		{name: "a certificate", data: readFixture(t, "ca.crt")},
		{name: "a bundle", data: readFixture(t, "bundle.pem")},
		{name: "a certificate and its key", data: readFixture(t, "cert-and-key.pem")},
		{name: "a key only", data: readFixture(t, "ca.key")},
		{name: "an unknown block type is an error", data: bytes.Join([][]byte{pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: []byte{0x30}}), readFixture(t, "ca.crt")}, nil), differs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCAs(tt.data)
			kube, kubeErr := cert.ParseCertsPEM(tt.data)
			same := (err == nil) == (kubeErr == nil) && slices.EqualFunc(got, kube, (*x509.Certificate).Equal)
			if same == tt.differs {
				t.Errorf("ParseCAs = %d certificates, %v; cert.ParseCertsPEM = %d, %v; want them to differ: %v", len(got), err, len(kube), kubeErr, tt.differs)
			}
		})
	}
}

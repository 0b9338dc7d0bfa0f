// Package testpki mints small PKIs in-process for tests: CAs, intermediates
// and leaves with ECDSA P-256 keys, with every field a test may want to vary.
package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Cert is a certificate with its key and PEM encodings.
type Cert struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Options vary a certificate. The zero value is a one-year client cert
// valid from an hour ago, with the client-auth EKU.
type Options struct {
	CN        string
	Orgs      []string
	DNSNames  []string
	IPs       []net.IP
	NotBefore time.Time          // zero: now - 1h
	NotAfter  time.Time          // zero: NotBefore + 1 year
	EKUs      []x509.ExtKeyUsage // nil: client auth; use NoEKU for none
	NoEKU     bool
	IsCA      bool
	// ExtraNames are added to the subject as-is (for example the UID OID).
	ExtraNames []pkix.AttributeTypeAndValue
}

var serial atomic.Int64

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func build(t testing.TB, o Options, parent *Cert) *Cert {
	t.Helper()
	key := newKey(t)
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = o.NotBefore.AddDate(1, 0, 0)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano() + serial.Add(1)),
		Subject:      pkix.Name{CommonName: o.CN, Organization: o.Orgs, ExtraNames: o.ExtraNames},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	switch {
	case o.IsCA:
		tmpl.IsCA = true
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
		tmpl.ExtKeyUsage = o.EKUs
	case o.NoEKU:
	case o.EKUs != nil:
		tmpl.ExtKeyUsage = o.EKUs
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &Cert{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// NewCA returns a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *Cert {
	t.Helper()
	return build(t, Options{CN: cn, IsCA: true, NotAfter: time.Now().AddDate(10, 0, 0)}, nil)
}

// SelfSigned returns a self-signed certificate with options o.
func SelfSigned(t testing.TB, o Options) *Cert {
	t.Helper()
	return build(t, o, nil)
}

// Issue returns a certificate signed by ca.
func (ca *Cert) Issue(t testing.TB, o Options) *Cert {
	t.Helper()
	return build(t, o, ca)
}

// Intermediate returns an intermediate CA signed by ca.
func (ca *Cert) Intermediate(t testing.TB, cn string) *Cert {
	t.Helper()
	return build(t, Options{CN: cn, IsCA: true}, ca)
}

// Pool returns a pool holding only ca.
func (ca *Cert) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WriteFiles writes the cert and key as dir/name.crt and dir/name.key and
// returns their paths.
func (c *Cert) WriteFiles(t testing.TB, dir, name string) (certPath, keyPath string) {
	t.Helper()
	certPath = filepath.Join(dir, name+".crt")
	keyPath = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, c.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, c.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// CSR returns the PEM certificate request tmpl describes (its subject,
// raw or parsed, and SANs), signed by a new P-256 key.
func CSR(t testing.TB, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

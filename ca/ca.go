// Package ca is kubegate's certificate authority: it creates and loads CAs,
// issues and signs certificates under fixed profiles, renews them, reports
// their expiry, lints whole trees, and knows the kubeadm-compatible on-disk
// layout (DIR/pki/...).
//
// Keys, CA creation and signing policy come from cfssl. The final
// certificate is signed with crypto/x509 so that its subject is exactly the
// one requested: every O its own RDN in the order given, or a CSR's subject
// byte for byte. No CN or O that fails ValidateName is ever signed. PEM
// input is read through internal/pemutil. The package imports nothing of
// kubegate's except internal packages, and nothing from client-go or
// apimachinery (TestImportsStayLean).
package ca

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	cflog "github.com/cloudflare/cfssl/log"

	"github.com/cloudflare/cfssl/csr"
	"github.com/cloudflare/cfssl/helpers"
	"github.com/cloudflare/cfssl/initca"
	"github.com/cloudflare/cfssl/signer"

	"github.com/kubegate/kubegate/internal/pemutil"
)

func init() {
	// cfssl logs every step at info level to stderr; kubegate reports
	// through its own errors and messages instead.
	cflog.Level = cflog.LevelFatal
}

// KeyAlgorithm names a private key type and size.
type KeyAlgorithm string

// The key algorithms kubegate issues.
const (
	// ECDSAP256 is the default: 128-bit security, small keys and fast
	// signatures, accepted by every Kubernetes component and kubectl.
	ECDSAP256 KeyAlgorithm = "ecdsa-p256"
	RSA2048   KeyAlgorithm = "rsa-2048" // kubeadm's default, for clients that cannot use ECDSA
	RSA3072   KeyAlgorithm = "rsa-3072"
	RSA4096   KeyAlgorithm = "rsa-4096"
)

// KeyAlgorithms lists the accepted names in the order shown in help text.
var KeyAlgorithms = []KeyAlgorithm{ECDSAP256, RSA2048, RSA3072, RSA4096}

// ParseKeyAlgorithm returns the algorithm named s.
func ParseKeyAlgorithm(s string) (KeyAlgorithm, error) {
	for _, a := range KeyAlgorithms {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown key algorithm %q (want ecdsa-p256, rsa-2048, rsa-3072 or rsa-4096)", s)
}

func (a KeyAlgorithm) keyRequest() *csr.KeyRequest {
	switch a {
	case RSA2048:
		return &csr.KeyRequest{A: "rsa", S: 2048}
	case RSA3072:
		return &csr.KeyRequest{A: "rsa", S: 3072}
	case RSA4096:
		return &csr.KeyRequest{A: "rsa", S: 4096}
	default:
		return &csr.KeyRequest{A: "ecdsa", S: 256}
	}
}

// algorithmOf returns the KeyAlgorithm of pub, so a renewal keeps the key
// type of the certificate it replaces.
func algorithmOf(pub crypto.PublicKey) KeyAlgorithm {
	if k, ok := pub.(*rsa.PublicKey); ok {
		switch {
		case k.N.BitLen() > 3072:
			return RSA4096
		case k.N.BitLen() > 2048:
			return RSA3072
		default:
			return RSA2048
		}
	}
	return ECDSAP256
}

// GenerateKey returns a new private key of algorithm a and its PEM
// encoding (SEC 1 "EC PRIVATE KEY" or PKCS #1 "RSA PRIVATE KEY", the forms
// kubeadm writes).
func GenerateKey(a KeyAlgorithm) (crypto.Signer, []byte, error) {
	priv, err := a.keyRequest().Generate()
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key: %w", a, err)
	}
	key, ok := priv.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("generate %s key: not a signing key", a)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, keyPEM, nil
}

// EncodeKey returns the PEM encoding of an ECDSA or RSA private key: the
// bytes client-go's keyutil.MarshalPrivateKeyToPEM writes (a test holds it
// to that), written here because the package does not import client-go.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("encode key: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
	case *rsa.PrivateKey:
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
	default:
		return nil, fmt.Errorf("encode key: unsupported key type %T", key)
	}
}

// EncodePublicKey returns the PKIX "PUBLIC KEY" PEM encoding of pub.
func EncodePublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// EncodeCert returns the PEM encoding of a DER certificate.
func EncodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// ParseCertPEM parses the first certificate in data; name (usually the
// file) is used in errors.
func ParseCertPEM(name string, data []byte) (*x509.Certificate, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: file is empty", name)
	}
	block := pemutil.First(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate found", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt certificate: %w", name, err)
	}
	return cert, nil
}

// ParseKeyPEM parses a PKCS #1, PKCS #8 or SEC 1 private key; name is used
// in errors, which never contain key material.
func ParseKeyPEM(name string, data []byte) (crypto.Signer, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: file is empty", name)
	}
	if pemutil.First(data) == nil {
		return nil, fmt.Errorf("%s: no PEM private key found", name)
	}
	key, err := helpers.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt private key", name)
	}
	return key, nil
}

// ParsePublicKeyPEM parses a PKIX "PUBLIC KEY" block.
func ParsePublicKeyPEM(name string, data []byte) (crypto.PublicKey, error) {
	block := pemutil.First(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("%s: no PEM public key found", name)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt public key: %w", name, err)
	}
	return pub, nil
}

// KeyMatches reports whether key is the private half of pub.
func KeyMatches(key crypto.Signer, pub crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := key.Public().(equaler)
	return ok && e.Equal(pub)
}

// Authority is a loaded CA: its certificate and signing key. It is safe
// for concurrent use; issuing never re-reads or re-parses the CA.
type Authority struct {
	Name    string // tree name, for example "ca" or "etcd/ca"; used in messages
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	sigAlg x509.SignatureAlgorithm
}

// NewAuthority wraps a parsed CA certificate and key, checking that the
// certificate is a CA and that the key is its own.
func NewAuthority(name string, cert *x509.Certificate, key crypto.Signer) (*Authority, error) {
	if !cert.IsCA {
		return nil, fmt.Errorf("%s: certificate is not a CA (basicConstraints CA:FALSE)", name)
	}
	if !KeyMatches(key, cert.PublicKey) {
		return nil, fmt.Errorf("%s: private key does not match the CA certificate", name)
	}
	return &Authority{
		Name:    name,
		Cert:    cert,
		CertPEM: EncodeCert(cert.Raw),
		Key:     key,
		sigAlg:  signer.DefaultSigAlgo(key),
	}, nil
}

// LoadAuthority reads a CA certificate and key from files. Errors name the
// file at fault: missing, empty, corrupt, not a CA, or a key that does not
// match the certificate.
func LoadAuthority(name, certPath, keyPath string) (*Authority, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	return ParseAuthority(name, certPath, certPEM, keyPath, keyPEM)
}

// ParseAuthority is LoadAuthority for contents already read; the paths
// name the contents in errors.
func ParseAuthority(name, certPath string, certPEM []byte, keyPath string, keyPEM []byte) (*Authority, error) {
	cert, err := ParseCertPEM(certPath, certPEM)
	if err != nil {
		return nil, err
	}
	key, err := ParseKeyPEM(keyPath, keyPEM)
	if err != nil {
		return nil, err
	}
	// During a CA rotation the file is a bundle of the old and the new
	// CA (H.6); the one the key belongs to signs.
	if !KeyMatches(key, cert.PublicKey) {
		for _, b := range pemutil.Blocks(certPEM) {
			if c, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == "CERTIFICATE" && KeyMatches(key, c.PublicKey) {
				cert = c
				break
			}
		}
	}
	a, err := NewAuthority(name, cert, key)
	if err != nil {
		if !cert.IsCA {
			return nil, fmt.Errorf("%s: certificate is not a CA", certPath)
		}
		return nil, fmt.Errorf("%s: private key does not match %s", keyPath, certPath)
	}
	return a, nil
}

// CreateAuthority makes a new self-signed CA with cfssl's initca: a fresh
// key of algorithm alg, subject CN=cn, valid for validity (0: DefaultCAValidity),
// under initca's CA policy (keyCertSign and cRLSign only: a CA key
// signs certificates and CRLs, never TLS handshakes).
// It returns the authority and the key's PEM. cn must pass ValidateName.
func CreateAuthority(name, cn string, alg KeyAlgorithm, validity time.Duration) (*Authority, []byte, error) {
	if err := ValidateName("common name", cn); err != nil {
		return nil, nil, fmt.Errorf("create CA %s: %w", name, err)
	}
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	req := &csr.CertificateRequest{
		CN:         cn,
		KeyRequest: alg.keyRequest(),
		CA: &csr.CAConfig{
			Expiry:      validity.String(),
			Backdate:    Backdate.String(),
			PathLength:  0,
			PathLenZero: true, // pathlen:0 — every cluster CA signs leaves only, no intermediates
		},
	}
	certPEM, _, keyPEM, err := initca.New(req)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA %s: %w", name, err)
	}
	cert, err := ParseCertPEM(name, certPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := ParseKeyPEM(name, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	a, err := NewAuthority(name, cert, key)
	if err != nil {
		return nil, nil, err
	}
	return a, keyPEM, nil
}

func (a *Authority) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Issued is a freshly issued certificate with its key.
type Issued struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte // nil when the key was not generated here (a signed CSR)
}

// ErrUnknownProfile is returned for a profile name that is not one of
// Profiles.
var ErrUnknownProfile = errors.New("unknown profile")

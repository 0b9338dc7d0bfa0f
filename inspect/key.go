package inspect

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
)

type pkixATV = pkix.AttributeTypeAndValue

// CSR describes a PKCS #10 certificate signing request.
type CSR struct {
	Subject            string   `json:"subject"`
	PublicKey          KeyInfo  `json:"publicKey"`
	SignatureAlgorithm string   `json:"signatureAlgorithm"`
	SignatureValid     bool     `json:"signatureValid"`
	SignatureError     string   `json:"signatureError,omitempty"`
	DNSNames           []string `json:"dnsNames,omitempty"`
	IPAddresses        []string `json:"ipAddresses,omitempty"`
	EmailAddresses     []string `json:"emailAddresses,omitempty"`
	URIs               []string `json:"uris,omitempty"`
	// Identity is what a client certificate issued with this subject maps
	// to in kube-apiserver.
	Identity *Identity `json:"identity"`
	PEM      string    `json:"pem"`
}

func describeCSR(c *x509.CertificateRequest) *CSR {
	d := &CSR{
		Subject:            formatName(c.RawSubject),
		PublicKey:          keyInfo(c.PublicKey),
		SignatureAlgorithm: sigAlgName(c.SignatureAlgorithm),
		DNSNames:           c.DNSNames,
		EmailAddresses:     c.EmailAddresses,
		Identity:           subjectIdentity(c.Subject.CommonName, c.Subject.Organization, c.Subject.Names),
		PEM:                string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: c.Raw})),
	}
	if err := c.CheckSignature(); err != nil {
		d.SignatureError = err.Error()
	} else {
		d.SignatureValid = true
	}
	for _, ip := range c.IPAddresses {
		d.IPAddresses = append(d.IPAddresses, ip.String())
	}
	for _, u := range c.URIs {
		d.URIs = append(d.URIs, u.String())
	}
	return d
}

// Key describes a PEM key block by type and size only.
type Key struct {
	PEMType   string `json:"pemType"`
	Private   bool   `json:"private"`
	Encrypted bool   `json:"encrypted,omitempty"` // type and size are then unknown
	KeyInfo
	// KeyID is the "kid" kube-apiserver gives tokens signed by this key
	// pair (base64url SHA-256 of the PKIX public key); public keys only.
	KeyID string `json:"keyID,omitempty"`

	public crypto.PublicKey
}

func (k *Key) String() string {
	switch {
	case k.Encrypted:
		return "encrypted private key (type and size unknown without the passphrase)"
	case k.Private:
		return k.KeyInfo.String() + " private key"
	}
	return k.KeyInfo.String() + " public key"
}

func describeKeyBlock(b *pem.Block) (*Key, error) {
	k := &Key{PEMType: b.Type, Private: pemKinds[b.Type] == KindPrivateKey}
	if b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "" {
		k.Encrypted = true
		k.KeyInfo = KeyInfo{Algorithm: "unknown"}
		return k, nil
	}
	var err error
	if k.Private {
		k.public, err = parsePrivateKeyPublic(b)
	} else {
		k.public, err = parsePublicKey(b)
		if err == nil {
			k.KeyID, err = keyID(k.public)
		}
	}
	if err != nil {
		return nil, err
	}
	k.KeyInfo = keyInfo(k.public)
	return k, nil
}

// parsePrivateKeyPublic parses a private key block and returns only its
// public half, so nothing secret outlives the call.
func parsePrivateKeyPublic(b *pem.Block) (crypto.PublicKey, error) {
	var (
		key any
		err error
	)
	switch b.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		// The parsers' messages never quote key bytes; keep only the
		// first line for one-line errors.
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("parse private key: unsupported key type")
	}
	return s.Public(), nil
}

func parsePublicKey(b *pem.Block) (crypto.PublicKey, error) {
	if b.Type == "RSA PUBLIC KEY" {
		k, err := x509.ParsePKCS1PublicKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse public key: %w", err)
		}
		return k, nil
	}
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	return k, nil
}

// keyID is kube-apiserver's "kid" for a service-account signing key: the
// unpadded base64url SHA-256 of the PKIX DER of the public key.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// ParseCAs returns every certificate in PEM data, for Options.Roots.
func ParseCAs(data []byte) ([]*x509.Certificate, error) {
	blocks, err := decodePEM(data)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for i, b := range blocks {
		if pemKinds[b.Type] != KindCertificate {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", i+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificates found")
	}
	return certs, nil
}

// ParseVerifyKeys returns the public keys in PEM data, for Options.Keys:
// public keys, certificates' keys and the public half of private keys, the
// kinds kube-apiserver's --service-account-key-file holds. Unlike
// kube-apiserver, which skips them, a block it cannot read or of a type
// it does not know is an error.
func ParseVerifyKeys(data []byte) ([]crypto.PublicKey, error) {
	blocks, err := decodePEM(data)
	if err != nil {
		return nil, err
	}
	var keys []crypto.PublicKey
	for i, b := range blocks {
		var pub crypto.PublicKey
		switch pemKinds[b.Type] {
		case KindPublicKey:
			pub, err = parsePublicKey(b)
		case KindPrivateKey:
			pub, err = parsePrivateKeyPublic(b)
		case KindCertificate:
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(b.Bytes); err == nil {
				pub = c.PublicKey
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", i+1, err)
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public keys found")
	}
	return keys, nil
}

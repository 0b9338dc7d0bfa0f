package ca

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// authority describes the files of one rotated authority.
type authority struct {
	target string
	// bundle is the trust file readers load (pki/ca.crt, sa.pub);
	// signer the private key (pki/ca.key, sa.key); both relative to DIR.
	bundle, signer string
	// asideCert and asideKey hold the new material, asideOld a copy of
	// the old certificate (or public key), until drop-old.
	asideCert, asideKey, asideOld string
	caName                        string // tree CA name; "" for sa
}

func authorityOf(target string) authority {
	switch target {
	case RotateFrontProxy:
		return authority{target: target, bundle: PKIDir + "/front-proxy-ca.crt", signer: PKIDir + "/front-proxy-ca.key",
			asideCert: RotationDir + "/front-proxy-ca.crt", asideKey: RotationDir + "/front-proxy-ca.key",
			asideOld: RotationDir + "/front-proxy-ca.old.crt", caName: FrontProxyCA}
	case RotateSA:
		return authority{target: target, bundle: PKIDir + "/sa.pub", signer: PKIDir + "/sa.key",
			asideCert: RotationDir + "/sa.pub", asideKey: RotationDir + "/sa.key", asideOld: RotationDir + "/sa.old.pub"}
	default:
		return authority{target: RotateCluster, bundle: PKIDir + "/ca.crt", signer: PKIDir + "/ca.key",
			asideCert: RotationDir + "/ca.crt", asideKey: RotationDir + "/ca.key", asideOld: RotationDir + "/ca.old.crt", caName: ClusterCA}
	}
}

// material is an authority's old and new public material during a
// rotation: certificates for a CA, public keys for sa.
type material struct {
	authority
	old, new     []byte // DER: certificate, or PKIX public key for sa
	oldFP, newFP string // their fingerprints
	newKeyPEM    []byte // the new private key, PEM
	newCA        *Authority
	oldCert      *x509.Certificate // nil for sa
	oldInBundle  bool              // the bundle still holds the old entry
}

// label names the authority in messages.
func (a authority) label() string {
	return map[string]string{RotateCluster: "cluster CA", RotateFrontProxy: "front-proxy CA", RotateSA: "service-account key"}[a.target]
}

func (m *material) pemOf(der []byte) []byte {
	if m.target == RotateSA {
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	return EncodeCert(der)
}

// Fingerprint is the hex SHA-256 of a DER certificate or public key.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// blocks returns the DER of every certificate (or, for sa, public key)
// in a bundle file.
func (m *material) blocks(data []byte, name string) ([][]byte, error) {
	var out [][]byte
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case m.target == RotateSA && b.Type == "PUBLIC KEY":
			if _, err := x509.ParsePKIXPublicKey(b.Bytes); err != nil {
				return nil, fmt.Errorf("%s: corrupt public key: %w", name, err)
			}
		case m.target != RotateSA && b.Type == "CERTIFICATE":
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return nil, fmt.Errorf("%s: corrupt certificate: %w", name, err)
			}
		default:
			return nil, fmt.Errorf("%s: unexpected PEM block %q", name, b.Type)
		}
		out = append(out, b.Bytes)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PEM %s found", name, map[bool]string{true: "public key", false: "certificate"}[m.target == RotateSA])
	}
	return out, nil
}

func (m *material) join(ders ...[]byte) []byte {
	var b []byte
	for _, d := range ders {
		b = append(b, m.pemOf(d)...)
	}
	return b
}

// publicDER returns the DER that stands for the key in keyPEM: for sa
// its PKIX public key, else nothing (the certificate stands for a CA).
func publicDER(name string, keyPEM []byte) ([]byte, crypto.Signer, error) {
	key, err := ParseKeyPEM(name, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return der, key, nil
}

// load reads an authority's material for a rotation in progress: the old
// entry from its aside copy or the bundle, the new one from the bundle
// or its aside copy, both checked against the recorded fingerprints; with
// needKey also the new key, which trust-both and reissue need.
func (r *Rotator) load(target string, st *RotationState, needKey bool) (*material, error) {
	m := &material{authority: authorityOf(target)}
	keys := st.Keys[target]
	m.oldFP, m.newFP = keys.Old, keys.New
	if data, err := r.readFile(m.asideOld); err == nil {
		ders, err := m.blocks(data, m.asideOld)
		if err != nil {
			return nil, err
		}
		if Fingerprint(ders[0]) != m.oldFP {
			return nil, fmt.Errorf("%s is not the old %s recorded in %s", filepath.Join(r.Dir, m.asideOld), target, RotationStateFile)
		}
		m.old = ders[0]
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	data, err := r.readFile(m.bundle)
	if err != nil {
		return nil, err
	}
	ders, err := m.blocks(data, m.bundle)
	if err != nil {
		return nil, err
	}
	for _, d := range ders {
		switch Fingerprint(d) {
		case m.oldFP:
			m.oldInBundle = true
			if m.old == nil {
				m.old = d
			}
		case m.newFP:
			m.new = d
		}
	}
	if needKey || m.new == nil {
		if err := r.loadAside(m); err != nil {
			return nil, err
		}
		if Fingerprint(m.new) != m.newFP {
			return nil, fmt.Errorf("%s is not the new %s recorded in %s", filepath.Join(r.Dir, m.asideCert), target, RotationStateFile)
		}
	}
	if m.old == nil && needKey {
		return nil, fmt.Errorf("neither %s nor %s holds the old %s recorded in %s",
			filepath.Join(r.Dir, m.asideOld), filepath.Join(r.Dir, m.bundle), target, RotationStateFile)
	}
	if m.old != nil && target != RotateSA {
		if m.oldCert, err = x509.ParseCertificate(m.old); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// loadAside reads the new key (and certificate) kept in RotationDir.
func (r *Rotator) loadAside(m *material) error {
	keyPEM, err := r.readFile(m.asideKey)
	if err != nil {
		return fmt.Errorf("the new %s key: %w", m.target, err)
	}
	m.newKeyPEM = keyPEM
	if m.target == RotateSA {
		m.new, _, err = publicDER(m.asideKey, keyPEM)
		return err
	}
	a, err := LoadAuthority(m.caName, filepath.Join(r.Dir, m.asideCert), filepath.Join(r.Dir, m.asideKey))
	if err != nil {
		return err
	}
	a.Now = r.Now
	m.newCA, m.new = a, a.Cert.Raw
	return nil
}

// current reads an authority before a rotation: its one certificate (or
// public key) and its key type.
func (r *Rotator) current(target string) (*material, KeyAlgorithm, string, error) {
	m := &material{authority: authorityOf(target)}
	data, err := r.readFile(m.bundle)
	if err != nil {
		return nil, "", "", err
	}
	ders, err := m.blocks(data, m.bundle)
	if err != nil {
		return nil, "", "", err
	}
	if len(ders) > 1 {
		return nil, "", "", fmt.Errorf("%s holds %d entries and no rotation is in progress; keep only the one that matches %s",
			filepath.Join(r.Dir, m.bundle), len(ders), m.signer)
	}
	m.old = ders[0]
	keyPEM, err := r.readFile(m.signer)
	if err != nil {
		return nil, "", "", err
	}
	pub, _, err := publicDER(m.signer, keyPEM)
	if err != nil {
		return nil, "", "", err
	}
	if target == RotateSA {
		if !bytes.Equal(pub, m.old) {
			return nil, "", "", fmt.Errorf("%s: private key does not match %s", filepath.Join(r.Dir, m.signer), filepath.Join(r.Dir, m.bundle))
		}
		k, _ := x509.ParsePKIXPublicKey(pub)
		return m, algorithmOf(k), "", nil
	}
	if m.oldCert, err = x509.ParseCertificate(m.old); err != nil {
		return nil, "", "", err
	}
	if !bytes.Equal(pub, m.oldCert.RawSubjectPublicKeyInfo) {
		return nil, "", "", fmt.Errorf("%s: private key does not match %s", filepath.Join(r.Dir, m.signer), filepath.Join(r.Dir, m.bundle))
	}
	return m, algorithmOf(m.oldCert.PublicKey), m.oldCert.Subject.CommonName, nil
}

package gateway

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync/atomic"

	"github.com/kubegate/kubegate/internal/pemutil"
)

// Revocation refuses listed client certificates, which kube-apiserver
// cannot do. Its list is replaced atomically by Load, so it can be
// reloaded while requests are served. A nil *Revocation refuses nothing.
type Revocation struct {
	list atomic.Pointer[revocationList]
}

type revocationList struct {
	serials      map[string]struct{} // big.Int.Text(16) of revoked serials
	fingerprints map[[32]byte]struct{}
}

// ErrRevoked is wrapped by the error for a revoked certificate.
var ErrRevoked = errors.New("client certificate is revoked")

// NewRevocation returns a Revocation loaded from data; see Load.
func NewRevocation(data []byte) (*Revocation, error) {
	r := &Revocation{}
	if err := r.Load(data); err != nil {
		return nil, err
	}
	return r, nil
}

// Load replaces the list with data: a CRL (PEM "X509 CRL" or DER), or
// text with one entry a line: a certificate serial in hex (colons
// allowed, "serial:" prefix optional) or a SHA-256 fingerprint of the
// certificate ("sha256:" followed by 64 hex digits, colons allowed).
// Blank lines and lines starting with # are ignored. On error the old
// list stays in force.
func (r *Revocation) Load(data []byte) error {
	l, err := parseRevocations(data)
	if err != nil {
		return err
	}
	r.list.Store(l)
	return nil
}

// Check returns an error wrapping ErrRevoked when cert is listed.
func (r *Revocation) Check(cert *x509.Certificate) error {
	if r == nil {
		return nil
	}
	l := r.list.Load()
	if l == nil {
		return nil
	}
	if _, ok := l.serials[cert.SerialNumber.Text(16)]; ok {
		return fmt.Errorf("%w: serial %s", ErrRevoked, cert.SerialNumber.Text(16))
	}
	if len(l.fingerprints) > 0 {
		if _, ok := l.fingerprints[sha256.Sum256(cert.Raw)]; ok {
			return fmt.Errorf("%w: serial %s", ErrRevoked, cert.SerialNumber.Text(16))
		}
	}
	return nil
}

func parseRevocations(data []byte) (*revocationList, error) {
	l := &revocationList{serials: map[string]struct{}{}, fingerprints: map[[32]byte]struct{}{}}
	if block := pemutil.First(data); block != nil {
		if block.Type != "X509 CRL" {
			return nil, fmt.Errorf("revocation list: PEM block %q is not an X509 CRL", block.Type)
		}
		return l, l.addCRL(block.Bytes)
	}
	if len(data) > 0 && data[0] == 0x30 { // DER SEQUENCE: a binary CRL
		return l, l.addCRL(data)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lower := strings.ToLower(line)
		if rest, ok := strings.CutPrefix(lower, "sha256:"); ok {
			b, err := hex.DecodeString(strings.ReplaceAll(rest, ":", ""))
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("revocation list line %d: sha256 fingerprint must be 64 hex digits", n)
			}
			l.fingerprints[[32]byte(b)] = struct{}{}
			continue
		}
		digits := strings.ReplaceAll(strings.TrimPrefix(lower, "serial:"), ":", "")
		serial, ok := new(big.Int).SetString(digits, 16)
		if !ok || digits == "" {
			return nil, fmt.Errorf("revocation list line %d: %q is neither a hex serial nor sha256:<fingerprint>", n, line)
		}
		l.serials[serial.Text(16)] = struct{}{}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("revocation list: %w", err)
	}
	return l, nil
}

func (l *revocationList) addCRL(der []byte) error {
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		return fmt.Errorf("revocation list: %w", err)
	}
	for _, e := range crl.RevokedCertificateEntries {
		l.serials[e.SerialNumber.Text(16)] = struct{}{}
	}
	return nil
}

// Package pemutil holds kubegate's rules for reading PEM that client-go's
// k8s.io/client-go/util/keyutil and k8s.io/client-go/util/cert do not have:
// a walk over the blocks of a file with their positions, a look at the first
// block alone, and a certificate bundle whose errors name the block at
// fault. Keys are read with keyutil or by the packages that own a rule of
// their own; this package imports only the standard library.
package pemutil

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"iter"
)

// ErrNoCertificates is returned by Certificates for data without a
// CERTIFICATE block.
var ErrNoCertificates = errors.New("no PEM certificates found")

// Blocks yields every PEM block of data with its position, counted from 1
// over blocks of every type. Text before, between and after blocks is
// skipped, as pem.Decode skips it; a BEGIN line without a matching END line
// ends the walk.
func Blocks(data []byte) iter.Seq2[int, *pem.Block] {
	return func(yield func(int, *pem.Block) bool) {
		for n, rest := 1, data; ; n++ {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil || !yield(n, b) {
				return
			}
		}
	}
}

// First returns the first PEM block of data, or nil when there is none.
// The rules that use it look at that block only, whatever follows: where
// client-go's keyutil and cert skip a block of another type and read on, First
// leaves the caller to name the type it found.
func First(data []byte) *pem.Block {
	b, _ := pem.Decode(data)
	return b
}

// Certificates returns the certificate of every CERTIFICATE block in data,
// in order, skipping blocks of other types. A CERTIFICATE block that does
// not parse is an error naming its position ("PEM block 2: ..."), and data
// without one is ErrNoCertificates.
//
// It reads what cert.ParseCertsPEM reads, with one difference kept on
// purpose: a CERTIFICATE block with headers is read, where client-go skips
// it, so that a CA bundle is never silently smaller than the file; and
// its errors say which block is at fault.
func Certificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for n, b := range Blocks(data) {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, ErrNoCertificates
	}
	return certs, nil
}

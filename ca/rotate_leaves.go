package ca

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// expired reports whether cert is no longer valid at now. A rotation
// leaves expired certificates alone: nothing accepts them either way.
func expired(cert *x509.Certificate, now time.Time) bool { return now.After(cert.NotAfter) }

// signedBy reports whether ca signed cert (ca nil: no).
func signedBy(cert, ca *x509.Certificate) bool {
	return ca != nil && cert.CheckSignatureFrom(ca) == nil
}

// leaf is a certificate under pki/ that the old CA of a rotation signed.
type leaf struct {
	rel  string
	cert *x509.Certificate
	// data is the file; at is where its certificate's PEM block starts
	// and ends in it.
	data []byte
	at   [2]int
	// intermediate is set for a CA certificate.
	intermediate bool
	// link is the target when rel is a symbolic link; linkWalked is set
	// when that target is itself a file the scan reads.
	link       string
	linkWalked bool
}

// signedByOld lists the unexpired certificates under DIR/pki (not
// RotationDir), in .crt and .pem files, that the old CA of m signed,
// other than that CA itself. A file's first certificate is its own; what
// follows it (a chain, or a key in a .pem) is kept when it is re-signed.
func (r *Rotator) signedByOld(m *material) ([]leaf, error) {
	var out []leaf
	if m.oldCert == nil {
		return nil, nil
	}
	now := r.now()
	root := filepath.Join(r.Dir, PKIDir)
	aside := filepath.Join(r.Dir, filepath.FromSlash(RotationDir))
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	realAside := filepath.Join(realRoot, filepath.FromSlash(strings.TrimPrefix(RotationDir, PKIDir+"/")))
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == aside {
				return filepath.SkipDir
			}
			return nil
		}
		// The walk does not follow a linked directory, and the phase does
		// not go on without what it holds.
		if d.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				return fsutil.LinkedDirError(r.Dir, path)
			}
		}
		isPEM := strings.HasSuffix(path, ".pem")
		if !certFile(path) {
			return nil
		}
		l := leaf{}
		if d.Type()&fs.ModeSymlink != 0 {
			var ok bool
			if l, ok, err = linkLeaf(path, realRoot, realAside); !ok {
				return err
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.Dir, path)
		cert, at, err := firstCert(rel, data)
		if err != nil {
			if isPEM {
				return nil // a key or something else, not a certificate
			}
			return err
		}
		if !signedBy(cert, m.oldCert) || Fingerprint(cert.Raw) == m.oldFP || expired(cert, now) {
			return nil
		}
		l.rel, l.cert, l.data, l.at, l.intermediate = filepath.ToSlash(rel), cert, data, at, cert.IsCA
		out = append(out, l)
		return nil
	})
	return out, err
}

// certFile reports whether the scan reads the file at path: a .crt or
// a .pem.
func certFile(path string) bool {
	return strings.HasSuffix(path, ".crt") || strings.HasSuffix(path, ".pem")
}

// linkLeaf starts the leaf of the symbolic link at path: its target, and
// whether the scan reads that target itself (a .crt or .pem file under
// realRoot, not under realAside). ok is false, with no error, for a
// dangling link or one to a directory, which the scan passes over.
func linkLeaf(path, realRoot, realAside string) (l leaf, ok bool, err error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return leaf{}, false, nil
	}
	if l.link, err = filepath.EvalSymlinks(path); err != nil {
		return leaf{}, false, err
	}
	inside, _ := filepath.Rel(realRoot, l.link)
	l.linkWalked = filepath.IsLocal(inside) && !strings.HasPrefix(l.link, realAside+string(filepath.Separator)) && certFile(l.link)
	return l, true, nil
}

// firstCert parses the first CERTIFICATE block of data and says where
// it starts and ends.
func firstCert(name string, data []byte) (*x509.Certificate, [2]int, error) {
	for off := 0; ; {
		b, rest := pem.Decode(data[off:])
		if b == nil {
			return nil, [2]int{}, fmt.Errorf("%s: no PEM certificate found", name)
		}
		end := len(data) - len(rest)
		if b.Type != "CERTIFICATE" {
			off = end
			continue
		}
		start := off + bytes.Index(data[off:end], []byte("-----BEGIN"))
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, [2]int{}, fmt.Errorf("%s: corrupt certificate: %w", name, err)
		}
		return cert, [2]int{start, end}, nil
	}
}

// replaceCert returns data with the PEM block at at replaced by certPEM.
func replaceCert(data []byte, at [2]int, certPEM []byte) []byte {
	out := slices.Clone(data[:at[0]])
	out = append(out, certPEM...)
	return append(out, data[at[1]:]...)
}

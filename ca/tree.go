package ca

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// Embedded is a client certificate (and key) embedded in a kubeconfig.
type Embedded struct {
	File    string // kubeconfig path relative to DIR, for example "admin.conf"
	User    string // the users[] entry
	CertPEM []byte
	KeyPEM  []byte // nil when the kubeconfig has no embedded key
}

// Found is a certificate found in a tree.
type Found struct {
	// Name is the path relative to DIR with forward slashes
	// ("pki/etcd/ca.crt"), or "FILE:USER" for a kubeconfig's cert.
	Name string
	// Path is the file relative to DIR with forward slashes: the .crt
	// file, or the kubeconfig.
	Path string
	// User is the kubeconfig's users[] entry; "" for a .crt file.
	User   string
	Kind   Kind // KindCA, KindLeaf or KindKubeconfig
	Cert   *x509.Certificate
	Issuer string // Name of the tree CA that signed it; "-" for a self-signed CA; "unknown"
	// Key is the matching private key file's key or the kubeconfig's key;
	// nil when there is none.
	Key crypto.Signer
	// KeyFile names where Key came from, for messages.
	KeyFile string
}

// Scan reads every *.crt under DIR/pki and every embedded cert, in name
// order, and finds each one's issuer among the tree's CAs. A corrupt file
// is an error naming it. A directory of the tree that is a symbolic link
// (pki/ itself, pki/etcd/, …) is an error naming it, rather than a
// directory whose certificates are left out (fsutil.NoLinkedDirs).
func Scan(dir string, embedded []Embedded) ([]*Found, error) {
	return scan(dir, embedded, true)
}

// ScanCertificates finds what Scan finds, the same files with the same
// issuers, without reading a private key: every Found has a nil Key,
// and embedded KeyPEM is ignored. It is for readers that show the tree,
// such as the web console, which have no use for keys.
func ScanCertificates(dir string, embedded []Embedded) ([]*Found, error) {
	return scan(dir, embedded, false)
}

func scan(dir string, embedded []Embedded, withKeys bool) ([]*Found, error) {
	var found []*Found
	root := filepath.Join(dir, PKIDir)
	var linked error
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// The walk does not follow a linked directory: what it holds
		// would be missing from the tree without a word.
		if d.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				linked = fsutil.LinkedDirError(dir, path)
				return linked
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".crt") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		cert, err := ParseCertPEM(path, data)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		f := &Found{Name: filepath.ToSlash(rel), Path: filepath.ToSlash(rel), Kind: KindLeaf, Cert: cert}
		if cert.IsCA {
			f.Kind = KindCA
		}
		keyPath := strings.TrimSuffix(path, ".crt") + ".key"
		if !withKeys {
			found = append(found, f)
			return nil
		}
		if data, err := os.ReadFile(keyPath); err == nil {
			key, err := ParseKeyPEM(keyPath, data)
			if err != nil {
				return err
			}
			f.Key, f.KeyFile = key, filepath.ToSlash(strings.TrimSuffix(rel, ".crt")+".key")
		}
		found = append(found, f)
		return nil
	})
	if err != nil {
		if linked != nil && errors.Is(err, linked) {
			return nil, linked
		}
		return nil, fmt.Errorf("scan %s: %w", root, err)
	}
	for _, e := range embedded {
		name := e.File + ":" + e.User
		cert, err := ParseCertPEM(name, e.CertPEM)
		if err != nil {
			return nil, err
		}
		f := &Found{Name: name, Path: e.File, User: e.User, Kind: KindKubeconfig, Cert: cert}
		if withKeys && len(e.KeyPEM) > 0 {
			key, err := ParseKeyPEM(name+" client-key-data", e.KeyPEM)
			if err != nil {
				return nil, err
			}
			f.Key, f.KeyFile = key, name+" client-key-data"
		}
		found = append(found, f)
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	for _, f := range found {
		f.Issuer = issuerOf(f, found)
	}
	return found, nil
}

func issuerOf(f *Found, all []*Found) string {
	if f.Kind == KindCA && f.Cert.CheckSignatureFrom(f.Cert) == nil {
		return "-"
	}
	for _, c := range all {
		if c.Kind == KindCA && c != f && f.Cert.CheckSignatureFrom(c.Cert) == nil {
			return c.Name
		}
	}
	return "unknown"
}

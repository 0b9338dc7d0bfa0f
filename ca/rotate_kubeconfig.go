package ca

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// KubeconfigEditor reads and rewrites the embedded certificates of a
// kubeconfig, in memory. Package kubeconfig implements it; package ca
// does not parse kubeconfigs itself.
type KubeconfigEditor interface {
	// Certificates returns the certificate-authority-data of every
	// cluster entry and the client-certificate-data of every user entry
	// that embeds one, by name.
	Certificates(data []byte) (clusters, users map[string][]byte, err error)
	// CertificateFiles returns, by user name, the client-certificate
	// path of every user entry that names a file rather than embedding
	// the certificate, as written in the kubeconfig.
	CertificateFiles(data []byte) (users map[string]string, err error)
	// Edit returns data with the certificate-authority-data of the named
	// clusters and the client-certificate-data of the named users
	// replaced, and everything else kept.
	Edit(data []byte, clusters, users map[string][]byte) ([]byte, error)
}

// What planKubeconfigs does to each kubeconfig.
type kubeconfigStep int

const (
	kubeconfigTrust  kubeconfigStep = iota // add the new CA to the CA data
	kubeconfigResign                       // re-sign client certs the old CA signed
	kubeconfigDrop                         // remove the old CA from the CA data
)

// planKubeconfigs edits every DIR/*.conf for step. Only the clusters whose
// certificate-authority-data holds the old or the new cluster CA are
// touched; another cluster's CA is left alone.
func (r *Rotator) planKubeconfigs(p *RotationPlan, m *material, step kubeconfigStep) error {
	paths, err := filepath.Glob(filepath.Join(r.Dir, "*.conf"))
	if err != nil {
		return err
	}
	sort.Strings(paths)
	now := r.now()
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel := filepath.Base(path)
		r.step(p.Phase, "reading %s", rel)
		clusters, users, err := r.Kubeconfigs.Certificates(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		newClusters, newUsers := m.caData(rel, clusters, step), map[string][]byte{}
		if step != kubeconfigTrust {
			if newUsers, err = r.resignUsers(m, path, users, step, now); err != nil {
				return err
			}
			if err := r.checkCertificateFiles(p, m, path, data, step); err != nil {
				return err
			}
		}
		if len(newClusters)+len(newUsers) == 0 {
			continue
		}
		out, err := r.Kubeconfigs.Edit(data, newClusters, newUsers)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		why := map[kubeconfigStep]string{kubeconfigTrust: "CA data trusts the old and the new cluster CA",
			kubeconfigResign: "client certificate re-signed by the new cluster CA", kubeconfigDrop: "CA data trusts the new cluster CA only"}[step]
		p.Changes = append(p.Changes, Change{Path: rel, Why: why, data: out, mode: fsutil.ModeKey})
	}
	return nil
}

// caData returns, by cluster name, the certificate-authority-data of the
// kubeconfig rel that step changes: that of the clusters holding the old
// or the new CA of m, with the new one added (trust) or the old one
// removed (drop).
func (m *material) caData(rel string, clusters map[string][]byte, step kubeconfigStep) map[string][]byte {
	isOld := func(d []byte) bool { return Fingerprint(d) == m.oldFP }
	isNew := func(d []byte) bool { return Fingerprint(d) == m.newFP }
	out := map[string][]byte{}
	for name, caPEM := range clusters {
		ders, err := m.blocks(caPEM, rel+" cluster "+name+" certificate-authority-data")
		if err != nil || !(slices.ContainsFunc(ders, isOld) || slices.ContainsFunc(ders, isNew)) {
			continue
		}
		switch step {
		case kubeconfigTrust:
			if !slices.ContainsFunc(ders, isNew) {
				ders = append(ders, m.new)
			}
		case kubeconfigDrop:
			ders = slices.DeleteFunc(ders, isOld)
		}
		if want := m.join(ders...); !bytes.Equal(want, caPEM) {
			out[name] = want
		}
	}
	return out
}

// resignUsers returns, by user name, the client-certificate-data of the
// kubeconfig at path re-signed by the new CA of m, for every unexpired
// one the old CA signed. drop-old re-signs nothing: it refuses while one
// is left.
func (r *Rotator) resignUsers(m *material, path string, users map[string][]byte, step kubeconfigStep, now time.Time) (map[string][]byte, error) {
	rel := filepath.Base(path)
	out := map[string][]byte{}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		cert, err := ParseCertPEM(rel+" user "+name, users[name])
		if err != nil {
			return nil, err
		}
		if !signedBy(cert, m.oldCert) || expired(cert, now) {
			continue
		}
		if step == kubeconfigDrop {
			return nil, fmt.Errorf("%s user %s is still signed by the old %s; run kubegate ca rotate --dir %s --phase reissue again",
				path, name, m.label(), r.Dir)
		}
		iss, err := m.newCA.resign(cert)
		if err != nil {
			return nil, fmt.Errorf("%s user %s: %w", path, name, err)
		}
		out[name] = iss.CertPEM
	}
	return out, nil
}

// checkCertificateFiles looks at the client certificates the kubeconfig
// at path names by file (client-certificate, resolved against the
// kubeconfig's directory). reissue re-signs only files under pki/, so it
// warns of any other the old CA signed; drop-old refuses while one is
// signed by the old CA and not expired, as its user would be locked out.
func (r *Rotator) checkCertificateFiles(p *RotationPlan, m *material, path string, data []byte, step kubeconfigStep) error {
	files, err := r.Kubeconfigs.CertificateFiles(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		file := files[name]
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(path), file)
		}
		file = filepath.Clean(file)
		certPEM, err := os.ReadFile(file)
		if err != nil {
			continue // a kubeconfig naming a missing file authenticates nobody
		}
		cert, err := ParseCertPEM(file, certPEM)
		if err != nil || !signedBy(cert, m.oldCert) || expired(cert, r.now()) || p.resigned[file] {
			continue
		}
		if step == kubeconfigDrop {
			return fmt.Errorf("%s user %s: its client-certificate %s is still signed by the old %s; re-issue it with the new one before drop-old",
				path, name, file, m.label())
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s user %s: its client-certificate %s is signed by the old %s and is not re-signed (only files under %s are); re-issue it before drop-old",
			path, name, file, m.label(), filepath.Join(r.Dir, PKIDir)))
	}
	return nil
}

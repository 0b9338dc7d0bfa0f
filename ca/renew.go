package ca

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// Renewal is one re-issued certificate: the files to replace and the
// kubeconfig users whose embedded cert and key to rewrite.
type Renewal struct {
	Name        string
	NotAfter    time.Time
	Files       []File
	Kubeconfigs []Credential
}

// PlanRenew re-issues, in memory, the certificate named target (a tree
// name such as "apiserver" or "etcd/server", a kubeconfig such as
// "admin.conf", or "all" for every leaf and kubeconfig cert). Each keeps
// its subject, SANs, usages and CA, and gets a new key of the same type.
// Nothing is written; every CA key is checked first.
func PlanRenew(dir, target string, embedded []Embedded, validity time.Duration, now func() time.Time) ([]Renewal, error) {
	return PlanRenewProgress(dir, target, embedded, validity, now, nil)
}

// PlanRenewProgress is PlanRenew telling progress, when not nil, before
// each certificate it looks at: how many of them are done, of how many,
// and its name.
func PlanRenewProgress(dir, target string, embedded []Embedded, validity time.Duration, now func() time.Time,
	progress func(done, total int, name string)) ([]Renewal, error) {
	// A linked pki/ is named, rather than seen as an empty tree.
	if err := fsutil.NoLinkedDirs(dir, PKIDir); err != nil {
		return nil, err
	}
	found, err := Scan(dir, embedded)
	if err != nil {
		return nil, err
	}
	var targets []*Found
	for _, f := range found {
		file, _, _ := strings.Cut(f.Name, ":")
		switch {
		case target == "all":
			if f.Kind != KindCA {
				targets = append(targets, f)
			}
		case f.Name == target || f.Name == PKIDir+"/"+target+".crt" || f.Kind == KindKubeconfig && file == target:
			if f.Kind == KindCA {
				return nil, fmt.Errorf("%s is a CA; renew re-issues leaf certificates only", f.Name)
			}
			targets = append(targets, f)
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no certificate named %q in %s (try a name such as apiserver, etcd/server or admin.conf, or all)", target, dir)
	}
	authorities := map[string]*Authority{}
	var out []Renewal
	covered := map[*Found]bool{}
	for i, f := range targets {
		if progress != nil {
			progress(i, len(targets), f.Name)
		}
		if covered[f] {
			continue
		}
		if f.Issuer == "unknown" {
			return nil, fmt.Errorf("%s: its issuing CA is not in %s", f.Name, filepath.Join(dir, PKIDir))
		}
		a := authorities[f.Issuer]
		if a == nil {
			base := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(f.Issuer, ".crt")))
			a, err = LoadAuthority(f.Issuer, base+".crt", base+".key")
			if err != nil {
				return nil, err
			}
			a.Now = now
			authorities[f.Issuer] = a
		}
		key, keyPEM, err := GenerateKey(algorithmOf(f.Cert.PublicKey))
		if err != nil {
			return nil, err
		}
		iss, err := a.reissue(f.Cert, key.Public(), validity)
		if err != nil {
			return nil, fmt.Errorf("renew %s: %w", f.Name, err)
		}
		r := Renewal{Name: f.Name, NotAfter: iss.Cert.NotAfter}
		if f.Kind == KindLeaf {
			base := strings.TrimSuffix(f.Name, ".crt")
			r.Files = []File{
				{Path: filepath.FromSlash(base + ".key"), Data: keyPEM, Mode: fsutil.ModeKey, Overwrite: true},
				{Path: filepath.FromSlash(f.Name), Data: iss.CertPEM, Mode: fsutil.ModePublic, Overwrite: true},
			}
		}
		// Every kubeconfig embedding this exact cert gets the new one.
		for _, e := range found {
			if e.Kind == KindKubeconfig && bytes.Equal(e.Cert.Raw, f.Cert.Raw) {
				covered[e] = true
				file, user, _ := strings.Cut(e.Name, ":")
				r.Kubeconfigs = append(r.Kubeconfigs, Credential{Kubeconfig: file, User: user,
					CAPEM: a.CertPEM, CertPEM: iss.CertPEM, KeyPEM: keyPEM, Overwrite: true})
			}
		}
		out = append(out, r)
	}
	if progress != nil {
		progress(len(targets), len(targets), "")
	}
	return out, nil
}

package ca

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// outsideTree is the warning of reissue and drop-old about what a
// rotation cannot see.
func outsideTree(dir string, m *material) string {
	return fmt.Sprintf("certificates of the old %s outside %s (kubelets' own, those issued through the CertificateSigningRequest API or written elsewhere) are not seen: re-issue them before drop-old, which makes them fail",
		m.label(), dir)
}

// legacyTokens is the warning about the tokens that are never refreshed.
const legacyTokens = "tokens stored in Secrets of type kubernetes.io/service-account-token are never refreshed: those signed by the old service-account key are refused after drop-old; recreate them after reissue"

// planReissue: the new material leads each bundle and becomes the signer;
// every unexpired leaf and kubeconfig client certificate the old one
// signed is re-signed by the new one, with its key and validity kept.
func (r *Rotator) planReissue(p *RotationPlan, st *RotationState) error {
	ms := make([]*material, 0, len(p.CAs))
	for _, target := range p.CAs {
		m, err := r.load(target, st, true)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	p.resigned = map[string]bool{}
	for _, m := range ms {
		// The new entry first: kube components that load a certificate
		// and key pair from these files take the first certificate.
		if err := r.change(p, m.bundle, m.join(m.new, m.old), fsutil.ModePublic, "the new "+m.label()+" first, the old still trusted"); err != nil {
			return err
		}
		if err := r.change(p, m.signer, m.newKeyPEM, fsutil.ModeKey, "the new "+m.label()+" signs from now on"); err != nil {
			return err
		}
		if m.target == RotateSA {
			p.Warnings = append(p.Warnings, legacyTokens)
			continue
		}
		leaves, err := r.signedByOld(m)
		if err != nil {
			return err
		}
		for _, l := range leaves {
			path := filepath.Join(r.Dir, filepath.FromSlash(l.rel))
			switch {
			case l.intermediate:
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s is an intermediate CA the old %s signed; it is not re-signed, and drop-old is refused until it is re-issued by the new one or removed",
					path, m.label()))
				continue
			case l.link != "" && l.linkWalked:
				continue // its target, a file of the tree, is re-signed itself
			case l.link != "":
				return fmt.Errorf("%s is a symbolic link to %s, outside %s, signed by the old %s; a rotation does not write through links: re-issue %s with the new CA by hand or make %s a regular file, then run reissue again",
					path, l.link, filepath.Join(r.Dir, PKIDir), m.label(), l.link, path)
			}
			r.step(p.Phase, "re-signing %s", l.rel)
			iss, err := m.newCA.resign(l.cert)
			if err != nil {
				return fmt.Errorf("re-sign %s: %w", l.rel, err)
			}
			p.Changes = append(p.Changes, Change{Path: l.rel, Why: "re-signed by the new " + m.label() + " (same key, subject, SANs, usages and validity)",
				data: replaceCert(l.data, l.at, iss.CertPEM), mode: fsutil.ModePublic})
			p.resigned[path] = true
		}
		if m.target == RotateCluster {
			if err := r.planKubeconfigs(p, m, kubeconfigResign); err != nil {
				return err
			}
		}
		p.Warnings = append(p.Warnings, outsideTree(r.Dir, m))
	}
	st = cloneState(st)
	st.Done = PhaseReissue
	st.Reissued = r.now().UTC().Truncate(time.Second)
	c, err := r.state(st, "reissue done")
	if err != nil {
		return err
	}
	p.Changes = append(p.Changes, c)
	return nil
}

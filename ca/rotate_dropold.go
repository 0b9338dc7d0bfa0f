package ca

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// planDropOld: every bundle keeps the new entry only, the aside copies
// go, and the rotation is recorded as over. It is refused while the tree
// still holds an unexpired certificate the old CA signed, while the
// signer key is not the new one, and, for sa, until MinTokenAge after
// reissue (unless Force).
func (r *Rotator) planDropOld(p *RotationPlan, st *RotationState) error {
	for _, target := range p.CAs {
		m, err := r.load(target, st, false)
		if err != nil {
			return err
		}
		if target == RotateSA && m.oldInBundle {
			if err := r.tokenAge(p, st); err != nil {
				return err
			}
			p.Warnings = append(p.Warnings, legacyTokens)
		}
		if err := r.checkSigner(m); err != nil {
			return err
		}
		// A reader must never be shown a certificate whose CA it no
		// longer trusts.
		r.step(p.Phase, "checking that nothing the old %s signed is left", m.label())
		leaves, err := r.signedByOld(m)
		if err != nil {
			return err
		}
		if len(leaves) > 0 {
			l := leaves[0]
			path := filepath.Join(r.Dir, filepath.FromSlash(l.rel))
			switch {
			case l.intermediate:
				return fmt.Errorf("%s is an intermediate CA the old %s signed; re-issue it with the new one, or remove it, before drop-old", path, m.label())
			case l.link != "":
				return fmt.Errorf("%s (a symbolic link to %s) is still signed by the old %s; re-issue it with the new one before drop-old", path, l.link, m.label())
			}
			return fmt.Errorf("%s is still signed by the old %s; run kubegate ca rotate --dir %s --phase reissue again",
				path, m.label(), r.Dir)
		}
		if err := r.change(p, m.bundle, m.pemOf(m.new), fsutil.ModePublic, "the new "+m.label()+" only"); err != nil {
			return err
		}
		if target == RotateCluster {
			if err := r.planKubeconfigs(p, m, kubeconfigDrop); err != nil {
				return err
			}
		}
		if target != RotateSA && m.oldInBundle {
			p.Warnings = append(p.Warnings, outsideTree(r.Dir, m))
		}
		for _, rel := range []string{m.asideKey, m.asideCert, m.asideOld} {
			if _, err := os.Lstat(filepath.Join(r.Dir, filepath.FromSlash(rel))); err == nil {
				p.Changes = append(p.Changes, Change{Path: rel, Remove: true, Why: "the aside copy is no longer needed"})
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, filepath.FromSlash(RotationDir))); err == nil {
		p.Changes = append(p.Changes, Change{Path: RotationDir, Remove: true, Why: "the rotation directory, when empty"})
	}
	st = cloneState(st)
	st.Done = PhaseDropOld
	c, err := r.state(st, "the rotation is over")
	if err != nil {
		return err
	}
	p.Changes = append(p.Changes, c)
	return nil
}

// tokenAge refuses drop-old of the service-account key until MinTokenAge
// after reissue: projected tokens the old key signed are valid until
// their kubelet refreshes them, at 80% of their lifetime.
func (r *Rotator) tokenAge(p *RotationPlan, st *RotationState) error {
	age := r.MinTokenAge
	if age == 0 {
		age = DefaultMinTokenAge
	}
	since := st.Reissued
	if since.IsZero() {
		since = st.Updated // written by reissue, which recorded no time of its own
	}
	allowed := since.Add(age)
	if !r.now().Before(allowed) {
		return nil
	}
	if !r.Force {
		return fmt.Errorf("drop-old of the service-account key is refused until %s (%s after reissue), when every token the old key signed has been refreshed; --force drops it now and fails those tokens",
			allowed.UTC().Format(time.RFC3339), age)
	}
	p.Warnings = append(p.Warnings, fmt.Sprintf("the old service-account key is dropped before %s (--min-token-age after reissue): tokens it signed that were not refreshed since are refused",
		allowed.UTC().Format(time.RFC3339)))
	return nil
}

// checkSigner makes sure the signer key (pki/ca.key, sa.key) is the new
// one before the old entry leaves its bundle: otherwise what it signs
// would verify against nothing.
func (r *Rotator) checkSigner(m *material) error {
	keyPEM, err := r.readFile(m.signer)
	if err != nil {
		return err
	}
	pub, _, err := publicDER(m.signer, keyPEM)
	if err != nil {
		return err
	}
	want := m.new
	if m.target != RotateSA {
		cert, err := x509.ParseCertificate(m.new)
		if err != nil {
			return err
		}
		want = cert.RawSubjectPublicKeyInfo
	}
	if !bytes.Equal(pub, want) {
		return fmt.Errorf("%s is not the key of the new %s recorded in %s; put the new key (%s) back before drop-old",
			filepath.Join(r.Dir, m.signer), m.label(), RotationStateFile, filepath.Join(r.Dir, m.asideKey))
	}
	return nil
}

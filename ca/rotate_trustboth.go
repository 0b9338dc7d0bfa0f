package ca

import (
	"github.com/kubegate/kubegate/internal/fsutil"
)

// planTrustBoth: mint (or, after a stopped run, reuse) the new material,
// record it, then make every bundle hold old and new.
func (r *Rotator) planTrustBoth(p *RotationPlan, st *RotationState) error {
	resuming := st.InProgress()
	next := &RotationState{CAs: p.CAs, Keys: map[string]RotationKeys{}}
	var ms []*material
	for _, target := range p.CAs {
		var m *material
		if resuming {
			var err error
			if m, err = r.load(target, st, true); err != nil {
				return err
			}
		} else {
			cur, alg, cn, err := r.current(target)
			if err != nil {
				return err
			}
			m = cur
			// Material a stopped first run left aside is replaced: nothing
			// trusts it, as bundles change only once the state is written.
			if err := r.mint(p, m, alg, cn); err != nil {
				return err
			}
			if err := r.change(p, m.asideOld, m.pemOf(m.old), fsutil.ModePublic, "a copy of the old "+m.label()+" until drop-old"); err != nil {
				return err
			}
		}
		m.oldFP, m.newFP = Fingerprint(m.old), Fingerprint(m.new)
		next.Keys[target] = RotationKeys{Old: m.oldFP, New: m.newFP}
		ms = append(ms, m)
	}
	if !resuming {
		c, err := r.state(next, "records the rotation: the old and new fingerprints")
		if err != nil {
			return err
		}
		p.Changes = append(p.Changes, c)
	}
	for _, m := range ms {
		if err := r.change(p, m.bundle, m.join(m.old, m.new), fsutil.ModePublic, "trusts the old and the new "+m.label()); err != nil {
			return err
		}
		if m.target == RotateCluster {
			if err := r.planKubeconfigs(p, m, kubeconfigTrust); err != nil {
				return err
			}
		}
	}
	next.Done = PhaseTrustBoth
	c, err := r.state(next, "trust-both done")
	if err != nil {
		return err
	}
	p.Changes = append(p.Changes, c)
	return nil
}

// mint makes the new CA (same CN, new key and serial) or the new sa key,
// and adds the writes that keep it aside.
func (r *Rotator) mint(p *RotationPlan, m *material, alg KeyAlgorithm, cn string) error {
	r.step(p.Phase, "minting the new %s", m.label())
	if m.target == RotateSA {
		_, keyPEM, err := GenerateKey(alg)
		if err != nil {
			return err
		}
		m.newKeyPEM = keyPEM
		if m.new, _, err = publicDER("new sa key", keyPEM); err != nil {
			return err
		}
	} else {
		a, keyPEM, err := CreateAuthority(m.caName, cn, alg, r.CAValidity)
		if err != nil {
			return err
		}
		a.Now = r.Now
		m.newCA, m.new, m.newKeyPEM = a, a.Cert.Raw, keyPEM
	}
	p.Changes = append(p.Changes,
		Change{Path: m.asideKey, Why: "the new " + m.label() + "'s key, kept aside until reissue", data: m.newKeyPEM, mode: fsutil.ModeKey},
		Change{Path: m.asideCert, Why: "the new " + m.label(), data: m.pemOf(m.new), mode: fsutil.ModePublic})
	return nil
}

package ca

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// Phase is one step of a CA rotation (docs/kubernetes-behaviour.md H.6).
type Phase string

// The rotation phases, in order.
const (
	// PhaseTrustBoth mints the new CA and makes every trust bundle hold
	// the old and the new one.
	PhaseTrustBoth Phase = "trust-both"
	// PhaseReissue makes the new CA the signer and re-signs every leaf
	// and kubeconfig client certificate the old one signed.
	PhaseReissue Phase = "reissue"
	// PhaseDropOld removes the old CA from every bundle.
	PhaseDropOld Phase = "drop-old"
)

// DefaultMinTokenAge is the least time between reissue and drop-old of
// the service-account key: the lifetime of the tokens kubelets request
// for projected volumes (1 h), which they refresh at 80% of it.
const DefaultMinTokenAge = time.Hour

// Phases lists the phases in the order they run.
var Phases = []Phase{PhaseTrustBoth, PhaseReissue, PhaseDropOld}

// ParsePhase returns the phase named s.
func ParsePhase(s string) (Phase, error) {
	for _, p := range Phases {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown phase %q (want trust-both, reissue or drop-old)", s)
}

// The authorities a rotation can replace.
const (
	RotateCluster    = "cluster"     // pki/ca.crt and ca.key
	RotateFrontProxy = "front-proxy" // pki/front-proxy-ca.crt and .key
	RotateSA         = "sa"          // pki/sa.key and sa.pub
)

// RotateTargets lists the authorities in the order a rotation handles them.
var RotateTargets = []string{RotateCluster, RotateFrontProxy, RotateSA}

// ParseRotateTargets turns --ca values (cluster, front-proxy, sa, all) into
// a sorted, de-duplicated list in RotateTargets order.
func ParseRotateTargets(values []string) ([]string, error) {
	set := map[string]bool{}
	for _, v := range values {
		switch v = strings.TrimSpace(v); v {
		case "all":
			for _, t := range RotateTargets {
				set[t] = true
			}
		case RotateCluster, RotateFrontProxy, RotateSA:
			set[v] = true
		default:
			return nil, fmt.Errorf("--ca %q: want cluster, front-proxy, sa or all", v)
		}
	}
	var out []string
	for _, t := range RotateTargets {
		if set[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// RotationStateFile is where a rotation records its progress, relative
// to DIR. RotationDir holds the new CAs and key until drop-old.
const (
	RotationStateFile = PKIDir + "/rotation.json"
	RotationDir       = PKIDir + "/rotation"
	// RotationLockFile exists while a phase runs (LockRotation).
	RotationLockFile = PKIDir + "/rotation.lock"
)

// RotationState is the content of RotationStateFile.
type RotationState struct {
	// CAs are the authorities being rotated, in RotateTargets order.
	CAs []string `json:"cas"`
	// Done is the last phase completed; "" when trust-both was started
	// but has not finished. drop-old means the rotation is over.
	Done Phase `json:"done"`
	// Keys holds, by authority, the SHA-256 fingerprints of the old and
	// the new CA certificate (of the public key for sa).
	Keys map[string]RotationKeys `json:"keys"`
	// Updated is when Done was last written.
	Updated time.Time `json:"updated"`
	// Reissued is when reissue finished: from then on only the new
	// service-account key signs tokens. drop-old of sa waits for the
	// tokens signed before it to be refreshed.
	Reissued time.Time `json:"reissued,omitzero"`
}

// RotationKeys are the fingerprints of one authority's old and new key.
type RotationKeys struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// InProgress reports whether a rotation has started and not finished.
func (s *RotationState) InProgress() bool { return s != nil && s.Done != PhaseDropOld }

// Next is the phase that runs next: trust-both when no rotation is in
// progress.
func (s *RotationState) Next() Phase {
	switch {
	case !s.InProgress():
		return PhaseTrustBoth
	case s.Done == "":
		return PhaseTrustBoth
	case s.Done == PhaseTrustBoth:
		return PhaseReissue
	default:
		return PhaseDropOld
	}
}

// ReadRotationState reads DIR/pki/rotation.json; nil when there is none.
func ReadRotationState(dir string) (*RotationState, error) {
	path := filepath.Join(dir, filepath.FromSlash(RotationStateFile))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s RotationState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The list must be exactly what the rotation wrote: a normalised one.
	if norm, err := ParseRotateTargets(s.CAs); err != nil || len(s.CAs) == 0 || !slices.Equal(norm, s.CAs) {
		return nil, fmt.Errorf("%s: cas %q must name cluster, front-proxy and sa, each at most once and in that order", path, s.CAs)
	}
	if s.Done != "" {
		if _, err := ParsePhase(string(s.Done)); err != nil {
			return nil, fmt.Errorf("%s: done: %w", path, err)
		}
	}
	for _, c := range s.CAs {
		if k := s.Keys[c]; k.Old == "" || k.New == "" {
			return nil, fmt.Errorf("%s: keys.%s: old and new fingerprints are required", path, c)
		}
	}
	return &s, nil
}

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

// Change is one file a rotation phase writes or removes.
type Change struct {
	Path   string // relative to DIR, with forward slashes
	Remove bool
	Why    string
	data   []byte
	mode   fs.FileMode
	// own is set when the file existed and the process may give it
	// back its owner: uid and gid are the old file's.
	own      bool
	uid, gid int
}

// RotationPlan is what one phase would do to a tree. Making it reads the
// tree and writes nothing.
type RotationPlan struct {
	Dir   string
	CAs   []string
	Phase Phase
	// Done is set when the phase has already run: Changes is empty and
	// applying the plan does nothing.
	Done bool
	// Before is the recorded state before the phase; nil for none.
	Before  *RotationState
	Changes []Change
	// Warnings name what the phase cannot see or check, one line each.
	Warnings []string
	// resigned holds the absolute paths of the files the plan re-signs.
	resigned map[string]bool
}

// Rotator plans and applies the phases of a CA rotation on the tree in
// Dir.
type Rotator struct {
	Dir string
	// Kubeconfigs edits DIR/*.conf. Required.
	Kubeconfigs KubeconfigEditor
	// CAValidity is the new CAs' lifetime; zero means DefaultCAValidity.
	// Re-signed leaves keep their own validity window.
	CAValidity time.Duration
	// MinTokenAge is how long after reissue drop-old of the
	// service-account key is refused, so that every token the old key
	// signed was refreshed; zero means DefaultMinTokenAge. Force drops
	// it earlier.
	MinTokenAge time.Duration
	Force       bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// WriteFile writes one file atomically with its mode, replacing what
	// was there; nil means fsutil.WriteFile. Remove deletes one file; nil
	// means os.Remove. Tests replace them to stop a phase midway.
	WriteFile func(path string, data []byte, mode fs.FileMode) error
	Remove    func(path string) error
}

func (r *Rotator) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

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

// Plan works out what phase would change for the authorities cas (nil:
// those of the rotation in progress, or all three to start one). It
// refuses phases out of order, and a rotation of other authorities while
// one is in progress, with an error naming the next command.
func (r *Rotator) Plan(cas []string, phase Phase) (*RotationPlan, error) {
	if r.Kubeconfigs == nil {
		return nil, errors.New("rotation: no kubeconfig editor")
	}
	// pki/ and pki/rotation/ hold the state, the bundles and the keys
	// every phase reads and writes.
	if err := fsutil.NoLinkedDirs(r.Dir, filepath.FromSlash(RotationDir)); err != nil {
		return nil, err
	}
	st, err := ReadRotationState(r.Dir)
	if err != nil {
		return nil, err
	}
	if phase == "" {
		phase = st.Next()
	}
	// Running the phase just done again, with the same authorities or
	// none named, changes nothing.
	if st != nil && phase == st.Done && (cas == nil || slices.Equal(cas, st.CAs)) {
		return &RotationPlan{Dir: r.Dir, CAs: st.CAs, Phase: phase, Before: st, Done: true}, nil
	}
	if st.InProgress() {
		if cas == nil {
			cas = st.CAs
		} else if !slices.Equal(cas, st.CAs) {
			return nil, fmt.Errorf("a rotation of %s is in progress (%s); finish it first: kubegate ca rotate --dir %s",
				strings.Join(st.CAs, ", "), doneText(st), r.Dir)
		}
	} else if cas == nil {
		cas = slices.Clone(RotateTargets)
	}
	if len(cas) == 0 {
		return nil, errors.New("--ca: name at least one of cluster, front-proxy, sa or all")
	}
	p := &RotationPlan{Dir: r.Dir, CAs: cas, Phase: phase, Before: st}
	next := st.Next()
	switch {
	case phase == next:
	case !st.InProgress():
		return nil, fmt.Errorf("phase %s cannot run: no CA rotation is in progress; start one with kubegate ca rotate --dir %s --phase trust-both", phase, r.Dir)
	default:
		return nil, fmt.Errorf("phase %s cannot run now: the rotation of %s is at %s, so the next phase is %s (kubegate ca rotate --dir %s --phase %s)",
			phase, strings.Join(cas, ", "), doneText(st), next, r.Dir, next)
	}
	switch phase {
	case PhaseTrustBoth:
		err = r.planTrustBoth(p, st)
	case PhaseReissue:
		err = r.planReissue(p, st)
	default:
		err = r.planDropOld(p, st)
	}
	if err != nil {
		return nil, err
	}
	if err := r.settle(p); err != nil {
		return nil, err
	}
	return p, nil
}

// settle checks every file the plan writes and carries its mode and
// owner over: a file is replaced by a rename, so a symbolic link would
// become a regular file and leave its target as it was (refused), and a
// new file would get the default mode and the running user. The new file
// gets the stricter of its old mode and the default one, and, when the
// process may (as root), the old owner. No file is written or removed
// through a linked directory (fsutil.NoLinkedDirs).
func (r *Rotator) settle(p *RotationPlan) error {
	if err := noLinkedDirs(r.Dir, p.Changes); err != nil {
		return err
	}
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.Remove {
			continue
		}
		path := filepath.Join(r.Dir, filepath.FromSlash(c.Path))
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			return fmt.Errorf("%s is a symbolic link (to %s); a rotation replaces files and would leave its target unchanged: make it a regular file, then run the phase again", path, target)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		c.mode &= fi.Mode().Perm()
		if os.Geteuid() == 0 {
			c.uid, c.gid, c.own = fileOwner(fi)
		}
	}
	return nil
}

// noLinkedDirs refuses, before anything is written, a change whose
// directory inside dir is reached through a symbolic link.
func noLinkedDirs(dir string, changes []Change) error {
	for _, c := range changes {
		if err := fsutil.NoLinkedDirs(dir, filepath.Dir(filepath.FromSlash(c.Path))); err != nil {
			return err
		}
	}
	return nil
}

// RotationStatus says, in one line, where a rotation in progress stands
// and what to run next.
func RotationStatus(dir string, st *RotationState) string {
	return fmt.Sprintf("the rotation of %s stopped with %s; next: kubegate ca rotate --dir %s --phase %s",
		strings.Join(st.CAs, ", "), doneText(st), dir, st.Next())
}

func doneText(st *RotationState) string {
	if st.Done == "" {
		return "trust-both started, not finished"
	}
	return string(st.Done) + " done"
}

// Apply makes the plan's changes in order, each file atomically. A phase
// stopped midway is finished by running it again.
func (r *Rotator) Apply(p *RotationPlan) error {
	write := r.WriteFile
	if write == nil {
		write = func(path string, data []byte, mode fs.FileMode) error {
			return fsutil.WriteFile(path, data, mode, true)
		}
	}
	remove := r.Remove
	if remove == nil {
		remove = os.Remove
	}
	// Checked again: a directory may have been replaced by a link since
	// the plan was made.
	if err := noLinkedDirs(p.Dir, p.Changes); err != nil {
		return err
	}
	for _, c := range p.Changes {
		path := filepath.Join(p.Dir, filepath.FromSlash(c.Path))
		if c.Remove {
			err := remove(path)
			if c.Path == RotationDir && errors.Is(err, syscall.ENOTEMPTY) {
				continue // files of someone else's stay, and so does their directory
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", path, err)
			}
			continue
		}
		if err := write(path, c.data, c.mode); err != nil {
			return err
		}
		if c.own {
			if err := os.Chown(path, c.uid, c.gid); err != nil {
				return err
			}
		}
	}
	return nil
}

// state returns a change writing the rotation state.
func (r *Rotator) state(s *RotationState, why string) (Change, error) {
	s.Updated = r.now().UTC().Truncate(time.Second)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return Change{}, err
	}
	return Change{Path: RotationStateFile, Why: why, data: append(data, '\n'), mode: fsutil.ModePublic}, nil
}

// readFile reads a file of the tree by its slash path.
func (r *Rotator) readFile(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(rel)))
}

// change adds a write of data to rel unless rel already holds exactly
// data.
func (r *Rotator) change(p *RotationPlan, rel string, data []byte, mode fs.FileMode, why string) error {
	cur, err := r.readFile(rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err == nil && bytes.Equal(cur, data) {
		return nil
	}
	p.Changes = append(p.Changes, Change{Path: rel, Why: why, data: data, mode: mode})
	return nil
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

// What planKubeconfigs does to each kubeconfig.
type kubeconfigStep int

const (
	kubeconfigTrust  kubeconfigStep = iota // add the new CA to the CA data
	kubeconfigResign                       // re-sign client certs the old CA signed
	kubeconfigDrop                         // remove the old CA from the CA data
)

// expired reports whether cert is no longer valid at now. A rotation
// leaves expired certificates alone: nothing accepts them either way.
func expired(cert *x509.Certificate, now time.Time) bool { return now.After(cert.NotAfter) }

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
	isOld := func(d []byte) bool { return Fingerprint(d) == m.oldFP }
	isNew := func(d []byte) bool { return Fingerprint(d) == m.newFP }
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel := filepath.Base(path)
		clusters, users, err := r.Kubeconfigs.Certificates(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		newClusters, newUsers := map[string][]byte{}, map[string][]byte{}
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
				newClusters[name] = want
			}
		}
		for _, name := range slices.Sorted(maps.Keys(users)) {
			if step == kubeconfigTrust {
				break
			}
			cert, err := ParseCertPEM(rel+" user "+name, users[name])
			if err != nil {
				return err
			}
			if !signedBy(cert, m.oldCert) || expired(cert, now) {
				continue
			}
			if step == kubeconfigDrop {
				return fmt.Errorf("%s user %s is still signed by the old %s; run kubegate ca rotate --dir %s --phase reissue again",
					path, name, m.label(), r.Dir)
			}
			iss, err := m.newCA.resign(cert)
			if err != nil {
				return fmt.Errorf("%s user %s: %w", path, name, err)
			}
			newUsers[name] = iss.CertPEM
		}
		if step != kubeconfigTrust {
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

// signedBy reports whether ca signed cert (ca nil: no).
func signedBy(cert, ca *x509.Certificate) bool {
	return ca != nil && cert.CheckSignatureFrom(ca) == nil
}

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
		if !isPEM && !strings.HasSuffix(path, ".crt") {
			return nil
		}
		l := leaf{}
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() {
				return nil // a dangling link, or one to a directory
			}
			if l.link, err = filepath.EvalSymlinks(path); err != nil {
				return err
			}
			inside, _ := filepath.Rel(realRoot, l.link)
			l.linkWalked = filepath.IsLocal(inside) && !strings.HasPrefix(l.link, realAside+string(filepath.Separator)) &&
				(strings.HasSuffix(l.link, ".crt") || strings.HasSuffix(l.link, ".pem"))
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

func cloneState(s *RotationState) *RotationState {
	c := *s
	c.CAs = slices.Clone(s.CAs)
	c.Keys = map[string]RotationKeys{}
	for k, v := range s.Keys {
		c.Keys[k] = v
	}
	return &c
}

// Files lists the paths the plan writes or removes, in order, each once;
// the rotation state is left out.
func (p *RotationPlan) Files() []string {
	var out []string
	for _, c := range p.Changes {
		if c.Path != RotationStateFile && !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}

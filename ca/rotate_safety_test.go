package ca_test

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/kubeconfig"
)

// issueAt issues a client certificate for cn from a with the clock at
// now and the given lifetime.
func issueAt(t *testing.T, a *ca.Authority, cn string, now time.Time, validity time.Duration) *ca.Issued {
	t.Helper()
	clock := a.Now
	a.Now = func() time.Time { return now }
	defer func() { a.Now = clock }()
	iss, err := a.Issue(&ca.Request{CN: cn, Profile: ca.ProfileClient, Validity: validity})
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

func replaceFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := fsutil.WriteFile(path, data, mode, true); err != nil {
		t.Fatal(err)
	}
}

func plan(t *testing.T, r *ca.Rotator, phase ca.Phase) *ca.RotationPlan {
	t.Helper()
	p, err := r.Plan(nil, phase)
	if err != nil {
		t.Fatalf("plan %s: %v", phase, err)
	}
	return p
}

func apply(t *testing.T, r *ca.Rotator, phase ca.Phase) *ca.RotationPlan {
	t.Helper()
	p := plan(t, r, phase)
	if err := r.Apply(p); err != nil {
		t.Fatalf("apply %s: %v", phase, err)
	}
	return p
}

func dropOldRefused(t *testing.T, r *ca.Rotator, want string) {
	t.Helper()
	_, err := r.Plan(nil, ca.PhaseDropOld)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("drop-old: %v, want one line with %q", err, want)
	}
}

func hasWarning(p *ca.RotationPlan, want string) bool {
	return slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, want) })
}

// TestRotateKeepsLeafValidity_H6: reissue gives a re-signed certificate
// the validity window it had, and leaves an expired one alone, signed by
// the old CA, which drop-old then ignores.
func TestRotateKeepsLeafValidity_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	pki := func(n string) string { return filepath.Join(dir, "pki", n) }
	old := loadCA(t, dir, "ca")
	now := time.Now()
	short := issueAt(t, old, "break-glass", now, time.Hour)
	gone := issueAt(t, old, "gone", now.Add(-48*time.Hour), time.Hour)
	writeFile(t, pki("users/break-glass.crt"), short.CertPEM, fsutil.ModePublic)
	writeFile(t, pki("users/gone.crt"), gone.CertPEM, fsutil.ModePublic)
	// An expired client certificate embedded in a kubeconfig.
	cfg, err := kubeconfig.Build(kubeconfig.Options{Server: "https://127.0.0.1:6443", CAPEM: old.CertPEM, UserName: "gone",
		CertPEM: gone.CertPEM, KeyPEM: gone.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.Write(filepath.Join(dir, "gone.conf"), cfg, false); err != nil {
		t.Fatal(err)
	}
	apiserver := readCert(t, pki("apiserver.crt"))

	r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}}
	apply(t, r, ca.PhaseTrustBoth)
	p := apply(t, r, ca.PhaseReissue)
	if slices.Contains(p.Files(), "pki/users/gone.crt") || slices.Contains(p.Files(), "gone.conf") {
		t.Errorf("reissue re-signed an expired certificate: %v", p.Files())
	}
	newCA := loadCA(t, dir, "ca").Cert
	for name, want := range map[string]*x509.Certificate{"users/break-glass.crt": short.Cert, "apiserver.crt": apiserver} {
		c := readCert(t, pki(name))
		if c.CheckSignatureFrom(newCA) != nil {
			t.Errorf("%s is not re-signed by the new CA", name)
		}
		if !c.NotBefore.Equal(want.NotBefore) || !c.NotAfter.Equal(want.NotAfter) {
			t.Errorf("re-signed %s is valid %s to %s, want its old window %s to %s", name, c.NotBefore, c.NotAfter, want.NotBefore, want.NotAfter)
		}
	}
	if c := readCert(t, pki("users/gone.crt")); !c.Equal(gone.Cert) {
		t.Error("reissue changed the expired pki/users/gone.crt")
	}
	if c := embeddedCert(t, dir, "gone.conf"); !c.Equal(gone.Cert) {
		t.Error("reissue changed the expired client certificate of gone.conf")
	}
	r.Force = true
	apply(t, r, ca.PhaseDropOld)
}

// TestRotateDropOldSeesEveryLeaf_H6: .pem files, kubeconfigs that name
// their client certificate by path, symbolic links and intermediate CAs
// signed by the old CA.
func TestRotateDropOldSeesEveryLeaf_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	pki := func(n string) string { return filepath.Join(dir, "pki", n) }
	old := loadCA(t, dir, "ca")
	now := time.Now()

	// A .pem holding a key and then the certificate.
	pemUser := issueAt(t, old, "pem-user", now, 24*time.Hour)
	writeFile(t, pki("users/pem-user.pem"), append(slices.Clone(pemUser.KeyPEM), pemUser.CertPEM...), fsutil.ModeKey)
	writeFile(t, pki("users/pem-user-key.pem"), pemUser.KeyPEM, fsutil.ModeKey)
	// A kubeconfig naming its client certificate by a path outside pki/.
	carol := issueAt(t, old, "carol", now, 24*time.Hour)
	writeFile(t, filepath.Join(dir, "ext/carol.crt"), carol.CertPEM, fsutil.ModePublic)
	writeFile(t, filepath.Join(dir, "ext/carol.key"), carol.KeyPEM, fsutil.ModeKey)
	conf := "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443\n" +
		"users:\n- name: carol\n  user:\n    client-certificate: ext/carol.crt\n    client-key: ext/carol.key\n" +
		"contexts:\n- name: c\n  context:\n    cluster: k\n    user: carol\ncurrent-context: c\n"
	writeFile(t, filepath.Join(dir, "carol.conf"), []byte(conf), fsutil.ModeKey)
	// A link to a certificate of the tree, which is re-signed itself.
	if err := os.Symlink("jane.crt", pki("users/current.crt")); err != nil {
		t.Fatal(err)
	}
	// An intermediate CA the old CA signed.
	sub, _, err := ca.CreateAuthority("sub", "sub-ca", ca.ECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "sub-ca"}, NotBefore: now.Add(-time.Minute),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, old.Cert, sub.Cert.PublicKey, old.Key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, pki("users/sub-ca.crt"), ca.EncodeCert(der), fsutil.ModePublic)

	r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, Force: true}
	apply(t, r, ca.PhaseTrustBoth)
	p := apply(t, r, ca.PhaseReissue)
	newCA := loadCA(t, dir, "ca")
	data, err := os.ReadFile(pki("users/pem-user.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, pemUser.KeyPEM) {
		t.Error("reissue lost the key at the head of pki/users/pem-user.pem")
	}
	blocks := pemBlocks(data)
	if c, err := x509.ParseCertificate(blocks[len(blocks)-1]); err != nil || len(blocks) != 2 ||
		c.CheckSignatureFrom(newCA.Cert) != nil || !bytes.Equal(c.RawSubject, pemUser.Cert.RawSubject) {
		t.Error("reissue did not re-sign the certificate of pki/users/pem-user.pem")
	}
	if fi, err := os.Stat(pki("users/pem-user.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("pki/users/pem-user.pem, which holds a key, is no longer 0600 (%v)", err)
	}
	if fi, err := os.Lstat(pki("users/current.crt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("reissue replaced the link pki/users/current.crt (%v)", err)
	}
	if c := readCert(t, pki("users/current.crt")); c.CheckSignatureFrom(newCA.Cert) != nil {
		t.Error("pki/users/current.crt does not lead to a certificate of the new CA")
	}
	for _, want := range []string{
		"carol.conf user carol: its client-certificate " + filepath.Join(dir, "ext/carol.crt") + " is signed by the old cluster CA and is not re-signed",
		pki("users/sub-ca.crt") + " is an intermediate CA the old cluster CA signed",
		"certificates of the old cluster CA outside " + dir + " (kubelets' own",
	} {
		if !hasWarning(p, want) {
			t.Errorf("reissue warnings %q, want one with %q", p.Warnings, want)
		}
	}

	dropOldRefused(t, r, pki("users/sub-ca.crt")+" is an intermediate CA the old cluster CA signed; re-issue it with the new one, or remove it, before drop-old")
	if err := os.Remove(pki("users/sub-ca.crt")); err != nil {
		t.Fatal(err)
	}
	dropOldRefused(t, r, "carol.conf user carol: its client-certificate "+filepath.Join(dir, "ext/carol.crt")+" is still signed by the old cluster CA")
	replaceFile(t, filepath.Join(dir, "ext/carol.crt"), issueAt(t, newCA, "carol", now, time.Hour).CertPEM, fsutil.ModePublic)
	// A .pem certificate of the old CA written after reissue.
	late := issueAt(t, old, "late", now, time.Hour)
	writeFile(t, pki("users/late.pem"), late.CertPEM, fsutil.ModePublic)
	dropOldRefused(t, r, pki("users/late.pem")+" is still signed by the old cluster CA")
	// A link out of pki/ to a certificate of the old CA.
	if err := os.Rename(pki("users/late.pem"), filepath.Join(dir, "ext/late.pem")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "ext/late.pem"), pki("users/late.crt")); err != nil {
		t.Fatal(err)
	}
	dropOldRefused(t, r, pki("users/late.crt")+" (a symbolic link to "+filepath.Join(dir, "ext/late.pem")+") is still signed by the old cluster CA")
	if err := os.Remove(pki("users/late.crt")); err != nil {
		t.Fatal(err)
	}
	p = apply(t, r, ca.PhaseDropOld)
	if !hasWarning(p, "(kubelets' own") {
		t.Errorf("drop-old warnings %q, want the one about certificates outside the tree", p.Warnings)
	}
}

// TestRotateRefusesToWriteThroughALink_H6: reissue does not replace a
// link whose target is outside pki/, nor any file it writes that is a
// link.
func TestRotateRefusesToWriteThroughALink_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	pki := func(n string) string { return filepath.Join(dir, "pki", n) }
	outside := filepath.Join(t.TempDir(), "apiserver.crt")
	data, err := os.ReadFile(pki("apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, outside, data, fsutil.ModePublic)
	if err := os.Remove(pki("apiserver.crt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, pki("apiserver.crt")); err != nil {
		t.Fatal(err)
	}
	r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}}
	apply(t, r, ca.PhaseTrustBoth)
	_, err = r.Plan(nil, ca.PhaseReissue)
	want := pki("apiserver.crt") + " is a symbolic link to " + outside + ", outside " + filepath.Join(dir, "pki") + ", signed by the old cluster CA"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("reissue through a link: %v, want %q", err, want)
	}
	if fi, err := os.Lstat(pki("apiserver.crt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("pki/apiserver.crt is no longer a link (%v)", err)
	}

	// A bundle that is a link is refused before anything is written.
	dir = rotationTree(t)
	if err := os.Rename(filepath.Join(dir, "pki/sa.pub"), filepath.Join(dir, "pki/sa-1.pub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sa-1.pub", filepath.Join(dir, "pki/sa.pub")); err != nil {
		t.Fatal(err)
	}
	r = &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}}
	_, err = r.Plan([]string{ca.RotateSA}, ca.PhaseTrustBoth)
	if want := filepath.Join(dir, "pki/sa.pub") + " is a symbolic link (to sa-1.pub)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("trust-both with a linked bundle: %v, want %q", err, want)
	}
}

// TestRotateDropOldOfSAWaitsForTokens_H6: drop-old of the
// service-account key is refused until MinTokenAge after reissue, unless
// Force; and drop-old is refused while a signer key is not the new one.
func TestRotateDropOldOfSAWaitsForTokens_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	start := time.Now().UTC().Truncate(time.Second)
	now := start
	r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, Now: func() time.Time { return now }}
	p, err := r.Plan([]string{ca.RotateCluster, ca.RotateSA}, ca.PhaseTrustBoth)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(p); err != nil {
		t.Fatal(err)
	}
	now = start.Add(time.Minute)
	p = apply(t, r, ca.PhaseReissue)
	if !hasWarning(p, "Secrets of type kubernetes.io/service-account-token") {
		t.Errorf("reissue warnings %q, want the one about legacy tokens", p.Warnings)
	}
	st, err := ca.ReadRotationState(dir)
	if err != nil || !st.Reissued.Equal(now) {
		t.Fatalf("state after reissue: %+v (%v), want reissued %s", st, err, now)
	}

	now = start.Add(31 * time.Minute)
	dropOldRefused(t, r, "drop-old of the service-account key is refused until "+start.Add(61*time.Minute).Format(time.RFC3339)+" (1h0m0s after reissue)")
	r.MinTokenAge = 10 * time.Minute
	if _, err := r.Plan(nil, ca.PhaseDropOld); err != nil {
		t.Errorf("drop-old 30m after reissue with a 10m MinTokenAge: %v", err)
	}
	r.MinTokenAge = 0
	r.Force = true
	if p := plan(t, r, ca.PhaseDropOld); !hasWarning(p, "the old service-account key is dropped before") {
		t.Errorf("drop-old with Force: warnings %q, want one saying tokens are refused", p.Warnings)
	}
	r.Force = false

	// The signer keys must be the new ones.
	pki := func(n string) string { return filepath.Join(dir, "pki", n) }
	now = start.Add(2 * time.Hour)
	for _, key := range []string{"sa.key", "ca.key"} {
		data, err := os.ReadFile(pki(key))
		if err != nil {
			t.Fatal(err)
		}
		other, err := os.ReadFile(pki("front-proxy-ca.key"))
		if err != nil {
			t.Fatal(err)
		}
		replaceFile(t, pki(key), other, fsutil.ModeKey)
		dropOldRefused(t, r, pki(key)+" is not the key of the new ")
		replaceFile(t, pki(key), data, fsutil.ModeKey)
	}
	p = apply(t, r, ca.PhaseDropOld)
	if hasWarning(p, "dropped before") {
		t.Errorf("drop-old 2h after reissue warns %q", p.Warnings)
	}
}

// TestRotationStateNeedsNormalisedCAs_H6: rotation.json lists the
// authorities as a rotation writes them.
func TestRotationStateNeedsNormalisedCAs_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	rotate(t, dir, nil, ca.PhaseTrustBoth)
	path := filepath.Join(dir, "pki", "rotation.json")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	list := `"cluster",
    "front-proxy",
    "sa"`
	if !bytes.Contains(good, []byte(list)) {
		t.Fatalf("rotation.json does not list the CAs as expected:\n%s", good)
	}
	for _, cas := range []string{`"all"`, `"sa", "cluster", "front-proxy"`, `"cluster", "cluster", "front-proxy", "sa"`,
		`" cluster", "front-proxy", "sa"`, `"cluster", "front-proxy", "sa", "etcd"`, ``} {
		replaceFile(t, path, bytes.Replace(good, []byte(list), []byte(cas), 1), fsutil.ModePublic)
		_, err := ca.ReadRotationState(dir)
		if want := path + ": cas "; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "each at most once and in that order") {
			t.Errorf("cas [%s]: %v, want an error with %q", cas, err, want)
		}
	}
}

// TestRotateKeepsModeAndOwner_H6: a rewritten file keeps the stricter of
// its mode and the default, and (as root) its owner.
func TestRotateKeepsModeAndOwner_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	pki := func(n string) string { return filepath.Join(dir, "pki", n) }
	for name, mode := range map[string]os.FileMode{"ca.crt": 0o640, "apiserver.crt": 0o600, "users/jane.crt": 0o664} {
		if err := os.Chmod(pki(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	root := os.Geteuid() == 0
	if root {
		if err := os.Chown(pki("apiserver.crt"), 1234, 2345); err != nil {
			t.Fatal(err)
		}
	}
	r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, Force: true}
	apply(t, r, ca.PhaseTrustBoth)
	apply(t, r, ca.PhaseReissue)
	for name, want := range map[string]os.FileMode{"ca.crt": 0o640, "apiserver.crt": 0o600, "users/jane.crt": 0o644} {
		fi, err := os.Stat(pki(name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("pki/%s has mode %v after reissue, want %v", name, got, want)
		}
	}
	if c := readCert(t, pki("apiserver.crt")); c.CheckSignatureFrom(loadCA(t, dir, "ca").Cert) != nil {
		t.Fatal("pki/apiserver.crt was not re-signed")
	}
	if root {
		if uid, gid := owner(t, pki("apiserver.crt")); uid != 1234 || gid != 2345 {
			t.Errorf("pki/apiserver.crt is owned by %d:%d after reissue, want 1234:2345", uid, gid)
		}
	}
}

// linkDir makes DIR/rel a symbolic link to a world-writable directory
// elsewhere, holding what DIR/rel held (nothing when it did not exist),
// and returns that directory.
func linkDir(t *testing.T, dir, rel string) string {
	t.Helper()
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.Rename(path, elsewhere); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(elsewhere, 0o700); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(elsewhere, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Fatal(err)
	}
	return elsewhere
}

// refusedLink fails t unless err is one line naming DIR/rel as a link to
// target.
func refusedLink(t *testing.T, what string, err error, dir, rel, target string) {
	t.Helper()
	want := filepath.Join(dir, filepath.FromSlash(rel)) + " is a symbolic link (to " + target + "); kubegate reads and writes key material only in directories inside " +
		dir + ", not through links: replace the link with a directory"
	if err == nil || err.Error() != want {
		t.Errorf("%s: %v, want %q", what, err, want)
	}
}

// sameTree fails t unless the files under dir (links not followed) are
// those of before.
func sameTree(t *testing.T, what, dir string, before map[string][]byte) {
	t.Helper()
	after := snapshot(t, dir)
	for path, data := range after {
		if old, ok := before[path]; !ok {
			t.Errorf("%s wrote %s", what, path)
		} else if !bytes.Equal(old, data) {
			t.Errorf("%s changed %s", what, path)
		}
	}
	for path := range before {
		if _, ok := after[path]; !ok {
			t.Errorf("%s removed %s", what, path)
		}
	}
}

// TestRotateRefusesLinkedDirectories_H6: a directory inside DIR on the
// way to what a phase reads or writes (pki/, pki/rotation/, a directory
// of certificates under pki/) that is a symbolic link stops the phase
// with one line naming it, before anything is written through it or in
// the tree. DIR itself may be a link.
func TestRotateRefusesLinkedDirectories_H6(t *testing.T) {
	t.Parallel()
	// plan plans phase and, if the plan is made, applies it, so that a
	// phase that should have been refused shows what it wrote.
	run := func(r *ca.Rotator, phase ca.Phase) error {
		p, err := r.Plan(nil, phase)
		if err != nil {
			return err
		}
		if err := r.Apply(p); err != nil {
			return err
		}
		return errors.New("no error: the phase ran")
	}
	for _, tt := range []struct {
		name, rel string
		before    []ca.Phase // phases run before the link is made
		phase     ca.Phase
	}{
		{"pki/rotation before trust-both", ca.RotationDir, nil, ca.PhaseTrustBoth},
		{"pki/rotation before reissue", ca.RotationDir, []ca.Phase{ca.PhaseTrustBoth}, ca.PhaseReissue},
		{"pki/rotation before drop-old", ca.RotationDir, []ca.Phase{ca.PhaseTrustBoth, ca.PhaseReissue}, ca.PhaseDropOld},
		{"pki before trust-both", ca.PKIDir, nil, ca.PhaseTrustBoth},
		{"pki before reissue", ca.PKIDir, []ca.Phase{ca.PhaseTrustBoth}, ca.PhaseReissue},
		{"pki/users before reissue", "pki/users", []ca.Phase{ca.PhaseTrustBoth}, ca.PhaseReissue},
		{"pki/etcd before drop-old", "pki/etcd", []ca.Phase{ca.PhaseTrustBoth, ca.PhaseReissue}, ca.PhaseDropOld},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := rotationTree(t)
			for _, p := range tt.before {
				rotate(t, dir, nil, p)
			}
			elsewhere := linkDir(t, dir, tt.rel)
			tree, there := snapshot(t, dir), snapshot(t, elsewhere)
			r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, Force: true}
			refusedLink(t, string(tt.phase), run(r, tt.phase), dir, tt.rel, elsewhere)
			unlock, err := ca.LockRotation(dir)
			if tt.rel == ca.PKIDir {
				refusedLink(t, "the lock", err, dir, tt.rel, elsewhere)
			} else if err != nil {
				t.Errorf("the lock: %v", err)
			}
			if err == nil {
				unlock()
			}
			sameTree(t, string(tt.phase)+" in "+dir, dir, tree)
			sameTree(t, string(tt.phase)+" through the link", elsewhere, there)
		})
	}

	// DIR, the user's choice, may be a link.
	dir := rotationTree(t)
	link := filepath.Join(t.TempDir(), "cluster")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	rotate(t, link, nil, ca.PhaseTrustBoth)
}

// TestInitRefusesLinkedDirectories_H6: pki init (and pki plan, which
// makes the same plan) and the writes of cert renew refuse a linked
// pki/ or pki/etcd/ with one line naming it, and write nothing.
func TestInitRefusesLinkedDirectories_H6(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{"pki", "pki/etcd"} {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			dir := rotationTree(t)
			// A fresh tree's files go where the link leads.
			for _, f := range []string{"pki/etcd/server.crt", "pki/etcd/server.key", "pki/ca.crt", "pki/ca.key"} {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			elsewhere := linkDir(t, dir, rel)
			tree, there := snapshot(t, dir), snapshot(t, elsewhere)
			p, err := ca.NewPlan(dir, ca.Spec{Nodes: []string{"n1"}}, true)
			if err == nil {
				var out *ca.Output
				out, err = p.Build()
				if err == nil {
					err = ca.WriteFiles(dir, out.Files)
				}
				if err == nil {
					err = errors.New("no error: pki init wrote its files")
				}
			}
			refusedLink(t, "pki init", err, dir, rel, elsewhere)
			// cert renew writes a leaf's key and certificate with WriteFiles.
			err = ca.WriteFiles(dir, []ca.File{{Path: "pki/etcd/server.key", Data: []byte("key"), Mode: fsutil.ModeKey, Overwrite: true}})
			refusedLink(t, "WriteFiles", err, dir, rel, elsewhere)
			sameTree(t, "pki init in "+dir, dir, tree)
			sameTree(t, "pki init through the link", elsewhere, there)
		})
	}
}

// cert renew names a linked pki/ instead of reporting that it holds no
// such certificate (H.6).
func TestRenewRefusesALinkedPKIDirectory_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	elsewhere := linkDir(t, dir, "pki")
	there := snapshot(t, elsewhere)
	_, err := ca.PlanRenew(dir, "apiserver", nil, time.Hour, time.Now)
	refusedLink(t, "cert renew", err, dir, "pki", elsewhere)
	sameTree(t, "cert renew through the link", elsewhere, there)
}

// TestScanRefusesLinkedSubdirectories_H6: a directory under pki/ that is
// a symbolic link (pki/etcd/, pki/users/) is named by everything that
// scans the tree (cert renew, cert check, cert check-expiration), rather
// than left out: cert renew all would renew every certificate but those
// behind the link, cert renew etcd/server would say there is no such
// certificate, and an expiry check would pass without looking at them.
func TestScanRefusesLinkedSubdirectories_H6(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{"pki/etcd", "pki/users"} {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			dir := rotationTree(t)
			elsewhere := linkDir(t, dir, rel)
			tree, there := snapshot(t, dir), snapshot(t, elsewhere)
			_, err := ca.Scan(dir, nil)
			refusedLink(t, "scan", err, dir, rel, elsewhere)
			_, err = ca.Check(dir, nil, ca.CheckOptions{})
			refusedLink(t, "cert check", err, dir, rel, elsewhere)
			for _, target := range []string{"all", "etcd/server", "apiserver"} {
				_, err = ca.PlanRenew(dir, target, nil, time.Hour, time.Now)
				refusedLink(t, "cert renew "+target, err, dir, rel, elsewhere)
			}
			sameTree(t, "the scans in "+dir, dir, tree)
			sameTree(t, "the scans through the link", elsewhere, there)
		})
	}
}

package ca_test

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/kubeconfig"
)

// rotationTree writes what pki init writes (with a node), a user
// certificate under pki/users, and a kubeconfig of another cluster,
// whose CA a rotation must leave alone.
func rotationTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cluster")
	plan, err := ca.NewPlan(dir, ca.Spec{Nodes: []string{"n1"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := plan.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(dir, out.Files); err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.WriteCredentials(dir, "kubernetes", "https://127.0.0.1:6443", out.Credentials); err != nil {
		t.Fatal(err)
	}
	a := loadCA(t, dir, "ca")
	iss, err := a.Issue(&ca.Request{CN: "jane", Orgs: []string{"devs"}, Profile: ca.ProfileClient})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "pki/users/jane.crt"), iss.CertPEM, fsutil.ModePublic)
	writeFile(t, filepath.Join(dir, "pki/users/jane.key"), iss.KeyPEM, fsutil.ModeKey)

	other, _, err := ca.CreateAuthority("other", "other-ca", ca.ECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kubeconfig.Build(kubeconfig.Options{ClusterName: "other", Server: "https://other:6443", CAPEM: other.CertPEM, UserName: "tok", Token: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.Write(filepath.Join(dir, "other.conf"), cfg, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path string, data []byte, mode fs.FileMode) {
	t.Helper()
	if err := fsutil.WriteFile(path, data, mode, false); err != nil {
		t.Fatal(err)
	}
}

func loadCA(t *testing.T, dir, name string) *ca.Authority {
	t.Helper()
	base := filepath.Join(dir, "pki", name)
	a, err := ca.LoadAuthority(name, base+".crt", base+".key")
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return a
}

// pemBlocks returns the DER of every PEM block in data.
func pemBlocks(data []byte) [][]byte {
	var out [][]byte
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out
		}
		out = append(out, b.Bytes)
	}
}

// fingerprints lists the fingerprint of every PEM block in the file.
func fingerprints(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range pemBlocks(data) {
		out = append(out, ca.Fingerprint(d))
	}
	return out
}

func poolOf(t *testing.T, data []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		t.Fatal("no certificates in bundle")
	}
	return p
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.ParseCertPEM(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bundleFor is the trust file a leaf of the tree is verified with.
func bundleFor(rel string) string {
	switch {
	case rel == "pki/front-proxy-client.crt":
		return "pki/front-proxy-ca.crt"
	case strings.HasPrefix(rel, "pki/etcd/") || rel == "pki/apiserver-etcd-client.crt":
		return "pki/etcd/ca.crt"
	}
	return "pki/ca.crt"
}

// checkReaders asserts what every reader of the tree needs, at any moment
// of a rotation: each leaf verifies against the bundle its readers load;
// each kubeconfig parses, its client certificate verifies against
// pki/ca.crt, and its CA data trusts the serving certificate; sa.key's
// public key is in sa.pub; keys and kubeconfigs are 0600.
func checkReaders(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if (strings.HasSuffix(rel, ".key") || strings.HasSuffix(rel, ".conf")) && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", rel, fi.Mode().Perm())
		}
		if !strings.HasSuffix(rel, ".crt") || strings.HasPrefix(rel, ca.RotationDir+"/") {
			return nil
		}
		c := readCert(t, path)
		if c.IsCA {
			return nil
		}
		bundle, _ := os.ReadFile(filepath.Join(dir, bundleFor(rel)))
		if _, err := c.Verify(x509.VerifyOptions{Roots: poolOf(t, bundle), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s does not verify against %s: %v", rel, bundleFor(rel), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clusterCA, _ := os.ReadFile(filepath.Join(dir, "pki/ca.crt"))
	serving := readCert(t, filepath.Join(dir, "pki/apiserver.crt"))
	confs, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
	for _, path := range confs {
		name := filepath.Base(path)
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Errorf("%s does not parse: %v", name, err)
			continue
		}
		if _, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig(); err != nil {
			t.Errorf("%s is not a usable client configuration: %v", name, err)
		}
		if name == "other.conf" {
			continue
		}
		for cname, c := range cfg.Clusters {
			if _, err := serving.Verify(x509.VerifyOptions{Roots: poolOf(t, c.CertificateAuthorityData), DNSName: "127.0.0.1"}); err != nil {
				t.Errorf("%s cluster %s does not trust the serving certificate: %v", name, cname, err)
			}
		}
		for uname, u := range cfg.AuthInfos {
			cert, err := ca.ParseCertPEM(name, u.ClientCertificateData)
			if err != nil {
				t.Errorf("%s user %s: %v", name, uname, err)
				continue
			}
			key, err := ca.ParseKeyPEM(name, u.ClientKeyData)
			if err != nil || !ca.KeyMatches(key, cert.PublicKey) {
				t.Errorf("%s user %s: client key does not match the certificate (%v)", name, uname, err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: poolOf(t, clusterCA), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("%s user %s is not trusted by pki/ca.crt: %v", name, uname, err)
			}
		}
	}
	keyPEM, _ := os.ReadFile(filepath.Join(dir, "pki/sa.key"))
	key, err := ca.ParseKeyPEM("sa.key", keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(key.Public())
	if !slices.Contains(fingerprints(t, filepath.Join(dir, "pki/sa.pub")), ca.Fingerprint(der)) {
		t.Error("sa.pub does not hold the public key of sa.key, so new tokens would be refused")
	}
}

// snapshot reads every file under dir; a symbolic link stands for its
// target's name, and is not followed.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || d.IsDir():
			return err
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			files[path] = []byte("-> " + target)
			return err
		}
		data, err := os.ReadFile(path)
		files[path] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// rotate runs one phase; drop-old of sa does not wait for tokens to be
// refreshed (TestRotateDropOldOfSAWaitsForTokens_H6 checks the wait).
func rotate(t *testing.T, dir string, cas []string, phase ca.Phase) *ca.RotationPlan {
	t.Helper()
	r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, Force: true}
	p, err := r.Plan(cas, phase)
	if err != nil {
		t.Fatalf("plan %s: %v", phase, err)
	}
	if err := r.Apply(p); err != nil {
		t.Fatalf("apply %s: %v", phase, err)
	}
	return p
}

// checkRerunChangesNothing runs phase again and compares every byte.
func checkRerunChangesNothing(t *testing.T, dir string, phase ca.Phase) {
	t.Helper()
	before := snapshot(t, dir)
	p := rotate(t, dir, nil, phase)
	if !p.Done || len(p.Changes) != 0 {
		t.Errorf("%s again: done %v with %d changes, want a no-op", phase, p.Done, len(p.Changes))
	}
	if after := snapshot(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("%s again changed the tree", phase)
	}
}

func embeddedCert(t *testing.T, dir, conf string) *x509.Certificate {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, conf))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		c, err := ca.ParseCertPEM(conf, u.ClientCertificateData)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Fatalf("%s has no user", conf)
	return nil
}

func kubeconfigCAs(t *testing.T, dir, conf string) []string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, conf))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cfg.Clusters {
		for _, d := range pemBlocks(c.CertificateAuthorityData) {
			out = append(out, ca.Fingerprint(d))
		}
	}
	return out
}

// preRotation is what TestRotateThreePhases_H6 records of the tree before a
// rotation, to compare each phase's result with.
type preRotation struct {
	dir, oldFP, oldSA string
	oldCA, oldAdmin   *x509.Certificate
	oldLeaves         map[string]*x509.Certificate
	oldCAKey, other   []byte
}

func (b *preRotation) pki(n string) string { return filepath.Join(b.dir, "pki", n) }

func TestRotateThreePhases_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	b := &preRotation{dir: dir}
	checkReaders(t, dir)
	b.oldCA, b.oldFP, b.oldSA = readCert(t, b.pki("ca.crt")), fingerprints(t, b.pki("front-proxy-ca.crt"))[0], fingerprints(t, b.pki("sa.pub"))[0]
	b.oldAdmin = embeddedCert(t, dir, "admin.conf")
	b.oldLeaves = map[string]*x509.Certificate{}
	for _, n := range []string{"apiserver.crt", "apiserver-kubelet-client.crt", "front-proxy-client.crt", "users/jane.crt", "etcd/server.crt"} {
		b.oldLeaves[n] = readCert(t, b.pki(n))
	}
	b.oldCAKey, _ = os.ReadFile(b.pki("ca.key"))
	b.other, _ = os.ReadFile(filepath.Join(dir, "other.conf"))

	rotate(t, dir, nil, "")
	st := checkTrustBoth(t, b)
	checkReaders(t, dir)
	checkRerunChangesNothing(t, dir, ca.PhaseTrustBoth)

	rotate(t, dir, nil, "")
	newFP := checkReissue(t, b, st)
	checkReaders(t, dir)
	checkRerunChangesNothing(t, dir, ca.PhaseReissue)

	rotate(t, dir, nil, "")
	checkDropOld(t, b, st, newFP)
	checkReaders(t, dir)
	checkRerunChangesNothing(t, dir, ca.PhaseDropOld)
	emb, err := kubeconfig.ScanDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ca.Check(dir, emb, ca.CheckOptions{})
	if err != nil || len(rep.Findings)+len(rep.Warnings) > 0 {
		t.Errorf("pki check after the rotation: %+v (%v)", rep, err)
	}
}

// checkTrustBoth checks the tree after trust-both and returns the
// recorded state.
func checkTrustBoth(t *testing.T, b *preRotation) *ca.RotationState {
	t.Helper()
	st, err := ca.ReadRotationState(b.dir)
	if err != nil || st.Done != ca.PhaseTrustBoth || !slices.Equal(st.CAs, ca.RotateTargets) {
		t.Fatalf("state after trust-both: %+v (%v)", st, err)
	}
	newCA := st.Keys[ca.RotateCluster].New
	for file, want := range map[string][]string{
		"ca.crt":             {ca.Fingerprint(b.oldCA.Raw), newCA},
		"front-proxy-ca.crt": {b.oldFP, st.Keys[ca.RotateFrontProxy].New},
		"sa.pub":             {b.oldSA, st.Keys[ca.RotateSA].New},
	} {
		if got := fingerprints(t, b.pki(file)); !slices.Equal(got, want) {
			t.Errorf("after trust-both %s holds %v, want old then new %v", file, got, want)
		}
	}
	for _, conf := range []string{"admin.conf", "kubelet-n1.conf", "scheduler.conf"} {
		if got := kubeconfigCAs(t, b.dir, conf); !slices.Equal(got, []string{ca.Fingerprint(b.oldCA.Raw), newCA}) {
			t.Errorf("after trust-both %s trusts %v, want old and new", conf, got)
		}
	}
	if key, _ := os.ReadFile(b.pki("ca.key")); !bytes.Equal(key, b.oldCAKey) {
		t.Error("trust-both replaced ca.key; the old CA must sign until reissue")
	}
	if c := readCert(t, b.pki("apiserver.crt")); !c.Equal(b.oldLeaves["apiserver.crt"]) {
		t.Error("trust-both re-issued apiserver.crt")
	}
	if a := loadCA(t, b.dir, "ca"); !a.Cert.Equal(b.oldCA) {
		t.Error("after trust-both, LoadAuthority of pki/ca.crt is not the old CA")
	}
	return st
}

// checkReissue checks the tree after reissue and returns the new
// front-proxy CA.
func checkReissue(t *testing.T, b *preRotation, st *ca.RotationState) *x509.Certificate {
	t.Helper()
	newCA := st.Keys[ca.RotateCluster].New
	newCACert := loadCA(t, b.dir, "ca").Cert
	if ca.Fingerprint(newCACert.Raw) != newCA || newCACert.Subject.CommonName != b.oldCA.Subject.CommonName ||
		newCACert.SerialNumber.Cmp(b.oldCA.SerialNumber) == 0 || bytes.Equal(newCACert.RawSubjectPublicKeyInfo, b.oldCA.RawSubjectPublicKeyInfo) {
		t.Errorf("after reissue pki/ca.key does not sign as the new CA with the old CN, a new serial and a new key")
	}
	if got := fingerprints(t, b.pki("ca.crt")); !slices.Equal(got, []string{newCA, ca.Fingerprint(b.oldCA.Raw)}) {
		t.Errorf("after reissue ca.crt holds %v, want new then old", got)
	}
	if got := fingerprints(t, b.pki("sa.pub")); !slices.Equal(got, []string{st.Keys[ca.RotateSA].New, b.oldSA}) {
		t.Errorf("after reissue sa.pub holds %v, want new then old", got)
	}
	newFP := loadCA(t, b.dir, "front-proxy-ca").Cert
	for n, old := range b.oldLeaves {
		checkResigned(t, n, readCert(t, b.pki(n)), old, newCACert, newFP)
	}
	if c := embeddedCert(t, b.dir, "admin.conf"); c.CheckSignatureFrom(newCACert) != nil || !bytes.Equal(c.RawSubject, b.oldAdmin.RawSubject) {
		t.Error("admin.conf's client certificate is not re-signed by the new CA with the same subject")
	}
	return newFP
}

// checkResigned checks the leaf n after reissue: signed by the new CA of
// its authority with its subject, SANs, usages and key kept, or, under
// etcd/, whose CA is not rotated, unchanged.
func checkResigned(t *testing.T, n string, c, old, newCA, newFP *x509.Certificate) {
	t.Helper()
	switch {
	case n == "etcd/server.crt":
		if !c.Equal(old) {
			t.Errorf("reissue changed %s, whose CA is not rotated", n)
		}
		return
	case n == "front-proxy-client.crt":
		if c.CheckSignatureFrom(newFP) != nil {
			t.Errorf("%s is not signed by the new front-proxy CA", n)
		}
	case c.CheckSignatureFrom(newCA) != nil:
		t.Errorf("%s is not signed by the new cluster CA", n)
	}
	if !bytes.Equal(c.RawSubject, old.RawSubject) || !slices.Equal(c.DNSNames, old.DNSNames) || len(c.IPAddresses) != len(old.IPAddresses) ||
		!slices.Equal(c.ExtKeyUsage, old.ExtKeyUsage) || c.KeyUsage != old.KeyUsage || !bytes.Equal(c.RawSubjectPublicKeyInfo, old.RawSubjectPublicKeyInfo) {
		t.Errorf("re-signed %s changed its subject, SANs, usages or key", n)
	}
}

// checkDropOld checks the tree after drop-old.
func checkDropOld(t *testing.T, b *preRotation, st *ca.RotationState, newFP *x509.Certificate) {
	t.Helper()
	newCA := st.Keys[ca.RotateCluster].New
	for file, want := range map[string]string{"ca.crt": newCA, "front-proxy-ca.crt": ca.Fingerprint(newFP.Raw), "sa.pub": st.Keys[ca.RotateSA].New} {
		if got := fingerprints(t, b.pki(file)); !slices.Equal(got, []string{want}) {
			t.Errorf("after drop-old %s holds %v, want the new one only", file, got)
		}
	}
	if got := kubeconfigCAs(t, b.dir, "admin.conf"); !slices.Equal(got, []string{newCA}) {
		t.Errorf("after drop-old admin.conf trusts %v, want the new CA only", got)
	}
	if now, _ := os.ReadFile(filepath.Join(b.dir, "other.conf")); !bytes.Equal(now, b.other) {
		t.Error("the rotation changed other.conf, a kubeconfig of another cluster")
	}
	if _, err := os.Stat(filepath.Join(b.dir, ca.RotationDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there after drop-old (%v)", ca.RotationDir, err)
	}
	clusterCA, _ := os.ReadFile(b.pki("ca.crt"))
	for _, old := range []*x509.Certificate{b.oldAdmin, b.oldLeaves["users/jane.crt"]} {
		if _, err := old.Verify(x509.VerifyOptions{Roots: poolOf(t, clusterCA), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
			t.Errorf("%s, signed by the old CA, still verifies after drop-old", old.Subject.CommonName)
		}
	}
}

func TestRotatePhasesInOrderOnly_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}}
	for _, tc := range []struct {
		cas   []string
		phase ca.Phase
		want  string
	}{
		{nil, ca.PhaseReissue, "no CA rotation is in progress; start one with kubegate ca rotate --dir " + dir + " --phase trust-both"},
		{nil, ca.PhaseDropOld, "no CA rotation is in progress"},
	} {
		if _, err := r.Plan(tc.cas, tc.phase); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s before any rotation: %v, want %q", tc.phase, err, tc.want)
		}
	}
	rotate(t, dir, []string{ca.RotateCluster}, ca.PhaseTrustBoth)
	for _, tc := range []struct {
		cas   []string
		phase ca.Phase
		want  string
	}{
		{nil, ca.PhaseDropOld, "phase drop-old cannot run now: the rotation of cluster is at trust-both done, so the next phase is reissue"},
		{[]string{ca.RotateSA}, ca.PhaseTrustBoth, "a rotation of cluster is in progress (trust-both done); finish it first"},
		{[]string{ca.RotateCluster, ca.RotateSA}, "", "a rotation of cluster is in progress"},
	} {
		if _, err := r.Plan(tc.cas, tc.phase); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %s during a cluster rotation: %v, want %q", tc.cas, tc.phase, err, tc.want)
		}
	}
	rotate(t, dir, []string{ca.RotateCluster}, ca.PhaseReissue)
	if _, err := r.Plan(nil, ca.PhaseTrustBoth); err == nil || !strings.Contains(err.Error(), "the next phase is drop-old") {
		t.Errorf("trust-both after reissue: %v", err)
	}
	rotate(t, dir, nil, ca.PhaseDropOld)
	// Once over, a new rotation of another authority may start.
	p := rotate(t, dir, []string{ca.RotateSA}, "")
	if p.Phase != ca.PhaseTrustBoth || !slices.Equal(p.CAs, []string{ca.RotateSA}) {
		t.Errorf("after a finished rotation the next run is %s of %v, want trust-both of sa", p.Phase, p.CAs)
	}
}

// failingWriter fails the n-th write, as a crash would stop a phase there.
type failingWriter struct{ n, calls int }

func (w *failingWriter) write(path string, data []byte, mode fs.FileMode) error {
	w.calls++
	if w.calls == w.n {
		return errors.New("disk full")
	}
	return fsutil.WriteFile(path, data, mode, true)
}

// copyTree copies src to a new directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	for path, data := range snapshot(t, src) {
		rel, _ := filepath.Rel(src, path)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, rel), data, fi.Mode().Perm())
	}
	return dst
}

// TestRotateResumesAfterAStoppedPhase_H6 stops each phase at each of its
// writes in turn: at every such point the readers still find every
// certificate they are shown trusted, and running the phase again
// finishes it.
func TestRotateResumesAfterAStoppedPhase_H6(t *testing.T) {
	t.Parallel()
	base := rotationTree(t)
	for _, phase := range ca.Phases {
		p, err := (&ca.Rotator{Dir: base, Kubeconfigs: kubeconfig.Editor{}, Force: true}).Plan(nil, phase)
		if err != nil {
			t.Fatal(err)
		}
		writes := 0
		for _, c := range p.Changes {
			if !c.Remove {
				writes++
			}
		}
		for n := 1; n <= writes; n++ {
			dir := copyTree(t, base)
			w := &failingWriter{n: n}
			r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, WriteFile: w.write, Force: true}
			p, err := r.Plan(nil, phase)
			if err != nil {
				t.Fatalf("%s: %v", phase, err)
			}
			if err := r.Apply(p); err == nil {
				t.Fatalf("%s stopped at write %d: no error", phase, n)
			}
			checkReaders(t, dir)
			p = rotate(t, dir, nil, phase)
			if p.Done {
				t.Fatalf("%s stopped at write %d: the re-run found it done", phase, n)
			}
			if st, err := ca.ReadRotationState(dir); err != nil || st.Done != phase {
				t.Fatalf("%s stopped at write %d, then run again: state %+v (%v)", phase, n, st, err)
			}
			checkReaders(t, dir)
		}
		rotate(t, base, nil, phase)
	}
}

// TestRotateTellsItsSteps_H6: each phase tells Progress what it does,
// from minting the new CA to each file it writes, counted.
func TestRotateTellsItsSteps_H6(t *testing.T) {
	dir := rotationTree(t)
	for _, tc := range []struct {
		phase ca.Phase
		want  []string
	}{
		{ca.PhaseTrustBoth, []string{"trust-both: reading the tree for cluster", "trust-both: minting the new cluster CA", "trust-both: writing pki/ca.crt ("}},
		{ca.PhaseReissue, []string{"reissue: re-signing pki/apiserver.crt", "reissue: re-signing pki/users/jane.crt", "reissue: reading admin.conf"}},
		{ca.PhaseDropOld, []string{"drop-old: checking that nothing the old cluster CA signed is left", "drop-old: removing pki/rotation/ca.key ("}},
	} {
		var steps []string
		r := &ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, Force: true, Progress: func(s string) { steps = append(steps, s) }}
		p, err := r.Plan([]string{ca.RotateCluster}, tc.phase)
		if err != nil {
			t.Fatalf("plan %s: %v", tc.phase, err)
		}
		if err := r.Apply(p); err != nil {
			t.Fatalf("apply %s: %v", tc.phase, err)
		}
		for _, w := range tc.want {
			if !slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, w) }) {
				t.Errorf("%s: no step %q in %q", tc.phase, w, steps)
			}
		}
		last := fmt.Sprintf("(%d/%d)", len(p.Changes), len(p.Changes))
		if !strings.HasSuffix(steps[len(steps)-1], last) {
			t.Errorf("%s: last step %q, want the last change %s", tc.phase, steps[len(steps)-1], last)
		}
	}
}

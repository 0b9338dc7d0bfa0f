package ca

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testgolden"
	"github.com/kubegate/kubegate/internal/testpki"
)

var (
	treeStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	checkNow  = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
)

// kubeadmTree (not for parallel tests: testpki shares a serial counter)
// writes a tree the way kubeadm lays it out, made with Go's
// crypto/x509 (as kubeadm is) rather than by this package, with fixed
// dates. mutate may change any entry's options before it is issued. It
// returns the kubeconfig certs as Embedded entries.
func kubeadmTree(t *testing.T, dir string, mutate func(name string, o *testpki.Options)) []Embedded {
	t.Helper()
	opts := func(name string, o testpki.Options) testpki.Options {
		if o.NotBefore.IsZero() {
			o.NotBefore = treeStart
		}
		if o.NotAfter.IsZero() {
			o.NotAfter = treeStart.AddDate(1, 0, 0)
		}
		if mutate != nil {
			mutate(name, &o)
		}
		return o
	}
	caOpts := func(name, cn string) testpki.Options {
		return opts(name, testpki.Options{CN: cn, IsCA: true, NotAfter: treeStart.AddDate(10, 0, 0)})
	}
	write := func(name string, c *testpki.Cert) {
		rel := filepath.Join(dir, PKIDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(rel), 0o700); err != nil {
			t.Fatal(err)
		}
		c.WriteFiles(t, filepath.Dir(rel), filepath.Base(rel))
	}
	cas := map[string]*testpki.Cert{}
	for _, c := range []struct{ name, cn string }{{"ca", "kubernetes"}, {"front-proxy-ca", "front-proxy-ca"}, {"etcd/ca", "etcd-ca"}} {
		cas[c.name] = testpki.SelfSigned(t, caOpts(c.name, c.cn))
		write(c.name, cas[c.name])
	}
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	leaves := []struct {
		name, ca string
		o        testpki.Options
	}{
		{"apiserver", "ca", testpki.Options{CN: "kube-apiserver", EKUs: server,
			DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "cp1"},
			IPs:      []net.IP{net.ParseIP("10.96.0.1"), net.ParseIP("192.168.1.10")}}},
		{"apiserver-kubelet-client", "ca", testpki.Options{CN: "kube-apiserver-kubelet-client", Orgs: []string{"kubeadm:cluster-admins"}}},
		{"front-proxy-client", "front-proxy-ca", testpki.Options{CN: "front-proxy-client"}},
		{"etcd/server", "etcd/ca", testpki.Options{CN: "cp1", EKUs: both, DNSNames: []string{"cp1", "localhost"}}},
		{"etcd/peer", "etcd/ca", testpki.Options{CN: "cp1", EKUs: both, DNSNames: []string{"cp1", "localhost"}}},
		{"etcd/healthcheck-client", "etcd/ca", testpki.Options{CN: "kube-etcd-healthcheck-client"}},
		{"apiserver-etcd-client", "etcd/ca", testpki.Options{CN: "kube-apiserver-etcd-client"}},
	}
	for _, l := range leaves {
		write(l.name, cas[l.ca].Issue(t, opts(l.name, l.o)))
	}
	sa := testpki.SelfSigned(t, testpki.Options{CN: "sa"})
	pub, err := EncodePublicKey(sa.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, PKIDir, "sa.key"), sa.KeyPEM, 0o600)
	os.WriteFile(filepath.Join(dir, PKIDir, "sa.pub"), pub, 0o644)
	var emb []Embedded
	for _, k := range []struct {
		file string
		o    testpki.Options
	}{
		{"admin.conf", testpki.Options{CN: "kubernetes-admin", Orgs: []string{"kubeadm:cluster-admins"}}},
		{"super-admin.conf", testpki.Options{CN: "kubernetes-super-admin", Orgs: []string{"system:masters"}}},
		{"scheduler.conf", testpki.Options{CN: "system:kube-scheduler"}},
		{"controller-manager.conf", testpki.Options{CN: "system:kube-controller-manager"}},
		{"kubelet.conf", testpki.Options{CN: "system:node:cp1", Orgs: []string{"system:nodes"}}},
	} {
		c := cas["ca"].Issue(t, opts(k.file, k.o))
		emb = append(emb, Embedded{File: k.file, User: c.Cert.Subject.CommonName, CertPEM: c.CertPEM, KeyPEM: c.KeyPEM})
	}
	return emb
}

func TestCheckCleanKubeadmTree(t *testing.T) {
	dir := t.TempDir()
	emb := kubeadmTree(t, dir, nil)
	rep, err := Check(dir, emb, CheckOptions{Now: checkNow})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	testgolden.Check(t, filepath.Join("testdata", "check-clean.golden"), b.Bytes())
	if len(rep.Findings) != 0 {
		t.Errorf("findings on a clean tree: %v", rep.Findings)
	}
}

// TestCheckBrokenTrees breaks a kubeadm tree one mistake at a time and
// expects Check to name that mistake; all mistakes at once make the golden
// report.
func TestCheckBrokenTrees(t *testing.T) {
	breaks := []struct {
		name   string
		mutate func(name string, o *testpki.Options)
		post   func(t *testing.T, dir string, emb []Embedded)
		want   string
	}{
		{"apiserver without cluster-domain SAN", func(n string, o *testpki.Options) {
			if n == "apiserver" {
				o.DNSNames = []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"}
			}
		}, nil, "pki/apiserver.crt: SANs lack kubernetes.default.svc.cluster.local"},
		{"apiserver without service IP", func(n string, o *testpki.Options) {
			if n == "apiserver" {
				o.IPs = []net.IP{net.ParseIP("10.0.0.1")}
			}
		}, nil, "pki/apiserver.crt: SANs lack the service IP 10.96.0.1"},
		{"mistyped scheduler CN", func(n string, o *testpki.Options) {
			if n == "scheduler.conf" {
				o.CN = "system:system:kube-scheduler"
			}
		}, nil, `scheduler.conf:system:system:kube-scheduler: "system:system:kube-scheduler" looks like a mistyped "system:kube-scheduler"`},
		{"mistyped node group", func(n string, o *testpki.Options) {
			if n == "kubelet.conf" {
				o.Orgs = []string{"system:node"}
			}
		}, nil, `kubelet.conf:system:node:cp1: O is ["system:node"], want it to include "system:nodes"`},
		{"client EKU on serving cert", func(n string, o *testpki.Options) {
			if n == "apiserver" {
				o.EKUs = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
			}
		}, nil, "pki/apiserver.crt: extended key usage lacks serverAuth"},
		{"server EKU on client cert", func(n string, o *testpki.Options) {
			if n == "front-proxy-client" {
				o.EKUs = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			}
		}, nil, "pki/front-proxy-client.crt: extended key usage lacks clientAuth"},
		{"system:masters on admin.conf", func(n string, o *testpki.Options) {
			if n == "admin.conf" {
				o.Orgs = []string{"system:masters"}
			}
		}, nil, "admin.conf:kubernetes-admin: O=system:masters (unrestricted, bypasses RBAC) belongs only on the break-glass super-admin.conf"},
		{"space before a CN", func(n string, o *testpki.Options) {
			if n == "apiserver-etcd-client" {
				o.CN = " kube-apiserver-etcd-client"
			}
		}, nil, `pki/apiserver-etcd-client.crt: CN " kube-apiserver-etcd-client": begins with whitespace (U+0020), so identity headers would not carry it as written`},
		{"header injection in a group", func(n string, o *testpki.Options) {
			if n == "apiserver-kubelet-client" {
				o.Orgs = []string{"kubeadm:cluster-admins\nX-Remote-Group: system:masters"}
			}
		}, nil, `pki/apiserver-kubelet-client.crt: O "kubeadm:cluster-admins\nX-Remote-Group: system:masters": contains a control character (U+000A)`},
		{"key does not match cert", nil, func(t *testing.T, dir string, _ []Embedded) {
			other := testpki.SelfSigned(t, testpki.Options{CN: "other"})
			os.WriteFile(filepath.Join(dir, PKIDir, "apiserver.key"), other.KeyPEM, 0o600)
		}, "pki/apiserver.crt: private key pki/apiserver.key does not match the certificate"},
		{"front-proxy CA is the client CA", nil, func(t *testing.T, dir string, _ []Embedded) {
			p := filepath.Join(dir, PKIDir)
			for _, ext := range []string{".crt", ".key"} {
				data, _ := os.ReadFile(filepath.Join(p, "ca"+ext))
				os.WriteFile(filepath.Join(p, "front-proxy-ca"+ext), data, 0o600)
			}
		}, "pki/front-proxy-ca.crt: front-proxy CA is the same as the client CA pki/ca.crt"},
		{"a leaf with two CNs", nil, func(t *testing.T, dir string, _ []Embedded) {
			a, err := LoadAuthority("ca", filepath.Join(dir, PKIDir, "ca.crt"), filepath.Join(dir, PKIDir, "ca.key"))
			if err != nil {
				t.Fatal(err)
			}
			key, _, err := GenerateKey(ECDSAP256)
			if err != nil {
				t.Fatal(err)
			}
			iss, err := issued(a.signWindow(&x509.Certificate{RawSubject: rawSubject(t, oidCommonName, "first", oidCommonName, "second"),
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: checkNow.AddDate(0, 0, -1), NotAfter: checkNow.AddDate(1, 0, 0)}, key.Public()))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, PKIDir, "two-cns.crt"), iss.CertPEM, 0o600)
		}, "pki/two-cns.crt: subject reads differently in different parsers: it holds more than one CN; cert renew and ca rotate refuse to sign it again: issue it anew, or move it out of the tree"},
		{"expired", func(n string, o *testpki.Options) {
			if n == "etcd/peer" {
				o.NotAfter = checkNow.AddDate(0, 0, -1)
			}
		}, nil, "pki/etcd/peer.crt: expired on 2026-05-31"},
	}
	for _, b := range breaks {
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			emb := kubeadmTree(t, dir, b.mutate)
			if b.post != nil {
				b.post(t, dir, emb)
			}
			rep, err := Check(dir, emb, CheckOptions{Now: checkNow})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.WriteText(&out)
			if !strings.Contains(out.String(), b.want+"\n") && !strings.Contains(out.String(), b.want) {
				t.Errorf("report lacks %q:\n%s", b.want, out.String())
			}
		})
	}
	t.Run("all at once", func(t *testing.T) {
		dir := t.TempDir()
		emb := kubeadmTree(t, dir, func(n string, o *testpki.Options) {
			for _, b := range breaks {
				if b.mutate != nil {
					b.mutate(n, o)
				}
			}
		})
		for _, b := range breaks {
			if b.post != nil {
				b.post(t, dir, emb)
			}
		}
		rep, err := Check(dir, emb, CheckOptions{Now: checkNow})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep.WriteText(&out)
		testgolden.Check(t, filepath.Join("testdata", "check-broken.golden"), out.Bytes())
	})
}

func TestExpiryTable(t *testing.T) {
	dir := t.TempDir()
	emb := kubeadmTree(t, dir, func(n string, o *testpki.Options) {
		if n == "front-proxy-client" {
			o.NotAfter = checkNow.Add(20 * 24 * time.Hour)
		}
		if n == "scheduler.conf" {
			o.NotAfter = checkNow.Add(-time.Hour)
		}
	})
	found, err := Scan(dir, emb)
	if err != nil {
		t.Fatal(err)
	}
	entries := Expiry(found, checkNow)
	var b bytes.Buffer
	if err := WriteExpiryTable(&b, entries); err != nil {
		t.Fatal(err)
	}
	testgolden.Check(t, filepath.Join("testdata", "expiry.golden"), b.Bytes())
	soon := ExpiringWithin(entries, 30*24*time.Hour)
	var names []string
	for _, e := range soon {
		names = append(names, e.Name)
	}
	if got, want := strings.Join(names, " "), "pki/front-proxy-client.crt scheduler.conf:system:kube-scheduler"; got != want {
		t.Errorf("expiring within 30d = %s, want %s", got, want)
	}
}

func TestResidual(t *testing.T) {
	t.Parallel()
	tests := map[time.Duration]string{
		-time.Second: "expired", 30 * time.Minute: "30m", 47 * time.Hour: "47h",
		364 * 24 * time.Hour: "364d", 10 * 365 * 24 * time.Hour: "10y",
	}
	for d, want := range tests {
		if got := Residual(d); got != want {
			t.Errorf("Residual(%v) = %q, want %q", d, got, want)
		}
	}
}

// treeHash returns every file's path, mode and content under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		data := []byte{}
		if !info.IsDir() {
			data, _ = os.ReadFile(p)
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + info.Mode().String() + " " + string(data) + "\n")
		return nil
	})
	return b.String()
}

func initTree(t *testing.T, dir string, spec Spec, force bool) *Output {
	t.Helper()
	p, err := NewPlan(dir, spec, force)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(dir, out.Files); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := initTree(t, dir, Spec{Nodes: []string{"n1"}}, false)
	if got, want := len(out.Files), 2*(3+7+1); got != want {
		t.Errorf("first init wrote %d files, want %d", got, want)
	}
	if got, want := len(out.Credentials), 5; got != want {
		t.Errorf("first init made %d kubeconfig credentials, want %d", got, want)
	}
	for _, f := range out.Files {
		info, err := os.Stat(filepath.Join(dir, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o644)
		if strings.HasSuffix(f.Path, ".key") {
			want = 0o600
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", f.Path, info.Mode().Perm(), want)
		}
	}
	if info, _ := os.Stat(filepath.Join(dir, PKIDir, "etcd")); info.Mode().Perm() != 0o700 {
		t.Errorf("pki/etcd mode = %v, want 0700", info.Mode().Perm())
	}

	t.Run("rerun keeps everything", func(t *testing.T) {
		p, err := NewPlan(dir, Spec{Nodes: []string{"n1"}}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Steps {
			if s.Item.Kind != KindKubeconfig && s.Action != Keep {
				t.Errorf("%s: action %s, want keep", s.Item.Name, s.Action)
			}
		}
	})
	t.Run("missing leaf is filled in with the existing CA", func(t *testing.T) {
		before := treeHash(t, filepath.Join(dir, PKIDir, "etcd"))
		os.Remove(filepath.Join(dir, PKIDir, "front-proxy-client.crt"))
		os.Remove(filepath.Join(dir, PKIDir, "front-proxy-client.key"))
		out := initTree(t, dir, Spec{Nodes: []string{"n1"}}, false)
		var paths []string
		for _, f := range out.Files {
			paths = append(paths, f.Path)
		}
		if got, want := strings.Join(paths, " "), "pki/front-proxy-client.crt pki/front-proxy-client.key"; got != want {
			t.Errorf("wrote %s, want %s", got, want)
		}
		if treeHash(t, filepath.Join(dir, PKIDir, "etcd")) != before {
			t.Error("filling in one file changed pki/etcd")
		}
		c, err := loadLeaf(filepath.Join(dir, PKIDir, "front-proxy-client.crt"), filepath.Join(dir, PKIDir, "front-proxy-client.key"))
		if err != nil {
			t.Fatal(err)
		}
		fp, _ := LoadAuthority("front-proxy-ca", filepath.Join(dir, PKIDir, "front-proxy-ca.crt"), filepath.Join(dir, PKIDir, "front-proxy-ca.key"))
		if err := c.CheckSignatureFrom(fp.Cert); err != nil {
			t.Errorf("refilled cert not signed by the existing front-proxy CA: %v", err)
		}
	})
	t.Run("changed SANs conflict without force", func(t *testing.T) {
		p, err := NewPlan(dir, Spec{Nodes: []string{"n1"}, APIServerSANs: []string{"10.0.0.5"}}, false)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Err()
		if err == nil || !strings.Contains(err.Error(), "pki/apiserver.crt exists and differs: SANs lack 10.0.0.5; use --force") {
			t.Errorf("Err() = %v, want a conflict on apiserver.crt", err)
		}
		if _, err := p.Build(); err == nil {
			t.Error("Build() succeeded despite a conflict")
		}
	})
	t.Run("force replaces all", func(t *testing.T) {
		p, err := NewPlan(dir, Spec{}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Steps {
			// This test writes no kubeconfigs, so those are created.
			if want := map[bool]Action{true: Create, false: Replace}[s.Item.Kind == KindKubeconfig]; s.Action != want {
				t.Errorf("%s: action %s, want %s", s.Item.Name, s.Action, want)
			}
		}
	})
	t.Run("corrupt CA key is an error naming it", func(t *testing.T) {
		d := t.TempDir()
		initTree(t, d, Spec{}, false)
		key := filepath.Join(d, PKIDir, "etcd", "ca.key")
		os.WriteFile(key, []byte("garbage"), 0o600)
		_, err := NewPlan(d, Spec{}, false)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("NewPlan() = %v, want an error naming %s", err, key)
		}
	})
	t.Run("CA key of another CA is an error naming it", func(t *testing.T) {
		d := t.TempDir()
		initTree(t, d, Spec{}, false)
		other, _ := os.ReadFile(filepath.Join(d, PKIDir, "front-proxy-ca.key"))
		key := filepath.Join(d, PKIDir, "ca.key")
		os.WriteFile(key, other, 0o600)
		_, err := NewPlan(d, Spec{}, false)
		if err == nil || !strings.Contains(err.Error(), key+": private key does not match") {
			t.Errorf("NewPlan() = %v, want a mismatch error naming %s", err, key)
		}
	})
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"bad cidr", Spec{ServiceCIDR: "10.96.0.0"}, "service CIDR"},
		{"bad SAN", Spec{APIServerSANs: []string{"a b"}}, "apiserver SAN"},
		{"upper-case node", Spec{Nodes: []string{"Node1"}}, "node name"},
		{"space before node", Spec{Nodes: []string{" n1"}}, `node name " n1": begins with whitespace (U+0020)`},
		{"duplicate node", Spec{Nodes: []string{"a", "a"}}, "given twice"},
		{"leaf outlives CA", Spec{Validity: 20 * DefaultCAValidity}, "longer than the CA validity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Default()
			err := tt.spec.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRenewKeepsIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := initTree(t, dir, Spec{}, false)
	var emb []Embedded
	for _, c := range out.Credentials {
		emb = append(emb, Embedded{File: c.Kubeconfig, User: c.User, CertPEM: c.CertPEM, KeyPEM: c.KeyPEM})
	}
	// A kubeconfig that embeds the front-proxy-client cert must follow it.
	fpc, _ := os.ReadFile(filepath.Join(dir, PKIDir, "front-proxy-client.crt"))
	fpk, _ := os.ReadFile(filepath.Join(dir, PKIDir, "front-proxy-client.key"))
	emb = append(emb, Embedded{File: "proxy.conf", User: "front-proxy-client", CertPEM: fpc, KeyPEM: fpk})

	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	rs, err := PlanRenew(dir, "front-proxy-client", emb, 0, later)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Files) != 2 || len(rs[0].Kubeconfigs) != 1 || rs[0].Kubeconfigs[0].Kubeconfig != "proxy.conf" {
		t.Fatalf("renewals = %+v, want one with 2 files and proxy.conf", rs)
	}
	old, _ := ParseCertPEM("old", fpc)
	renewed, _ := ParseCertPEM("new", rs[0].Files[1].Data)
	if !bytes.Equal(old.RawSubject, renewed.RawSubject) || !bytes.Equal(old.RawIssuer, renewed.RawIssuer) {
		t.Error("renewal changed the subject or issuer")
	}
	if renewed.NotAfter.Sub(old.NotAfter) < 47*time.Hour {
		t.Errorf("NotAfter %v not moved forward from %v", renewed.NotAfter, old.NotAfter)
	}
	if bytes.Equal(old.RawSubjectPublicKeyInfo, renewed.RawSubjectPublicKeyInfo) {
		t.Error("renewal kept the old key")
	}

	all, err := PlanRenew(dir, "all", emb, 0, later)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(all), 7+4; got != want {
		t.Errorf("renew all = %d renewals, want %d (7 leaves, 4 kubeconfig-only certs)", got, want)
	}
	var told []string
	progressed, err := PlanRenewProgress(dir, "all", emb, 0, later, func(done, total int, name string) {
		told = append(told, fmt.Sprintf("%d/%d %s", done, total, name))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(told) < len(progressed)+1 || !strings.HasPrefix(told[0], "0/") || told[len(told)-1] != fmt.Sprintf("%d/%d ", len(told)-1, len(told)-1) {
		t.Errorf("renew all told %q, want one line per certificate from 0/N, ending N/N", told)
	}
	for _, r := range progressed {
		if !slices.ContainsFunc(told, func(s string) bool { return strings.HasSuffix(s, " "+r.Name) }) {
			t.Errorf("renew all did not tell %s: %q", r.Name, told)
		}
	}
	for _, bad := range []struct{ target, want string }{
		{"ca", "is a CA"},
		{"nope", `no certificate named "nope"`},
	} {
		if _, err := PlanRenew(dir, bad.target, emb, 0, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("PlanRenew(%q) = %v, want %q", bad.target, err, bad.want)
		}
	}
}

func TestParseUsers(t *testing.T) {
	t.Parallel()
	reqs, err := ParseUsers("u.csv", strings.NewReader("# cn,groups...\nnakam,devops,devs\n\nsystem:node:a, system:nodes\nsolo\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 || reqs[0].CN != "nakam" || strings.Join(reqs[0].Orgs, "|") != "devops|devs" ||
		strings.Join(reqs[1].Orgs, "|") != "system:nodes" || len(reqs[2].Orgs) != 0 {
		t.Errorf("ParseUsers = %+v", reqs)
	}
	for _, bad := range []struct{ in, want string }{
		{"a\n,devs\n", "line 2: common name is empty"},
		{"", "has no identities"},
		{"a,\"b\n", "u.csv"},
		{"alice,dev\n\"evil\nX-Remote-User: admin\",dev\n", `users file u.csv line 2: common name "evil\nX-Remote-User: admin": contains a control character (U+000A)`},
		{"bob,\" system:masters\"\n", `users file u.csv line 1: organization " system:masters": begins with whitespace (U+0020)`},
		{"alice ,dev\n", `users file u.csv line 1: common name "alice ": ends with whitespace (U+0020)`},
	} {
		if _, err := ParseUsers("u.csv", strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseUsers(%q) = %v, want %q", bad.in, err, bad.want)
		}
	}
	if _, err := Prefixes("d", []Request{{CN: "a:b"}, {CN: "a_b"}}); err == nil {
		t.Error("Prefixes accepted two CNs that share a file name")
	}
}

func TestIssueFiles(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	dir := filepath.Join(t.TempDir(), "users")
	var reqs []Request
	for _, cn := range []string{"a", "b", "system:node:c", "d", "e"} {
		reqs = append(reqs, Request{CN: cn, Orgs: []string{"g1", "g2"}})
	}
	prefixes, err := Prefixes(dir, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.IssueFiles(context.Background(), reqs, prefixes, BatchOptions{Workers: 3, Chunk: 2}); err != nil {
		t.Fatal(err)
	}
	for i, p := range prefixes {
		cert, err := loadLeaf(p+".crt", p+".key")
		if err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != reqs[i].CN {
			t.Errorf("%s.crt CN = %q, want %q", p, cert.Subject.CommonName, reqs[i].CN)
		}
		if info, _ := os.Stat(p + ".key"); info.Mode().Perm() != 0o600 {
			t.Errorf("%s.key mode %v, want 0600", p, info.Mode().Perm())
		}
	}
	// Without overwrite a second run fails on the existing files.
	if err := a.IssueFiles(context.Background(), reqs, prefixes, BatchOptions{}); err == nil {
		t.Error("second IssueFiles without Overwrite succeeded")
	}
}

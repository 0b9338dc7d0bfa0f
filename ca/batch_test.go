package ca

import (
	"bytes"
	"context"
	"crypto/x509"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestIssueFilesMatchesIssue checks that the batch path, which resolves
// each profile once and copies its template, issues the same certificate
// Issue does: subject bytes, SANs, usages, constraints, lifetime and
// issuer, and that no two certificates share a serial or a key.
func TestIssueFilesMatchesIssue(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	now := a.Cert.NotBefore.Add(time.Hour)
	a.Now = func() time.Time { return now }
	reqs := []Request{
		{CN: "nakam", Orgs: []string{"devops", "devs"}},
		{CN: "etcd-a", Profile: ProfilePeer, Hosts: []string{"etcd-a", "10.0.0.1"}, Validity: 90 * 24 * time.Hour},
		{CN: "web", Profile: ProfileServer, Hosts: []string{"web.example"}},
		{CN: "nakam2", Orgs: []string{"devs", "devops"}, KeyAlgorithm: RSA2048},
	}
	prefixes, err := Prefixes(filepath.Join(t.TempDir(), "out"), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.IssueFiles(context.Background(), reqs, prefixes, BatchOptions{Workers: 2, Chunk: 1}); err != nil {
		t.Fatal(err)
	}
	serials := map[string]bool{}
	for i := range reqs {
		t.Run(reqs[i].CN, func(t *testing.T) {
			got, err := loadLeaf(prefixes[i]+".crt", prefixes[i]+".key")
			if err != nil {
				t.Fatal(err)
			}
			want, err := a.Issue(&reqs[i])
			if err != nil {
				t.Fatal(err)
			}
			w := want.Cert
			if !bytes.Equal(got.RawSubject, w.RawSubject) {
				t.Errorf("subject = %s, want %s", SubjectString(got.RawSubject), SubjectString(w.RawSubject))
			}
			if !bytes.Equal(got.RawIssuer, a.Cert.RawSubject) {
				t.Errorf("issuer = %s, want the CA's subject", SubjectString(got.RawIssuer))
			}
			if !slices.Equal(got.DNSNames, w.DNSNames) || len(got.IPAddresses) != len(w.IPAddresses) {
				t.Errorf("SANs = %v %v, want %v %v", got.DNSNames, got.IPAddresses, w.DNSNames, w.IPAddresses)
			}
			if got.KeyUsage != w.KeyUsage || !slices.Equal(got.ExtKeyUsage, w.ExtKeyUsage) {
				t.Errorf("usages = %v %v, want %v %v", got.KeyUsage, got.ExtKeyUsage, w.KeyUsage, w.ExtKeyUsage)
			}
			if got.IsCA || !got.BasicConstraintsValid {
				t.Errorf("CA:%v (valid %v), want CA:FALSE", got.IsCA, got.BasicConstraintsValid)
			}
			if !got.NotBefore.Equal(w.NotBefore) || !got.NotAfter.Equal(w.NotAfter) {
				t.Errorf("validity %s..%s, want %s..%s", got.NotBefore, got.NotAfter, w.NotBefore, w.NotAfter)
			}
			if got.SignatureAlgorithm != w.SignatureAlgorithm || algorithmOf(got.PublicKey) != algorithmOf(w.PublicKey) {
				t.Errorf("algorithms = %v/%v, want %v/%v", got.SignatureAlgorithm, algorithmOf(got.PublicKey), w.SignatureAlgorithm, algorithmOf(w.PublicKey))
			}
			if err := got.CheckSignatureFrom(a.Cert); err != nil {
				t.Errorf("signature: %v", err)
			}
			if !bytes.Equal(got.AuthorityKeyId, a.Cert.SubjectKeyId) {
				t.Errorf("authority key id = %x, want the CA's %x", got.AuthorityKeyId, a.Cert.SubjectKeyId)
			}
			if _, err := got.Verify(x509.VerifyOptions{Roots: poolOf(a.Cert), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Errorf("verify against the CA: %v", err)
			}
		})
		got, _ := loadLeaf(prefixes[i]+".crt", prefixes[i]+".key")
		if got != nil {
			if serials[got.SerialNumber.String()] {
				t.Errorf("serial %s issued twice", got.SerialNumber)
			}
			serials[got.SerialNumber.String()] = true
		}
	}
}

func poolOf(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

func TestIssueFilesTellsProgressUpToTheTotal(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	reqs := make([]Request, 25)
	for i := range reqs {
		reqs[i] = Request{CN: "user-" + string(rune('a'+i))}
	}
	prefixes, err := Prefixes(filepath.Join(t.TempDir(), "out"), reqs)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	progress := func(done, total int) {
		if total != len(reqs) {
			t.Errorf("total = %d, want %d", total, len(reqs))
		}
		got = append(got, done) // one goroutine at a time, as documented
	}
	if err := a.IssueFiles(context.Background(), reqs, prefixes, BatchOptions{Workers: 4, Chunk: 7, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	want := make([]int, len(reqs))
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(got, want) {
		t.Errorf("progress told %v, want 1 to %d in order", got, len(reqs))
	}
}

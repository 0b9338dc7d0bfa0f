package ca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestCA(t testing.TB, alg KeyAlgorithm) *Authority {
	t.Helper()
	a, _, err := CreateAuthority("ca", "test-ca", alg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestIssueProfiles(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	a.Now = func() time.Time { return fixedNow }
	tests := []struct {
		name    string
		req     Request
		wantEKU []x509.ExtKeyUsage
	}{
		{"client", Request{CN: "nakam", Orgs: []string{"devops", "devs"}}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"server", Request{CN: "kube-apiserver", Profile: ProfileServer, Hosts: []string{"kubernetes", "10.96.0.1"}}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"peer", Request{CN: "etcd", Profile: ProfilePeer, Hosts: []string{"localhost"}}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss, err := a.Issue(&tt.req)
			if err != nil {
				t.Fatal(err)
			}
			c := iss.Cert
			if !slices.Equal(c.ExtKeyUsage, tt.wantEKU) {
				t.Errorf("EKU = %v, want %v", c.ExtKeyUsage, tt.wantEKU)
			}
			if c.KeyUsage != x509.KeyUsageDigitalSignature {
				t.Errorf("key usage = %v, want digitalSignature only", c.KeyUsage)
			}
			if c.IsCA || !c.BasicConstraintsValid {
				t.Errorf("IsCA = %v, BasicConstraintsValid = %v, want false, true", c.IsCA, c.BasicConstraintsValid)
			}
			if got, want := c.NotBefore, fixedNow.Add(-Backdate); !got.Equal(want) {
				t.Errorf("NotBefore = %v, want %v", got, want)
			}
			if got, want := c.NotAfter, fixedNow.Add(DefaultValidity); !got.Equal(want) {
				t.Errorf("NotAfter = %v, want %v", got, want)
			}
			if c.Subject.CommonName != tt.req.CN || !slices.Equal(c.Subject.Organization, tt.req.Orgs) && len(tt.req.Orgs) > 0 {
				t.Errorf("subject = %v, want CN %q O %v", c.Subject, tt.req.CN, tt.req.Orgs)
			}
			if err := c.CheckSignatureFrom(a.Cert); err != nil {
				t.Errorf("not signed by the CA: %v", err)
			}
			if got := certHosts(c); !slices.Equal(got, hostsSorted(tt.req.Hosts)) && len(tt.req.Hosts) > 0 {
				t.Errorf("SANs = %v, want %v", got, tt.req.Hosts)
			}
			if len(iss.KeyPEM) == 0 {
				t.Error("no key PEM")
			}
		})
	}
}

// hostsSorted puts DNS names before IPs, as certHosts does.
func hostsSorted(h []string) []string {
	dns, ips, _ := SplitHosts(h)
	out := slices.Clone(dns)
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func TestIssueSubjectIsOneRDNPerOrgInOrder(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	iss, err := a.Issue(&Request{CN: "nakam", Orgs: []string{"devs", "devops", "system:masters"}})
	if err != nil {
		t.Fatal(err)
	}
	var seq pkix.RDNSequence
	if _, err := asn1.Unmarshal(iss.Cert.RawSubject, &seq); err != nil {
		t.Fatal(err)
	}
	if len(seq) != 4 {
		t.Fatalf("subject has %d RDNs, want 4 (one per O, then CN)", len(seq))
	}
	if got, want := SubjectString(iss.Cert.RawSubject), "O=devs, O=devops, O=system:masters, CN=nakam"; got != want {
		t.Errorf("subject = %q, want %q", got, want)
	}
	if got := iss.Cert.Subject.Organization; !slices.Equal(got, []string{"devs", "devops", "system:masters"}) {
		t.Errorf("Organization = %v, want the given order", got)
	}
}

func TestIssueKeyAlgorithms(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	tests := []struct {
		alg  KeyAlgorithm
		bits int
	}{{ECDSAP256, 256}, {RSA2048, 2048}, {RSA3072, 3072}}
	for _, tt := range tests {
		t.Run(string(tt.alg), func(t *testing.T) {
			iss, err := a.Issue(&Request{CN: "x", KeyAlgorithm: tt.alg})
			if err != nil {
				t.Fatal(err)
			}
			var bits int
			switch k := iss.Cert.PublicKey.(type) {
			case *ecdsa.PublicKey:
				bits = k.Curve.Params().BitSize
			case *rsa.PublicKey:
				bits = k.N.BitLen()
			}
			if bits != tt.bits {
				t.Errorf("key size = %d, want %d", bits, tt.bits)
			}
			key, err := ParseKeyPEM("key", iss.KeyPEM)
			if err != nil || !KeyMatches(key, iss.Cert.PublicKey) {
				t.Errorf("key PEM does not match the cert (err %v)", err)
			}
		})
	}
}

func TestIssueCapsAtCAExpiry(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	iss, err := a.Issue(&Request{CN: "x", Validity: 20 * DefaultCAValidity})
	if err != nil {
		t.Fatal(err)
	}
	if !iss.Cert.NotAfter.Equal(a.Cert.NotAfter) {
		t.Errorf("NotAfter = %v, want the CA's %v", iss.Cert.NotAfter, a.Cert.NotAfter)
	}
}

func TestCreateAuthority(t *testing.T) {
	t.Parallel()
	a, keyPEM, err := CreateAuthority("etcd/ca", "etcd-ca", RSA2048, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := a.Cert
	if !c.IsCA || c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("IsCA %v MaxPathLen %d MaxPathLenZero %v, want CA with pathlen 0", c.IsCA, c.MaxPathLen, c.MaxPathLenZero)
	}
	if c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Error("CA lacks keyCertSign")
	}
	if c.Subject.CommonName != "etcd-ca" {
		t.Errorf("CN = %q, want etcd-ca", c.Subject.CommonName)
	}
	if life := c.NotAfter.Sub(c.NotBefore); life < 48*time.Hour || life > 48*time.Hour+Backdate+time.Minute {
		t.Errorf("lifetime = %v, want 48h plus backdating", life)
	}
	if !bytes.HasPrefix(keyPEM, []byte("-----BEGIN RSA PRIVATE KEY")) {
		t.Errorf("key PEM starts %q, want an RSA PRIVATE KEY block", keyPEM[:30])
	}
}

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"empty CN", Request{}, "common name is empty"},
		{"empty org", Request{CN: "a", Orgs: []string{"x", " "}}, "organization (group) for \"a\" is empty"},
		{"control character in CN", Request{CN: "evil\nX-Remote-User: admin"}, `common name "evil\nX-Remote-User: admin": contains a control character (U+000A)`},
		{"space around CN", Request{CN: " kubernetes-admin "}, `common name " kubernetes-admin ": begins with whitespace (U+0020)`},
		{"space before org", Request{CN: "a", Orgs: []string{" system:masters"}}, `organization " system:masters": begins with whitespace (U+0020)`},
		{"unknown profile", Request{CN: "a", Profile: "server-ish"}, `unknown profile "server-ish"`},
		{"server without SAN", Request{CN: "a", Profile: ProfileServer}, "needs at least one SAN"},
		{"bad SAN", Request{CN: "a", Hosts: []string{"exa mple"}}, `SAN "exa mple" is neither`},
		{"bad key algorithm", Request{CN: "a", KeyAlgorithm: "dsa"}, `unknown key algorithm "dsa"`},
		{"negative validity", Request{CN: "a", Validity: -time.Hour}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if err := (&Request{CN: "a", Profile: "nope"}).Validate(); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("unknown profile error %v does not wrap ErrUnknownProfile", err)
	}
}

func makeCSR(t testing.TB, subject []byte, dns []string, exts []pkix.Extension) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		RawSubject: subject, DNSNames: dns, ExtraExtensions: exts}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// opensslSubject is the DER openssl writes for -subj "/CN=nakam/O=devops/O=devs".
func opensslSubject(t testing.TB) []byte {
	t.Helper()
	utf8 := func(s string) asn1.RawValue { return asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte(s)} }
	der, err := asn1.Marshal(pkix.RDNSequence{
		{{Type: oidCommonName, Value: utf8("nakam")}},
		{{Type: oidOrganization, Value: utf8("devops")}},
		{{Type: oidOrganization, Value: utf8("devs")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestSignCSRKeepsSubjectBytes(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	subject := opensslSubject(t)
	req, err := ParseCSR("csr.pem", makeCSR(t, subject, []string{"nakam.example"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	iss, err := a.SignCSR(req, ProfileClient, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(iss.Cert.RawSubject, subject) {
		t.Errorf("subject = %s, want the CSR's bytes %s", SubjectString(iss.Cert.RawSubject), SubjectString(subject))
	}
	if !slices.Equal(iss.Cert.DNSNames, []string{"nakam.example"}) {
		t.Errorf("DNS SANs = %v, want the CSR's", iss.Cert.DNSNames)
	}
	if iss.KeyPEM != nil {
		t.Error("a signed CSR came back with a key")
	}
}

func TestSignCSRRefuses(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	bc, _ := asn1.Marshal(struct {
		IsCA bool `asn1:"optional"`
	}{true})
	caCSR := makeCSR(t, opensslSubject(t), nil, []pkix.Extension{{Id: oidBasicConstraints, Critical: true, Value: bc}})
	plain := makeCSR(t, opensslSubject(t), nil, nil)
	tests := []struct {
		name, profile string
		csr           []byte
		want          string
	}{
		{"CA true", ProfileClient, caCSR, "requests a CA certificate"},
		{"unknown profile", "admin", plain, `unknown profile "admin"`},
		{"server without SANs", ProfileServer, plain, "at least one DNS or IP SAN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseCSR("csr", tt.csr)
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.SignCSR(req, tt.profile, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SignCSR() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseCSR(t *testing.T) {
	t.Parallel()
	good := makeCSR(t, opensslSubject(t), nil, nil)
	block, _ := pem.Decode(good)
	badSig := bytes.Clone(block.Bytes)
	badSig[len(badSig)-5] ^= 0xff
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", []byte("  \n"), "CSR in.csr is empty"},
		{"garbage", []byte("hello"), "not a PEM or DER certificate request"},
		{"certificate not CSR", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes}), "holds a CERTIFICATE PEM block"},
		{"bad signature", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: badSig}), "signature does not verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCSR("in.csr", tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseCSR() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := ParseCSR("in.csr", good); err != nil {
		t.Errorf("ParseCSR(good) = %v", err)
	}
}

func FuzzParseCSR(f *testing.F) {
	f.Add(makeCSR(f, opensslSubject(f), []string{"a"}, nil))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseCSR("fuzz", data)
		if err == nil && req.CheckSignature() != nil {
			t.Fatal("ParseCSR accepted a CSR whose signature does not verify")
		}
	})
}

func TestLoadAuthorityErrorsNameTheFile(t *testing.T) {
	t.Parallel()
	a, keyPEM, err := CreateAuthority("ca", "kubernetes", ECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := GenerateKey(ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := a.Issue(&Request{CN: "leaf"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		cert, key     []byte
		wantFile, msg string
	}{
		{"corrupt cert", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), keyPEM, "ca.crt", "corrupt certificate"},
		{"no PEM", []byte("junk"), keyPEM, "ca.crt", "no PEM certificate"},
		{"empty key", a.CertPEM, nil, "ca.key", "file is empty"},
		{"garbage key", a.CertPEM, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), "ca.key", "corrupt private key"},
		{"mismatched key", a.CertPEM, otherKey, "ca.key", "does not match"},
		{"not a CA", leaf.CertPEM, leaf.KeyPEM, "ca.crt", "not a CA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
			os.WriteFile(certPath, tt.cert, 0o644)
			os.WriteFile(keyPath, tt.key, 0o600)
			_, err := LoadAuthority("ca", certPath, keyPath)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tt.wantFile)) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("LoadAuthority() = %v, want an error naming %s with %q", err, tt.wantFile, tt.msg)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"365d", 365 * 24 * time.Hour, true},
		{"8760h", 8760 * time.Hour, true},
		{"30m", 30 * time.Minute, true},
		{"-1d", 0, false},
		{"xd", 0, false},
		{"1y", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestServiceIP(t *testing.T) {
	t.Parallel()
	tests := map[string]string{"10.96.0.0/12": "10.96.0.1", "172.16.0.0/16": "172.16.0.1", "fd00::/108": "fd00::1"}
	for cidr, want := range tests {
		ip, err := ServiceIP(cidr)
		if err != nil || ip.String() != want {
			t.Errorf("ServiceIP(%q) = %v, %v; want %s", cidr, ip, err, want)
		}
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.0/32"} {
		if _, err := ServiceIP(bad); err == nil {
			t.Errorf("ServiceIP(%q) succeeded, want an error", bad)
		}
	}
}

// TestImportsStayLean keeps client-go and apimachinery (and their
// start-up cost) out of the CA path.
func TestImportsStayLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "k8s.io/client-go") || strings.HasPrefix(dep, "k8s.io/apimachinery") ||
			strings.HasPrefix(dep, "github.com/kubegate/kubegate/") && !strings.HasPrefix(dep, "github.com/kubegate/kubegate/internal/") && dep != "github.com/kubegate/kubegate/ca" {
			t.Errorf("package ca depends on %s", dep)
		}
	}
}

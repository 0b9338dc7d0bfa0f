package csrsigning

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// Usages, shortened.
const (
	ds  = certificatesv1.UsageDigitalSignature
	ke  = certificatesv1.UsageKeyEncipherment
	cli = certificatesv1.UsageClientAuth
	srv = certificatesv1.UsageServerAuth
)

// Signer names, shortened.
const (
	apiClient     = certificatesv1.KubeAPIServerClientSignerName
	kubeletClient = certificatesv1.KubeAPIServerClientKubeletSignerName
	kubeletServe  = certificatesv1.KubeletServingSignerName
)

// Subject attribute types.
var (
	oidCN = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidO  = asn1.ObjectIdentifier{2, 5, 4, 10}
)

// keys are made once: RSA key generation is slow.
var (
	p256Key, _  = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384Key, _  = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _   = rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ = ed25519.GenerateKey(rand.Reader)
)

// csrShape describes a test request.
type csrShape struct {
	key    crypto.Signer // nil: P-256
	cn     string
	orgs   []string
	dns    []string
	ips    []net.IP
	emails []string
	uris   []string
	isCA   bool
	raw    pkix.RDNSequence // the subject as encoded, instead of cn and orgs
}

func makeRequest(t testing.TB, s csrShape) *x509.CertificateRequest {
	t.Helper()
	key := s.key
	if key == nil {
		key = p256Key
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: s.cn, Organization: s.orgs},
		DNSNames: s.dns, IPAddresses: s.ips, EmailAddresses: s.emails}
	if s.raw != nil {
		der, err := asn1.Marshal(s.raw)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.RawSubject = der
	}
	for _, u := range s.uris {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	if s.isCA {
		bc, err := asn1.Marshal(struct{ IsCA bool }{true})
		if err != nil {
			t.Fatal(err)
		}
		tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: bc}}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Each signer's rules, and kubegate's own on top, decide what a request
// gets: signed (no error), Failed with the rule's message, or left alone
// (not recognized) (docs/kubernetes-behaviour.md H.3).
func TestSignerRules_H3(t *testing.T) {
	node := csrShape{cn: "system:node:n1", orgs: []string{"system:nodes"}}
	with := func(s csrShape, change func(*csrShape)) csrShape { change(&s); return s }
	nodeServing := with(node, func(s *csrShape) { s.dns = []string{"n1.example"} })
	for _, tt := range []struct {
		name     string
		signer   string
		shape    csrShape
		usages   []certificatesv1.KeyUsage
		ignored  bool   // not recognized: left alone
		wantFail string // empty: signed
	}{
		{name: "client, ECDSA P-256, client auth only", signer: apiClient, shape: csrShape{cn: "jane", orgs: []string{"dev"}}, usages: []certificatesv1.KeyUsage{cli}},
		{name: "client, RSA, every allowed usage", signer: apiClient, shape: csrShape{key: rsaKey, cn: "jane"}, usages: []certificatesv1.KeyUsage{ds, ke, cli}},
		{name: "client, ECDSA P-384", signer: apiClient, shape: csrShape{key: p384Key, cn: "jane"}, usages: []certificatesv1.KeyUsage{ds, cli}},
		{name: "client, Ed25519", signer: apiClient, shape: csrShape{key: edKey, cn: "jane"}, usages: []certificatesv1.KeyUsage{cli}},
		{name: "client, any subject and SANs", signer: apiClient, shape: csrShape{cn: "system:node:x", orgs: []string{"a", "b"}, dns: []string{"x.example"}}, usages: []certificatesv1.KeyUsage{cli}},
		{name: "client, server auth too", signer: apiClient, shape: csrShape{cn: "jane"}, usages: []certificatesv1.KeyUsage{cli, srv},
			wantFail: "invalid usage for client certificate: server auth"},
		{name: "client, no client auth", signer: apiClient, shape: csrShape{cn: "jane"}, usages: []certificatesv1.KeyUsage{ds, ke},
			wantFail: "missing required usage for client certificate: client auth"},
		{name: "client, no usages", signer: apiClient, shape: csrShape{cn: "jane"},
			wantFail: "missing required usage for client certificate: client auth"},
		{name: "client, cert sign", signer: apiClient, shape: csrShape{cn: "jane"}, usages: []certificatesv1.KeyUsage{cli, certificatesv1.UsageCertSign},
			wantFail: "invalid usage for client certificate: cert sign"},
		{name: "client, CA:TRUE", signer: apiClient, shape: csrShape{cn: "jane", isCA: true}, usages: []certificatesv1.KeyUsage{cli},
			wantFail: "CSR requests a CA certificate (CA:TRUE); only leaf certificates are signed"},
		{name: "client, control character in CN", signer: apiClient, shape: csrShape{cn: "ja\x07ne"}, usages: []certificatesv1.KeyUsage{cli},
			wantFail: "CN"},
		{name: "client, leading space in O", signer: apiClient, shape: csrShape{cn: "jane", orgs: []string{" system:masters"}}, usages: []certificatesv1.KeyUsage{cli},
			wantFail: "O"},

		{name: "kubelet client, ECDSA", signer: kubeletClient, shape: node, usages: []certificatesv1.KeyUsage{ds, cli}},
		{name: "kubelet client, RSA with key encipherment", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.key = rsaKey }), usages: []certificatesv1.KeyUsage{ke, cli, ds}},
		{name: "kubelet client, usages repeated", signer: kubeletClient, shape: node, usages: []certificatesv1.KeyUsage{ds, cli, cli}},
		{name: "kubelet client, O with another group", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.orgs = []string{"system:nodes", "system:masters"} }),
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "subject organization is not system:nodes"},
		{name: "kubelet client, no O", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.orgs = nil }),
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "subject organization is not system:nodes"},
		{name: "kubelet client, CN not a node", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.cn = "n1" }),
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "subject common name does not begin with system:node:"},
		{name: "kubelet client, DNS SAN", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.dns = []string{"n1"} }),
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "DNS subjectAltNames are not allowed"},
		{name: "kubelet client, IP SAN", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.ips = []net.IP{net.IPv4(10, 0, 0, 1)} }),
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "IP subjectAltNames are not allowed"},
		{name: "kubelet client, email SAN", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.emails = []string{"n1@example.com"} }),
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "Email subjectAltNames are not allowed"},
		{name: "kubelet client, URI SAN", signer: kubeletClient, shape: with(node, func(s *csrShape) { s.uris = []string{"spiffe://cluster/n1"} }),
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "URI subjectAltNames are not allowed"},
		{name: "kubelet client, a system:masters O that Go does not read", signer: kubeletClient, shape: csrShape{raw: pkix.RDNSequence{
			{{Type: oidO, Value: "system:nodes"}}, {{Type: oidO, Value: asn1.RawValue{Tag: asn1.TagOctetString, Bytes: []byte("system:masters")}}},
			{{Type: oidCN, Value: "system:node:n1"}}}},
			usages: []certificatesv1.KeyUsage{ds, cli}, wantFail: "the O (2.5.4.10) attribute's value is not a string"},
		{name: "client, two CNs", signer: apiClient, shape: csrShape{raw: pkix.RDNSequence{
			{{Type: oidCN, Value: "kubernetes-admin"}}, {{Type: oidCN, Value: "jane"}}}},
			usages: []certificatesv1.KeyUsage{cli}, wantFail: "it holds more than one CN"},
		{name: "client, a UID attribute passes the rules", signer: apiClient, shape: csrShape{raw: pkix.RDNSequence{
			{{Type: oidCN, Value: "jane"}}, {{Type: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}, Value: "victim-uid"}}}},
			usages: []certificatesv1.KeyUsage{cli}},
		{name: "kubelet client, client auth only", signer: kubeletClient, shape: node, usages: []certificatesv1.KeyUsage{cli},
			wantFail: "usages did not match [client auth digital signature key encipherment]"},
		{name: "kubelet client, server auth too", signer: kubeletClient, shape: node, usages: []certificatesv1.KeyUsage{ds, cli, srv},
			wantFail: "usages did not match [client auth digital signature key encipherment]"},

		{name: "kubelet serving, DNS SAN", signer: kubeletServe, shape: nodeServing, usages: []certificatesv1.KeyUsage{ds, ke, srv}},
		{name: "kubelet serving, IP SAN only", signer: kubeletServe, shape: with(node, func(s *csrShape) { s.ips = []net.IP{net.IPv4(10, 0, 0, 1)} }),
			usages: []certificatesv1.KeyUsage{ds, srv}},
		{name: "kubelet serving, no SAN", signer: kubeletServe, shape: node, usages: []certificatesv1.KeyUsage{ds, srv},
			wantFail: "DNS or IP subjectAltName is required"},
		{name: "kubelet serving, email SAN", signer: kubeletServe, shape: with(nodeServing, func(s *csrShape) { s.emails = []string{"n1@example.com"} }),
			usages: []certificatesv1.KeyUsage{ds, srv}, wantFail: "Email subjectAltNames are not allowed"},
		{name: "kubelet serving, URI SAN", signer: kubeletServe, shape: with(nodeServing, func(s *csrShape) { s.uris = []string{"https://n1"} }),
			usages: []certificatesv1.KeyUsage{ds, srv}, wantFail: "URI subjectAltNames are not allowed"},
		{name: "kubelet serving, client auth", signer: kubeletServe, shape: nodeServing, usages: []certificatesv1.KeyUsage{ds, cli},
			wantFail: "usages did not match [digital signature key encipherment server auth]"},
		{name: "kubelet serving, CN not a node", signer: kubeletServe, shape: with(nodeServing, func(s *csrShape) { s.cn = "n1" }),
			usages: []certificatesv1.KeyUsage{ds, srv}, wantFail: "subject common name does not begin with system:node:"},
		{name: "kubelet serving, O not nodes", signer: kubeletServe, shape: with(nodeServing, func(s *csrShape) { s.orgs = []string{"system:masters"} }),
			usages: []certificatesv1.KeyUsage{ds, srv}, wantFail: "subject organization is not system:nodes"},

		{name: "legacy-unknown is never signed", signer: "kubernetes.io/legacy-unknown", shape: csrShape{cn: "jane"}, usages: []certificatesv1.KeyUsage{cli}, ignored: true},
		{name: "another signer is left to its own signer", signer: "example.com/signer", shape: csrShape{cn: "jane"}, usages: []certificatesv1.KeyUsage{cli}, ignored: true},
		{name: "kube-apiserver serving is not signed here", signer: "kubernetes.io/kube-apiserver-serving", shape: nodeServing, usages: []certificatesv1.KeyUsage{ds, srv}, ignored: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recognized, err := validate(tt.signer, makeRequest(t, tt.shape), tt.usages)
			switch {
			case tt.ignored:
				if recognized {
					t.Errorf("recognized a request for %s (err %v); want it left alone", tt.signer, err)
				}
			case !recognized:
				t.Errorf("a request for %s was not recognized", tt.signer)
			case tt.wantFail == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantFail != "" && (err == nil || !strings.Contains(err.Error(), tt.wantFail)):
				t.Errorf("got %v, want a failure saying %q", err, tt.wantFail)
			}
		})
	}
}

// The lifetime: the signing duration unless expirationSeconds asks for
// less, never under ten minutes; NotBefore five minutes back; a lifetime
// of eight hours or more also ends five minutes early (H.3).
func TestLifetime_H3(t *testing.T) {
	year := 365 * 24 * time.Hour
	secs := func(s int32) *int32 { return &s }
	for _, tt := range []struct {
		max  time.Duration
		exp  *int32
		want time.Duration
	}{
		{year, nil, year},
		{year, secs(3600), time.Hour},
		{year, secs(600), 10 * time.Minute},
		{year, secs(60), 10 * time.Minute},
		{year, secs(2 * 365 * 24 * 3600), year},
		{time.Hour, secs(86400), time.Hour},
		{time.Hour, nil, time.Hour},
	} {
		if got := Duration(tt.max, tt.exp); got != tt.want {
			t.Errorf("Duration(%v, %v) = %v, want %v", tt.max, tt.exp, got, tt.want)
		}
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		lifetime     time.Duration
		wantNotAfter time.Time
	}{
		{time.Hour, now.Add(time.Hour)},
		{8*time.Hour - time.Second, now.Add(8*time.Hour - time.Second)},
		{8 * time.Hour, now.Add(8*time.Hour - 5*time.Minute)},
		{year, now.Add(year - 5*time.Minute)},
	} {
		leaf, err := LeafFor([]certificatesv1.KeyUsage{ds, cli}, tt.lifetime, now)
		if err != nil {
			t.Fatal(err)
		}
		if !leaf.NotBefore.Equal(now.Add(-5*time.Minute)) || !leaf.NotAfter.Equal(tt.wantNotAfter) {
			t.Errorf("lifetime %v: %v to %v, want %v to %v", tt.lifetime, leaf.NotBefore, leaf.NotAfter, now.Add(-5*time.Minute), tt.wantNotAfter)
		}
	}
}

// spec.usages become the key usages and extended key usages, each once
// and in order; a usage x509 has no counterpart for is refused.
func TestUsages_H3(t *testing.T) {
	leaf, err := LeafFor([]certificatesv1.KeyUsage{srv, ds, ke, cli, certificatesv1.UsageSigning, srv}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if leaf.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
		t.Errorf("key usage %b", leaf.KeyUsage)
	}
	if len(leaf.ExtKeyUsage) != 2 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth || leaf.ExtKeyUsage[1] != x509.ExtKeyUsageClientAuth {
		t.Errorf("extended key usage %v, want server auth, client auth", leaf.ExtKeyUsage)
	}
	if _, err := LeafFor([]certificatesv1.KeyUsage{cli, "teleport"}, time.Hour, time.Now()); err == nil || !strings.Contains(err.Error(), `"teleport"`) {
		t.Errorf("an unknown usage gave %v", err)
	}
}

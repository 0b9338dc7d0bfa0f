package pemutil

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/cert"

	"github.com/kubegate/kubegate/internal/testpki"
)

func TestBlocks(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "blocks-ca")
	data := bytes.Join([][]byte{[]byte("# bundle\n"), ca.CertPEM, []byte("between\n"), ca.KeyPEM, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n")}, nil)
	var got []string
	for n, b := range Blocks(data) {
		got = append(got, strings.Repeat("#", n)+b.Type)
	}
	if want := []string{"#CERTIFICATE", "##PRIVATE KEY"}; !slices.Equal(got, want) {
		t.Errorf("Blocks = %q, want %q (text skipped, an unterminated block ends the walk)", got, want)
	}
	for range Blocks(data) {
		break // a caller may stop early
	}
	if First([]byte("no PEM here")) != nil {
		t.Error("First(text) is a block, want nil")
	}
	if b := First(data); b == nil || b.Type != "CERTIFICATE" {
		t.Errorf("First = %v, want the CERTIFICATE block", b)
	}
}

// TestCertificatesAgainstClientGo_A1 holds Certificates to client-go's
// cert.ParseCertsPEM, which kube-apiserver reads --client-ca-file with: the
// same certificates, in the same order, and an error for the same inputs,
// except for a CERTIFICATE block with headers, which kubegate reads (and
// refuses when it does not parse) and client-go skips.
func TestCertificatesAgainstClientGo_A1(t *testing.T) {
	t.Parallel()
	a := testpki.NewCA(t, "a-ca")
	b := testpki.NewCA(t, "b-ca")
	corrupt := []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	withHeaders := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Comment": "b"}, Bytes: b.Cert.Raw})
	tests := []struct {
		name       string
		data       []byte
		want       []*x509.Certificate // nil: an error
		wantErr    string
		clientGoOK []*x509.Certificate // set where client-go differs on purpose
	}{
		{name: "one certificate", data: a.CertPEM, want: []*x509.Certificate{a.Cert}},
		{name: "a bundle, in order", data: bytes.Join([][]byte{b.CertPEM, a.CertPEM}, nil), want: []*x509.Certificate{b.Cert, a.Cert}},
		{name: "text and keys between certificates are skipped", data: bytes.Join([][]byte{[]byte("subject=a\n"), a.CertPEM, a.KeyPEM, b.CertPEM, []byte("trailer")}, nil), want: []*x509.Certificate{a.Cert, b.Cert}},
		{name: "empty data", data: nil, wantErr: "no PEM certificates found"},
		{name: "keys only", data: a.KeyPEM, wantErr: "no PEM certificates found"},
		{name: "not PEM", data: []byte("ssh-rsa AAAA"), wantErr: "no PEM certificates found"},
		{name: "a corrupt certificate is named by its block", data: bytes.Join([][]byte{a.KeyPEM, a.CertPEM, corrupt}, nil), wantErr: "PEM block 3: x509: malformed certificate"},
		{name: "a corrupt certificate with headers is an error", data: bytes.Join([][]byte{a.CertPEM, []byte("-----BEGIN CERTIFICATE-----\nComment: x\n\nAAAA\n-----END CERTIFICATE-----\n")}, nil),
			wantErr: "PEM block 2: x509: malformed certificate", clientGoOK: []*x509.Certificate{a.Cert}},
		{name: "a certificate with headers is read", data: bytes.Join([][]byte{a.CertPEM, withHeaders}, nil),
			want: []*x509.Certificate{a.Cert, b.Cert}, clientGoOK: []*x509.Certificate{a.Cert}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Certificates(tt.data)
			kube, kubeErr := cert.ParseCertsPEM(tt.data)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Certificates error = %v, want %q", err, tt.wantErr)
				}
				if tt.clientGoOK != nil {
					if kubeErr != nil || !sameCerts(kube, tt.clientGoOK) {
						t.Errorf("cert.ParseCertsPEM = %d certificates, %v; want %d", len(kube), kubeErr, len(tt.clientGoOK))
					}
				} else if kubeErr == nil {
					t.Errorf("cert.ParseCertsPEM accepted what Certificates refuses")
				}
				return
			}
			if err != nil {
				t.Fatalf("Certificates: %v", err)
			}
			if !sameCerts(got, tt.want) {
				t.Errorf("Certificates = %d certificates, not the %d expected", len(got), len(tt.want))
			}
			wantKube := tt.want
			if tt.clientGoOK != nil {
				wantKube = tt.clientGoOK
			}
			if kubeErr != nil || !sameCerts(kube, wantKube) {
				t.Errorf("cert.ParseCertsPEM = %d certificates, %v; want %d", len(kube), kubeErr, len(wantKube))
			}
		})
	}
	if _, err := Certificates(nil); !errors.Is(err, ErrNoCertificates) {
		t.Errorf("Certificates(nil) error = %v, want ErrNoCertificates", err)
	}
}

// corruptWithHeaders reports whether data has a CERTIFICATE block with
// headers that does not parse: client-go skips it, Certificates refuses it.
func corruptWithHeaders(data []byte) bool {
	for _, b := range Blocks(data) {
		if _, err := x509.ParseCertificate(b.Bytes); b.Type == "CERTIFICATE" && len(b.Headers) > 0 && err != nil {
			return true
		}
	}
	return false
}

func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

// FuzzCertificates checks that Certificates never panics and reads at least
// every certificate client-go's cert.ParseCertsPEM reads, in order, unless
// a CERTIFICATE block with headers that client-go skips does not parse.
func FuzzCertificates(f *testing.F) {
	ca := testpki.NewCA(f, "fuzz-ca")
	f.Add(ca.CertPEM)
	f.Add(append(slices.Clone(ca.KeyPEM), ca.CertPEM...))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Certificates(data)
		kube, kubeErr := cert.ParseCertsPEM(data)
		if kubeErr != nil {
			return
		}
		if err != nil && !corruptWithHeaders(data) {
			t.Fatalf("Certificates refused what cert.ParseCertsPEM reads: %v", err)
		}
		i := 0
		for _, c := range got {
			if i < len(kube) && c.Equal(kube[i]) {
				i++
			}
		}
		if i != len(kube) {
			t.Fatalf("Certificates = %d certificates, missing some of client-go's %d", len(got), len(kube))
		}
	})
}

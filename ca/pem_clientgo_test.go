package ca

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// TestEncodeKeyAgainstKeyutil holds EncodeKey to client-go's
// keyutil.MarshalPrivateKeyToPEM: the same bytes for every key kubegate
// issues, and an error for other key types (kubegate's message naming the
// step).
func TestEncodeKeyAgainstKeyutil(t *testing.T) {
	t.Parallel()
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, key := range []crypto.Signer{p256, p384, rsaKey, edKey} {
		got, err := EncodeKey(key)
		want, kubeErr := keyutil.MarshalPrivateKeyToPEM(key)
		if kubeErr != nil {
			if err == nil || !strings.HasPrefix(err.Error(), "encode key: unsupported key type") {
				t.Errorf("EncodeKey(%T) error = %v, want kubegate's unsupported key type error where keyutil refuses", key, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("EncodeKey(%T) = %q, %v; want keyutil's %q", key, got, err, want)
		}
	}
}

// TestParseKeyPEMAgainstKeyutil compares ParseKeyPEM, cfssl's reader behind
// the file's own errors, with client-go's keyutil.ParsePrivateKeyPEM: the
// same key for the files kubeadm and kubegate write, both refusing an
// encrypted key, and the differences ParseKeyPEM keeps shown: it reads the
// first block that is not EC PARAMETERS whatever its type says, where
// keyutil reads every block as the key its type names and skips the rest.
func TestParseKeyPEMAgainstKeyutil(t *testing.T) {
	t.Parallel()
	ecKey, ecPEM, err := GenerateKey(ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, rsaPEM, err := GenerateKey(RSA2048)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edDER, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := CreateAuthority("ca", "kubernetes", ECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY",
		Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00000000000000000000000000000000"}, Bytes: bytes.Repeat([]byte{7}, 48)})
	tests := []struct {
		name      string
		data      []byte
		want      crypto.PublicKey // nil: "corrupt private key"
		keyutilOK bool             // keyutil's answer where it differs
		differs   bool
	}{
		{name: "SEC 1 EC, as kubegate writes it", data: ecPEM, want: ecKey.Public()},
		{name: "PKCS #1 RSA, as kubeadm writes it", data: rsaPEM, want: rsaKey.Public()},
		{name: "PKCS #8", data: pkcs8, want: ecKey.Public()},
		{name: "EC PARAMETERS first, as openssl ecparam writes it", data: bytes.Join([][]byte{pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}}), ecPEM}, nil), want: ecKey.Public()},
		{name: "text after the key", data: append(append([]byte{}, ecPEM...), "trailer\n"...), want: ecKey.Public()},
		{name: "Ed25519", data: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: edDER}), want: edKey.Public()},
		{name: "an encrypted key", data: encrypted},
		{name: "a public key", data: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: mustPKIX(t, ecKey.Public())})},
		{name: "ParseKeyPEM refuses a key after a certificate", data: bytes.Join([][]byte{a.CertPEM, ecPEM}, nil), keyutilOK: true, differs: true},
		{name: "ParseKeyPEM reads a key under another type's name", data: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: p8}), want: ecKey.Public(), differs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKeyPEM("ca.key", tt.data)
			if tt.want == nil {
				if err == nil || err.Error() != "ca.key: corrupt private key" {
					t.Errorf("ParseKeyPEM error = %v, want %q", err, "ca.key: corrupt private key")
				}
			} else if err != nil || !got.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tt.want) {
				t.Errorf("ParseKeyPEM: %v, not the expected key", err)
			}
			_, kubeErr := keyutil.ParsePrivateKeyPEM(tt.data)
			wantKube := tt.want != nil
			if tt.differs {
				wantKube = tt.keyutilOK
			}
			if (kubeErr == nil) != wantKube {
				t.Errorf("keyutil.ParsePrivateKeyPEM error = %v, want a key: %v", kubeErr, wantKube)
			}
		})
	}
}

// TestParseCertPEMAgainstClientGo compares ParseCertPEM with the first
// certificate client-go's cert.ParseCertsPEM reads: the same certificate
// for a certificate file or a bundle, and the difference ParseCertPEM
// keeps shown: it reads the first block only, so a file that starts with
// anything else holds no certificate for it.
func TestParseCertPEMAgainstClientGo(t *testing.T) {
	t.Parallel()
	a, keyPEM, err := CreateAuthority("ca", "kubernetes", ECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := a.Issue(&Request{CN: "leaf"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		want    *x509.Certificate // nil: "no PEM certificate found"
		differs bool              // client-go reads want2 instead
		want2   *x509.Certificate
	}{
		{name: "a certificate", data: a.CertPEM, want: a.Cert},
		{name: "a bundle: its first", data: bytes.Join([][]byte{leaf.CertPEM, a.CertPEM}, nil), want: leaf.Cert},
		{name: "text before the certificate", data: append([]byte("subject=CN=kubernetes\n"), a.CertPEM...), want: a.Cert},
		{name: "a key", data: keyPEM},
		{name: "ParseCertPEM finds none after a key", data: bytes.Join([][]byte{keyPEM, a.CertPEM}, nil), differs: true, want2: a.Cert},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCertPEM("ca.crt", tt.data)
			if tt.want == nil {
				if err == nil || err.Error() != "ca.crt: no PEM certificate found" {
					t.Errorf("ParseCertPEM error = %v, want %q", err, "ca.crt: no PEM certificate found")
				}
			} else if err != nil || !got.Equal(tt.want) {
				t.Errorf("ParseCertPEM: %v, not the expected certificate", err)
			}
			kube, kubeErr := cert.ParseCertsPEM(tt.data)
			want := tt.want
			if tt.differs {
				want = tt.want2
			}
			if want == nil {
				if kubeErr == nil {
					t.Errorf("cert.ParseCertsPEM read %d certificates, want none", len(kube))
				}
			} else if kubeErr != nil || !kube[0].Equal(want) {
				t.Errorf("cert.ParseCertsPEM: %v, not the expected first certificate", kubeErr)
			}
		})
	}
}

func mustPKIX(t *testing.T, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

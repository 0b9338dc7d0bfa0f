package serviceaccount

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
)

func TestParsePublicKeysPEM(t *testing.T) {
	t.Parallel()
	k := testKeys()
	der := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rsaPKCS1 := pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.rsa))
	rsaPKCS8 := pemBlock("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(k.rsa)))
	ecSEC1 := pemBlock("EC PRIVATE KEY", der(x509.MarshalECPrivateKey(k.p384)))
	ecPKCS8 := pemBlock("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(k.p256)))
	ca := testpki.NewCA(t, "sa-ca")
	rsaCert := selfSigned(t, k.rsa)
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	edPub := pemBlock("PUBLIC KEY", der(x509.MarshalPKIXPublicKey(edPriv.Public())))
	ecParams := pemBlock("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07})

	tests := []struct {
		name    string
		data    []byte
		want    []crypto.PublicKey
		wantErr error
	}{
		{"A.3 sa.pub: PKIX RSA public key", pkixPEM(t, k.rsa.Public()), []crypto.PublicKey{k.rsa.Public()}, nil},
		{"A.3 PKIX EC public key", pkixPEM(t, k.p256.Public()), []crypto.PublicKey{k.p256.Public()}, nil},
		{"A.3 RSA private key, PKCS #1: its public half", rsaPKCS1, []crypto.PublicKey{k.rsa.Public()}, nil},
		{"A.3 RSA private key, PKCS #8", rsaPKCS8, []crypto.PublicKey{k.rsa.Public()}, nil},
		{"A.3 EC private key, SEC 1", ecSEC1, []crypto.PublicKey{k.p384.Public()}, nil},
		{"A.3 EC private key, PKCS #8", ecPKCS8, []crypto.PublicKey{k.p256.Public()}, nil},
		{"A.3 certificate with an EC key", ca.CertPEM, []crypto.PublicKey{ca.Key.Public()}, nil},
		{"A.3 certificate with an RSA key", rsaCert, []crypto.PublicKey{k.rsa.Public()}, nil},
		{"A.3 several blocks, in order", bytes.Join([][]byte{pkixPEM(t, k.p256.Public()), rsaPKCS1, ca.CertPEM}, nil),
			[]crypto.PublicKey{k.p256.Public(), k.rsa.Public(), ca.Key.Public()}, nil},
		{"A.3 block types are not checked", pemBlock("CERTIFICATE", der(x509.MarshalPKIXPublicKey(k.p256.Public()))),
			[]crypto.PublicKey{k.p256.Public()}, nil},
		{"A.3 non-key blocks are skipped", bytes.Join([][]byte{ecParams, ecSEC1}, nil), []crypto.PublicKey{k.p384.Public()}, nil},
		{"A.3 text between blocks is ignored", bytes.Join([][]byte{[]byte("# sa key\n"), pkixPEM(t, k.p256.Public()), []byte("trailer")}, nil),
			[]crypto.PublicKey{k.p256.Public()}, nil},
		{"A.3 Ed25519 keys are skipped", bytes.Join([][]byte{edPub, pkixPEM(t, k.p256.Public())}, nil), []crypto.PublicKey{k.p256.Public()}, nil},
		{"A.3 no usable key is an error", ecParams, nil, ErrNoKeys},
		{"A.3 only an Ed25519 key is an error", edPub, nil, ErrNoKeys},
		{"A.3 P-224 keys are unusable", pkixPEM(t, k.p224.Public()), nil, ErrNoKeys},
		{"A.3 PKCS #1 public keys are not read", pemBlock("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)), nil, ErrNoKeys},
		{"no PEM at all is an error", []byte("ssh-rsa AAAA"), nil, ErrNoKeys},
		{"empty data is an error", nil, nil, ErrNoKeys},
		{"a corrupt block is skipped", bytes.Join([][]byte{pemBlock("PUBLIC KEY", []byte{0x30, 0x82, 0xff}), pkixPEM(t, k.p256.Public())}, nil),
			[]crypto.PublicKey{k.p256.Public()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePublicKeysPEM(tt.data)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePublicKeysPEM: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d keys, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !got[i].(interface{ Equal(crypto.PublicKey) bool }).Equal(tt.want[i]) {
					t.Errorf("key %d = %T, not the expected key", i, got[i])
				}
			}
		})
	}
}

func TestParsePrivateKeyPEM(t *testing.T) {
	t.Parallel()
	k := testKeys()
	p8, err := x509.MarshalPKCS8PrivateKey(k.p256)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := x509.MarshalECPrivateKey(k.p384)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want crypto.PublicKey
	}{
		{"kubeadm sa.key: PKCS #1 RSA", pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.rsa)), k.rsa.Public()},
		{"SEC 1 EC", pemBlock("EC PRIVATE KEY", ec), k.p384.Public()},
		{"PKCS #8 EC after a public key", bytes.Join([][]byte{pkixPEM(t, k.rsa.Public()), pemBlock("PRIVATE KEY", p8)}, nil), k.p256.Public()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePrivateKeyPEM(tt.data)
			if err != nil {
				t.Fatalf("ParsePrivateKeyPEM: %v", err)
			}
			if !got.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tt.want) {
				t.Error("wrong key")
			}
		})
	}
	if _, err := ParsePrivateKeyPEM(pkixPEM(t, k.rsa.Public())); err == nil {
		t.Error("ParsePrivateKeyPEM(public key): got nil error")
	}
}

func TestReadPublicKeysFiles(t *testing.T) {
	t.Parallel()
	k := testKeys()
	dir := t.TempDir()
	good := filepath.Join(dir, "sa.pub")
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(good, pkixPEM(t, k.p256.Public()), 0o644)
	os.WriteFile(bad, []byte("nothing here"), 0o644)
	keys, err := ReadPublicKeysFiles(good, good)
	if err != nil || len(keys) != 2 {
		t.Errorf("ReadPublicKeysFiles(good, good) = %d keys, %v; want 2", len(keys), err)
	}
	_, err = ReadPublicKeysFiles(good, bad)
	if !errors.Is(err, ErrNoKeys) || !strings.Contains(err.Error(), bad) {
		t.Errorf("A.3 a file with no usable key: error = %v, want ErrNoKeys naming %s", err, bad)
	}
	if _, err := ReadPublicKeysFiles(); err == nil {
		t.Error("ReadPublicKeysFiles(): got nil error")
	}
}

func selfSigned(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "sa"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("CERTIFICATE", der)
}

package serviceaccount

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/util/keyutil"

	"github.com/kubegate/kubegate/internal/testpki"
)

// usable is keys without those no JWS algorithm verifies with.
func usable(keys []any) []crypto.PublicKey {
	var out []crypto.PublicKey
	for _, k := range keys {
		if supportedKey(k) {
			out = append(out, k)
		}
	}
	return out
}

func sameKeys(a, b []crypto.PublicKey) bool {
	return slices.EqualFunc(a, b, func(x, y crypto.PublicKey) bool {
		return x.(interface{ Equal(crypto.PublicKey) bool }).Equal(y)
	})
}

// TestPublicKeysAgainstKeyutil_A3 holds ReadPublicKeysFiles to client-go's
// keyutil.PublicKeysFromFile, which kube-apiserver reads
// --service-account-key-file with: every file it accepts is accepted, with
// the same keys in the same order, leaving out only P-224 keys; and the two
// differences kept on purpose (an EC private key in PKCS #8 is read, a file
// of only P-224 keys is refused) are shown.
func TestPublicKeysAgainstKeyutil_A3(t *testing.T) {
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
	p224 := pkixPEM(t, k.p224.Public())
	ca := testpki.NewCA(t, "sa-ca")
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	edPub := pemBlock("PUBLIC KEY", der(x509.MarshalPKIXPublicKey(edPriv.Public())))
	ecParams := pemBlock("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07})

	tests := []struct {
		name string
		data []byte
		// extra are the keys kubegate reads beyond keyutil's usable ones,
		// by position in kubegate's result.
		extra map[int]crypto.PublicKey
		// refused: keyutil reads the file, kubegate refuses it.
		refused bool
	}{
		{name: "sa.pub, PKIX RSA", data: pkixPEM(t, k.rsa.Public())},
		{name: "PKIX EC", data: pkixPEM(t, k.p521.Public())},
		{name: "RSA private key, PKCS #1", data: rsaPKCS1},
		{name: "RSA private key, PKCS #8", data: rsaPKCS8},
		{name: "EC private key, SEC 1", data: ecSEC1},
		{name: "certificates", data: bytes.Join([][]byte{ca.CertPEM, selfSigned(t, k.rsa)}, nil)},
		{name: "a mixed file, in order", data: bytes.Join([][]byte{ecParams, ecSEC1, []byte("# note\n"), pkixPEM(t, k.rsa.Public()), ca.CertPEM}, nil)},
		{name: "block types are not checked", data: pemBlock("CERTIFICATE", der(x509.MarshalPKIXPublicKey(k.p256.Public())))},
		{name: "Ed25519 and corrupt blocks are skipped", data: bytes.Join([][]byte{edPub, pemBlock("PUBLIC KEY", []byte{0x30, 0x82}), ecSEC1}, nil)},
		{name: "nothing usable", data: bytes.Join([][]byte{ecParams, edPub}, nil)},
		{name: "not PEM", data: []byte("ssh-rsa AAAA")},
		{name: "kubegate also reads an EC private key in PKCS #8", data: bytes.Join([][]byte{rsaPKCS1, ecPKCS8}, nil),
			extra: map[int]crypto.PublicKey{1: k.p256.Public()}},
		{name: "kubegate leaves out P-224 keys", data: bytes.Join([][]byte{p224, ecSEC1}, nil)},
		{name: "kubegate refuses a file of only P-224 keys", data: p224, refused: true},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, string(rune('a'+i))+".pem")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			kube, kubeErr := keyutil.PublicKeysFromFile(path)
			got, err := ReadPublicKeysFiles(path)
			if tt.refused {
				if kubeErr != nil || !errors.Is(err, ErrNoKeys) {
					t.Fatalf("keyutil: %v; kubegate: %v; want keyutil to read the file and kubegate to refuse it", kubeErr, err)
				}
				return
			}
			want := usable(kube)
			for _, i := range slices.Sorted(maps.Keys(tt.extra)) {
				want = slices.Insert(want, i, tt.extra[i])
			}
			if len(want) == 0 {
				if err == nil {
					t.Fatalf("kubegate read %d keys where keyutil read none usable (%v)", len(got), kubeErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("kubegate refused a file keyutil reads: %v", err)
			}
			if !sameKeys(got, want) {
				t.Errorf("kubegate read %d keys, keyutil %d usable (+%d kept on purpose); want the same keys in order", len(got), len(usable(kube)), len(tt.extra))
			}
		})
	}
}

// TestPrivateKeyAgainstKeyutil_A3 holds ParsePrivateKeyPEM to client-go's
// keyutil.ParsePrivateKeyPEM, which kube-apiserver reads
// --service-account-signing-key-file with: the same key for every file
// kube-apiserver can sign with, and the differences kept on purpose shown.
func TestPrivateKeyAgainstKeyutil_A3(t *testing.T) {
	t.Parallel()
	k := testKeys()
	der := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	ed := pemBlock("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(edPriv)))
	ecSEC1 := pemBlock("EC PRIVATE KEY", der(x509.MarshalECPrivateKey(k.p384)))
	tests := []struct {
		name string
		data []byte
		want crypto.PublicKey // nil: refused
		// kube is keyutil's key where it differs; nil with want set means
		// keyutil finds no key.
		kube     crypto.PublicKey
		kubeDiff bool
	}{
		{name: "kubeadm sa.key, PKCS #1 RSA", data: pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.rsa)), want: k.rsa.Public()},
		{name: "PKCS #8 RSA", data: pemBlock("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(k.rsa))), want: k.rsa.Public()},
		{name: "SEC 1 EC after EC PARAMETERS", data: bytes.Join([][]byte{pemBlock("EC PARAMETERS", []byte{6, 8, 42}), ecSEC1}, nil), want: k.p384.Public()},
		{name: "PKCS #8 EC after a public key", data: bytes.Join([][]byte{pkixPEM(t, k.rsa.Public()), pemBlock("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(k.p256)))}, nil), want: k.p256.Public()},
		{name: "a public key only", data: pkixPEM(t, k.rsa.Public())},
		{name: "kubegate reads a key under another type's name", data: pemBlock("EC PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(k.p256))),
			want: k.p256.Public(), kubeDiff: true},
		{name: "kubegate reads on past an Ed25519 key", data: bytes.Join([][]byte{ed, ecSEC1}, nil),
			want: k.p384.Public(), kube: edPriv.Public(), kubeDiff: true},
		{name: "kubegate refuses a P-224 key", data: pemBlock("EC PRIVATE KEY", der(x509.MarshalECPrivateKey(k.p224))),
			kube: k.p224.Public(), kubeDiff: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePrivateKeyPEM(tt.data)
			kube, kubeErr := keyutil.ParsePrivateKeyPEM(tt.data)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("kubegate read a key, want an error")
				}
			} else if err != nil || !got.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tt.want) {
				t.Fatalf("kubegate: %v, not the expected key", err)
			}
			wantKube := tt.want
			if tt.kubeDiff {
				wantKube = tt.kube
			}
			if wantKube == nil {
				if kubeErr == nil {
					t.Errorf("keyutil read a %T, want no key", kube)
				}
				return
			}
			s, ok := kube.(crypto.Signer)
			if kubeErr != nil || !ok || !s.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(wantKube) {
				t.Errorf("keyutil: %T, %v; not the expected key", kube, kubeErr)
			}
		})
	}
}

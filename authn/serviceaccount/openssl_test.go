package serviceaccount

import (
	"context"
	"crypto"
	"encoding/asn1"
	"encoding/base64"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOpenSSLFixtures reads keys as openssl writes them and verifies a
// token that openssl signed (see testdata/gen.sh).
func TestOpenSSLFixtures(t *testing.T) {
	t.Parallel()
	pub := readFixture(t, "sa.pub")
	key := readFixture(t, "sa.key")
	ecKey := readFixture(t, "ec.key")
	ecCrt := readFixture(t, "ec.crt")

	equal := func(a, b crypto.PublicKey) bool { return a.(interface{ Equal(crypto.PublicKey) bool }).Equal(b) }
	pubs, err := ParsePublicKeysPEM(pub)
	if err != nil {
		t.Fatalf("A.3 sa.pub: %v", err)
	}
	fromKey, err := ParsePublicKeysPEM(key)
	if err != nil || !equal(fromKey[0], pubs[0]) {
		t.Fatalf("A.3 the public key from openssl's PKCS #8 sa.key differs from sa.pub (%v)", err)
	}
	ecFromKey, err := ParsePublicKeysPEM(ecKey)
	if err != nil || len(ecFromKey) != 1 {
		t.Fatalf("A.3 ec.key (EC PARAMETERS + EC PRIVATE KEY): %d keys, %v; want 1", len(ecFromKey), err)
	}
	ecFromCrt, err := ParsePublicKeysPEM(ecCrt)
	if err != nil || !equal(ecFromCrt[0], ecFromKey[0]) {
		t.Fatalf("A.3 ec.crt: key differs from ec.key (%v)", err)
	}
	if _, err := ParsePrivateKeyPEM(key); err != nil {
		t.Errorf("ParsePrivateKeyPEM(sa.key): %v", err)
	}
	if _, err := ParsePrivateKeyPEM(ecKey); err != nil {
		t.Errorf("ParsePrivateKeyPEM(ec.key): %v", err)
	}

	signedAt := time.Date(2030, 6, 1, 13, 0, 0, 0, time.UTC)
	a := newTestAuthenticator(t, append(pubs, ecFromCrt...), func(o *Options) { o.Now = fixedClock(signedAt.Add(time.Minute)) })
	tok := strings.TrimSpace(string(readFixture(t, "rs256.jwt")))
	resp, ok, err := a.AuthenticateToken(context.Background(), tok)
	if !ok || err != nil {
		t.Fatalf("token signed by openssl: ok=%v err=%v", ok, err)
	}
	want := authn.User{
		Name: "system:serviceaccount:kube-system:coredns", UID: "sa-uid-1",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", authn.AllAuthenticated},
		Extra: map[string][]string{
			PodNameKey: {"coredns-0"}, PodUIDKey: {"pod-uid-1"},
			authn.CredentialIDKey: {"JTI=0d6b7a4e-5f1c-4a53-9c63-0b8f7f1e2a10"},
		},
	}
	if !reflect.DeepEqual(resp.User, want) {
		t.Errorf("User =\n%#v\nwant\n%#v", resp.User, want)
	}
}

// TestOpenSSLVerifiesIssuedTokens checks the Issuer's RS256 and ES256
// signatures with openssl dgst -verify.
func TestOpenSSLVerifiesIssuedTokens(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("openssl is required in CI")
		}
		t.Skip("openssl not installed")
	}
	for _, name := range []string{"sa.key", "ec.key"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key, err := ParsePrivateKeyPEM(readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			res, err := newTestIssuer(t, key).Issue(TokenRequest{Namespace: "default", Name: "sa", UID: "u"})
			if err != nil {
				t.Fatal(err)
			}
			i := strings.LastIndexByte(res.Token, '.')
			sig, err := base64.RawURLEncoding.DecodeString(res.Token[i+1:])
			if err != nil {
				t.Fatal(err)
			}
			if name == "ec.key" {
				// JWS ES256 is r||s; openssl wants an ASN.1 ECDSA-Sig-Value.
				half := len(sig) / 2
				sig, err = asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(sig[:half]), new(big.Int).SetBytes(sig[half:])})
				if err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			files := map[string][]byte{"pub.pem": pkixPEM(t, key.Public()), "sig.bin": sig, "data": []byte(res.Token[:i])}
			for f, b := range files {
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("openssl", "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.bin", "data")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Verified OK") {
				t.Errorf("openssl dgst -verify: %v\n%s", err, out)
			}
		})
	}
}

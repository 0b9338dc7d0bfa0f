package serviceaccount

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/client-go/util/keyutil"
)

// FuzzAuthenticateToken feeds arbitrary tokens to an authenticator with
// RSA and EC keys. Whatever the input: no panic, a consistent three-valued
// result, no part of the token in the error, and no identity other than
// the ones the seeds were really signed for.
func FuzzAuthenticateToken(f *testing.F) {
	k := testKeys()
	iss := newTestIssuer(f, k.p256)
	bound, err := iss.Issue(TokenRequest{Namespace: "default", Name: "sa", UID: "sa-uid", Pod: &ObjectRef{Name: "p", UID: "pu"}})
	if err != nil {
		f.Fatal(err)
	}
	legacy, err := newTestIssuer(f, k.rsa).IssueLegacy("default", "sa", "sa-uid", "sa-token")
	if err != nil {
		f.Fatal(err)
	}
	valid := bound.Token
	parts := strings.Split(valid, ".")
	for _, s := range []string{
		valid,
		legacy,
		signRaw(f, jwt.SigningMethodRS256, k.rsa, boundClaims(), nil),
		signRaw(f, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, boundClaims(), nil),
		signRaw(f, jwt.SigningMethodHS256, pkixPEM(f, k.p256.Public()), boundClaims(), nil),
		signRaw(f, jwt.SigningMethodES256, k.p256b, boundClaims(), map[string]any{"kid": iss.KeyID()}),
		parts[0] + "." + parts[1],
		valid + "." + parts[2],
		parts[0] + ".." + parts[2],
		"{\"payload\":\"\"}",
		"..",
		"abc",
		"",
	} {
		f.Add(s)
	}
	a := newTestAuthenticator(f, []crypto.PublicKey{k.p256.Public(), k.rsa.Public()})
	f.Fuzz(func(t *testing.T, token string) {
		resp, ok, err := a.AuthenticateToken(context.Background(), token)
		if ok != (resp != nil) || (ok && err != nil) {
			t.Fatalf("inconsistent result: %v, %v, %v", resp, ok, err)
		}
		assertNoSecret(t, err, token)
		if ok && resp.User.Name != "system:serviceaccount:default:sa" {
			t.Fatalf("authenticated an identity no seed was signed for: %q", resp.User.Name)
		}
	})
}

// FuzzParsePublicKeysPEM checks that any key file either yields usable
// keys or ErrNoKeys, without panicking, and that it yields, in order, every
// usable key client-go's keyutil.ParsePublicKeysPEM (kube-apiserver's
// reader of --service-account-key-file) finds in it (A.3).
func FuzzParsePublicKeysPEM(f *testing.F) {
	k := testKeys()
	ec, _ := x509.MarshalECPrivateKey(k.p256)
	f.Add(pkixPEM(f, k.p256.Public()))
	f.Add(pkixPEM(f, k.rsa.Public()))
	f.Add(pemBlock("EC PRIVATE KEY", ec))
	f.Add(bytes.Join([][]byte{pemBlock("EC PARAMETERS", []byte{6, 8, 42}), pkixPEM(f, k.p384.Public())}, nil))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMAA=\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := ParsePublicKeysPEM(data)
		kube, _ := keyutil.ParsePublicKeysPEM(data)
		want, i := usable(kube), 0
		for _, k := range keys {
			if i < len(want) && sameKeys([]crypto.PublicKey{k}, want[i:i+1]) {
				i++
			}
		}
		if i != len(want) {
			t.Fatalf("got %d keys, missing some of keyutil's %d usable ones", len(keys), len(want))
		}
		if err != nil {
			if err != ErrNoKeys || keys != nil {
				t.Fatalf("got %d keys, error %v; want nil, ErrNoKeys", len(keys), err)
			}
			return
		}
		if _, err := newKeySet(keys); err != nil {
			t.Fatalf("parsed keys are unusable: %v", err)
		}
	})
}

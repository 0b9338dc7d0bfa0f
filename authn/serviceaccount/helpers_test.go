package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Test keys are generated once per test binary: RSA generation is slow.
var testKeys = sync.OnceValue(func() (k struct {
	rsa, rsa2        *rsa.PrivateKey
	p256, p256b      *ecdsa.PrivateKey
	p384, p521, p224 *ecdsa.PrivateKey
}) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	var err error
	k.rsa, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	for _, c := range []struct {
		dst   **ecdsa.PrivateKey
		curve elliptic.Curve
	}{{&k.p256, elliptic.P256()}, {&k.p256b, elliptic.P256()}, {&k.p384, elliptic.P384()}, {&k.p521, elliptic.P521()}, {&k.p224, elliptic.P224()}} {
		*c.dst, err = ecdsa.GenerateKey(c.curve, rand.Reader)
		must(err)
	}
	return k
})

// testNow is the fixed time of every test clock.
var testNow = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

const testIssuer = "https://kubernetes.default.svc.cluster.local"

func newTestIssuer(t testing.TB, key crypto.Signer, mod ...func(*IssuerOptions)) *Issuer {
	t.Helper()
	opts := IssuerOptions{Issuer: testIssuer, Now: fixedClock(testNow), ExtendExpiration: true}
	for _, m := range mod {
		m(&opts)
	}
	iss, err := NewIssuer(key, opts)
	if err != nil {
		t.Fatalf("NewIssuer: %v", err)
	}
	return iss
}

func newTestAuthenticator(t testing.TB, keys []crypto.PublicKey, mod ...func(*Options)) *Authenticator {
	t.Helper()
	opts := Options{Issuers: []string{testIssuer}, Now: fixedClock(testNow)}
	for _, m := range mod {
		m(&opts)
	}
	a, err := New(opts, keys)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// signRaw signs arbitrary claims with key and method, with the given
// header fields added to alg (nil kid value: no kid header).
func signRaw(t testing.TB, method jwt.SigningMethod, key any, claims jwt.MapClaims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header = map[string]any{"alg": method.Alg()}
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

// boundClaims returns valid bound-token claims for default/sa, issued at
// testNow for an hour.
func boundClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss": testIssuer,
		"sub": "system:serviceaccount:default:sa",
		"aud": []string{testIssuer},
		"iat": testNow.Unix(),
		"nbf": testNow.Unix(),
		"exp": testNow.Add(time.Hour).Unix(),
		"jti": "6a3f7c1e-0000-4000-8000-000000000001",
		"kubernetes.io": map[string]any{
			"namespace":      "default",
			"serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
		},
	}
}

func legacyClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss":                                    LegacyIssuer,
		"sub":                                    "system:serviceaccount:default:sa",
		"kubernetes.io/serviceaccount/namespace": "default",
		"kubernetes.io/serviceaccount/secret.name":          "sa-token-abcde",
		"kubernetes.io/serviceaccount/service-account.name": "sa",
		"kubernetes.io/serviceaccount/service-account.uid":  "sa-uid",
	}
}

func kidOf(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	kid, err := KeyID(pub)
	if err != nil {
		t.Fatal(err)
	}
	return kid
}

// decodePart base64url-decodes segment i of a JWS into a generic map.
func decodePart(t testing.TB, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments, want 3", len(parts))
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatalf("decode segment %d: %v", i, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("unmarshal segment %d: %v", i, err)
	}
	return m
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkixPEM(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("PUBLIC KEY", der)
}

// assertNoSecret fails if err's text contains any segment of token.
func assertNoSecret(t testing.TB, err error, token string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, seg := range strings.Split(token, ".") {
		if len(seg) >= 8 && strings.Contains(err.Error(), seg) {
			t.Errorf("error %q contains part of the token", err)
		}
	}
}

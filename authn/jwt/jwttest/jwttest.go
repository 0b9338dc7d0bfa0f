// Package jwttest serves an OpenID issuer for tests: discovery and a JSON
// Web Key Set over TLS, keys that can be added and dropped while it runs,
// and tokens signed with them. It is a test double for the issuer side
// only; what verifies the tokens is the code under test. Serve, GenerateKey
// and SignToken work outside tests too (test/bench runs an issuer with
// them).
package jwttest

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
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	gojwt "github.com/golang-jwt/jwt/v5"
)

// Key is a signing key of the issuer.
type Key struct {
	ID      string
	Private crypto.Signer
	Method  gojwt.SigningMethod
}

// NewKey makes a key for alg: RS256, RS384, RS512, PS256, PS384, PS512,
// ES256, ES384 or ES512.
func NewKey(t testing.TB, id, alg string) *Key {
	t.Helper()
	k, err := GenerateKey(id, alg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// GenerateKey is NewKey outside a test.
func GenerateKey(id, alg string) (*Key, error) {
	var k crypto.Signer
	var err error
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ES512":
		k, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	default:
		return nil, fmt.Errorf("jwttest: no key for %s", alg)
	}
	if err != nil {
		return nil, err
	}
	return &Key{ID: id, Private: k, Method: gojwt.GetSigningMethod(alg)}, nil
}

// Issuer is an OpenID issuer served over TLS.
type Issuer struct {
	Server *httptest.Server
	// URL is the issuer URL: the server's, with no trailing slash.
	URL string

	mux  *http.ServeMux
	mu   sync.Mutex
	keys []*Key
	// KeySetFetches counts the requests for the key set.
	KeySetFetches atomic.Int64
	// Down makes discovery and the key set answer 503.
	Down atomic.Bool
}

// NewIssuer starts an issuer publishing keys; it stops when the test ends.
func NewIssuer(t testing.TB, keys ...*Key) *Issuer {
	t.Helper()
	iss := Serve(keys...)
	t.Cleanup(iss.Server.Close)
	return iss
}

// Serve is NewIssuer outside a test: the issuer serves on a loopback port
// until iss.Server.Close.
func Serve(keys ...*Key) *Issuer {
	mux := http.NewServeMux()
	iss := &Issuer{keys: keys, mux: mux}
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if iss.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                iss.URL,
			"jwks_uri":                              iss.URL + "/keys",
			"authorization_endpoint":                iss.URL + "/auth",
			"token_endpoint":                        iss.URL + "/token",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		iss.KeySetFetches.Add(1)
		if iss.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": iss.jwks()})
	})
	iss.Server = httptest.NewTLSServer(mux)
	iss.URL = iss.Server.URL
	return iss
}

// CAPEM is the PEM of the certificate that verifies the issuer's server,
// for an issuer's certificateAuthority.
func (iss *Issuer) CAPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: iss.Server.Certificate().Raw}))
}

// Handle serves more of the issuer, at pattern (an http.ServeMux
// pattern): a distributed claims endpoint, say.
func (iss *Issuer) Handle(pattern string, h http.Handler) {
	iss.mux.Handle(pattern, h)
}

// SetKeys replaces the published keys.
func (iss *Issuer) SetKeys(keys ...*Key) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys = keys
}

func (iss *Issuer) jwks() []map[string]any {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	var out []map[string]any
	for _, k := range iss.keys {
		out = append(out, JWK(k))
	}
	return out
}

// JWK is the JSON Web Key of k's public half.
func JWK(k *Key) map[string]any {
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	m := map[string]any{"kid": k.ID, "use": "sig", "alg": k.Method.Alg()}
	switch pub := k.Private.Public().(type) {
	case *rsa.PublicKey:
		m["kty"] = "RSA"
		m["n"] = b64(pub.N.Bytes())
		m["e"] = b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		m["kty"] = "EC"
		m["crv"] = pub.Curve.Params().Name
		// Fixed-size big-endian coordinates, as RFC 7518 wants them.
		ecdh, err := pub.ECDH()
		if err != nil {
			panic(err)
		}
		raw := ecdh.Bytes() // 0x04 || X || Y
		m["x"] = b64(raw[1 : 1+size])
		m["y"] = b64(raw[1+size:])
	default:
		panic(fmt.Sprintf("jwttest: key type %T", pub))
	}
	return m
}

// Sign signs claims with k, with header kid = k.ID unless headers say
// otherwise; headers may add or replace header fields.
func Sign(t testing.TB, k *Key, claims map[string]any, headers map[string]any) string {
	t.Helper()
	s, err := SignToken(k, claims, headers)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SignToken is Sign outside a test. A header given the value nil is
// left out.
func SignToken(k *Key, claims map[string]any, headers map[string]any) (string, error) {
	tok := gojwt.NewWithClaims(k.Method, gojwt.MapClaims(claims))
	tok.Header["kid"] = k.ID
	for h, v := range headers {
		if v == nil {
			delete(tok.Header, h)
		} else {
			tok.Header[h] = v
		}
	}
	return tok.SignedString(k.Private)
}

// PublicKeyPEM is the PKIX PEM of k's public half.
func PublicKeyPEM(t testing.TB, k *Key) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Private.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

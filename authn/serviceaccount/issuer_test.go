package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNewIssuerAlgorithm(t *testing.T) {
	t.Parallel()
	k := testKeys()
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name    string
		key     crypto.Signer
		wantAlg string
		wantErr string
	}{
		{"A.3 RSA key signs RS256 only", k.rsa, "RS256", ""},
		{"A.3 P-256 key signs ES256", k.p256, "ES256", ""},
		{"A.3 P-384 key signs ES384", k.p384, "ES384", ""},
		{"A.3 P-521 key signs ES512", k.p521, "ES512", ""},
		{"A.3 any other curve is an error", k.p224, "", "unsupported curve P-224"},
		{"A.3 other key types are an error", edKey, "", "unsupported key type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			iss, err := NewIssuer(tt.key, IssuerOptions{Issuer: testIssuer, Now: fixedClock(testNow)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewIssuer: error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewIssuer: %v", err)
			}
			if got := iss.Algorithm(); got != tt.wantAlg {
				t.Errorf("Algorithm() = %q, want %q", got, tt.wantAlg)
			}
			res, err := iss.Issue(TokenRequest{Namespace: "default", Name: "sa", UID: "u"})
			if err != nil {
				t.Fatalf("Issue: %v", err)
			}
			h := decodePart(t, res.Token, 0)
			want := map[string]any{"alg": tt.wantAlg, "kid": iss.KeyID()}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("header = %v, want %v", h, want)
			}
			// The token verifies with the public key alone.
			a := newTestAuthenticator(t, []crypto.PublicKey{tt.key.Public()})
			if _, ok, err := a.AuthenticateToken(context.Background(), res.Token); !ok || err != nil {
				t.Errorf("AuthenticateToken: ok=%v err=%v", ok, err)
			}
		})
	}
	if _, err := NewIssuer(k.p256, IssuerOptions{}); err == nil {
		t.Error("NewIssuer without an issuer: got nil error")
	}
}

func TestKeyID(t *testing.T) {
	t.Parallel()
	k := testKeys()
	for _, pub := range []crypto.PublicKey{k.rsa.Public(), k.p256.Public(), k.p384.Public()} {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(der)
		want := base64.RawURLEncoding.EncodeToString(sum[:])
		got, err := KeyID(pub)
		if err != nil || got != want {
			t.Errorf("A.3 kid: KeyID = %q, %v; want %q (base64url of SHA-256 of PKIX DER, unpadded)", got, err, want)
		}
		if strings.ContainsAny(got, "=+/") {
			t.Errorf("A.3 kid %q is padded or not URL-safe", got)
		}
	}
}

var uuidForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIssueBoundClaims(t *testing.T) {
	t.Parallel()
	k := testKeys()
	now := testNow.Unix()
	tests := []struct {
		name     string
		opts     func(*IssuerOptions)
		req      TokenRequest
		want     map[string]any // expected payload, jti checked separately
		wantSecs int64
		wantWarn []string
	}{
		{
			name:     "A.3 bound claims: defaults to the API audiences and 3600 s",
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid"},
			wantSecs: 3600,
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{testIssuer},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 3600),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"}},
			},
		},
		{
			name: "A.3 iss is the first issuer and API audiences are configurable",
			opts: func(o *IssuerOptions) {
				o.Issuer = "https://first"
				o.APIAudiences = []string{"api", "other"}
			},
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", ExpirationSeconds: 600},
			wantSecs: 600,
			want: map[string]any{
				"iss": "https://first", "sub": "system:serviceaccount:ns1:build", "aud": []any{"api", "other"},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 600),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"}},
			},
		},
		{
			name: "A.3 pod binding carries the pod and its node",
			req: TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", Audiences: []string{"vault"}, ExpirationSeconds: 7200,
				Pod: &ObjectRef{Name: "p", UID: "pod-uid"}, Node: &ObjectRef{Name: "n1", UID: "node-uid"}},
			wantSecs: 7200,
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{"vault"},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 7200),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"},
					"pod": map[string]any{"name": "p", "uid": "pod-uid"}, "node": map[string]any{"name": "n1", "uid": "node-uid"}},
			},
		},
		{
			name:     "A.3 secret binding",
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", Secret: &ObjectRef{Name: "s", UID: "secret-uid"}},
			wantSecs: 3600,
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{testIssuer},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 3600),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"},
					"secret": map[string]any{"name": "s", "uid": "secret-uid"}},
			},
		},
		{
			name:     "A.3 expiration above the maximum is shortened with a warning",
			opts:     func(o *IssuerOptions) { o.MaxExpiration = 2 * time.Hour },
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", ExpirationSeconds: 86400},
			wantSecs: 7200,
			wantWarn: []string{"requested expiration of 86400 seconds shortened to 7200 seconds"},
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{testIssuer},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 7200),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"}},
			},
		},
		{
			name:     "A.3 extended expiry: pod-bound, 3607 s, API audiences: exp 1 year, warnafter 3607 s",
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", ExpirationSeconds: 3607, Pod: &ObjectRef{Name: "p", UID: "pod-uid"}},
			wantSecs: 3607,
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{testIssuer},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 365*24*3600),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"},
					"pod": map[string]any{"name": "p", "uid": "pod-uid"}, "warnafter": float64(now + 3607)},
			},
		},
		{
			name:     "A.3 extended expiry not applied when an audience is not an API audience",
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", ExpirationSeconds: 3607, Audiences: []string{testIssuer, "vault"}, Pod: &ObjectRef{Name: "p", UID: "pod-uid"}},
			wantSecs: 3607,
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{testIssuer, "vault"},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 3607),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"},
					"pod": map[string]any{"name": "p", "uid": "pod-uid"}},
			},
		},
		{
			name:     "A.3 extended expiry not applied without a pod binding",
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", ExpirationSeconds: 3607},
			wantSecs: 3607,
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{testIssuer},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 3607),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"}},
			},
		},
		{
			name:     "A.3 extended expiry not applied when turned off",
			opts:     func(o *IssuerOptions) { o.ExtendExpiration = false },
			req:      TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", ExpirationSeconds: 3607, Pod: &ObjectRef{Name: "p", UID: "pod-uid"}},
			wantSecs: 3607,
			want: map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:build", "aud": []any{testIssuer},
				"iat": float64(now), "nbf": float64(now), "exp": float64(now + 3607),
				"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "build", "uid": "sa-uid"},
					"pod": map[string]any{"name": "p", "uid": "pod-uid"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mods := []func(*IssuerOptions){}
			if tt.opts != nil {
				mods = append(mods, tt.opts)
			}
			iss := newTestIssuer(t, k.p256, mods...)
			res, err := iss.Issue(tt.req)
			if err != nil {
				t.Fatalf("Issue: %v", err)
			}
			got := decodePart(t, res.Token, 1)
			jti, _ := got["jti"].(string)
			if !uuidForm.MatchString(jti) {
				t.Errorf("A.3 jti = %q, want a random UUID", jti)
			}
			delete(got, "jti")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("payload =\n%v\nwant\n%v", got, tt.want)
			}
			if res.ExpirationSeconds != tt.wantSecs {
				t.Errorf("ExpirationSeconds = %d, want %d", res.ExpirationSeconds, tt.wantSecs)
			}
			if want := testNow.Add(time.Duration(tt.wantSecs) * time.Second); !res.ExpirationTimestamp.Equal(want) {
				t.Errorf("A.3 ExpirationTimestamp = %v, want request time + %d s = %v", res.ExpirationTimestamp, tt.wantSecs, want)
			}
			if !reflect.DeepEqual(res.Warnings, tt.wantWarn) {
				t.Errorf("Warnings = %q, want %q", res.Warnings, tt.wantWarn)
			}
		})
	}
}

func TestIssueJTIIsUnique(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t, testKeys().p256)
	seen := map[string]bool{}
	for range 50 {
		res, err := iss.Issue(TokenRequest{Namespace: "ns", Name: "sa", UID: "u"})
		if err != nil {
			t.Fatal(err)
		}
		jti := decodePart(t, res.Token, 1)["jti"].(string)
		if seen[jti] {
			t.Fatalf("A.3 jti %q issued twice", jti)
		}
		seen[jti] = true
	}
}

func TestIssueLimits(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t, testKeys().p256)
	tests := []struct {
		name    string
		req     TokenRequest
		wantErr string
	}{
		{"A.3 minimum is 600 s", TokenRequest{Namespace: "ns", Name: "sa", ExpirationSeconds: 599},
			"spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"},
		{"A.3 negative expiration is below the minimum", TokenRequest{Namespace: "ns", Name: "sa", ExpirationSeconds: -1},
			"spec.expirationSeconds: Invalid value: -1: may not specify a duration less than 10 minutes"},
		{"A.3 maximum is 2^32 s", TokenRequest{Namespace: "ns", Name: "sa", ExpirationSeconds: 1<<32 + 1},
			"spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"},
		{"A.3 binding to a secret and a pod is an error", TokenRequest{Namespace: "ns", Name: "sa", Secret: &ObjectRef{Name: "s"}, Pod: &ObjectRef{Name: "p"}},
			ErrConflictingBinding.Error()},
		{"A.3 binding to a secret and a node is an error", TokenRequest{Namespace: "ns", Name: "sa", Secret: &ObjectRef{Name: "s"}, Node: &ObjectRef{Name: "n"}},
			ErrConflictingBinding.Error()},
		{"service account name is required", TokenRequest{Namespace: "ns"}, "namespace and name are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := iss.Issue(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Issue: error = %v, want %q", err, tt.wantErr)
			}
		})
	}
	var fe *FieldError
	if _, err := iss.Issue(TokenRequest{Namespace: "ns", Name: "sa", ExpirationSeconds: 1}); !errors.As(err, &fe) || fe.Field != "spec.expirationSeconds" {
		t.Errorf("error = %v, want a *FieldError for spec.expirationSeconds", err)
	}
	for _, secs := range []int64{600, 1 << 32} {
		if _, err := iss.Issue(TokenRequest{Namespace: "ns", Name: "sa", ExpirationSeconds: secs}); err != nil {
			t.Errorf("A.3 limits are inclusive: Issue(%d s): %v", secs, err)
		}
	}
}

func TestIssueLegacyClaims(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t, testKeys().rsa)
	tok, err := iss.IssueLegacy("kube-system", "builder", "sa-uid", "builder-token-x7k2p")
	if err != nil {
		t.Fatal(err)
	}
	got := decodePart(t, tok, 1)
	want := map[string]any{
		"iss":                                    "kubernetes/serviceaccount",
		"sub":                                    "system:serviceaccount:kube-system:builder",
		"kubernetes.io/serviceaccount/namespace": "kube-system",
		"kubernetes.io/serviceaccount/secret.name":          "builder-token-x7k2p",
		"kubernetes.io/serviceaccount/service-account.name": "builder",
		"kubernetes.io/serviceaccount/service-account.uid":  "sa-uid",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("A.3 legacy claims (no exp, iat, nbf or aud) =\n%v\nwant\n%v", got, want)
	}
	if h := decodePart(t, tok, 0); h["alg"] != "RS256" || h["kid"] != iss.KeyID() {
		t.Errorf("header = %v", h)
	}
	if _, err := iss.IssueLegacy("ns", "sa", "", "secret"); err == nil {
		t.Error("IssueLegacy without a uid: got nil error")
	}
}

func TestIssuerLoadSwapsTheSigningKey_H6(t *testing.T) {
	t.Parallel()
	k := testKeys()
	iss := newTestIssuer(t, k.p256)
	keyPEM := func(key *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pemBlock("EC PRIVATE KEY", der)
	}
	if err := iss.Load([]byte("not a key")); err == nil {
		t.Fatal("Load of garbage: no error")
	}
	if got, want := iss.KeyID(), kidOf(t, &k.p256.PublicKey); got != want {
		t.Errorf("after a bad Load the kid is %s, want the old key's %s", got, want)
	}
	if err := iss.Load(keyPEM(k.p256b)); err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Issue(TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := decodePart(t, tok.Token, 0)["kid"], kidOf(t, &k.p256b.PublicKey); got != want {
		t.Errorf("token kid %v after Load, want the new key's %s", got, want)
	}
	// Verified by the new key only: an authenticator holding both (sa.pub
	// during a rotation) accepts it, one holding the old key alone does not.
	both := newTestAuthenticator(t, []crypto.PublicKey{&k.p256.PublicKey, &k.p256b.PublicKey})
	if _, ok, err := both.AuthenticateToken(context.Background(), tok.Token); !ok || err != nil {
		t.Errorf("authenticator with both keys: ok %v, err %v", ok, err)
	}
	old := newTestAuthenticator(t, []crypto.PublicKey{&k.p256.PublicKey})
	if _, ok, _ := old.AuthenticateToken(context.Background(), tok.Token); ok {
		t.Error("authenticator with the old key only accepted a token of the new key")
	}
}

package serviceaccount

import (
	"context"
	"crypto"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kubegate/kubegate/authn"
)

// result is what AuthenticateToken should answer.
type result int

const (
	notMine result = iota
	authenticated
	rejected
)

func TestAuthenticateTokenMapping(t *testing.T) {
	t.Parallel()
	k := testKeys()
	iss := newTestIssuer(t, k.p256)
	a := newTestAuthenticator(t, []crypto.PublicKey{k.p256.Public()})

	issue := func(req TokenRequest) (string, string) {
		t.Helper()
		res, err := iss.Issue(req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Token, "JTI=" + decodePart(t, res.Token, 1)["jti"].(string)
	}
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:ns1", authn.AllAuthenticated}

	plain, plainJTI := issue(TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid"})
	pod, podJTI := issue(TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", Pod: &ObjectRef{Name: "web-0", UID: "pod-uid"}, Node: &ObjectRef{Name: "node-1", UID: "node-uid"}})
	node, nodeJTI := issue(TokenRequest{Namespace: "ns1", Name: "build", UID: "sa-uid", Node: &ObjectRef{Name: "node-1"}})
	legacy, err := iss.IssueLegacy("ns1", "build", "sa-uid", "build-token-abcde")
	if err != nil {
		t.Fatal(err)
	}
	podNoUID := signRaw(t, jwt.SigningMethodES256, k.p256, func() jwt.MapClaims {
		c := boundClaims()
		c["kubernetes.io"].(map[string]any)["pod"] = map[string]any{"name": "web-0"}
		delete(c, "jti")
		return c
	}(), nil)

	tests := []struct {
		name  string
		token string
		want  authn.User
	}{
		{"A.3 bound token: user, uid, groups, credential-id", plain, authn.User{
			Name: "system:serviceaccount:ns1:build", UID: "sa-uid", Groups: groups,
			Extra: map[string][]string{authn.CredentialIDKey: {plainJTI}},
		}},
		{"A.3 pod-bound token: pod-name, pod-uid, node-name, node-uid extras", pod, authn.User{
			Name: "system:serviceaccount:ns1:build", UID: "sa-uid", Groups: groups,
			Extra: map[string][]string{
				PodNameKey: {"web-0"}, PodUIDKey: {"pod-uid"},
				NodeNameKey: {"node-1"}, NodeUIDKey: {"node-uid"},
				authn.CredentialIDKey: {podJTI},
			},
		}},
		{"A.3 node-uid only when known", node, authn.User{
			Name: "system:serviceaccount:ns1:build", UID: "sa-uid", Groups: groups,
			Extra: map[string][]string{NodeNameKey: {"node-1"}, authn.CredentialIDKey: {nodeJTI}},
		}},
		{"A.3 pod extras only when both name and uid are known; no jti, no credential-id", podNoUID, authn.User{
			Name: "system:serviceaccount:default:sa", UID: "sa-uid",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", authn.AllAuthenticated},
		}},
		{"A.3 legacy token: user, uid, groups, no extra", legacy, authn.User{
			Name: "system:serviceaccount:ns1:build", UID: "sa-uid", Groups: groups,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, ok, err := a.AuthenticateToken(context.Background(), tt.token)
			if !ok || err != nil {
				t.Fatalf("AuthenticateToken: ok=%v err=%v", ok, err)
			}
			if !reflect.DeepEqual(resp.User, tt.want) {
				t.Errorf("User =\n%#v\nwant\n%#v", resp.User, tt.want)
			}
			if resp.Authenticator != Name {
				t.Errorf("Authenticator = %q, want %q", resp.Authenticator, Name)
			}
			if !reflect.DeepEqual(resp.Audiences, []string{testIssuer}) {
				t.Errorf("Audiences = %q, want the API audiences", resp.Audiences)
			}
		})
	}
}

func TestAuthenticateToken(t *testing.T) {
	t.Parallel()
	k := testKeys()
	p256Kid := kidOf(t, k.p256.Public())
	rsaKid := kidOf(t, k.rsa.Public())
	pubPEM := pkixPEM(t, k.p256.Public())
	keys := []crypto.PublicKey{k.p256.Public(), k.rsa.Public(), k.p384.Public()}

	with := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := boundClaims()
		mod(c)
		return c
	}
	legacyWith := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := legacyClaims()
		mod(c)
		return c
	}
	es := func(c jwt.MapClaims) string {
		return signRaw(t, jwt.SigningMethodES256, k.p256, c, map[string]any{"kid": p256Kid})
	}
	valid := es(boundClaims())
	parts := strings.Split(valid, ".")
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	at := func(d time.Duration) int64 { return testNow.Add(d).Unix() }

	tests := []struct {
		name    string
		token   string
		opts    func(*Options)
		ctxAuds []string // non-nil: requested with authn.WithAudiences
		want    result
		wantErr string
		wantAud []string
	}{
		// Signatures and algorithms.
		{name: "A.3 ES256 token with kid verifies", token: valid, want: authenticated},
		{name: "A.3 RS256 token verifies", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, boundClaims(), map[string]any{"kid": rsaKid}), want: authenticated},
		{name: "A.3 RS384 and RS512 verify with RSA keys", token: signRaw(t, jwt.SigningMethodRS512, k.rsa, boundClaims(), nil), want: authenticated},
		{name: "A.3 ES384 verifies with a P-384 key", token: signRaw(t, jwt.SigningMethodES384, k.p384, boundClaims(), nil), want: authenticated},
		{name: "A.3 no kid: every key is tried", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, boundClaims(), nil), want: authenticated},
		{name: "A.3 unknown kid: no keys found", token: signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), map[string]any{"kid": "unknown"}),
			want: rejected, wantErr: "invalid signature, no keys found"},
		{name: "A.3 kid of another key: only that key is tried", token: signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), map[string]any{"kid": rsaKid}),
			want: rejected, wantErr: "invalid signature, no keys found"},
		{name: "A.3 signed by an unknown key with no kid", token: signRaw(t, jwt.SigningMethodES256, k.p256b, boundClaims(), nil),
			want: rejected, wantErr: "invalid signature"},
		{name: "A.3 signed by an unknown key with a known kid", token: signRaw(t, jwt.SigningMethodES256, k.p256b, boundClaims(), map[string]any{"kid": p256Kid}),
			want: rejected, wantErr: "invalid signature"},
		{name: "A.3 alg none is never accepted", token: signRaw(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, boundClaims(), nil),
			want: rejected, wantErr: "signing algorithm none is not allowed"},
		{name: "A.3 HS256 keyed with the public key PEM is never accepted", token: signRaw(t, jwt.SigningMethodHS256, pubPEM, boundClaims(), map[string]any{"kid": p256Kid}),
			want: rejected, wantErr: "signing algorithm HS256 is not allowed"},
		{name: "A.3 PS256 is not accepted", token: signRaw(t, jwt.SigningMethodPS256, k.rsa, boundClaims(), nil),
			want: rejected, wantErr: "signing algorithm PS256 is not allowed"},
		{name: "A.3 an unknown alg is rejected", token: b64(`{"alg":"XY99"}`) + "." + parts[1] + "." + parts[2],
			want: rejected, wantErr: "no supported signing algorithm"},
		{name: "A.3 a missing alg is rejected", token: b64(`{"kid":"x"}`) + "." + parts[1] + "." + parts[2],
			want: rejected, wantErr: "no supported signing algorithm"},
		{name: "A.3 alg swapped to ES384 on an ES256 signature", token: b64(`{"alg":"ES384","kid":"`+p256Kid+`"}`) + "." + parts[1] + "." + parts[2],
			want: rejected, wantErr: "invalid signature, no keys found"},
		{name: "A.3 an empty kid is rejected", token: signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), map[string]any{"kid": ""}),
			want: rejected, wantErr: "invalid kid"},
		{name: "A.3 a non-string kid is rejected", token: signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), map[string]any{"kid": 7}),
			want: rejected, wantErr: "invalid kid"},
		{name: "a crit header is rejected", token: signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), map[string]any{"crit": []string{"exp"}}),
			want: rejected, wantErr: "unsupported crit header"},
		{name: "tampered payload", token: parts[0] + "." + b64(`{"iss":"`+testIssuer+`","sub":"system:serviceaccount:kube-system:admin","aud":["`+testIssuer+`"],"kubernetes.io":{"namespace":"kube-system","serviceaccount":{"name":"admin","uid":"x"}}}`) + "." + parts[2],
			want: rejected, wantErr: "invalid signature"},
		{name: "tampered signature", token: parts[0] + "." + parts[1] + "." + b64(strings.Repeat("\x01", 64)),
			want: rejected, wantErr: "invalid signature"},
		{name: "truncated signature", token: parts[0] + "." + parts[1] + "." + parts[2][:20],
			want: rejected, wantErr: "invalid signature"},
		{name: "signature is not base64", token: parts[0] + "." + parts[1] + ".!!!",
			want: rejected, wantErr: "malformed"},
		{name: "header is not base64", token: "!!!." + parts[1] + "." + parts[2],
			want: rejected, wantErr: "malformed"},
		{name: "header is not JSON", token: b64("nope") + "." + parts[1] + "." + parts[2],
			want: rejected, wantErr: "malformed"},

		// The issuer pre-filter: other tokens are not mine.
		{name: "A.3 another issuer is not mine", token: es(with(func(c jwt.MapClaims) { c["iss"] = "https://other" })), want: notMine},
		{name: "A.3 no issuer is not mine", token: es(with(func(c jwt.MapClaims) { delete(c, "iss") })), want: notMine},
		{name: "A.3 a non-string iss is not mine", token: es(with(func(c jwt.MapClaims) { c["iss"] = 42 })), want: notMine},
		{name: "A.3 another issuer with alg none is not mine", token: signRaw(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType,
			with(func(c jwt.MapClaims) { c["iss"] = "https://other" }), nil), want: notMine},
		{name: "A.3 an opaque token is not mine", token: "abcdef0123456789", want: notMine},
		{name: "A.3 two segments are not mine", token: parts[0] + "." + parts[1], want: notMine},
		{name: "A.3 four segments are not mine", token: valid + ".x", want: notMine},
		{name: "A.3 a JSON-serialized JWS is not mine", token: `{"payload":"a.b","signatures":[]}`, want: notMine},
		{name: "A.3 a payload that is not base64 is not mine", token: parts[0] + ".***." + parts[2], want: notMine},
		{name: "A.3 a payload that is not JSON is not mine", token: parts[0] + "." + b64("iss") + "." + parts[2], want: notMine},
		{name: "empty token is not mine", token: "", want: notMine},
		{name: "three empty segments are not mine", token: "..", want: notMine},
		{name: "a token over the size limit is rejected before parsing", token: strings.Repeat("a", MaxTokenSize+1),
			want: rejected, wantErr: "longer than 65536 bytes"},
		{name: "a 1 MiB JWS-shaped token is rejected before parsing", token: parts[0] + "." + strings.Repeat("A", 1<<20) + "." + parts[2],
			want: rejected, wantErr: "longer than"},

		// Issuers and audiences.
		{name: "A.3 every listed issuer is accepted", opts: func(o *Options) { o.Issuers = []string{"https://first", testIssuer} },
			token: valid, want: authenticated, wantAud: []string{testIssuer}},
		{name: "A.3 wrong aud is rejected", token: es(with(func(c jwt.MapClaims) { c["aud"] = []string{"vault"} })),
			want: rejected, wantErr: `token audiences ["vault"] is invalid for the target audiences ["` + testIssuer + `"]`},
		{name: "A.3 aud as a single string", token: es(with(func(c jwt.MapClaims) { c["aud"] = testIssuer })),
			want: authenticated, wantAud: []string{testIssuer}},
		{name: "A.3 API audiences default to the issuers", opts: func(o *Options) { o.Issuers = []string{testIssuer, "https://second"} },
			token: es(with(func(c jwt.MapClaims) { c["aud"] = []string{"https://second"} })), want: authenticated, wantAud: []string{"https://second"}},
		{name: "A.3 aud must intersect the API audiences; the response has the intersection",
			opts:  func(o *Options) { o.Audiences = []string{"api", "vault"} },
			token: es(with(func(c jwt.MapClaims) { c["aud"] = []string{"other", "vault", "api"} })), want: authenticated, wantAud: []string{"vault", "api"}},
		{name: "A.3 a token without aud gets the API audiences", opts: func(o *Options) { o.Audiences = []string{"api", "vault"} },
			token: es(with(func(c jwt.MapClaims) { delete(c, "aud") })), want: authenticated, wantAud: []string{"api", "vault"}},

		{name: "A.3 requested audiences replace the API audiences", ctxAuds: []string{"vault"},
			token: es(with(func(c jwt.MapClaims) { c["aud"] = []string{"vault", "other"} })), want: authenticated, wantAud: []string{"vault"}},
		{name: "A.3 a token for the API audiences does not fit other requested audiences", ctxAuds: []string{"vault"},
			token: valid, want: rejected, wantErr: `token audiences ["` + testIssuer + `"] is invalid for the target audiences ["vault"]`},
		{name: "A.3 a legacy token fits only requests for API audiences", ctxAuds: []string{"vault"},
			token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyClaims(), nil), want: rejected, wantErr: "is invalid for the target audiences"},

		// Time, with 60 s of leeway.
		{name: "A.3 leeway 60s: expired 59 s ago is accepted", token: es(with(func(c jwt.MapClaims) { c["exp"] = at(-59 * time.Second) })), want: authenticated},
		{name: "A.3 leeway 60s: expired 61 s ago is rejected", token: es(with(func(c jwt.MapClaims) { c["exp"] = at(-61 * time.Second) })),
			want: rejected, wantErr: "service account token has expired"},
		{name: "A.3 leeway 60s: nbf 59 s ahead is accepted", token: es(with(func(c jwt.MapClaims) { c["nbf"] = at(59 * time.Second) })), want: authenticated},
		{name: "A.3 leeway 60s: nbf 61 s ahead is rejected", token: es(with(func(c jwt.MapClaims) { c["nbf"] = at(61 * time.Second) })),
			want: rejected, wantErr: "service account token is not valid yet"},
		{name: "A.3 leeway 60s: iat 61 s ahead is rejected", token: es(with(func(c jwt.MapClaims) { c["iat"] = at(61 * time.Second) })),
			want: rejected, wantErr: "service account token is issued in the future"},
		{name: "A.3 leeway 60s: iat 59 s ahead is accepted", token: es(with(func(c jwt.MapClaims) { c["iat"] = at(59 * time.Second) })), want: authenticated},
		{name: "A.3 leeway is configurable", opts: func(o *Options) { o.Leeway = time.Second },
			token: es(with(func(c jwt.MapClaims) { c["exp"] = at(-2 * time.Second) })), want: rejected, wantErr: "has expired"},
		{name: "A.3 a fractional exp is honoured", token: es(with(func(c jwt.MapClaims) { c["exp"] = float64(at(-61*time.Second)) + 0.5 })),
			want: rejected, wantErr: "has expired"},
		{name: "exp that is not a number is malformed", token: es(with(func(c jwt.MapClaims) { c["exp"] = "tomorrow" })),
			want: rejected, wantErr: "malformed"},
		{name: "bound claims without kubernetes.io are rejected", token: es(with(func(c jwt.MapClaims) { delete(c, "kubernetes.io") })),
			want: rejected, wantErr: "claims are missing"},

		// Legacy tokens.
		{name: "A.3 legacy tokens never expire", opts: func(o *Options) { o.Now = fixedClock(testNow.AddDate(20, 0, 0)) },
			token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyClaims(), nil), want: authenticated, wantAud: []string{testIssuer}},
		{name: "A.3 legacy tokens have no time validation, even with a past exp",
			token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { c["exp"] = at(-24 * time.Hour) }), nil), want: authenticated},
		{name: "A.3 legacy: sub claim is missing", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { delete(c, "sub") }), nil),
			want: rejected, wantErr: "sub claim is missing"},
		{name: "A.3 legacy: namespace claim is missing", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { delete(c, "kubernetes.io/serviceaccount/namespace") }), nil),
			want: rejected, wantErr: "namespace claim is missing"},
		{name: "A.3 legacy: secret name claim is missing", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { c["kubernetes.io/serviceaccount/secret.name"] = "" }), nil),
			want: rejected, wantErr: "secret name claim is missing"},
		{name: "A.3 legacy: service account name claim is missing", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { delete(c, "kubernetes.io/serviceaccount/service-account.name") }), nil),
			want: rejected, wantErr: "service account name claim is missing"},
		{name: "A.3 legacy: service account uid claim is missing", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { delete(c, "kubernetes.io/serviceaccount/service-account.uid") }), nil),
			want: rejected, wantErr: "service account uid claim is missing"},
		{name: "A.3 legacy: sub must match the namespace claim", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { c["sub"] = "system:serviceaccount:kube-system:sa" }), nil),
			want: rejected, wantErr: "sub claim is invalid"},
		{name: "A.3 legacy: sub must match the name claim", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { c["sub"] = "system:serviceaccount:default:admin" }), nil),
			want: rejected, wantErr: "sub claim is invalid"},
		{name: "A.3 legacy: sub must be a service account user name", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { c["sub"] = "admin" }), nil),
			want: rejected, wantErr: "sub claim is invalid"},
		{name: "A.3 legacy: a token with aud must intersect the API audiences", token: signRaw(t, jwt.SigningMethodRS256, k.rsa, legacyWith(func(c jwt.MapClaims) { c["aud"] = "vault" }), nil),
			want: rejected, wantErr: "token audiences"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mods := []func(*Options){}
			if tt.opts != nil {
				mods = append(mods, tt.opts)
			}
			a := newTestAuthenticator(t, keys, mods...)
			ctx := context.Background()
			if tt.ctxAuds != nil {
				ctx = authn.WithAudiences(ctx, tt.ctxAuds)
			}
			resp, ok, err := a.AuthenticateToken(ctx, tt.token)
			assertNoSecret(t, err, tt.token)
			switch tt.want {
			case notMine:
				if resp != nil || ok || err != nil {
					t.Fatalf("got %v, %v, %v; want not mine (nil, false, nil)", resp, ok, err)
				}
			case rejected:
				if resp != nil || ok || err == nil {
					t.Fatalf("got %v, %v, %v; want an error", resp, ok, err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
				}
			case authenticated:
				if !ok || err != nil || resp == nil {
					t.Fatalf("got %v, %v, %v; want authenticated", resp, ok, err)
				}
				if tt.wantAud != nil && !reflect.DeepEqual(resp.Audiences, tt.wantAud) {
					t.Errorf("Audiences = %q, want %q", resp.Audiences, tt.wantAud)
				}
			}
		})
	}
}

func TestAuthenticateTokenRejectsHugeTokenQuickly(t *testing.T) {
	k := testKeys()
	a := newTestAuthenticator(t, []crypto.PublicKey{k.p256.Public()})
	valid := signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), nil)
	parts := strings.Split(valid, ".")
	huge := parts[0] + "." + strings.Repeat(parts[1], (1<<20)/len(parts[1])) + "." + parts[2]
	allocs := testing.AllocsPerRun(10, func() {
		if _, _, err := a.AuthenticateToken(context.Background(), huge); !errors.Is(err, ErrTokenTooLarge) {
			t.Fatalf("error = %v, want ErrTokenTooLarge", err)
		}
	})
	if allocs != 0 {
		t.Errorf("rejecting a 1 MiB token allocated %v times, want 0 (nothing decoded)", allocs)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	k := testKeys()
	keys := []crypto.PublicKey{k.p256.Public()}
	tests := []struct {
		name    string
		opts    Options
		keys    []crypto.PublicKey
		wantErr string
	}{
		{"A.3 an issuer is required", Options{}, keys, "issuer is required"},
		{"an empty issuer is an error", Options{Issuers: []string{""}}, keys, "must not be empty"},
		{"A.3 at least one key is required", Options{Issuers: []string{testIssuer}}, nil, "no RSA or ECDSA keys"},
		{"an unsupported key is an error", Options{Issuers: []string{testIssuer}}, []crypto.PublicKey{k.p224.Public()}, "unsupported key type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.opts, tt.keys)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadReplacesKeys(t *testing.T) {
	t.Parallel()
	k := testKeys()
	a := newTestAuthenticator(t, []crypto.PublicKey{k.p256.Public()})
	oldTok := signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), nil)
	newTok := signRaw(t, jwt.SigningMethodRS256, k.rsa, boundClaims(), nil)
	check := func(tok string, want bool) {
		t.Helper()
		if _, ok, _ := a.AuthenticateToken(context.Background(), tok); ok != want {
			t.Errorf("authenticated = %v, want %v", ok, want)
		}
	}
	check(oldTok, true)
	check(newTok, false)

	if err := a.Load([]byte("not a key\n")); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("Load(garbage): error = %v, want ErrNoKeys", err)
	}
	check(oldTok, true) // the old keys stay in force

	if err := a.Load(pkixPEM(t, k.rsa.Public())); err != nil {
		t.Fatalf("Load: %v", err)
	}
	check(oldTok, false)
	check(newTok, true)
	if got, want := a.KeyIDs(), []string{kidOf(t, k.rsa.Public())}; !reflect.DeepEqual(got, want) {
		t.Errorf("KeyIDs() = %q, want %q", got, want)
	}

	dir := t.TempDir()
	f1, f2 := filepath.Join(dir, "sa.pub"), filepath.Join(dir, "old.pub")
	os.WriteFile(f1, pkixPEM(t, k.p256.Public()), 0o644)
	os.WriteFile(f2, pkixPEM(t, k.rsa.Public()), 0o644)
	if err := a.LoadFiles(f1, f2); err != nil {
		t.Fatalf("LoadFiles: %v", err)
	}
	check(oldTok, true)
	check(newTok, true)
	if err := a.LoadFiles(f1, filepath.Join(dir, "missing.pub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFiles(missing): error = %v, want os.ErrNotExist", err)
	}
	check(newTok, true)

	b, err := NewFromFiles(Options{Issuers: []string{testIssuer}, Now: fixedClock(testNow)}, f2)
	if err != nil {
		t.Fatalf("NewFromFiles: %v", err)
	}
	if _, ok, _ := b.AuthenticateToken(context.Background(), newTok); !ok {
		t.Error("NewFromFiles: token not authenticated")
	}
}

// TestConcurrentSetKeys swaps keys while tokens are verified; run with
// -race.
func TestConcurrentSetKeys(t *testing.T) {
	t.Parallel()
	k := testKeys()
	a := newTestAuthenticator(t, []crypto.PublicKey{k.p256.Public()})
	tok := signRaw(t, jwt.SigningMethodES256, k.p256, boundClaims(), nil)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, ok, err := a.AuthenticateToken(context.Background(), tok); !ok || err != nil {
					t.Errorf("during key reload: ok=%v err=%v", ok, err)
					return
				}
			}
		}()
	}
	for i := range 50 {
		keys := []crypto.PublicKey{k.p256.Public(), k.rsa.Public()}
		if i%2 == 1 {
			keys = []crypto.PublicKey{k.rsa.Public(), k.p256.Public()}
		}
		if err := a.SetKeys(keys); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestSplitUsername(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		ns, name string
		ok       bool
	}{
		{"system:serviceaccount:default:sa", "default", "sa", true},
		{"system:serviceaccount:kube-system:a.b-c", "kube-system", "a.b-c", true},
		{"system:serviceaccount:default", "", "", false},
		{"system:serviceaccount:default:sa:x", "", "", false},
		{"system:serviceaccount::sa", "", "", false},
		{"system:serviceaccount:default:", "", "", false},
		{"system:serviceaccount:Default:sa", "", "", false},
		{"system:serviceaccount:a.b:sa", "", "", false},
		{"system:serviceaccount:default:-sa", "", "", false},
		{"system:serviceaccounts:default:sa", "", "", false},
		{"admin", "", "", false},
	}
	for _, tt := range tests {
		ns, name, err := SplitUsername(tt.in)
		if (err == nil) != tt.ok || ns != tt.ns || name != tt.name {
			t.Errorf("SplitUsername(%q) = %q, %q, %v; want %q, %q, ok=%v", tt.in, ns, name, err, tt.ns, tt.name, tt.ok)
		}
		if tt.ok && Username(ns, name) != tt.in {
			t.Errorf("Username(%q, %q) = %q, want %q", ns, name, Username(ns, name), tt.in)
		}
	}
}

func TestNoKidTriesEveryKeyInOrder(t *testing.T) {
	t.Parallel()
	k := testKeys()
	a := newTestAuthenticator(t, []crypto.PublicKey{k.rsa2.Public(), k.p256b.Public(), k.rsa.Public(), k.p256.Public()})
	for _, c := range []struct {
		name   string
		method jwt.SigningMethod
		key    crypto.Signer
	}{
		{"A.3 no kid: the third key verifies", jwt.SigningMethodRS256, k.rsa},
		{"A.3 no kid: the fourth key verifies", jwt.SigningMethodES256, k.p256},
		{"A.3 no kid: the first key verifies", jwt.SigningMethodRS384, k.rsa2},
	} {
		tok := signRaw(t, c.method, c.key, boundClaims(), nil)
		if _, ok, err := a.AuthenticateToken(context.Background(), tok); !ok || err != nil {
			t.Errorf("%s: ok=%v err=%v", c.name, ok, err)
		}
	}
	forged := signRaw(t, jwt.SigningMethodES384, k.p384, boundClaims(), nil)
	if _, ok, err := a.AuthenticateToken(context.Background(), forged); ok || err == nil || !strings.Contains(err.Error(), "no keys found") {
		t.Errorf("A.3 no kid, no key of the algorithm: ok=%v err=%v, want no keys found", ok, err)
	}
}

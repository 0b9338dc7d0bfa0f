package jwt_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gojwt "github.com/golang-jwt/jwt/v5"

	"github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/authn/jwt/jwttest"
	"github.com/kubegate/kubegate/internal/testwait"
)

// hostileSetup is an authenticator for one issuer with its keys fetched,
// the issuer's key, and a server of an attacker's that counts the
// requests it gets.
type hostileSetup struct {
	a        *jwt.Authenticator
	iss      *jwttest.Issuer
	key      *jwttest.Key // RS256, published
	ecKey    *jwttest.Key // ES256, published
	attacker *jwttest.Key // ES256, published by the attacker only
	evil     *httptest.Server
	evilHits *atomic.Int64
}

func newHostileSetup(t testing.TB) *hostileSetup {
	t.Helper()
	h := &hostileSetup{
		key: jwttest.NewKey(t, "rs", "RS256"), ecKey: jwttest.NewKey(t, "es", "ES256"),
		attacker: jwttest.NewKey(t, "evil", "ES256"), evilHits: new(atomic.Int64),
	}
	h.iss = jwttest.NewIssuer(t, h.key, h.ecKey)
	h.evil = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.evilHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{jwttest.JWK(h.attacker)}})
	}))
	t.Cleanup(h.evil.Close)
	c, err := jwt.ParseConfig([]byte(issuerConfig(h.iss, `    username: {claim: sub, prefix: ""}
    groups: {claim: groups, prefix: ""}`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := jwt.Validate(c, []string{saIssuer}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.a, err = jwt.New(ctx, c.JWT, jwt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, h.a, jwttest.Sign(t, h.key, h.claims(nil), nil))
	return h
}

func (h *hostileSetup) claims(set map[string]any) map[string]any {
	c := claims(h.iss, map[string]any{"groups": []string{"dev"}})
	for k, v := range set {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// seg is the base64url of raw JSON (or any text).
func seg(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func segJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return seg(string(b))
}

// resign replaces the header of a token signed by k with header, and
// signs header and payload again with k, so that only the header is odd.
func resign(t testing.TB, k *jwttest.Key, header map[string]any, claims map[string]any) string {
	t.Helper()
	signing := segJSON(header) + "." + segJSON(claims)
	sig, err := k.Method.Sign(signing, k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// rawSign signs header and payload segments given as text with k.
func rawSign(t testing.TB, k *jwttest.Key, header, payload string) string {
	t.Helper()
	signing := seg(header) + "." + seg(payload)
	sig, err := k.Method.Sign(signing, k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func hostileForms(t testing.TB, h *hostileSetup) []struct{ name, token string } {
	t.Helper()
	good := jwttest.Sign(t, h.key, h.claims(nil), nil)
	parts := strings.Split(good, ".")
	payloadJSON, _ := json.Marshal(h.claims(nil))
	pub := jwttest.PublicKeyPEM(t, h.key)
	hs := gojwt.NewWithClaims(gojwt.SigningMethodHS256, gojwt.MapClaims(h.claims(nil)))
	hs.Header["kid"] = "rs"
	hsTok, err := hs.SignedString(pub)
	if err != nil {
		t.Fatal(err)
	}
	esSig := strings.Split(jwttest.Sign(t, h.ecKey, h.claims(nil), nil), ".")[2]
	rsHeader := map[string]any{"alg": "RS256", "kid": "rs", "typ": "JWT"}
	withHeader := func(set map[string]any) map[string]any {
		m := map[string]any{"alg": "ES256", "kid": "evil", "typ": "JWT"}
		for k, v := range set {
			m[k] = v
		}
		return m
	}
	nested := func(depth int) string {
		return `{"iss":"` + h.iss.URL + `","x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"
	}
	std := base64.StdEncoding
	return []struct{ name, token string }{
		{"empty", ""},
		{"one dot", "."},
		{"dots only", "..."},
		{"four dots", "...."},
		{"one segment", parts[1]},
		{"two segments", parts[0] + "." + parts[1]},
		{"four segments", good + "." + parts[2]},
		{"five segments", good + ".x.y"},
		{"JWE, five parts", segJSON(map[string]any{"alg": "RSA-OAEP", "enc": "A256GCM", "kid": "rs"}) + "." + seg("key") + "." + seg("iv") + "." + seg("ciphertext") + "." + seg("tag")},
		{"not base64", "!!!.@@@.###"},
		{"base64 with padding", std.EncodeToString([]byte(`{"alg":"RS256","kid":"rs"}`)) + "." + std.EncodeToString(payloadJSON) + "." + parts[2] + "=="},
		{"standard base64 alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(good)},
		{"payload not JSON", parts[0] + "." + seg("not json") + "." + parts[2]},
		{"payload JSON null", parts[0] + "." + seg("null") + "." + parts[2]},
		{"payload JSON array", parts[0] + "." + seg(`["iss"]`) + "." + parts[2]},
		{"header JSON array", seg(`["alg"]`) + "." + parts[1] + "." + parts[2]},
		{"huge header", segJSON(map[string]any{"alg": "RS256", "kid": "rs", "pad": strings.Repeat("A", 1<<20)}) + "." + parts[1] + "." + parts[2]},
		{"huge payload", parts[0] + "." + segJSON(h.claims(map[string]any{"pad": strings.Repeat("B", 4<<20)})) + "." + parts[2]},
		{"JSON bomb in payload", rawSign(t, h.key, `{"alg":"RS256","kid":"rs"}`, nested(200000))},
		{"JSON bomb in header", seg(`{"alg":"RS256","x":`+strings.Repeat("[", 200000)+strings.Repeat("]", 200000)+"}") + "." + parts[1] + "." + parts[2]},
		{"alg none", segJSON(map[string]any{"alg": "none", "kid": "rs"}) + "." + parts[1] + "."},
		{"alg None", segJSON(map[string]any{"alg": "None", "kid": "rs"}) + "." + parts[1] + "."},
		{"alg NONE", segJSON(map[string]any{"alg": "NONE"}) + "." + parts[1] + "."},
		{"alg none with a signature", segJSON(map[string]any{"alg": "none", "kid": "rs"}) + "." + parts[1] + "." + parts[2]},
		{"alg empty", segJSON(map[string]any{"alg": "", "kid": "rs"}) + "." + parts[1] + "." + parts[2]},
		{"no alg", segJSON(map[string]any{"kid": "rs"}) + "." + parts[1] + "." + parts[2]},
		{"HS256 keyed with the public key", hsTok},
		{"RS256 header on an ES256 signature", segJSON(rsHeader) + "." + parts[1] + "." + esSig},
		{"ES256 header on an RSA signature", segJSON(map[string]any{"alg": "ES256", "kid": "es"}) + "." + parts[1] + "." + parts[2]},
		{"PS256 header on an RS256 signature", segJSON(map[string]any{"alg": "PS256", "kid": "rs"}) + "." + parts[1] + "." + parts[2]},
		{"kid path traversal", resign(t, h.attacker, withHeader(map[string]any{"kid": "../../../../etc/passwd"}), h.claims(nil))},
		{"kid very long", resign(t, h.attacker, withHeader(map[string]any{"kid": strings.Repeat("k", 100000)}), h.claims(nil))},
		{"kid not a string", resign(t, h.key, map[string]any{"alg": "RS256", "kid": 7}, h.claims(nil))},
		{"jku elsewhere", resign(t, h.attacker, withHeader(map[string]any{"jku": h.evil.URL + "/keys"}), h.claims(nil))},
		{"x5u elsewhere", resign(t, h.attacker, withHeader(map[string]any{"x5u": h.evil.URL + "/cert"}), h.claims(nil))},
		{"embedded jwk", resign(t, h.attacker, withHeader(map[string]any{"jwk": jwttest.JWK(h.attacker)}), h.claims(nil))},
		{"crit header", resign(t, h.key, map[string]any{"alg": "RS256", "kid": "rs", "crit": []string{"exp"}, "exp": 1}, h.claims(nil))},
		{"crit header unknown", resign(t, h.key, map[string]any{"alg": "RS256", "kid": "rs", "crit": []string{"x-kubegate"}, "x-kubegate": true}, h.claims(nil))},
		{"duplicate aud, the last wrong", rawSign(t, h.key, `{"alg":"RS256","kid":"rs"}`,
			`{"iss":"`+h.iss.URL+`","aud":"kubegate","sub":"x","exp":`+jsonInt(time.Now().Add(time.Hour).Unix())+`,"aud":"other"}`)},
		{"duplicate iss, the last elsewhere", rawSign(t, h.key, `{"alg":"RS256","kid":"rs"}`,
			`{"iss":"`+h.iss.URL+`","aud":"kubegate","sub":"x","exp":`+jsonInt(time.Now().Add(time.Hour).Unix())+`,"iss":"https://evil.example.com"}`)},
		{"iss as array", jwttest.Sign(t, h.key, h.claims(map[string]any{"iss": []string{h.iss.URL}}), nil)},
		{"iss as number", jwttest.Sign(t, h.key, h.claims(map[string]any{"iss": 1}), nil)},
		{"aud as number", jwttest.Sign(t, h.key, h.claims(map[string]any{"aud": 1}), nil)},
		{"aud as object", jwttest.Sign(t, h.key, h.claims(map[string]any{"aud": map[string]any{"kubegate": true}}), nil)},
		{"exp as word", jwttest.Sign(t, h.key, h.claims(map[string]any{"exp": "tomorrow"}), nil)},
		{"exp as huge float", jwttest.Sign(t, h.key, h.claims(map[string]any{"exp": 1e300}), nil)},
		{"exp negative", jwttest.Sign(t, h.key, h.claims(map[string]any{"exp": -1}), nil)},
		{"exp huge integer", rawSign(t, h.key, `{"alg":"RS256","kid":"rs"}`,
			`{"iss":"`+h.iss.URL+`","aud":"kubegate","sub":"x","exp":99999999999999999999999999999}`)},
		{"nbf far ahead", jwttest.Sign(t, h.key, h.claims(map[string]any{"nbf": 1e15}), nil)},
		{"null bytes in the token", parts[0] + ".\x00" + parts[1] + "." + parts[2]},
		{"null bytes only", "\x00.\x00.\x00"},
		{"unicode in the token", parts[0] + "." + parts[1] + "é." + parts[2]},
		{"unicode only", "名前.名前.名前"},
		{"control character inside", parts[0] + "\x7f." + parts[1] + "." + parts[2]},
		{"Bearer inside", "Bearer " + good[:len(good)-4] + "AAAA"},
		{"trailing dot", good + "."},
		{"empty signature", parts[0] + "." + parts[1] + "."},
		{"signature of another token", parts[0] + "." + segJSON(h.claims(map[string]any{"sub": "admin"})) + "." + parts[2]},
		{"username claim an object", jwttest.Sign(t, h.key, h.claims(map[string]any{"sub": map[string]any{"a": 1}}), nil)},
		{"groups an object", jwttest.Sign(t, h.key, h.claims(map[string]any{"groups": map[string]any{"a": 1}}), nil)},
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// Hostile tokens are refused without a panic, without the token in the
// error, and without a request to a key URL the token names (A.8).
func TestHostileTokensAreRefused_A8(t *testing.T) {
	h := newHostileSetup(t)
	forms := hostileForms(t, h)
	if len(forms) < 30 {
		t.Fatalf("%d forms, want at least 30", len(forms))
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			resp, ok, err := h.a.AuthenticateToken(ctx, f.token)
			if ok || resp != nil {
				t.Fatalf("authenticated as %+v", resp)
			}
			if err != nil && len(f.token) >= 8 && strings.Contains(err.Error(), f.token) {
				t.Errorf("the error holds the token")
			}
			if err != nil {
				for _, p := range strings.Split(f.token, ".") {
					if len(p) >= 16 && strings.Contains(err.Error(), p) {
						t.Errorf("the error holds a part of the token: %.80s", err.Error())
					}
				}
			}
		})
	}
	if n := h.evilHits.Load(); n != 0 {
		t.Errorf("the attacker's key server got %d requests", n)
	}
	// The good token still works: nothing above broke the authenticator.
	if _, ok, err := h.a.AuthenticateToken(t.Context(), jwttest.Sign(t, h.key, h.claims(nil), nil)); !ok || err != nil {
		t.Errorf("a good token after the hostile ones: ok %v err %v", ok, err)
	}
}

// waitReady retries until a has fetched its issuer's keys, which it does
// in the background.
func waitReady(t testing.TB, a *jwt.Authenticator, token string) {
	t.Helper()
	testwait.For(t, 60*time.Second, "issuer's keys fetched", func() (bool, string) {
		_, ok, err := a.AuthenticateToken(context.Background(), token)
		return ok && err == nil, fmt.Sprintf("ok %v err %v", ok, err)
	})
}

// FuzzParseConfig: no configuration file makes the parser or the
// validation panic, and every refusal says something (A.8).
func FuzzParseConfig(f *testing.F) {
	const head = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"
	for _, s := range []string{
		"",
		head,
		head + "jwt: []\n",
		head + `jwt:
- issuer:
    url: https://issuer.example.com
    audiences: [kubegate, other]
    audienceMatchPolicy: MatchAny
  claimValidationRules:
  - {claim: env, requiredValue: prod}
  - {expression: "claims.exp - claims.iat <= 3600", message: too long}
  claimMappings:
    username: {expression: "claims.email"}
    groups: {claim: groups, prefix: "oidc:"}
    uid: {expression: "claims.sub"}
    extra:
    - {key: example.com/tenant, valueExpression: claims.tenant}
  userValidationRules:
  - {expression: "!user.username.startsWith('system:')", message: no system names}
anonymous:
  enabled: true
  conditions:
  - path: /livez
`,
		"apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: https://a.example.com, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: \"\"}}\n",
		"apiVersion: apiserver.config.k8s.io/v1alpha1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: http://a.example.com, audiences: [x]}\n  claimMappings: {username: {claim: sub}}\n",
		`{"apiVersion":"apiserver.config.k8s.io/v1","kind":"AuthenticationConfiguration","jwt":[{"issuer":{"url":"https://a","audiences":["x"]},"claimMappings":{"username":{"expression":"claims."}}}]}`,
		head + "jwt:\n- issuer: {url: https://a.example.com, audiences: [x], foo: 1}\n",
		head + "jwt: []\njwt: []\n",
		"apiVersion: apiserver.config.k8s.io/v9\nkind: AuthenticationConfiguration\n",
		"kind: AuthenticationConfiguration\n",
		"\t{[",
		"---\n---\n",
		"null",
		"[]",
		head + "jwt:\n- issuer:\n    url: https://kubernetes.default.svc.cluster.local\n    audiences: [x]\n    certificateAuthority: garbage\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := jwt.ParseConfig(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("ParseConfig: an empty error")
			}
			return
		}
		if c == nil {
			t.Fatal("ParseConfig: no config and no error")
		}
		if err := jwt.Validate(c, []string{saIssuer}); err != nil && err.Error() == "" {
			t.Fatal("Validate: an empty error")
		}
	})
}

// FuzzAuthenticateToken: no token makes the authenticator panic, accept
// what it should not, or repeat the token in its error (A.8).
func FuzzAuthenticateToken(f *testing.F) {
	h := newHostileSetup(f)
	good := jwttest.Sign(f, h.key, h.claims(nil), nil)
	f.Add(good)
	for _, form := range hostileForms(f, h) {
		if len(form.token) < 64<<10 { // the corpus keeps small seeds
			f.Add(form.token)
		}
	}
	f.Fuzz(func(t *testing.T, token string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, ok, err := h.a.AuthenticateToken(ctx, token)
		switch {
		case ok && (resp == nil || err != nil):
			t.Fatalf("ok with response %v and error %v", resp, err)
		case ok && resp.User.Name != "1234":
			t.Fatalf("authenticated as %+v", resp.User)
		case !ok && resp != nil:
			t.Fatalf("not ok with response %+v", resp)
		case err != nil && err.Error() == "":
			t.Fatal("an empty error")
		case err != nil && len(token) >= 16 && strings.Contains(err.Error(), token):
			t.Fatal("the error holds the token")
		}
	})
}

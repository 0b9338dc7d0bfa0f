package conformance

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn/jwt/jwttest"
	"github.com/kubegate/kubegate/internal/testwait"
)

// jwtAuthConfig is the AuthenticationConfiguration both servers take: two
// issuers, claim and CEL mappings, validation rules of both kinds, and
// anonymous requests on two paths only (A.8).
func jwtAuthConfig(a, b *jwttest.Issuer) string {
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /livez
  - path: /version
jwt:
- issuer:
    url: %[1]s
    audiences: [kubegate, other]
    audienceMatchPolicy: MatchAny
    certificateAuthority: %[2]q
  claimValidationRules:
  - claim: tier
    requiredValue: gold
  - expression: "!has(claims.banned) || claims.banned == false"
    message: banned users may not log in
  claimMappings:
    username: {claim: email, prefix: "a:"}
    groups: {claim: groups, prefix: "a:"}
    uid: {claim: sub}
    extra:
    - key: example.com/team
      valueExpression: "has(claims.team) ? claims.team : []"
  userValidationRules:
  - expression: "!user.username.startsWith('a:system:')"
    message: no system users
- issuer:
    url: %[3]s
    audiences: [kubegate]
    certificateAuthority: %[4]q
  claimMappings:
    username:
      expression: "'b:' + claims.sub"
    groups:
      expression: "has(claims.roles) ? dyn(claims.roles).map(r, 'b:' + r) : []"
    uid:
      expression: "claims.sub + '@b'"
`, a.URL, a.CAPEM(), b.URL, b.CAPEM())
}

type jwtCase struct {
	name  string
	token string
}

func jwtCases(t *testing.T, a, b *jwttest.Issuer, ka, kb, stranger *jwttest.Key) []jwtCase {
	now := time.Now()
	base := func(iss *jwttest.Issuer, more map[string]any) map[string]any {
		c := map[string]any{"iss": iss.URL, "aud": "kubegate", "sub": "u-1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		for k, v := range more {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	goodA := map[string]any{"email": "ada@example.com", "email_verified": true, "tier": "gold", "groups": []string{"dev", "ops"}}
	withA := func(more map[string]any) map[string]any {
		c := base(a, goodA)
		for k, v := range more {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	sign := func(k *jwttest.Key, c map[string]any) string { return jwttest.Sign(t, k, c, nil) }
	good := sign(ka, withA(nil))
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+a.URL+`","aud":"kubegate","sub":"root","email":"root@example.com","tier":"gold","exp":9999999999}`)) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	return []jwtCase{
		{"a good", good},
		{"a groups as a string", sign(ka, withA(map[string]any{"groups": "solo"}))},
		{"a no groups", sign(ka, withA(map[string]any{"groups": nil}))},
		{"a extra team", sign(ka, withA(map[string]any{"team": []string{"blue", "green"}}))},
		{"a jti gives a credential id", sign(ka, withA(map[string]any{"jti": "id-42"}))},
		{"a second audience", sign(ka, withA(map[string]any{"aud": []string{"other"}}))},
		{"a wrong audience", sign(ka, withA(map[string]any{"aud": "elsewhere"}))},
		{"a expired", sign(ka, withA(map[string]any{"exp": now.Add(-time.Hour).Unix()}))},
		{"a expired within leeway", sign(ka, withA(map[string]any{"exp": now.Add(-30 * time.Second).Unix()}))},
		{"a not yet valid", sign(ka, withA(map[string]any{"nbf": now.Add(time.Hour).Unix()}))},
		{"a no exp", sign(ka, withA(map[string]any{"exp": nil}))},
		{"a email unverified", sign(ka, withA(map[string]any{"email_verified": false}))},
		{"a email_verified absent", sign(ka, withA(map[string]any{"email_verified": nil}))},
		{"a no email", sign(ka, withA(map[string]any{"email": nil}))},
		{"a wrong tier", sign(ka, withA(map[string]any{"tier": "silver"}))},
		{"a banned", sign(ka, withA(map[string]any{"banned": true}))},
		{"a system user", sign(ka, withA(map[string]any{"email": "system:admin"}))},
		{"a signed by b's key", sign(kb, withA(nil))},
		{"a unknown kid", sign(stranger, withA(nil))},
		{"a alg none", none},
		{"a tampered payload", tampered},
		{"b good", sign(kb, base(b, map[string]any{"roles": []string{"viewer"}}))},
		{"b no roles", sign(kb, base(b, nil))},
		{"b tier claim ignored", sign(kb, base(b, map[string]any{"tier": "silver"}))},
		{"b roles not a list", sign(kb, base(b, map[string]any{"roles": "viewer"}))},
		{"b a's audience only", sign(kb, base(b, map[string]any{"aud": "other"}))},
		{"unknown issuer", sign(ka, base(a, map[string]any{"iss": "https://127.0.0.1:1/nowhere"}))},
		{"not a jwt", "hello.world"},
	}
}

// review asks srv who the bearer of token is and returns the status and
// the user, or the status alone when the token is refused.
func review(t *testing.T, srv *server, client *http.Client, token string) string {
	t.Helper()
	body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	req, err := http.NewRequest("POST", srv.url+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", srv.name, err)
	}
	defer resp.Body.Close()
	var out struct {
		Status struct {
			UserInfo struct {
				Username string              `json:"username"`
				UID      string              `json:"uid"`
				Groups   []string            `json:"groups"`
				Extra    map[string][]string `json:"extra"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Sprint(resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: decode: %v", srv.name, err)
	}
	u := out.Status.UserInfo
	return fmt.Sprintf("201 user=%q uid=%q groups=%q extra=%v", u.Username, u.UID, u.Groups, u.Extra)
}

func caClient(t *testing.T, srv *server) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(srv.dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// kubegate and kube-apiserver, given one AuthenticationConfiguration,
// make the same user of the same JWTs, refuse the same ones, and let the
// same paths be read without credentials (A.8).
func TestJWTAuthenticationLikeKubeAPIServer_A8(t *testing.T) {
	bin := requireOracle(t)
	ka, kb, stranger := jwttest.NewKey(t, "a-1", "RS256"), jwttest.NewKey(t, "b-1", "ES256"), jwttest.NewKey(t, "x-1", "RS256")
	a, b := jwttest.NewIssuer(t, ka), jwttest.NewIssuer(t, kb)
	cfg := filepath.Join(t.TempDir(), "authentication.yaml")
	if err := os.WriteFile(cfg, []byte(jwtAuthConfig(a, b)), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := []*server{startKubegate(t, "--authentication-config", cfg), startKubeAPIServer(t, bin, "--authentication-config="+cfg)}
	cases := jwtCases(t, a, b, ka, kb, stranger)
	clients := map[*server]*http.Client{}
	for _, srv := range servers {
		clients[srv] = caClient(t, srv)
		// Both fetch the issuers' keys in the background: wait until a
		// good token of each issuer is accepted.
		for _, c := range []jwtCase{cases[0], cases[21]} {
			testwait.For(t, 60*time.Second, srv.name+" accepts "+c.name, func() (bool, string) {
				got := review(t, srv, clients[srv], c.token)
				return strings.HasPrefix(got, "201"), got
			})
		}
	}
	accepted := 0
	for _, c := range cases {
		want := review(t, servers[1], clients[servers[1]], c.token)
		got := review(t, servers[0], clients[servers[0]], c.token)
		if got != want {
			t.Errorf("%s:\n kubegate:       %s\n kube-apiserver: %s", c.name, got, want)
		}
		if strings.HasPrefix(want, "201") {
			accepted++
		}
		t.Logf("%s: %s", c.name, want)
	}
	// Without credentials, only the anonymous section's paths are open.
	for _, path := range []string{"/livez", "/version", "/readyz", "/healthz", "/livez/ping", "/api"} {
		var codes []int
		for _, srv := range servers {
			resp, err := clients[srv].Get(srv.url + path)
			if err != nil {
				t.Fatalf("%s: GET %s: %v", srv.name, path, err)
			}
			resp.Body.Close()
			codes = append(codes, resp.StatusCode)
		}
		if codes[0] != codes[1] {
			t.Errorf("GET %s without credentials: kubegate %d, kube-apiserver %d", path, codes[0], codes[1])
		}
		t.Logf("GET %s without credentials: %d", path, codes[1])
	}
	// the cases exercise both outcomes
	if accepted < 5 || accepted > len(cases)-5 {
		t.Errorf("kube-apiserver accepted %d of %d tokens; the cases should mix both outcomes", accepted, len(cases))
	}
}

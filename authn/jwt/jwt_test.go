package jwt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/authn/jwt/jwttest"
	"github.com/kubegate/kubegate/internal/testwait"
)

func config(t *testing.T, yaml string) *jwt.Config {
	t.Helper()
	c, err := jwt.ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := jwt.Validate(c, []string{"https://kubernetes.default.svc.cluster.local"}); err != nil {
		t.Fatal(err)
	}
	return c
}

func issuerConfig(iss *jwttest.Issuer, mappings string) string {
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [kubegate]
    certificateAuthority: |
%s
  claimMappings:
%s
`, iss.URL, indent(iss.CAPEM(), 6), mappings)
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
}

func claims(iss *jwttest.Issuer, extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": iss.URL, "aud": "kubegate", "sub": "1234", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// waitAuthenticated retries until the authenticator has fetched the
// issuer's keys, which it does in the background.
func waitAuthenticated(t *testing.T, a authn.Token, token string) *authn.Response {
	t.Helper()
	var resp *authn.Response
	testwait.For(t, 30*time.Second, "token authenticated", func() (bool, string) {
		r, ok, err := a.AuthenticateToken(context.Background(), token)
		resp = r
		return ok && err == nil, fmt.Sprintf("ok %v err %v", ok, err)
	})
	return resp
}

// The claim mappings of an issuer decide the user, groups, uid and extra
// (A.8).
func TestClaimMappingsMakeTheUser_A8(t *testing.T) {
	key := jwttest.NewKey(t, "k1", "ES256")
	iss := jwttest.NewIssuer(t, key)
	c := config(t, issuerConfig(iss, `    username: {claim: email, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
    uid: {claim: sub}
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant`))
	a, err := jwt.New(t.Context(), c.JWT, jwt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp := waitAuthenticated(t, a, jwttest.Sign(t, key, claims(iss, map[string]any{
		"email": "ada@example.com", "email_verified": true, "groups": []string{"dev", "ops"}, "tenant": "blue"}), nil))
	u := resp.User
	if u.Name != "oidc:ada@example.com" || u.UID != "1234" || fmt.Sprint(u.Groups) != "[oidc:dev oidc:ops]" ||
		fmt.Sprint(u.Extra["example.com/tenant"]) != "[blue]" || resp.Authenticator != jwt.Name {
		t.Errorf("got %+v from %s", u, resp.Authenticator)
	}
	// a token of another issuer is not this authenticator's
	other := jwttest.NewIssuer(t, key)
	if r, ok, err := a.AuthenticateToken(t.Context(), jwttest.Sign(t, key, claims(other, nil), nil)); ok || err != nil || r != nil {
		t.Errorf("another issuer's token: %v %v %v, want not mine", r, ok, err)
	}
	// an unverified email is refused, with no token in the error
	tok := jwttest.Sign(t, key, claims(iss, map[string]any{"email": "eve@example.com", "email_verified": false}), nil)
	_, ok, err := a.AuthenticateToken(t.Context(), tok)
	if ok || err == nil || strings.Contains(err.Error(), tok) {
		t.Errorf("unverified email: ok %v err %v", ok, err)
	}
}

// A key the issuer adds is found on its first use, and a key it drops
// stops verifying (A.8).
func TestIssuerKeysRotate_A8(t *testing.T) {
	old, next := jwttest.NewKey(t, "old", "RS256"), jwttest.NewKey(t, "next", "RS256")
	iss := jwttest.NewIssuer(t, old)
	c := config(t, issuerConfig(iss, `    username: {claim: sub, prefix: ""}`))
	a, err := jwt.New(t.Context(), c.JWT, jwt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	oldTok := jwttest.Sign(t, old, claims(iss, nil), nil)
	waitAuthenticated(t, a, oldTok)
	iss.SetKeys(old, next)
	waitAuthenticated(t, a, jwttest.Sign(t, next, claims(iss, nil), nil))
	iss.SetKeys(next)
	// A token with a kid the authenticator does not know makes it read
	// the key set again; from then on the dropped key verifies nothing.
	stranger := jwttest.NewKey(t, "stranger", "RS256")
	if _, ok, err := a.AuthenticateToken(t.Context(), jwttest.Sign(t, stranger, claims(iss, nil), nil)); ok || err == nil {
		t.Fatalf("a token of an unpublished key: ok %v err %v", ok, err)
	}
	// The key set read is stored a moment after the lookup that asked for
	// it has its answer (go-oidc hands the keys to the waiting lookup
	// first), so the dropped key is refused from then on, not at once.
	testwait.For(t, 30*time.Second, "the dropped key refused", func() (bool, string) {
		_, ok, err := a.AuthenticateToken(t.Context(), oldTok)
		return !ok && err != nil, fmt.Sprintf("ok %v err %v", ok, err)
	})
	waitAuthenticated(t, a, jwttest.Sign(t, next, claims(iss, map[string]any{"sub": "again"}), nil))
}

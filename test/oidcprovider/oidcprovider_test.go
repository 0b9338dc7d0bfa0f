package oidcprovider

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// claims are the ID token claims the tests look at.
type claims struct {
	Iss    string   `json:"iss"`
	Sub    string   `json:"sub"`
	Aud    string   `json:"aud"`
	Email  string   `json:"email"`
	Name   string   `json:"name"`
	Groups []string `json:"groups"`
	Exp    int64    `json:"exp"`
}

// verify checks an RS256 token's signature against the keys p publishes
// now and returns its claims, or ok false if no published key verifies it.
func verify(t *testing.T, p *Provider, token string) (c claims, ok bool) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	var set struct {
		Keys []struct {
			KID, Kty, Alg, N, E string
		} `json:"keys"`
	}
	if err := p.getJSON(p.Issuer+"/keys", &set); err != nil {
		t.Fatal(err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	for _, k := range set.Keys {
		if k.Kty != "RSA" {
			continue
		}
		n, _ := base64.RawURLEncoding.DecodeString(k.N)
		e, _ := base64.RawURLEncoding.DecodeString(k.E)
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil {
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(payload, &c); err != nil {
				t.Fatal(err)
			}
			return c, true
		}
	}
	return c, false
}

func TestProviderIssuesTokensWithGroupsAndRotatesItsKey(t *testing.T) {
	p := Start(t, Options{
		ClientID: "kubernetes",
		Users: []User{
			{Email: "alice@example.com", Name: "alice", ID: "alice-id", Groups: []string{"developers", "readers"}},
			{Email: "bob@example.com", Name: "bob", ID: "bob-id", Groups: []string{"auditors"}},
		},
	})
	if !strings.HasPrefix(p.Issuer, "https://127.0.0.1:") || !strings.HasSuffix(p.Issuer, "/dex") {
		t.Fatalf("issuer %q: want https://127.0.0.1:PORT/dex", p.Issuer)
	}

	tests := []struct {
		email, id, name string
		groups          []string
	}{
		{"alice@example.com", "alice-id", "alice", []string{"developers", "readers"}},
		{"bob@example.com", "bob-id", "bob", []string{"auditors"}},
	}
	old := map[string]string{}
	for _, tc := range tests {
		tok := p.MustToken(t, tc.email)
		old[tc.email] = tok
		c, ok := verify(t, p, tok)
		if !ok {
			t.Fatalf("%s's token is signed by no published key", tc.email)
		}
		want := claims{Iss: p.Issuer, Sub: Subject(tc.id), Aud: "kubernetes", Email: tc.email, Name: tc.name, Groups: tc.groups, Exp: c.Exp}
		if c.Iss != want.Iss || c.Sub != want.Sub || c.Aud != want.Aud || c.Email != want.Email || c.Name != want.Name || !slices.Equal(c.Groups, want.Groups) {
			t.Errorf("%s's claims:\n got %+v\nwant %+v", tc.email, c, want)
		}
		if left := time.Until(time.Unix(c.Exp, 0)); left < 50*time.Minute || left > 61*time.Minute {
			t.Errorf("%s's token expires in %v; want about 1h", tc.email, left)
		}
	}

	t.Run("a wrong password gets no token", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := p.Token(ctx, "alice@example.com", "not-"+Password); err == nil {
			t.Fatal("got a token for a wrong password")
		}
	})

	t.Run("restart rotates the signing key", func(t *testing.T) {
		kid := KeyID(old["alice@example.com"])
		p.Restart(t)
		tok := p.MustToken(t, "alice@example.com")
		if got := KeyID(tok); got == kid || got == "" {
			t.Fatalf("new token's kid %q; want a new one (old %q)", got, kid)
		}
		if _, ok := verify(t, p, tok); !ok {
			t.Fatal("the new token is signed by no published key")
		}
		if _, ok := verify(t, p, old["alice@example.com"]); ok {
			t.Fatal("the old token still verifies against the published keys")
		}
	})
}

func TestSubjectMatchesDexEncoding(t *testing.T) {
	// A subject Dex v2.45.1 issued for user ID 1b6f5c2e-alice.
	if got, want := Subject("1b6f5c2e-alice"), "Cg4xYjZmNWMyZS1hbGljZRIFbG9jYWw"; got != want {
		t.Fatalf("Subject = %q; want %q", got, want)
	}
}

func TestFrontDropsOnlyTheKeySetsCacheControl(t *testing.T) {
	p := Start(t, Options{Users: []User{{Email: "carol@example.com"}}})
	get := func(path string) http.Header {
		resp, err := p.client.Get(p.Issuer + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return resp.Header
	}
	if h := get("/keys"); h.Get("Cache-Control") != "" || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Errorf("/keys: Cache-Control %q, Content-Type %q; want none and JSON", h.Get("Cache-Control"), h.Get("Content-Type"))
	}
	if h := get("/.well-known/openid-configuration"); h.Get("Content-Type") == "" {
		t.Error("discovery: no Content-Type passed through")
	}
}

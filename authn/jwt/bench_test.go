package jwt_test

import (
	"context"
	"crypto"
	"net/http"
	"runtime"
	"testing"

	gojwt "github.com/golang-jwt/jwt/v5"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/authn/jwt/jwttest"
	"github.com/kubegate/kubegate/internal/benchcpu"
)

// benchIssuer is an issuer with an ES256 key, an authenticator for it with
// the issuer's keys fetched, and a token it accepts.
func benchIssuer(b *testing.B, mappings string) (*jwt.Authenticator, *jwttest.Key, *jwttest.Issuer, string) {
	b.Helper()
	key := jwttest.NewKey(b, "es", "ES256")
	iss := jwttest.NewIssuer(b, key)
	c, err := jwt.ParseConfig([]byte(issuerConfig(iss, mappings)))
	if err != nil {
		b.Fatal(err)
	}
	if err := jwt.Validate(c, []string{saIssuer}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	a, err := jwt.New(ctx, c.JWT, jwt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tok := jwttest.Sign(b, key, claims(iss, map[string]any{"groups": []string{"dev", "ops"}}), nil)
	waitReady(b, a, tok)
	return a, key, iss, tok
}

const benchMappings = `    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}`

// BenchmarkCachedJWTHit is a request whose JWT the token cache has seen,
// through the chain authn.New assembles for the gateway and the API
// server: bearer header, cache (kube-apiserver caches token answers for
// 10 s), authenticated group, API audiences (A.8).
func BenchmarkCachedJWTHit(b *testing.B) {
	a, _, _, tok := benchIssuer(b, benchMappings)
	chain := authn.New(authn.Config{Tokens: []authn.Token{a}, TokenCache: authn.DefaultCacheOptions(), APIAudiences: []string{saIssuer}})
	newReq := func() *http.Request {
		r, err := http.NewRequest(http.MethodGet, "https://kubegate.example/api/v1/pods", nil)
		if err != nil {
			b.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	// A success takes the Authorization header out of the request, as in
	// kube-apiserver: each iteration puts it back, which costs a map
	// assignment.
	authz := []string{"Bearer " + tok}
	r := newReq()
	if resp, ok, err := chain.AuthenticateRequest(r); !ok || resp.User.Name != "oidc:1234" {
		b.Fatalf("first request: %v %v %v", resp, ok, err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		cpu := benchcpu.Start()
		for b.Loop() {
			r.Header["Authorization"] = authz
			if _, ok, err := chain.AuthenticateRequest(r); !ok {
				b.Fatalf("refused: %v", err)
			}
		}
		cpu.Report(b)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := newReq()
			for pb.Next() {
				r.Header["Authorization"] = authz
				if _, ok, err := chain.AuthenticateRequest(r); !ok {
					b.Errorf("refused: %v", err)
					return
				}
			}
		})
	})
}

// BenchmarkES256Verify compares an uncached ES256 token through kubegate's
// JWT authenticator (kube's oidc authenticator: issuer match, signature,
// standard claims, claim mappings) with golang-jwt alone parsing and
// verifying the same token with the public key and checking the same
// standard claims. "kubegate" and "golang-jwt" run each alone; "alternated"
// runs them in alternating batches on one locked thread and times each
// batch with the thread's CPU clock, so that a busy machine disturbs both
// alike: its ratio metric is kubegate's CPU time over golang-jwt's.
func BenchmarkES256Verify(b *testing.B) {
	a, key, iss, tok := benchIssuer(b, benchMappings)
	pub := key.Private.Public()
	parser := gojwt.NewParser(gojwt.WithValidMethods([]string{"ES256"}), gojwt.WithIssuer(iss.URL),
		gojwt.WithAudience("kubegate"), gojwt.WithExpirationRequired())
	keyFunc := func(*gojwt.Token) (any, error) { return crypto.PublicKey(pub), nil }
	ctx := context.Background()
	ops := [2]func(b *testing.B){
		func(b *testing.B) {
			if _, ok, err := a.AuthenticateToken(ctx, tok); !ok {
				b.Fatal(err)
			}
		},
		func(b *testing.B) {
			t, err := parser.Parse(tok, keyFunc)
			if err != nil {
				b.Fatal(err)
			}
			// What the user is made of, as the authenticator reads it.
			c := t.Claims.(gojwt.MapClaims)
			if _, ok := c["sub"].(string); !ok {
				b.Fatal("no sub")
			}
			if _, ok := c["groups"].([]any); !ok {
				b.Fatal("no groups")
			}
		},
	}
	for i, name := range []string{"kubegate", "golang-jwt"} {
		ops[i](b)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchcpu.Start()
			for b.Loop() {
				ops[i](b)
			}
			cpu.Report(b)
		})
	}
	b.Run("alternated", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		const batch = 8
		var ns, n [2]int64
		t0 := benchcpu.ThreadNanos()
		for i := 0; b.Loop(); i++ {
			side := i / batch % 2
			ops[side](b)
			if i%batch == batch-1 {
				t := benchcpu.ThreadNanos()
				ns[side] += t - t0
				n[side] += batch
				t0 = t
			}
		}
		if n[0] == 0 || n[1] == 0 {
			return // too few iterations to compare
		}
		k, g := float64(ns[0])/float64(n[0]), float64(ns[1])/float64(n[1])
		b.ReportMetric(k, "kubegate-cpu-ns/op")
		b.ReportMetric(g, "golang-jwt-cpu-ns/op")
		b.ReportMetric(k/g, "ratio")
	})
}

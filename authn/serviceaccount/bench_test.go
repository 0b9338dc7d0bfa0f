package serviceaccount

import (
	"context"
	"crypto"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"runtime"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkVerify compares an uncached verification of a bound token by
// this package with golang-jwt's own parse-and-verify (jwt.Parse with the
// same key, method check and exp/nbf/iat validation) of the same token.
func BenchmarkVerify(b *testing.B) {
	k := testKeys()
	ctx := context.Background()
	for _, c := range []struct {
		alg string
		key crypto.Signer
	}{{"ES256", k.p256}, {"RS256", k.rsa}} {
		iss := newTestIssuer(b, c.key)
		res, err := iss.Issue(TokenRequest{
			Namespace: "default", Name: "sa", UID: "sa-uid",
			Pod: &ObjectRef{Name: "web-0", UID: "pod-uid"}, Node: &ObjectRef{Name: "node-1", UID: "node-uid"},
		})
		if err != nil {
			b.Fatal(err)
		}
		tok := res.Token
		pub := c.key.Public()
		a := newTestAuthenticator(b, []crypto.PublicKey{pub})

		keyFunc := func(*jwt.Token) (any, error) { return pub, nil }
		p := jwt.NewParser(jwt.WithValidMethods([]string{c.alg}), jwt.WithTimeFunc(fixedClock(testNow)), jwt.WithLeeway(DefaultLeeway))

		b.Run(c.alg+"/kubegate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := a.AuthenticateToken(ctx, tok); !ok {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.alg+"/golang-jwt", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(tok, keyFunc); err != nil {
					b.Fatal(err)
				}
			}
		})
		// ratio alternates the two in one loop and times each call with
		// the CPU time of this thread, so that the figure holds on a busy
		// shared machine, and reports kubegate's time over golang-jwt's.
		b.Run(c.alg+"/ratio", func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			kubegate := func() {
				if _, ok, err := a.AuthenticateToken(ctx, tok); !ok {
					b.Fatal(err)
				}
			}
			golangJWT := func() {
				if _, err := p.Parse(tok, keyFunc); err != nil {
					b.Fatal(err)
				}
			}
			timed := func(f func()) int64 {
				t0 := benchcpu.ThreadNanos()
				f()
				return benchcpu.ThreadNanos() - t0
			}
			var ours, theirs int64
			for i := 0; b.Loop(); i++ {
				// Alternate the order so neither always runs second.
				if i%2 == 0 {
					ours += timed(kubegate)
					theirs += timed(golangJWT)
				} else {
					theirs += timed(golangJWT)
					ours += timed(kubegate)
				}
			}
			b.ReportMetric(float64(ours)/float64(b.N), "kubegate-cpu-ns/op")
			b.ReportMetric(float64(theirs)/float64(b.N), "golang-jwt-cpu-ns/op")
			b.ReportMetric(float64(ours)/float64(theirs), "ratio")
		})
	}
}

// BenchmarkReject measures the cheap refusals: a 1 MiB token, an opaque
// token of another authenticator, and a JWT of another issuer.
func BenchmarkReject(b *testing.B) {
	k := testKeys()
	ctx := context.Background()
	a := newTestAuthenticator(b, []crypto.PublicKey{k.p256.Public()})
	other := boundClaims()
	other["iss"] = "https://other"
	for _, c := range []struct{ name, token string }{
		{"1MiB", strings.Repeat("a.", 1<<19)},
		{"opaque", "0123456789abcdef0123456789abcdef"},
		{"other-issuer", signRaw(b, jwt.SigningMethodES256, k.p256, other, nil)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, _ := a.AuthenticateToken(ctx, c.token); ok {
					b.Fatal("authenticated")
				}
			}
		})
	}
}

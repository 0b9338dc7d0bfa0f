package authn_test

import (
	"context"
	"crypto"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"net/http"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

func BenchmarkTokenCacheHit(b *testing.B) {
	for _, size := range []int{36, 1024} { // a token-file UUID, a service-account JWT
		token := strings.Repeat("t", size)
		b.Run(strings.Repeat("x", 0)+map[int]string{36: "36B-token", 1024: "1KiB-token"}[size], func(b *testing.B) {
			inner := authn.TokenFunc(func(context.Context, string) (*authn.Response, bool, error) {
				return &authn.Response{User: authn.User{Name: "alice"}}, true, nil
			})
			c := authn.CacheTokens(inner, authn.DefaultCacheOptions())
			ctx := context.Background()
			b.ReportAllocs()
			cpu := benchcpu.Start()
			for b.Loop() {
				if _, ok, _ := c.AuthenticateToken(ctx, token); !ok {
					b.Fatal("miss")
				}
			}
			cpu.Report(b)
		})
	}
}

// BenchmarkUnion measures each authenticator alone and the union of all
// four (request-header, x509, token file, service account, with the token
// cache and anonymous on) on a request that authenticator accepts.
func BenchmarkUnion(b *testing.B) {
	w := hostileWorld(b)
	x, err := kx509.New(w.clientCA.CertPEM, kx509.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rhOpts := requestheader.Default()
	rhOpts.AllowedNames = []string{"front-proxy-client"}
	rh, err := requestheader.New(w.frontCA.CertPEM, rhOpts)
	if err != nil {
		b.Fatal(err)
	}
	tf, _, err := tokenfile.Parse(strings.NewReader(tokenFile))
	if err != nil {
		b.Fatal(err)
	}
	sa, err := serviceaccount.New(serviceaccount.Options{Issuers: []string{saIssuer}}, []crypto.PublicKey{w.saKey.Public()})
	if err != nil {
		b.Fatal(err)
	}
	union := authn.New(authn.Config{
		RequestHeader: rh, X509: x, StaticTokens: []authn.Token{tf}, Tokens: []authn.Token{sa},
		TokenCache: authn.DefaultCacheOptions(), APIAudiences: []string{saIssuer}, Anonymous: true,
	})
	saTok, err := w.saIssuer.Issue(serviceaccount.TokenRequest{Namespace: "default", Name: "builder", UID: "sa-uid-1"})
	if err != nil {
		b.Fatal(err)
	}
	client := w.cert(b, w.clientCA, testpki.Options{CN: "alice", Orgs: []string{"dev"}})
	proxy := w.cert(b, w.frontCA, testpki.Options{CN: "front-proxy-client"})
	common := map[string]string{"Accept": "application/json", "User-Agent": "kubectl/v1.32.0"}

	cases := []struct {
		name  string
		alone authn.Request
		r     func() *http.Request
	}{
		{name: "x509", alone: x, r: certReq(common, client)},
		{name: "requestheader", alone: rh, r: certReq(map[string]string{"X-Remote-User": "bob", "X-Remote-Group": "ops", "Accept": "application/json"}, proxy)},
		{name: "tokenfile", alone: authn.Bearer(tf), r: bearerReq(goodToken)},
		{name: "serviceaccount-cached", alone: authn.Bearer(authn.CacheTokens(sa, authn.DefaultCacheOptions())), r: bearerReq(saTok.Token)},
		{name: "serviceaccount-uncached", alone: authn.Bearer(sa), r: bearerReq(saTok.Token)},
		{name: "anonymous", alone: authn.NewAnonymous(), r: headerReq(common)},
	}
	for _, c := range cases {
		for _, m := range []struct {
			name string
			a    authn.Request
		}{{"alone", c.alone}, {"union", union}} {
			if c.name == "serviceaccount-uncached" && m.name == "union" {
				continue // the union caches tokens
			}
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				r := c.r()
				saved := r.Header.Clone()
				b.ReportAllocs()
				cpu := benchcpu.Start()
				for b.Loop() {
					for k, v := range saved { // authentication removes credentials
						r.Header[k] = v
					}
					if _, ok, err := m.a.AuthenticateRequest(r); !ok {
						b.Fatal(err)
					}
				}
				cpu.Report(b)
			})
		}
	}
}

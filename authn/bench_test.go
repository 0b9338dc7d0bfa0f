package authn_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"github.com/kubegate/kubegate/internal/testpki"
)

// BenchmarkTokenCacheHit measures a cache hit: real bound service-account
// tokens (the "cached SA token" figure) and opaque tokens, which are keyed
// by an HMAC of the whole token. Without audiences in the context the
// audiences cost nothing per hit, as in the chain New builds, which hashes
// the API audiences once; with them (a TokenReview naming audiences) they
// are hashed on every hit.
func BenchmarkTokenCacheHit(b *testing.B) {
	w := hostileWorld(b)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	rsaIssuer, err := serviceaccount.NewIssuer(rsaKey, serviceaccount.IssuerOptions{Issuer: saIssuer})
	if err != nil {
		b.Fatal(err)
	}
	sa, err := serviceaccount.New(serviceaccount.Options{Issuers: []string{saIssuer}}, []crypto.PublicKey{w.saKey.Public(), rsaKey.Public()})
	if err != nil {
		b.Fatal(err)
	}
	issue := func(iss *serviceaccount.Issuer) string {
		tok, err := iss.Issue(serviceaccount.TokenRequest{
			Namespace: "default", Name: "builder", UID: "sa-uid-1",
			Pod: &serviceaccount.ObjectRef{Name: "web-0", UID: "pod-uid-1"},
		})
		if err != nil {
			b.Fatal(err)
		}
		return tok.Token
	}
	opaque := authn.TokenFunc(func(context.Context, string) (*authn.Response, bool, error) {
		return &authn.Response{User: authn.User{Name: "alice"}}, true, nil
	})
	es256 := issue(w.saIssuer)
	plain := context.Background()
	withAudiences := authn.WithAudiences(plain, []string{saIssuer})
	for _, c := range []struct {
		name  string
		t     authn.Token
		ctx   context.Context
		token string
	}{
		{"serviceaccount-ES256", sa, plain, es256},
		{"serviceaccount-ES256-context-audiences", sa, withAudiences, es256},
		{"serviceaccount-RS256", sa, plain, issue(rsaIssuer)},
		{"opaque-36B", opaque, plain, goodToken},
		{"opaque-1KiB", opaque, plain, strings.Repeat("t", 1024)},
	} {
		b.Run(c.name, func(b *testing.B) {
			cache := authn.CacheTokens(c.t, authn.DefaultCacheOptions())
			if _, ok, err := cache.AuthenticateToken(c.ctx, c.token); !ok {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(c.token)), "token-bytes")
			b.ReportAllocs()
			cpu := benchcpu.Start()
			for b.Loop() {
				if _, ok, _ := cache.AuthenticateToken(c.ctx, c.token); !ok {
					b.Fatal("miss")
				}
			}
			cpu.Report(b)
		})
	}
}

// BenchmarkUnion measures, for each kind of credential, the authenticator
// that accepts it alone and the chain New builds with all four configured
// (request-header, x509, token file, service account with the token cache
// and the API audiences, anonymous on), on the same request.
//
// The "added" sub-benchmarks give what the chain adds over its member, and
// "union-only-added" what Union alone adds over it (the four members in
// New's order, without the group, anonymous and audience steps around
// them). The header removal a server's filter adds after a success is
// measured on its own by BenchmarkStripCredentials. They alternate batches of both on one locked thread
// and time each batch with the thread's CPU clock, so the difference holds
// on a busy machine.
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
	auds := []string{saIssuer}
	union := authn.New(authn.Config{
		RequestHeader: rh, X509: x, StaticTokens: []authn.Token{tf}, Tokens: []authn.Token{sa},
		TokenCache: authn.DefaultCacheOptions(), APIAudiences: auds, Anonymous: true,
	})
	// The plain union of the four members in New's order, without the steps
	// New adds around it (group, anonymous, audience check).
	plain := authn.Union(rh, x, authn.Bearer(authn.UnionTokens(tf, authn.CacheTokens(sa, authn.DefaultCacheOptions()))))
	saTok, err := w.saIssuer.Issue(serviceaccount.TokenRequest{Namespace: "default", Name: "builder", UID: "sa-uid-1"})
	if err != nil {
		b.Fatal(err)
	}
	client := w.cert(b, w.clientCA, testpki.Options{CN: "alice", Orgs: []string{"dev"}})
	proxy := w.cert(b, w.frontCA, testpki.Options{CN: "front-proxy-client"})
	common := map[string]string{"Accept": "application/json", "User-Agent": "kubectl/v1.32.0"}
	// Every request carries the headers every client sends.
	bearer := func(token string) func() *http.Request {
		return func() *http.Request {
			req := headerReq(common)()
			req.Header.Set("Authorization", "Bearer "+token)
			return req
		}
	}
	// Alone, the cached service-account authenticator finds the API
	// audiences in the request context; the union supplies them itself.
	withAudiences := func(r func() *http.Request) func() *http.Request {
		return func() *http.Request {
			req := r()
			return req.WithContext(authn.WithAudiences(req.Context(), auds))
		}
	}

	cases := []struct {
		name      string
		alone     authn.Request
		r, aloneR func() *http.Request
		skipUnion bool
	}{
		{name: "x509", alone: x, r: certReq(common, client)},
		{name: "requestheader", alone: rh, r: certReq(map[string]string{"X-Remote-User": "bob", "X-Remote-Group": "ops", "Accept": "application/json", "User-Agent": "kubectl/v1.32.0"}, proxy)},
		{name: "tokenfile", alone: authn.Bearer(tf), r: bearer(goodToken)},
		{name: "serviceaccount-cached", alone: authn.Bearer(authn.CacheTokens(sa, authn.DefaultCacheOptions())), r: bearer(saTok.Token), aloneR: withAudiences(bearer(saTok.Token))},
		// The union caches tokens: uncached is measured alone only.
		{name: "serviceaccount-uncached", alone: authn.Bearer(sa), r: bearer(saTok.Token), aloneR: withAudiences(bearer(saTok.Token)), skipUnion: true},
		{name: "anonymous", alone: authn.NewAnonymous(), r: headerReq(common)},
	}
	for _, c := range cases {
		if c.aloneR == nil {
			c.aloneR = c.r
		}
		alone := newBenchRequest(b, c.alone, c.aloneR())
		inUnion := newBenchRequest(b, union, c.r())
		b.Run(c.name+"/alone", func(b *testing.B) { alone.run(b) })
		if c.skipUnion {
			continue
		}
		b.Run(c.name+"/union", func(b *testing.B) { inUnion.run(b) })
		b.Run(c.name+"/added", func(b *testing.B) { reportAdded(b, alone, inUnion) })
		if c.name == "anonymous" {
			continue // anonymous is New's fallback, not a member of the union
		}
		inPlain := newBenchRequest(b, plain, c.aloneR())
		b.Run(c.name+"/union-only-added", func(b *testing.B) { reportAdded(b, alone, inPlain) })
	}
}

// reportAdded reports what authenticating with other costs over base. It
// alternates batches of both on one locked thread and times each batch
// with the thread's CPU clock, so that the difference holds on a busy
// machine.
func reportAdded(b *testing.B, base, other *benchRequest) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const batch = 64
	var ns, n [2]int64
	reqs := [2]*benchRequest{base, other}
	t0 := benchcpu.ThreadNanos()
	for i := 0; b.Loop(); i++ {
		side := i / batch % 2
		reqs[side].once(b)
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
	a, o := float64(ns[0])/float64(n[0]), float64(ns[1])/float64(n[1])
	b.ReportMetric(a, "base-cpu-ns/op")
	b.ReportMetric(o, "cpu-ns/op")
	b.ReportMetric(o-a, "added-ns/op")
}

// benchRequest is a request authenticated over and over; authentication
// removes credentials, so they are put back before each round.
type benchRequest struct {
	a     authn.Request
	r     *http.Request
	saved []savedHeader
}

type savedHeader struct {
	name   string
	values []string
}

func newBenchRequest(b *testing.B, a authn.Request, r *http.Request) *benchRequest {
	br := &benchRequest{a: a, r: r}
	for name, values := range r.Header {
		br.saved = append(br.saved, savedHeader{name, values})
	}
	if _, ok, err := a.AuthenticateRequest(r); !ok { // fill caches
		b.Fatal(err)
	}
	return br
}

func (br *benchRequest) once(b *testing.B) {
	for _, h := range br.saved {
		if _, ok := br.r.Header[h.name]; !ok {
			br.r.Header[h.name] = h.values
		}
	}
	if _, ok, err := br.a.AuthenticateRequest(br.r); !ok {
		b.Fatal(err)
	}
}

func (br *benchRequest) run(b *testing.B) {
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		br.once(b)
	}
	cpu.Report(b)
}

// BenchmarkStripCredentials measures the pass over the request headers
// that removes identity headers after every success, the step a server's
// authentication filter adds to New's authenticator, whose cost grows
// with the number of headers: two as in BenchmarkUnion, seven as kubectl
// sends.
func BenchmarkStripCredentials(b *testing.B) {
	resp := &authn.Response{User: authn.User{Name: "alice"}}
	ok := authn.RequestFunc(func(*http.Request) (*authn.Response, bool, error) { return resp, true, nil })
	strip := authn.StripCredentials(ok)
	for _, c := range []struct {
		name    string
		headers map[string]string
	}{
		{"2-headers", map[string]string{"Accept": "application/json", "User-Agent": "kubectl/v1.32.0"}},
		{"7-headers", map[string]string{
			"Accept": "application/json", "User-Agent": "kubectl/v1.32.0", "Accept-Encoding": "gzip",
			"Kubectl-Command": "kubectl get", "Kubectl-Session": "0f3c8d8e", "Content-Type": "application/json",
			"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			reportAdded(b, newBenchRequest(b, ok, headerReq(c.headers)()), newBenchRequest(b, strip, headerReq(c.headers)()))
		})
	}
}

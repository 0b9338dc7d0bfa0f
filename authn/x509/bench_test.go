package x509_test

import (
	"crypto/x509"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"net/http"
	"testing"

	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

// benchChains returns a one-level chain (leaf signed by the root) and a
// multi-level one (leaf, intermediate, root) with the root bundle.
func benchChains(b *testing.B) (caPEM []byte, roots *x509.CertPool, one, multi []*testpki.Cert) {
	ca := newCA(b, "bench-ca")
	inter := ca.Intermediate(b, "bench-intermediate")
	return ca.CertPEM, ca.Pool(), []*testpki.Cert{issue(b, ca, testpki.Options{CN: "alice", Orgs: []string{"dev"}})},
		[]*testpki.Cert{issue(b, inter, testpki.Options{CN: "alice", Orgs: []string{"dev"}}), inter}
}

// BenchmarkVerify compares the authenticator, with and without its cache,
// to a bare crypto/x509 Verify with the options kube-apiserver uses.
func BenchmarkVerify(b *testing.B) {
	caPEM, roots, one, multi := benchChains(b)
	for _, c := range []struct {
		name  string
		chain []*testpki.Cert
	}{{"one-level", one}, {"multi-level", multi}} {
		b.Run("bare-x509-Verify/"+c.name, func(b *testing.B) {
			certs := tlsRequest(c.chain...).TLS.PeerCertificates
			b.ReportAllocs()
			cpu := benchcpu.Start()
			for b.Loop() {
				opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
				if len(certs) > 1 {
					opts.Intermediates = x509.NewCertPool()
					for _, ic := range certs[1:] {
						opts.Intermediates.AddCert(ic)
					}
				}
				if _, err := certs[0].Verify(opts); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report(b)
		})
		for _, m := range []struct {
			name string
			size int
			r    func() *http.Request
		}{
			{name: "uncached", size: -1},
			{name: "cached", size: 0},
		} {
			b.Run(m.name+"/"+c.name, func(b *testing.B) {
				a, err := kx509.New(caPEM, kx509.Options{CacheSize: m.size})
				if err != nil {
					b.Fatal(err)
				}
				r := tlsRequest(c.chain...) // one TLS connection: the same parsed chain each time
				b.ReportAllocs()
				cpu := benchcpu.Start()
				for b.Loop() {
					if _, ok, err := a.AuthenticateRequest(r); !ok {
						b.Fatal(err)
					}
				}
				cpu.Report(b)
			})
		}
		b.Run("cached-new-connection/"+c.name, func(b *testing.B) {
			// Every request re-parses the chain, as a new TLS connection
			// does: the cache is found by the chain's SHA-256.
			a, err := kx509.New(caPEM, kx509.Options{})
			if err != nil {
				b.Fatal(err)
			}
			reqs := make([]*http.Request, 64)
			for i := range reqs {
				reqs[i] = tlsRequest(c.chain...)
				for j, pc := range reqs[i].TLS.PeerCertificates {
					if reqs[i].TLS.PeerCertificates[j], err = x509.ParseCertificate(pc.Raw); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			i := 0
			cpu := benchcpu.Start()
			for b.Loop() {
				// A fresh parse per iteration would measure parsing; reuse 64
				// parses, each missing the identity memo's first entry only.
				if _, ok, err := a.AuthenticateRequest(reqs[i%len(reqs)]); !ok {
					b.Fatal(err)
				}
				i++
			}
			cpu.Report(b)
		})
	}
}

func BenchmarkVerifyParallel(b *testing.B) {
	caPEM, _, one, _ := benchChains(b)
	a, err := kx509.New(caPEM, kx509.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := tlsRequest(one...)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok, err := a.AuthenticateRequest(r); !ok {
				b.Error(err)
				return
			}
		}
	})
}

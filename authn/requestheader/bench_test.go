package requestheader_test

import (
	"github.com/kubegate/kubegate/internal/benchcpu"
	"testing"

	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/internal/testpki"
)

func BenchmarkAuthenticateRequest(b *testing.B) {
	p := fixtures(b)
	headers := [][2]string{{"X-Remote-User", "alice"}, {"X-Remote-Uid", "1001"}, {"X-Remote-Group", "dev"}, {"X-Remote-Group", "ops"}, {"X-Remote-Extra-Scopes", "read"}, {"Accept", "application/json"}, {"User-Agent", "kubectl"}}
	for _, m := range []struct {
		name string
		size int
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(m.name, func(b *testing.B) {
			o := requestheader.Default()
			o.AllowedNames = []string{"front-proxy-client"}
			o.CacheSize = m.size
			a, err := requestheader.New(p.frontCA.CertPEM, o)
			if err != nil {
				b.Fatal(err)
			}
			r := request([]*testpki.Cert{p.proxy}, headers)
			saved := r.Header.Clone()
			b.ReportAllocs()
			cpu := benchcpu.Start()
			for b.Loop() {
				for k, v := range saved { // the authenticator removes them on success
					r.Header[k] = v
				}
				if _, ok, err := a.AuthenticateRequest(r); !ok {
					b.Fatal(err)
				}
			}
			cpu.Report(b)
		})
	}
}

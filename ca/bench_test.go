package ca

import (
	"testing"
	"time"
)

// BenchmarkIssue measures key generation plus signing of one client
// certificate per key algorithm, in parallel over GOMAXPROCS, with a CA
// of the same algorithm.
func BenchmarkIssue(b *testing.B) {
	for _, alg := range KeyAlgorithms {
		b.Run(string(alg), func(b *testing.B) {
			a, _, err := CreateAuthority("ca", "bench-ca", alg, 0)
			if err != nil {
				b.Fatal(err)
			}
			req := &Request{CN: "nakam", Orgs: []string{"devops", "devs"}, KeyAlgorithm: alg}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := a.Issue(req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "certs/s")
		})
	}
}

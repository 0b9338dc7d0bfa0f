package authn

import (
	"strings"
	"testing"

	"github.com/kubegate/kubegate/internal/benchcpu"
)

// BenchmarkTokenMAC measures the key every lookup computes, HMAC-SHA256
// of a 500-character token (an ES256 service-account token is about
// that long): the floor under BenchmarkTokenCacheHit, against which the
// rest of a hit is measured.
func BenchmarkTokenMAC(b *testing.B) {
	c := newTokenCache(nil, DefaultCacheOptions(), nil)
	token := strings.Repeat("t", 500)
	var sum [32]byte
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		sum = c.mac(token)
	}
	cpu.Report(b)
	if sum == ([32]byte{}) {
		b.Fatal("no MAC")
	}
}

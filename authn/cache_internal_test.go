package authn

import (
	"strings"
	"testing"

	"github.com/kubegate/kubegate/internal/benchcpu"
)

func TestSignatureAt(t *testing.T) {
	t.Parallel()
	sig := strings.Repeat("s", minSignature)
	es256, rs256 := strings.Repeat("e", 86), strings.Repeat("r", 342)
	tests := []struct {
		name  string
		token string
		want  int // offset of the signature; 0: the token is hashed whole
	}{
		{name: "A.0 a JWT is keyed by its signature", token: "eyJh.eyJw." + sig, want: len("eyJh.eyJw.")},
		{name: "A.0 a JWT with an empty payload is keyed by its signature", token: "eyJh.." + sig, want: len("eyJh..")},
		{name: "A.0 an unsigned JWT is hashed whole", token: "eyJh.eyJw."},
		{name: "A.0 a signature under 43 characters is hashed whole", token: "eyJh.eyJw." + sig[1:]},
		{name: "A.0 a header that is not a JSON object is hashed whole", token: "abcd.eyJw." + sig},
		{name: "A.0 one dot is hashed whole", token: "eyJh." + sig},
		{name: "A.0 three dots: the last segment is the signature", token: "eyJh.eyJw.x." + sig, want: len("eyJh.eyJw.x.")},
		{name: "A.0 an ES256 JWT is keyed by its signature", token: "eyJh.eyJw." + es256, want: len("eyJh.eyJw.")},
		{name: "A.0 an RS256 JWT is keyed by its signature", token: "eyJh.eyJw." + rs256, want: len("eyJh.eyJw.")},
		{name: "A.0 a dot where an ES256 signature would start, then another", token: "eyJh.eyJw." + es256[:40] + "." + es256[:45], want: len("eyJh.eyJw." + es256[:40] + ".")},
		{name: "A.0 an ES256-long last segment after the only dot is hashed whole", token: "eyJh." + es256},
		{name: "A.0 a dot where an ES256 signature would start, then a short one, is hashed whole", token: "eyJh.eyJw." + es256[:60] + "." + es256[:25]},
		{name: "A.0 no dot is hashed whole", token: "eyJh" + sig},
		{name: "A.0 an empty token is hashed whole", token: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := signatureAt(tt.token); got != tt.want {
				t.Errorf("signatureAt(%q) = %d, want %d", tt.token, got, tt.want)
			}
		})
	}
}

// BenchmarkHashSignature measures the one-way function every hit on a
// remembered ES256 token computes, SHA-256 over the key and the
// 86-character signature: the floor under BenchmarkTokenCacheHit's
// service-account figure, against which the rest of a hit is measured.
func BenchmarkHashSignature(b *testing.B) {
	c := newTokenCache(nil, DefaultCacheOptions(), nil)
	sig := strings.Repeat("s", 86)
	var sum [32]byte
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		sum = c.hashSignature(sig)
	}
	cpu.Report(b)
	if sum == ([32]byte{}) {
		b.Fatal("no hash")
	}
}

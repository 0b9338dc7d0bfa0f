package tokenfile

import (
	"context"
	"fmt"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"runtime"
	"strings"
	"testing"
)

func benchFile(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "token-%08d-0123456789abcdef0123456789abcdef,user-%d,%d,\"group-a,group-b\"\n", i, i, i)
	}
	return b.String()
}

// BenchmarkAuthenticateToken measures a lookup of a 48-byte token, found
// and not found, in files of 10 and 10,000 tokens.
func BenchmarkAuthenticateToken(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10, 10_000} {
		a, _, err := Parse(strings.NewReader(benchFile(n)))
		if err != nil {
			b.Fatal(err)
		}
		hit := fmt.Sprintf("token-%08d-0123456789abcdef0123456789abcdef", n/2)
		miss := "token-99999999-0123456789abcdef0123456789abcdef"
		for _, c := range []struct {
			name  string
			token string
			want  bool
		}{{"hit", hit, true}, {"miss", miss, false}, {"miss-1MiB", strings.Repeat("t", 1<<20), false}} {
			b.Run(fmt.Sprintf("entries=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				start := benchcpu.ThreadNanos()
				for b.Loop() {
					if _, ok, _ := a.AuthenticateToken(ctx, c.token); ok != c.want {
						b.Fatalf("ok = %v, want %v", ok, c.want)
					}
				}
				// CPU time of this thread per lookup: on a busy shared
				// machine wall time mostly measures the wait for a core.
				b.ReportMetric(float64(benchcpu.ThreadNanos()-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
	b.Run("entries=10000/hit/parallel", func(b *testing.B) {
		a, _, _ := Parse(strings.NewReader(benchFile(10_000)))
		tok := "token-00000042-0123456789abcdef0123456789abcdef"
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, ok, _ := a.AuthenticateToken(ctx, tok); !ok {
					b.Fatal("not found")
				}
			}
		})
	})
}

// BenchmarkParse measures loading a file of 10,000 tokens.
func BenchmarkParse(b *testing.B) {
	data := []byte(benchFile(10_000))
	a := &Authenticator{}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := a.Load(data); err != nil {
			b.Fatal(err)
		}
	}
}

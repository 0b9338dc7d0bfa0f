package etcd

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kubegate/kubegate/store/storetest"
)

var podValue = bytes.Repeat([]byte("p"), 1024)

// BenchmarkCreate: creates of 1 KiB objects on the in-process etcd (which
// shares the CPU with the benchmark).
func BenchmarkCreate(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := newStore(b, Config{})
			ctx := b.Context()
			b.ReportAllocs()
			b.ResetTimer()
			storetest.Parallel(b, writers, func(_, i int) error {
				_, err := s.Create(ctx, fmt.Sprintf("/pods/default/pod-%d", i), podValue)
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkUpdate: compare-and-swap updates, each writer on its own key.
func BenchmarkUpdate(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := newStore(b, Config{})
			ctx := b.Context()
			revs := make([]int64, writers)
			for w := range writers {
				rev, err := s.Create(ctx, fmt.Sprintf("/pods/default/pod-%d", w), podValue)
				if err != nil {
					b.Fatal(err)
				}
				revs[w] = rev
			}
			b.ReportAllocs()
			b.ResetTimer()
			storetest.Parallel(b, writers, func(w, _ int) error {
				rev, err := s.Update(ctx, fmt.Sprintf("/pods/default/pod-%d", w), podValue, revs[w])
				revs[w] = rev
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

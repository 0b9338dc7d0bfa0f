package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubegate/kubegate/store"
	"github.com/kubegate/kubegate/store/storetest"
)

// A pod as the API server stores it is about 1 KiB.
var podValue = bytes.Repeat([]byte("p"), 1024)

func reportOps(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkCreate: durable creates of 1 KiB objects; with more writers,
// writes share fsyncs.
func BenchmarkCreate(b *testing.B) {
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openTest(b, Options{})
			ctx := b.Context()
			b.ReportAllocs()
			b.ResetTimer()
			storetest.Parallel(b, writers, func(_, i int) error {
				_, err := s.Create(ctx, fmt.Sprintf("/pods/default/pod-%d", i), podValue)
				return err
			})
			reportOps(b)
		})
	}
}

// BenchmarkUpdate: durable compare-and-swap updates, each writer on its own
// key.
func BenchmarkUpdate(b *testing.B) {
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openTest(b, Options{})
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
			reportOps(b)
		})
	}
}

// BenchmarkGroupCommit compares the store's writer goroutine with bbolt's
// own DB.Batch doing the same work (read, compare, write the key and an
// event), both durable, with 64 writers on their own keys.
func BenchmarkGroupCommit(b *testing.B) {
	const writers = 64
	b.Run("writer-goroutine", func(b *testing.B) {
		s := openTest(b, Options{})
		ctx := b.Context()
		for w := range writers {
			if _, err := s.Create(ctx, fmt.Sprintf("/k/%d", w), podValue); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		storetest.Parallel(b, writers, func(w, _ int) error {
			_, err := s.Update(ctx, fmt.Sprintf("/k/%d", w), podValue, 0)
			return err
		})
		reportOps(b)
	})
	b.Run("bbolt-Batch", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "batch.db"), 0o600, &bolt.Options{
			NoFreelistSync: true, FreelistType: bolt.FreelistMapType, PageSize: 16 << 10,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		err = db.Update(func(tx *bolt.Tx) error {
			kv, _ := tx.CreateBucket(bucketKV)
			_, _ = tx.CreateBucket(bucketEvents)
			mb, _ := tx.CreateBucket(bucketMeta)
			for w := range writers {
				_ = kv.Put(fmt.Appendf(nil, "/k/%d", w), encodeKV(1, 1, podValue))
			}
			return mb.Put(metaRev, revKey(1))
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		storetest.Parallel(b, writers, func(w, _ int) error {
			key := fmt.Appendf(nil, "/k/%d", w)
			return db.Batch(func(tx *bolt.Tx) error {
				kv, evs, mb := tx.Bucket(bucketKV), tx.Bucket(bucketEvents), tx.Bucket(bucketMeta)
				old := kv.Get(key)
				if old == nil {
					return store.ErrNotFound
				}
				prev := decodeKV(string(key), old, true)
				rev := int64(binary.BigEndian.Uint64(mb.Get(metaRev))) + 1
				ev := store.Event{Type: store.Modified, Revision: rev,
					KV: store.KV{Key: string(key), Value: podValue, CreateRevision: 1, ModRevision: rev}, Prev: &prev}
				if err := kv.Put(key, encodeKV(1, rev, podValue)); err != nil {
					return err
				}
				if err := evs.Put(revKey(rev), encodeEvent(&ev)); err != nil {
					return err
				}
				return mb.Put(metaRev, revKey(rev))
			})
		})
		reportOps(b)
	})
}

// BenchmarkGet reads one 1 KiB object.
func BenchmarkGet(b *testing.B) {
	s := openTest(b, Options{})
	ctx := b.Context()
	if _, err := s.Create(ctx, "/pods/default/app", podValue); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, "/pods/default/app"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportOps(b)
}

// BenchmarkWatchFanout: 1,000 watchers on one prefix; each op is one
// update, and the metric is the time from the start of the Update call to
// each watcher's receipt of the event. Durable updates include the fsync;
// nosync ones show the cost of the fan-out alone.
func BenchmarkWatchFanout(b *testing.B) {
	for _, bc := range []struct {
		watchers int
		noSync   bool
	}{{1, false}, {1000, false}, {1000, true}} {
		name := fmt.Sprintf("watchers=%d", bc.watchers)
		if bc.noSync {
			name += "/nosync"
		}
		watchers := bc.watchers
		b.Run(name, func(b *testing.B) {
			s := openTest(b, Options{NoSync: bc.noSync})
			ctx := b.Context()
			rev, err := s.Create(ctx, "/pods/default/app", podValue)
			if err != nil {
				b.Fatal(err)
			}
			// sent[i] is written before update i, which happens before any
			// watcher receives its event.
			sent := make([]time.Time, b.N)
			lat := make([][]time.Duration, watchers)
			var wg sync.WaitGroup
			for i := range watchers {
				w, err := s.Watch(ctx, "/pods/", rev)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Stop()
				lat[i] = make([]time.Duration, 0, b.N)
				wg.Go(func() {
					for range b.N {
						ev, ok := <-w.ResultChan()
						now := time.Now()
						if !ok {
							b.Errorf("watch ended: %v", w.Err())
							return
						}
						lat[i] = append(lat[i], now.Sub(sent[ev.Revision-rev-1]))
					}
				})
			}
			b.ResetTimer()
			for i := range b.N {
				sent[i] = time.Now()
				if _, err := s.Update(ctx, "/pods/default/app", podValue, rev+int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			slices.Sort(all)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
			b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
			b.ReportMetric(ms(all[len(all)-1]), "max-ms")
		})
	}
}

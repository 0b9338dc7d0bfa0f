package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/benchcpu"
)

// BenchmarkWatchFanout: 1,000 JSON watches of the pods of a namespace
// through the full handler on a durable bolt store; each op is one merge
// patch of a pod, and the metrics are the times from the start of the patch
// call to each watcher's handler writing the event. Run:
//
//	go test ./apiserver -run '^$' -bench WatchFanout -benchtime 200x
func BenchmarkWatchFanout(b *testing.B) {
	const watchers = 1000
	h := newDurableHandler(b)
	create := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(mustJSON(testPod("app"))))
	create.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, create)
	if rec.Code != http.StatusCreated {
		b.Fatalf("create: %d %s", rec.Code, rec.Body)
	}

	sent := make([]time.Time, b.N)
	ctx, cancel := context.WithCancel(context.Background())
	var live, done sync.WaitGroup
	ws := make([]*fanoutWriter, watchers)
	for i := range ws {
		ws[i] = &fanoutWriter{header: http.Header{}, sent: sent, live: &live, lat: make([]time.Duration, 0, b.N)}
		live.Add(1)
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=1", nil)
		done.Go(func() { h.ServeHTTP(ws[i], req) })
	}
	live.Wait()

	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for i := range b.N {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench-seq":"%d"}}}`, i)
		req := httptest.NewRequest(http.MethodPatch, "/api/v1/namespaces/default/pods/app", bytes.NewReader(patch))
		req.Header.Set("Content-Type", "application/merge-patch+json")
		sent[i] = time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("patch %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	for _, w := range ws {
		w.wait(b.N)
	}
	b.StopTimer()
	cpu.Report(b)
	cancel()
	done.Wait()

	var all []time.Duration
	for _, w := range ws {
		all = append(all, w.lat...)
	}
	if len(all) != b.N*watchers {
		b.Fatalf("got %d deliveries, want %d", len(all), b.N*watchers)
	}
	slices.Sort(all)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
	b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
	b.ReportMetric(ms(all[len(all)-1]), "max-ms")
}

// fanoutWriter is a watch's ResponseWriter that records, per event carrying
// a bench-seq annotation, the time since that patch was sent.
type fanoutWriter struct {
	header http.Header
	sent   []time.Time
	live   *sync.WaitGroup

	mu  sync.Mutex
	lat []time.Duration
	cv  *sync.Cond
}

var seqMarker = []byte(`"bench-seq":"`)

func (w *fanoutWriter) Header() http.Header { return w.header }

func (w *fanoutWriter) WriteHeader(int) { w.live.Done() }

func (w *fanoutWriter) Flush() {}

func (w *fanoutWriter) Write(p []byte) (int, error) {
	now := time.Now()
	i := bytes.Index(p, seqMarker)
	if i < 0 {
		return len(p), nil
	}
	rest := p[i+len(seqMarker):]
	n, err := strconv.Atoi(string(rest[:bytes.IndexByte(rest, '"')]))
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	w.lat = append(w.lat, now.Sub(w.sent[n]))
	if w.cv != nil {
		w.cv.Broadcast()
	}
	w.mu.Unlock()
	return len(p), nil
}

// wait returns once n events have been written.
func (w *fanoutWriter) wait(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cv == nil {
		w.cv = sync.NewCond(&w.mu)
	}
	for len(w.lat) < n {
		w.cv.Wait()
	}
}

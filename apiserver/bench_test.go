package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/kubegate/kubegate/internal/benchcpu"
	"github.com/kubegate/kubegate/store/bolt"
)

// BenchmarkCreatePod measures pod creates through the full handler (filter
// chain, decode, admission, one store write, encode) on a durable bolt store,
// with 64 concurrent clients. Run:
//
//	go test ./apiserver -run '^$' -bench CreatePod -benchtime 20000x
func BenchmarkCreatePod(b *testing.B) {
	h := newDurableHandler(b)
	body := mustJSON(testPod(""))
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(64 / max(1, testingProcs()))
	b.ResetTimer()
	cpu := benchcpu.Start()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprintf("p%d", n.Add(1))
			data := bytes.Replace(body, []byte(`"name":""`), []byte(`"name":"`+name+`"`), 1)
			if !bytes.Contains(data, []byte(name)) {
				data = bytes.Replace(body, []byte(`"metadata":{`), []byte(`"metadata":{"name":"`+name+`",`), 1)
			}
			req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(data))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated {
				b.Errorf("create %s: %d %s", name, rec.Code, rec.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	cpu.Report(b)
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }

// newDurableHandler returns the handler of a server on a durable bolt
// store (every write synced) in b's temporary directory, closed when b ends.
func newDurableHandler(b *testing.B) http.Handler {
	ts := newTestServer(b)
	st, err := bolt.Open(filepath.Join(b.TempDir(), "durable.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg := ts.cfg
	cfg.Store = st
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s.Handler()
}

// BenchmarkListPods measures a LIST of 10,000 pods through the full
// handler, in JSON and in protobuf, as test/bench/apiserver.sh's LIST does
// over the network. Run:
//
//	go test ./apiserver -run '^$' -bench ListPods -benchtime 20x
func BenchmarkListPods(b *testing.B) {
	h := newDurableHandler(b)
	body := mustJSON(testPod(""))
	for i := range 10000 {
		data := bytes.Replace(body, []byte(`"metadata":{`), []byte(fmt.Sprintf(`"metadata":{"name":"p%d",`, i)), 1)
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("create p%d: %d %s", i, rec.Code, rec.Body)
		}
	}
	for _, c := range []struct{ name, accept, encoding string }{
		{"json", "application/json", ""},
		{"protobuf", "application/vnd.kubernetes.protobuf", ""},
		// client-go offers gzip, so its LISTs of this size come compressed.
		{"json-gzip", "application/json", "gzip"},
		{"protobuf-gzip", "application/vnd.kubernetes.protobuf", "gzip"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)
				req.Header.Set("Accept", c.accept)
				if c.encoding != "" {
					req.Header.Set("Accept-Encoding", c.encoding)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("list: %d", rec.Code)
				}
			}
		})
	}
}

// BenchmarkListPodsTable measures kubectl get's LIST of 3,000 pods as a
// Table, for each includeObject kubectl and other clients send: Object
// with --sort-by, Metadata (the default) and None (B.5). Run:
//
//	go test ./apiserver -run '^$' -bench ListPodsTable -benchtime 20x
func BenchmarkListPodsTable(b *testing.B) {
	const pods = 3000
	h := newDurableHandler(b)
	body := mustJSON(testPod(""))
	for i := range pods {
		data := bytes.Replace(body, []byte(`"metadata":{`), []byte(fmt.Sprintf(`"metadata":{"name":"p%d",`, i)), 1)
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("create p%d: %d %s", i, rec.Code, rec.Body)
		}
	}
	for _, include := range []string{"Object", "Metadata", "None"} {
		b.Run(include, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods?includeObject="+include, nil)
				req.Header.Set("Accept", tableAccept)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("list: %d %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(pods*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

package customresource_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/customresource"
	"github.com/kubegate/kubegate/internal/benchcpu"
)

// widgetsPath is where the benchmarks' custom resources are served.
const widgetsPath = "/apis/bench.kubegate.io/v1/namespaces/default/widgets"

// widgetsHandler serves, on a new server, the custom resources of
// test/bench/apiserver.sh's definition (a structural schema with a
// default, an enum, a pattern and two CEL rules), as an established
// definition is served.
func widgetsHandler(b *testing.B) http.Handler {
	b.Helper()
	data, err := os.ReadFile("../../test/bench/apiload/crd.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		b.Fatal(err)
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	crd.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
	srv := apiservertest.Start(b)
	rs, err := customresource.Resources(&crd)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.API.SetResources(customresource.Owner(&crd), rs); err != nil {
		b.Fatal(err)
	}
	return srv.API.Handler()
}

// widgetJSON is the body of the custom resource test/bench/apiload creates.
func widgetJSON(name string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"bench.kubegate.io/v1","kind":"Widget","metadata":{"name":%q,"labels":{"app":"bench"}},`+
		`"spec":{"image":"registry.k8s.io/pause:3.10","size":"medium","port":8080}}`, name)
}

func createWidget(h http.Handler, name string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, widgetsPath, bytes.NewReader(widgetJSON(name)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// BenchmarkCreateCustomResource measures custom-resource creates through
// the full handler (filter chain, decode, pruning, defaulting, schema and
// CEL validation, admission, one store write, encode) with 16 concurrent
// clients, as test/bench/apiserver.sh's BENCH_KIND=cr creates them. Run:
//
//	go test ./apiserver/customresource -run '^$' -bench CreateCustomResource -benchtime 20000x
func BenchmarkCreateCustomResource(b *testing.B) {
	h := widgetsHandler(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	cpu := benchcpu.Start()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprintf("w%d", n.Add(1))
			if rec := createWidget(h, name); rec.Code != http.StatusCreated {
				b.Errorf("create %s: %d %s", name, rec.Code, rec.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
	cpu.Report(b)
}

// BenchmarkListCustomResources measures a JSON LIST of 10,000 custom
// resources through the full handler, as test/bench/apiserver.sh's LIST
// does over the network. Run:
//
//	go test ./apiserver/customresource -run '^$' -bench ListCustomResources -benchtime 20x
func BenchmarkListCustomResources(b *testing.B) {
	h := widgetsHandler(b)
	for i := range 10000 {
		if rec := createWidget(h, fmt.Sprintf("w%d", i)); rec.Code != http.StatusCreated {
			b.Fatalf("create w%d: %d %s", i, rec.Code, rec.Body)
		}
	}
	for _, encoding := range []string{"", "gzip"} {
		b.Run("json"+map[string]string{"": "", "gzip": "-gzip"}[encoding], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, widgetsPath, nil)
				req.Header.Set("Accept", "application/json")
				if encoding != "" {
					req.Header.Set("Accept-Encoding", encoding)
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

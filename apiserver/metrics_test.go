package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// /metrics counts resource requests under kube-apiserver's names and
// labels, with its verbs: LIST for a collection, GET for one object (a list
// narrowed to a name included), WATCH, APPLY for server-side apply (D.7).
func TestRequestMetrics(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.clientset(t, false).CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "nope", metav1.GetOptions{}); err == nil {
		t.Fatal("get of a missing configmap succeeded")
	}
	apply := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`)
	if _, err := cms.Patch(ctx, "b", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "t"}); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(t, ts.http.URL+"/api/v1/configmaps?watch=1&timeoutSeconds=1", ""); code != http.StatusOK {
		t.Fatalf("watch: %d", code)
	}
	code, _, body := get(t, ts.http.URL+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	const labels = `component="apiserver",dry_run="",group="",resource="configmaps",`
	for _, want := range []string{
		"# TYPE apiserver_request_total counter",
		"# TYPE apiserver_request_duration_seconds histogram",
		`apiserver_request_total{code="201",` + labels + `scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="200",` + labels + `scope="namespace",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="200",` + labels + `scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="404",` + labels + `scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="201",` + labels + `scope="resource",subresource="",verb="APPLY",version="v1"} 1`,
		`apiserver_request_total{code="200",` + labels + `scope="cluster",subresource="",verb="WATCH",version="v1"} 1`,
		`apiserver_request_duration_seconds_bucket{` + labels + `scope="namespace",subresource="",verb="LIST",version="v1",le="0.005"}`,
	} {
		if !strings.Contains(string(body), want+"\n") && !strings.Contains(string(body), want+" ") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

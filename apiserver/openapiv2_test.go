package apiserver

import (
	"encoding/json"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/util/proto/validation"
)

// lookupKind returns the model of gvk in models, as kubectl finds the
// schema it validates a manifest with.
func lookupKind(models proto.Models, gvk schema.GroupVersionKind) proto.Schema {
	for _, name := range models.ListModels() {
		m := models.LookupModel(name)
		exts, _ := m.GetExtensions()["x-kubernetes-group-version-kind"].([]any)
		for _, e := range exts {
			e, _ := e.(map[any]any)
			if e["group"] == gvk.Group && e["version"] == gvk.Version && e["kind"] == gvk.Kind {
				return m
			}
		}
	}
	return nil
}

// client-go reads /openapi/v2 in protobuf, and kubectl's client-side
// validation (kube-openapi's) checks manifests against it: right ones
// pass, a wrong type fails (B.7). kubectl validates the reviews, which
// have no PATCH in the v3 documents, against it: the conformance test's
// kubectl/create-access-review.
func TestOpenAPIV2ValidatesLikeKubectl_B7(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	doc, err := discovery.NewDiscoveryClientForConfigOrDie(ts.restConfig(false)).OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gvk      schema.GroupVersionKind
		manifest string
		errs     int
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":1,"memory":"1Gi"}}}]}}`, 0},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":"c"}}`, 1},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"},
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80,"targetPort":"http"}]}}`, 0},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
			`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"replicas":"two","selector":{},"template":{}}}`, 1},
		// selector and template are required
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
			`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"replicas":2}}`, 2},
	} {
		model := lookupKind(models, tc.gvk)
		if model == nil {
			t.Errorf("%s: no model in /openapi/v2", tc.gvk)
			continue
		}
		var manifest any
		if err := json.Unmarshal([]byte(tc.manifest), &manifest); err != nil {
			t.Fatal(err)
		}
		if errs := validation.ValidateModel(manifest, model, tc.gvk.Kind); len(errs) != tc.errs {
			t.Errorf("%s %s: %d validation errors %v, want %d", tc.gvk.Kind, tc.manifest, len(errs), errs, tc.errs)
		}
	}
}

// The JSON form, and revalidation by ETag (B.7).
func TestOpenAPIV2JSON_B7(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	code, header, body := get(t, ts.http.URL+"/openapi/v2", "application/json")
	if code != http.StatusOK || header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v2: %d %s", code, header.Get("Content-Type"))
	}
	var doc struct {
		Swagger     string         `json:"swagger"`
		Paths       map[string]any `json:"paths"`
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Swagger != "2.0" ||
		doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}"] == nil || doc.Definitions["io.k8s.api.core.v1.Pod"] == nil {
		t.Fatalf("not a v2 document with pods: %v, swagger %q, %d paths", err, doc.Swagger, len(doc.Paths))
	}
	req, _ := http.NewRequest(http.MethodGet, ts.http.URL+"/openapi/v2", nil)
	req.Header.Set("If-None-Match", header.Get("Etag"))
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if header.Get("Etag") == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("revalidating with ETag %q: %d, want 304", header.Get("Etag"), resp.StatusCode)
	}
}

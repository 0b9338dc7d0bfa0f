package core_test

import (
	"net/http"
	"testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const (
	epPath    = "/api/v1/namespaces/default/endpoints"
	slicePath = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
)

// TestEndpointsAreDeprecatedOnEveryRequest_G10: reads and writes of v1
// Endpoints, failed ones included, carry kube's deprecation warning; other
// kinds do not.
func TestEndpointsAreDeprecatedOnEveryRequest_G10(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	const want = `299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"`
	do := func(method, path, body string) http.Header {
		t.Helper()
		_, h, _ := rt.DoHeader(t, srv, method, path, body, nil)
		return h
	}
	body := `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"e"},"subsets":[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"port":80}]}]}`
	for _, r := range []struct{ method, path, body string }{
		{"POST", epPath, body}, {"GET", epPath + "/e", ""}, {"GET", epPath, ""}, {"GET", epPath + "/missing", ""}, {"DELETE", epPath + "/e", ""},
	} {
		if got := do(r.method, r.path, r.body).Values("Warning"); len(got) != 1 || got[0] != want {
			t.Errorf("%s %s: Warning %q; want %q", r.method, r.path, got, want)
		}
	}
	if got := do("GET", slicePath, "").Values("Warning"); len(got) != 0 {
		t.Errorf("GET endpointslices: Warning %q; want none", got)
	}
}

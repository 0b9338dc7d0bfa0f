package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
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
	ts := newTestServer(t)
	const want = `299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"`
	do := func(method, path, body string) http.Header {
		t.Helper()
		req, _ := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header
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

// TestEndpointSliceGenerationAndDefaults_G10: a port gets an empty name
// and TCP; the generation moves with the endpoints and the labels, not
// with annotations; the address type may not change.
func TestEndpointSliceGenerationAndDefaults_G10(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	s := ts.createJSON(t, slicePath, `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},
"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[{"port":80}]}`)
	wantFields(t, s, map[string]string{"metadata.generation": "1", "ports": `[{"name":"","port":80,"protocol":"TCP"}]`})
	patch := func(body string) map[string]any {
		t.Helper()
		code, data := ts.send(t, "PATCH", slicePath+"/s", "application/merge-patch+json", body)
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil || code != http.StatusOK && code != http.StatusUnprocessableEntity {
			t.Fatalf("PATCH %s: %d %s", body, code, data)
		}
		return obj
	}
	wantFields(t, patch(`{"metadata":{"annotations":{"a":"b"}}}`), map[string]string{"metadata.generation": "1"})
	wantFields(t, patch(`{"metadata":{"labels":{"a":"b"}}}`), map[string]string{"metadata.generation": "2"})
	wantFields(t, patch(`{"endpoints":[{"addresses":["10.0.0.2"]}]}`), map[string]string{"metadata.generation": "3"})
	wantFields(t, patch(`{"addressType":"IPv6"}`), map[string]string{
		"message": `"EndpointSlice.discovery.k8s.io \"s\" is invalid: addressType: Invalid value: null: field is immutable"`})
}

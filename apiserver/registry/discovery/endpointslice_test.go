package discovery_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const slicePath = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"

// TestEndpointSliceGenerationAndDefaults_G10: a port gets an empty name
// and TCP; the generation moves with the endpoints and the labels, not
// with annotations; the address type may not change.
func TestEndpointSliceGenerationAndDefaults_G10(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodPost, slicePath, `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},
"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[{"port":80}]}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "1", "ports": `[{"name":"","port":80,"protocol":"TCP"}]`})
	patch := func(body string) map[string]any {
		t.Helper()
		code, data := rt.Do(t, srv, http.MethodPatch, slicePath+"/s", body, nil)
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil || code != http.StatusOK && code != http.StatusUnprocessableEntity {
			t.Fatalf("PATCH %s: %d %s", body, code, data)
		}
		return obj
	}
	rt.WantFields(t, patch(`{"metadata":{"annotations":{"a":"b"}}}`), map[string]string{"metadata.generation": "1"})
	rt.WantFields(t, patch(`{"metadata":{"labels":{"a":"b"}}}`), map[string]string{"metadata.generation": "2"})
	rt.WantFields(t, patch(`{"endpoints":[{"addresses":["10.0.0.2"]}]}`), map[string]string{"metadata.generation": "3"})
	rt.WantFields(t, patch(`{"addressType":"IPv6"}`), map[string]string{
		"message": `"EndpointSlice.discovery.k8s.io \"s\" is invalid: addressType: Invalid value: null: field is immutable"`})
}

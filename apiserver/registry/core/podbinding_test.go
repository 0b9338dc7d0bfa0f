package core_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The legacy bindings resource is namespaced only: kube-apiserver has no
// route for POST /api/v1/bindings, and answers it 404 whatever the
// Binding names. A name "NAMESPACE/POD" there must not reach the pod of
// another namespace past the namespace lifecycle and admission (D.4).
func TestLegacyBindingsHasNoClusterPath_D4(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	rt.Create(t, srv, [2]string{"/api/v1/namespaces/default/pods",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx:1"}]}}`})
	for _, name := range []string{"default/p", "p"} {
		code, body := rt.Do(t, srv, http.MethodPost, "/api/v1/bindings",
			`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"`+name+`"},"target":{"name":"n1"}}`, nil)
		if st := rt.Object(t, body); code != http.StatusNotFound || st["message"] != "the server could not find the requested resource" {
			t.Errorf("POST /api/v1/bindings naming %q: got %d %s, want 404 the server could not find the requested resource", name, code, body)
		}
	}
	_, body := rt.Do(t, srv, http.MethodGet, "/api/v1/namespaces/default/pods/p", "", nil)
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.nodeName": ""})
}

// A binding writes the pod as kube's storage does, not as a client's
// update: managedFields stay as they were (D.4).
func TestBindingLeavesManagedFields_D4(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	rt.Create(t, srv, [2]string{"/api/v1/namespaces/default/pods",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx:1"}]}}`})
	_, before := rt.Do(t, srv, http.MethodGet, "/api/v1/namespaces/default/pods/p", "", nil)
	code, body := rt.Do(t, srv, http.MethodPost, "/api/v1/namespaces/default/pods/p/binding?fieldManager=scheduler",
		`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"name":"n1"}}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("binding: %d %s", code, body)
	}
	_, after := rt.Do(t, srv, http.MethodGet, "/api/v1/namespaces/default/pods/p", "", nil)
	b, _ := json.Marshal(rt.Object(t, before)["metadata"].(map[string]any)["managedFields"])
	rt.WantFields(t, rt.Object(t, after), map[string]string{"spec.nodeName": `"n1"`, "metadata.managedFields": string(b)})
}

package conformance

import (
	"net/http"
	"os"
	"path/filepath"
)

// operatorOps walk a Greeting (the custom resource of
// test/e2e/testdata/greetings-crd.yaml, which the e2e tests' controller-
// runtime operator reconciles) through the requests an operator makes: a
// finalizer added, the status written through its subresource with a
// Ready condition, a scale, the CEL rule refusing one, the printer
// columns with a condition's filter, and a delete held by the finalizer
// until it is removed (I.1).
func operatorOps() []op {
	const (
		crds      = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		greetings = "/apis/hello.example.com/v1/namespaces/" + testNS + "/greetings"
		greeting  = `{"apiVersion":"hello.example.com/v1","kind":"Greeting","metadata":{"name":"g1"},"spec":{"message":"hello"}}`
	)
	crd, err := os.ReadFile(filepath.Join("..", "e2e", "testdata", "greetings-crd.yaml"))
	if err != nil {
		panic(err) // a file of the repository
	}
	return []op{
		{name: "operator/create-greetings-crd", method: "POST", path: crds, body: string(crd), project: statusOnly},
		{name: "operator/greetings-established", method: "GET", path: crds + "/greetings.hello.example.com", until: established, project: establishedOnly},
		{name: "operator/served", method: "GET", path: greetings, until: statusIs(http.StatusOK)},
		{name: "operator/create", method: "POST", path: greetings, body: greeting},
		{name: "operator/add-finalizer", method: "PATCH", path: greetings + "/g1", contentType: mergePatch,
			body: `{"metadata":{"finalizers":["hello.example.com/farewell"]}}`},
		{name: "operator/update-status", method: "PATCH", path: greetings + "/g1/status", contentType: mergePatch,
			body: `{"status":{"observedGeneration":1,"replicas":1,"conditions":[{"type":"Ready","status":"True","observedGeneration":1,
"lastTransitionTime":"2026-01-02T03:04:05Z","reason":"ConfigMapInStep","message":"config map greeting-g1 holds the message"}]}}`},
		{name: "operator/update-status-bad-condition", method: "PATCH", path: greetings + "/g1/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`},
		{name: "operator/scale", method: "PATCH", path: greetings + "/g1/scale", contentType: mergePatch, body: `{"spec":{"replicas":3}}`},
		{name: "operator/scale-cel", method: "PATCH", path: greetings + "/g1/scale", contentType: mergePatch, body: `{"spec":{"replicas":9}}`},
		{name: "operator/get-scale", method: "GET", path: greetings + "/g1/scale"},
		{name: "operator/create-cel", method: "POST", path: greetings,
			body: `{"apiVersion":"hello.example.com/v1","kind":"Greeting","metadata":{"name":"loud"},"spec":{"message":"HELLO","replicas":7}}`},
		{name: "operator/table", method: "GET", path: greetings, accept: tableAccept},
		{name: "operator/kubectl-get", kubectl: []string{"get", "greetings", "-n", testNS}},
		{name: "operator/delete-held", method: "DELETE", path: greetings + "/g1"},
		{name: "operator/get-deleting", method: "GET", path: greetings + "/g1"},
		{name: "operator/update-spec-deleting", method: "PATCH", path: greetings + "/g1", contentType: mergePatch, body: `{"spec":{"message":"bye"}}`},
		{name: "operator/remove-finalizer", method: "PATCH", path: greetings + "/g1", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "operator/get-gone", method: "GET", path: greetings + "/g1"},
	}
}

package core_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

func TestNamespaceEventValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	invalidV, required := metav1.CauseTypeFieldValueInvalid, metav1.CauseTypeFieldValueRequired
	tests := []struct {
		name, method, path, body string
		kind, object             string
		causes                   []metav1.StatusCause
	}{
		{"namespace finalizers", "POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1"},"spec":{"finalizers":["bad finalizer!","kubernetes","example.com/f"]}}`,
			"Namespace", "ns1", []metav1.StatusCause{
				rt.Cause(invalidV, "spec.finalizers", `Invalid value: "bad finalizer!": `+namePartMsg),
				rt.Cause(invalidV, "spec.finalizers", `Invalid value: "bad finalizer!": name is neither a standard finalizer name nor is it fully qualified`)}},
		{"namespace terminating without deletion", "PUT", "/api/v1/namespaces/default/status", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"},"status":{"phase":"Terminating"}}`,
			"Namespace", "default", []metav1.StatusCause{
				rt.Cause(invalidV, "status.Phase", "Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty")}},
		{"core event of another namespace's object", "POST", "/api/v1/namespaces/default/events", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e2"},"involvedObject":{"namespace":"other"},"type":"Normal"}`,
			"Event", "e2", []metav1.StatusCause{
				rt.Cause(invalidV, "involvedObject.namespace", `Invalid value: "other": does not match event.namespace`)}},
		{"events.k8s.io event without its fields", "POST", "/apis/events.k8s.io/v1/namespaces/default/events", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e4"},"eventTime":"2024-01-01T00:00:00.000000Z","type":"Bad"}`,
			"Event", "e4", []metav1.StatusCause{
				rt.Cause(required, "reportingController", "Required value"),
				rt.Cause(invalidV, "reportingController", `Invalid value: "": name part must be non-empty`),
				rt.Cause(invalidV, "reportingController", `Invalid value: "": `+namePartMsg),
				rt.Cause(required, "reportingInstance", "Required value"),
				rt.Cause(required, "action", "Required value"),
				rt.Cause(required, "reason", "Required value"),
				rt.Cause(invalidV, "type", `Invalid value: "": has invalid value: Bad`)}},
		{"events.k8s.io event without eventTime", "POST", "/apis/events.k8s.io/v1/namespaces/default/events", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e5"},"type":"Normal","reason":"R","action":"A","reportingController":"c","reportingInstance":"i"}`,
			"Event", "e5", []metav1.StatusCause{
				rt.Cause(required, "eventTime", "Required value")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, tt.method, tt.path, tt.body, nil)
			rt.WantInvalid(t, code, body, tt.kind, tt.object, tt.causes...)
		})
	}
}

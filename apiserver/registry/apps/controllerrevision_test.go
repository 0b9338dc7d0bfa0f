package apps_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const crPath = "/apis/apps/v1/namespaces/default/controllerrevisions"

func revisionManifest(name, rest string) string {
	return `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"` + name + `"}` + rest + `}`
}

func TestControllerRevisionCreateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	m := createJSON(t, srv, crPath, revisionManifest("r", `,"revision":2,"data":{"spec":{"x":1}}`))
	rt.WantFields(t, m, map[string]string{"revision": "2", "data": `{"spec":{"x":1}}`})
	if _, ok := m["metadata"].(map[string]any)["generation"]; ok {
		t.Errorf("a ControllerRevision has no generation: %v", m["metadata"])
	}
	tests := []struct {
		name, rest string
		causes     []metav1.StatusCause
	}{
		{"no data", `,"revision":1`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data", "Required value: data is mandatory")}},
		{"null data", `,"revision":1,"data":null`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data", "Required value: data is mandatory")}},
		{"array data", `,"data":[1]`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data", "Required value: data must be a valid JSON object")}},
		{"negative revision", `,"revision":-1,"data":{}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "revision", "Invalid value: -1: must be greater than or equal to 0")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, http.MethodPost, crPath, revisionManifest("bad", tt.rest), nil)
			rt.WantInvalid(t, code, body, "ControllerRevision.apps", "bad", tt.causes...)
		})
	}
}

func TestControllerRevisionDataIsImmutable_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	createJSON(t, srv, crPath, revisionManifest("r", `,"revision":1,"data":{"a":"b"}`))
	// The revision may change; the data may not.
	if code, body := rt.Do(t, srv, http.MethodPatch, crPath+"/r", `{"revision":3,"metadata":{"labels":{"x":"y"}}}`, nil); code != http.StatusOK {
		t.Fatalf("patch revision: %d %s", code, body)
	}
	code, body := rt.Do(t, srv, http.MethodPatch, crPath+"/r", `{"data":{"a":"c"}}`, nil)
	rt.WantInvalid(t, code, body, "ControllerRevision.apps", "r",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "data", `Invalid value: {"a":"c"}: field is immutable`))
}

package apps_test

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's, as the
// differential test (test/conformance) compares them.

const (
	rssPath  = "/apis/apps/v1/namespaces/default/replicasets"
	stssPath = "/apis/apps/v1/namespaces/default/statefulsets"
	// appSelector selects the labels of workloadTemplate.
	appSelector = `"selector":{"matchLabels":{"app":"a"}},`
)

// causeForbidden is field.ErrorTypeForbidden, which metav1 has no name for.
const causeForbidden = metav1.CauseType("FieldValueForbidden")

const dnsLabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

// workloadTemplate is a pod template labelled app=a with one container,
// and extra pod spec fields.
func workloadTemplate(extraSpec string) string {
	spec := `"containers":[{"name":"c","image":"i"}]`
	if extraSpec != "" {
		spec += "," + extraSpec
	}
	return `{"metadata":{"labels":{"app":"a"}},"spec":{` + spec + `}}`
}

// manifest is an apps/v1 object of kind whose spec has the given fields
// before the template.
func manifest(kind, name, spec, template string) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":%q,"metadata":{"name":%q},"spec":{%s"template":%s}}`, kind, name, spec, template)
}

// createJSON posts the JSON object to path on srv and returns what the
// server created.
func createJSON(t *testing.T, srv *apiservertest.Server, path, obj string) map[string]any {
	t.Helper()
	code, body := rt.Do(t, srv, http.MethodPost, path, obj, nil)
	if code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, code, body)
	}
	return rt.Object(t, body)
}

// patchJSON merge-patches path on srv with body, fails the test unless the
// answer is wantCode, and returns the answer decoded.
func patchJSON(t *testing.T, srv *apiservertest.Server, path, body string, wantCode int) map[string]any {
	t.Helper()
	code, b := rt.Do(t, srv, http.MethodPatch, path, body, nil)
	if code != wantCode {
		t.Fatalf("PATCH %s %s: %d %s", path, body, code, b)
	}
	return rt.Object(t, b)
}

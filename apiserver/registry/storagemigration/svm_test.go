package storagemigration_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const svms = "/apis/storagemigration.k8s.io/v1/storageversionmigrations"

func migration(name, resource string) string {
	return `{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{"name":"` + name + `"},"spec":{"resource":` + resource + `}}`
}

// A migration names a valid group resource, which never changes; its
// status keeps its resourceVersion and its final conditions (D.21).
func TestStorageVersionMigrations_D21(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	rt.Create(t, ts, [2]string{svms, migration("m", `{"group":"apps","resource":"deployments"}`)})
	code, body := rt.Do(t, ts, http.MethodPost, svms, migration("bad", `{"group":"Bad_Group"}`), nil)
	rt.WantInvalid(t, code, body, "StorageVersionMigration.storagemigration.k8s.io", "bad",
		rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.resource.resource", "Required value: resource is required to be set"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.resource.group", `Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`))
	code, body = rt.Do(t, ts, http.MethodPatch, svms+"/m", `{"spec":{"resource":{"resource":"statefulsets"}}}`, nil)
	rt.WantInvalid(t, code, body, "StorageVersionMigration.storagemigration.k8s.io", "m",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec", `Invalid value: {"Resource":{"group":"apps","resource":"statefulsets"}}: field is immutable`))

	done := `{"status":{"resourceVersion":"5","conditions":[{"type":"Succeeded","status":"True","reason":"Done","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	if code, body := rt.Do(t, ts, http.MethodPatch, svms+"/m/status", done, nil); code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	if rows := rt.Rows(t, ts, svms); len(rows) != 1 || rows[0] != `["m","deployments.apps","Succeeded"]` {
		t.Errorf("rows = %v", rows)
	}
	code, body = rt.Do(t, ts, http.MethodPatch, svms+"/m/status", `{"status":{"resourceVersion":"6"}}`, nil)
	rt.WantInvalid(t, code, body, "StorageVersionMigration.storagemigration.k8s.io", "m",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.resourceVersion", `Invalid value: "6": field is immutable`))
}

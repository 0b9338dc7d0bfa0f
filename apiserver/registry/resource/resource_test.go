package resource_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's.

const (
	group     = "/apis/resource.k8s.io/v1"
	claims    = group + "/namespaces/default/resourceclaims"
	sliceList = group + "/resourceslices"
)

// TestResourceClaimDefaultsAndImmutableSpec_D18: an exact request gets
// ExactCount and a count of 1, a toleration the operator Equal; the spec
// never changes, which is reported without its value.
func TestResourceClaimDefaultsAndImmutableSpec_D18(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodPost, claims, `{"metadata":{"name":"c"},"spec":{"devices":{"requests":[`+
		`{"name":"gpu","exactly":{"deviceClassName":"gpus","tolerations":[{"key":"k","value":"v"}]}}]}}}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{
		"spec.devices.requests.[0].exactly.allocationMode":           `"ExactCount"`,
		"spec.devices.requests.[0].exactly.count":                    `1`,
		"spec.devices.requests.[0].exactly.tolerations.[0].operator": `"Equal"`,
		"metadata.generation":                                        "",
	})
	code, body = rt.Do(t, srv, http.MethodPatch, claims+"/c", `{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"other"}}]}}}`, nil)
	rt.WantInvalid(t, code, body, "ResourceClaim.resource.k8s.io", "c",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec", "Invalid value: null: field is immutable"))
}

// TestResourceClaimValidationOrder_D18: the errors of kube's hand-written
// rules come first, then those of the rules declared on the types (a
// duplicate request, with the whole request, and an unknown mode).
func TestResourceClaimValidationOrder_D18(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodPost, claims, `{"metadata":{"name":"bad"},"spec":{"devices":{"requests":[`+
		`{"name":"x","exactly":{"deviceClassName":"","allocationMode":"Some"}},{"name":"x","exactly":{"deviceClassName":"c","allocationMode":"All","count":2}}]}}}`, nil)
	rt.WantInvalid(t, code, body, "ResourceClaim.resource.k8s.io", "bad",
		rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.devices.requests[0].exactly.deviceClassName", "Required value"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.devices.requests[1].exactly.count", "Invalid value: 2: must not be specified when allocationMode is 'All'"),
		rt.Cause(metav1.CauseTypeFieldValueDuplicate, "spec.devices.requests[1]",
			`Duplicate value: {"name":"x","exactly":{"deviceClassName":"c","allocationMode":"All","count":2}}`),
		rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.devices.requests[0].exactly.allocationMode",
			`Unsupported value: "Some": supported values: "All", "ExactCount"`))
}

// TestResourceSliceFieldSelectors_D18: slices are selected by node (empty
// for a slice of all nodes), driver and pool.
func TestResourceSliceFieldSelectors_D18(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	srv := apiservertest.Start(t, apiservertest.WithClock(func() time.Time { return now }))
	rt.Create(t, srv,
		[2]string{sliceList, `{"metadata":{"name":"a"},"spec":{"driver":"gpu.example.com","pool":{"name":"p1","resourceSliceCount":1},"nodeName":"n1"}}`},
		[2]string{sliceList, `{"metadata":{"name":"b"},"spec":{"driver":"net.example.com","pool":{"name":"p2","resourceSliceCount":1},"allNodes":true}}`})
	for selector, want := range map[string][]string{
		"spec.nodeName%3Dn1":            {`["a","n1","gpu.example.com","p1","0s"]`},
		"spec.nodeName%3D":              {`["b","","net.example.com","p2","0s"]`},
		"spec.driver%3Dnet.example.com": {`["b","","net.example.com","p2","0s"]`},
		"spec.pool.name%3Dp1":           {`["a","n1","gpu.example.com","p1","0s"]`},
	} {
		if got := rt.Rows(t, srv, sliceList+"?fieldSelector="+selector); !slices.Equal(got, want) {
			t.Errorf("%s: rows = %v, want %v", selector, got, want)
		}
	}
}

// TestDeviceTaintRuleUpdateNeedsResourceVersion_D18: a v1 taint rule is
// replaced only by naming the version it replaces, and its taint is
// stamped with the time it was added.
func TestDeviceTaintRuleUpdateNeedsResourceVersion_D18(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const rules = group + "/devicetaintrules"
	rule := `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"r"},"spec":{"taint":{"key":"k","effect":"NoSchedule"}}}`
	code, body := rt.Do(t, srv, http.MethodPost, rules, rule, nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if added := rt.Object(t, body)["spec"].(map[string]any)["taint"].(map[string]any)["timeAdded"]; added == nil {
		t.Errorf("spec.taint.timeAdded is not set: %s", body)
	}
	code, body = rt.Do(t, srv, http.MethodPut, rules+"/r", rule, nil)
	rt.WantInvalid(t, code, body, "devicetaintrules.resource.k8s.io", "r",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "metadata.resourceVersion", "Invalid value: 0: must be specified for an update"))
}

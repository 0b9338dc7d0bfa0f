package coordination_test

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

func TestLeaseValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	invalidV := metav1.CauseTypeFieldValueInvalid
	code, body := rt.Do(t, srv, http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/default/leases",
		`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"},"spec":{"holderIdentity":"h","leaseDurationSeconds":-1,"leaseTransitions":-1}}`, nil)
	rt.WantInvalid(t, code, body, "Lease.coordination.k8s.io", "l1",
		rt.Cause(invalidV, "spec.leaseDurationSeconds", "Invalid value: -1: must be greater than 0"),
		rt.Cause(invalidV, "spec.leaseTransitions", "Invalid value: -1: must be greater than or equal to 0"))
}

// TestLeaseTable: the holder, empty when there is none, between the name
// and the age; rows in name order (B.5).
func TestLeaseTable_B5(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	srv := apiservertest.Start(t, apiservertest.WithClock(func() time.Time { return now }))
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	rt.Create(t, srv,
		[2]string{leases, `{"metadata":{"name":"held"},"spec":{"holderIdentity":"node-a"}}`},
		[2]string{leases, `{"metadata":{"name":"free"}}`})
	if got, want := rt.Rows(t, srv, leases), []string{`["free","","0s"]`, `["held","node-a","0s"]`}; !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
}

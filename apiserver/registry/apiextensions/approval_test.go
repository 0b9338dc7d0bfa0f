package apiextensions_test

import (
	"strings"
	"testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// A CRD of a group Kubernetes protects (*.k8s.io, *.kubernetes.io) gets
// the KubernetesAPIApprovalPolicyConformant condition that its
// api-approved.kubernetes.io annotation earns, as the API server's
// approval controller sets it; a CRD of any other group gets none (I.1).
func TestAPIApprovalCondition_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	startControllers(t, ts)
	const typ = "KubernetesAPIApprovalPolicyConformant"
	annotated := func(name, group, plural, kind, approval string) string {
		m := crd(name, group, `"plural":"`+plural+`","kind":"`+kind+`"`, "Cluster", version("v1", true))
		return strings.Replace(m, `"name":"`+name+`"`, `"name":"`+name+`","annotations":{"api-approved.kubernetes.io":"`+approval+`"}`, 1)
	}
	for _, c := range []struct {
		name, group, plural, kind, approval string
		status, reason, message             string
	}{
		{"widgets.gates.k8s.io", "gates.k8s.io", "widgets", "Widget", "https://github.com/kubernetes/enhancements/pull/1111",
			"True", "ApprovedAnnotation", "approved in https://github.com/kubernetes/enhancements/pull/1111"},
		{"gadgets.gates.kubernetes.io", "gates.kubernetes.io", "gadgets", "Gadget", "unapproved, experimental only",
			"False", "UnapprovedAnnotation", "not approved: \"unapproved, experimental only\""},
	} {
		if code, got := request(t, ts, "POST", crds, annotated(c.name, c.group, c.plural, c.kind, c.approval)); code != 201 {
			t.Fatalf("create %s: %d %v", c.name, code, got)
		}
		if reason, message := waitCondition(t, ts, c.name, typ, c.status); reason != c.reason || message != c.message {
			t.Errorf("%s: %s %s %q, want %s %s %q", c.name, typ, reason, message, c.status, c.reason, c.message)
		}
	}
	// Outside the protected groups, no condition: once the CRD is
	// established the controllers have seen it.
	if code, got := request(t, ts, "POST", crds, crd("things.example.com", "example.com", `"plural":"things","kind":"Thing"`, "Cluster", version("v1", true))); code != 201 {
		t.Fatalf("create things: %d %v", code, got)
	}
	waitCondition(t, ts, "things.example.com", "Established", "True")
	if status, reason, _ := condition(t, ts, "things.example.com", typ); status != "" {
		t.Errorf("things.example.com: %s %s %s, want no condition", typ, status, reason)
	}
}

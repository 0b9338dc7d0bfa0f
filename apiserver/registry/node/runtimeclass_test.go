package node_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const rcs = "/apis/node.k8s.io/v1/runtimeclasses"

// A RuntimeClass's handler is a DNS label that never changes, and a pod
// naming the class takes its overhead and scheduling (D.16).
func TestRuntimeClasses_D16(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	rt.Create(t, srv, [2]string{rcs, `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"sandboxed"},"handler":"runsc",` +
		`"overhead":{"podFixed":{"cpu":"250m"}},"scheduling":{"nodeSelector":{"sandbox":"yes"}}}`})
	code, body := rt.Do(t, srv, "POST", rcs, `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"bad"},"handler":"Not_A_Label"}`, nil)
	if code != 422 || !strings.Contains(string(body), `handler: Invalid value: \"Not_A_Label\": a lowercase RFC 1123 label`) {
		t.Errorf("invalid handler: %d %s", code, body)
	}
	code, body = rt.Do(t, srv, "PATCH", rcs+"/sandboxed", `{"handler":"kata"}`, nil)
	rt.WantInvalid(t, code, body, "RuntimeClass.node.k8s.io", "sandboxed",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "handler", `Invalid value: null: field is immutable`))

	pods := "/api/v1/namespaces/default/pods"
	pod := func(name, extra string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"app","image":"app"}]` + extra + `}}`
	}
	code, body = rt.Do(t, srv, "POST", pods, pod("p", `,"runtimeClassName":"sandboxed"`), nil)
	if code != 201 || !strings.Contains(string(body), `"overhead":{"cpu":"250m"}`) || !strings.Contains(string(body), `"nodeSelector":{"sandbox":"yes"}`) {
		t.Errorf("pod with a class: %d %s", code, body)
	}
	code, body = rt.Do(t, srv, "POST", pods, pod("q", `,"runtimeClassName":"nowhere"`), nil)
	if code != 403 || !strings.Contains(string(body), `pod rejected: RuntimeClass \"nowhere\" not found`) {
		t.Errorf("pod with a missing class: %d %s", code, body)
	}
}

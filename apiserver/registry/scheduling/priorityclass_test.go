package scheduling_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// rawRequest sends body to path and returns the status and the decoded
// answer.
func rawRequest(t *testing.T, srv *apiservertest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, data := rt.Do(t, srv, method, path, body, nil)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, code, data)
	}
	return code, m
}

// PriorityClasses are served with the two system classes, and validated as
// kube-apiserver validates them (D.11).
func TestPriorityClasses_D11(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	const pcs = "/apis/scheduling.k8s.io/v1/priorityclasses"
	code, st := rawRequest(t, ts, "GET", pcs+"/system-node-critical", "")
	if code != 200 || st["value"] != float64(2000001000) || st["preemptionPolicy"] != "PreemptLowerPriority" {
		t.Errorf("system-node-critical: %d %v", code, st)
	}
	pc := func(name, rest string) string {
		return `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"` + name + `"}` + rest + `}`
	}
	if code, st := rawRequest(t, ts, "POST", pcs, pc("high", `,"value":1000`)); code != 201 || st["preemptionPolicy"] != "PreemptLowerPriority" || st["metadata"].(map[string]any)["generation"] != float64(1) {
		t.Fatalf("create high: %d %v", code, st)
	}
	for _, tt := range []struct {
		name, method, path, body, message string
	}{
		{"a user value too high", "POST", pcs, pc("huge", `,"value":2000000000`),
			`PriorityClass.scheduling.k8s.io "huge" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000`},
		{"a system- name", "POST", pcs, pc("system-mine", `,"value":10`),
			`PriorityClass.scheduling.k8s.io "system-mine" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class`},
		{"a bad preemption policy", "POST", pcs, pc("bad", `,"value":1,"preemptionPolicy":"Sometimes"`),
			`PriorityClass.scheduling.k8s.io "bad" is invalid: preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"`},
		{"a new value", "PUT", pcs + "/high", pc("high", `,"value":1001`),
			`PriorityClass.scheduling.k8s.io "high" is invalid: value: Forbidden: may not be changed in an update.`},
	} {
		code, st := rawRequest(t, ts, tt.method, tt.path, tt.body)
		if code != 422 || st["message"] != tt.message {
			t.Errorf("%s: got %d %q, want 422 %q", tt.name, code, st["message"], tt.message)
		}
	}
	for _, path := range []string{pcs + "/system-node-critical", pcs} {
		code, st := rawRequest(t, ts, "DELETE", path, "")
		if code != 403 || !strings.Contains(fmt.Sprint(st["message"]), "is a system priority class and cannot be deleted") {
			t.Errorf("DELETE %s: %d %v, want 403", path, code, st)
		}
	}
	if code, _ := rawRequest(t, ts, "GET", pcs+"/system-cluster-critical", ""); code != 200 {
		t.Errorf("a system class is gone after the refused deletes: %d", code)
	}
}

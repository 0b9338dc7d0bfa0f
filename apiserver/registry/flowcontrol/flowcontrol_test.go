package flowcontrol_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const (
	fss = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	pls = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
)

func flowSchema(name, spec string) string {
	return `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
}

func priorityLevel(name, spec string) string {
	return `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
}

// kube-apiserver's mandatory and suggested configuration is there from
// the start, annotated for update, and the mandatory specs are fixed
// (D.20).
func TestBootstrapConfiguration_D20(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	code, body := rt.Do(t, ts, http.MethodGet, pls+"/global-default", "", nil)
	if code != http.StatusOK {
		t.Fatalf("global-default: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{
		"spec.limited.nominalConcurrencyShares":     "20",
		"spec.limited.limitResponse.queuing.queues": "128",
		"metadata.generation":                       "1",
	})
	obj := rt.Object(t, body)
	if a := obj["metadata"].(map[string]any)["annotations"].(map[string]any)["apf.kubernetes.io/autoupdate-spec"]; a != "true" {
		t.Errorf("autoupdate-spec annotation = %v, want true", a)
	}
	rows := rt.Rows(t, ts, fss)
	if len(rows) < 2 || rows[0][:len(`["exempt","exempt",1,`)] != `["exempt","exempt",1,` {
		t.Errorf("flowschema rows = %v, want exempt (precedence 1) first", rows)
	}
	code, body = rt.Do(t, ts, http.MethodPatch, fss+"/exempt", `{"spec":{"matchingPrecedence":2}}`, nil)
	if code != http.StatusUnprocessableEntity {
		t.Errorf("changing the exempt schema: %d %s, want 422", code, body)
	}
}

// A FlowSchema and a PriorityLevelConfiguration get kube's defaults and
// refusals (D.20).
func TestFlowSchemaAndLevelValidation_D20(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	code, body := rt.Do(t, ts, http.MethodPost, pls, priorityLevel("mine", `"type":"Limited","limited":{"limitResponse":{"type":"Queue","queuing":{}}}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create level: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{
		"spec.limited.nominalConcurrencyShares":               "30",
		"spec.limited.lendablePercent":                        "0",
		"spec.limited.limitResponse.queuing.handSize":         "8",
		"spec.limited.limitResponse.queuing.queues":           "64",
		"spec.limited.limitResponse.queuing.queueLengthLimit": "50",
	})
	code, body = rt.Do(t, ts, http.MethodPost, pls, priorityLevel("bad",
		`"type":"Limited","limited":{"lendablePercent":101,"limitResponse":{"type":"Queue","queuing":{"queues":4,"handSize":5}}}`), nil)
	rt.WantInvalid(t, code, body, "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io", "bad",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.limited.limitResponse.queuing.handSize", "Invalid value: 5: should not be greater than queues (4)"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.limited.lendablePercent", "Invalid value: 101: must be between 0 and 100, inclusive"))

	code, body = rt.Do(t, ts, http.MethodPost, fss, flowSchema("mine", `"priorityLevelConfiguration":{"name":"mine"}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create schema: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.matchingPrecedence": "1000"})
	code, body = rt.Do(t, ts, http.MethodPost, fss, flowSchema("bad", `"matchingPrecedence":1,"priorityLevelConfiguration":{"name":""},`+
		`"rules":[{"subjects":[{"kind":"User"}],"nonResourceRules":[{"verbs":["*","get"],"nonResourceURLs":["x"]}]}]`), nil)
	rt.WantInvalid(t, code, body, "FlowSchema.flowcontrol.apiserver.k8s.io", "bad",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.matchingPrecedence", "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"),
		rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.priorityLevelConfiguration.name", "Required value: must reference a priority level"),
		rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.rules[0].subjects[0].user", "Required value: user is required when subject kind is 'User'"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.rules[0].nonResourceRules[0].verbs", `Invalid value: ["*","get"]: if '*' is present, must not specify other verbs`),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]", `Invalid value: "x": must start with slash`))
}

package apiregistration_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const apisvcs = "/apis/apiregistration.k8s.io/v1/apiservices"

func apiService(name, spec string) string {
	return `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
}

// A local APIService is available as it is stored; one with a service
// gets kube's default port; both are validated as kube's aggregator
// validates them (I.3).
func TestAPIServices_I3(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	code, body := rt.Do(t, ts, http.MethodPost, apisvcs, apiService("v1.kg.example.com", `"group":"kg.example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":10`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create local: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"status.conditions.[0].type": `"Available"`, "status.conditions.[0].reason": `"Local"`})
	code, body = rt.Do(t, ts, http.MethodPost, apisvcs, apiService("v2.kg.example.com",
		`"group":"kg.example.com","version":"v2","groupPriorityMinimum":100,"versionPriority":10,"service":{"namespace":"default","name":"api"}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create with service: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.service.port": "443", "status.conditions": ""})
	if rows := rt.Rows(t, ts, apisvcs+"/v2.kg.example.com"); len(rows) != 1 || rows[0][:len(`["v2.kg.example.com","default/api","Unknown"`)] != `["v2.kg.example.com","default/api","Unknown"` {
		t.Errorf("rows = %v", rows)
	}
	code, body = rt.Do(t, ts, http.MethodPost, apisvcs, apiService("v3.kg.example.com", `"group":"kg.example.com","version":"v1","groupPriorityMinimum":0,"versionPriority":1,"caBundle":"YWJj"`), nil)
	rt.WantInvalid(t, code, body, "APIService.apiregistration.k8s.io", "v3.kg.example.com",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "metadata.name", "Invalid value: \"v3.kg.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.kg.example.com\""),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.groupPriorityMinimum", "Invalid value: 0: must be positive and less than 20000"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.caBundle", `Invalid value: "3 bytes": local APIServices may not have a caBundle`))
}

// An APIService can be applied, and its managed fields are those of
// kube-aggregator's schema: the create records the fields it set.
func TestAPIServiceFieldsAreManaged_I3(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	code, body := rt.Do(t, ts, http.MethodPatch, apisvcs+"/v1.kg.example.com?fieldManager=kg-test",
		apiService("v1.kg.example.com", `"group":"kg.example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":10`),
		map[string]string{"Content-Type": "application/apply-patch+yaml"})
	if code != http.StatusCreated {
		t.Fatalf("apply: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{
		"metadata.managedFields.[0].manager":                           `"kg-test"`,
		"metadata.managedFields.[0].operation":                         `"Apply"`,
		"metadata.managedFields.[0].fieldsV1.f:spec.f:versionPriority": "{}",
	})
}

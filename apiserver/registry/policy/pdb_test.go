package policy_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's.

const pdbPath = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"

func pdbManifest(name, spec string) string {
	return `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
}

func TestPodDisruptionBudgetValidation_G12(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	inv := func(field, msg string) metav1.StatusCause {
		return rt.Cause(metav1.CauseTypeFieldValueInvalid, field, msg)
	}
	tests := []struct {
		name, spec string
		causes     []metav1.StatusCause
	}{
		{"both", `"minAvailable":1,"maxUnavailable":"10%","selector":{"matchLabels":{"app":"a"}}`, []metav1.StatusCause{
			inv("spec", `Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"app":"a"}},"MaxUnavailable":"10%","UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set`)}},
		{"above 100%", `"minAvailable":"150%"`, []metav1.StatusCause{inv("spec.minAvailable", `Invalid value: "150%": must not be greater than 100%`)}},
		{"negative", `"maxUnavailable":-1`, []metav1.StatusCause{inv("spec.maxUnavailable", "Invalid value: -1: must be greater than or equal to 0")}},
		{"unknown policy", `"minAvailable":1,"unhealthyPodEvictionPolicy":"Sometimes"`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.unhealthyPodEvictionPolicy", `Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, http.MethodPost, pdbPath, pdbManifest("bad", tt.spec), nil)
			rt.WantInvalid(t, code, body, "PodDisruptionBudget.policy", "bad", tt.causes...)
		})
	}
}

func TestPodDisruptionBudgetGenerationAndSelector_G12(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	// The label kube reserves for policy/v1beta1's selectors is dropped
	// from a selector that mixes it with other terms.
	code, b := rt.Do(t, srv, http.MethodPost, pdbPath, pdbManifest("p", `"minAvailable":"20%","selector":{"matchLabels":{"app":"a"},"matchExpressions":[`+
		`{"key":"pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match","operator":"Exists"},{"key":"tier","operator":"In","values":["web"]}]}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", pdbPath, code, b)
	}
	rt.WantFields(t, rt.Object(t, b), map[string]string{"metadata.generation": "1",
		"spec.selector": `{"matchExpressions":[{"key":"tier","operator":"In","values":["web"]}],"matchLabels":{"app":"a"}}`,
		"status":        `{"currentHealthy":0,"desiredHealthy":0,"disruptionsAllowed":0,"expectedPods":0}`})
	code, b = rt.Do(t, srv, http.MethodPatch, pdbPath+"/p", `{"spec":{"minAvailable":2},"status":{"disruptionsAllowed":5}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("patch spec: %d %s", code, b)
	}
	rt.WantFields(t, rt.Object(t, b), map[string]string{"metadata.generation": "2", "spec.minAvailable": "2", "status.disruptionsAllowed": "0"})
	code, b = rt.Do(t, srv, http.MethodPatch, pdbPath+"/p/status", `{"spec":{"minAvailable":9},"status":{"observedGeneration":2,"disruptionsAllowed":1}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("patch status: %d %s", code, b)
	}
	rt.WantFields(t, rt.Object(t, b), map[string]string{"metadata.generation": "2", "spec.minAvailable": "2", "status.disruptionsAllowed": "1"})
	code, b = rt.Do(t, srv, http.MethodPatch, pdbPath+"/p/status", `{"status":{"currentHealthy":-1}}`, nil)
	rt.WantInvalid(t, code, b, "PodDisruptionBudget.policy", "p",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.currentHealthy", "Invalid value: -1: must be greater than or equal to 0"))
}

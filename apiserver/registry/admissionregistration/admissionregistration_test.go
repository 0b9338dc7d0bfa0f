package admissionregistration_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.12).

const group = "/apis/admissionregistration.k8s.io/v1/"

// The six kinds are served, cluster-scoped, in the api-extensions
// category, and discovery lists them (D.12).
func TestDiscovery_D12(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodGet, "/apis/admissionregistration.k8s.io/v1", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, body)
	}
	for _, want := range []string{
		`{"name":"mutatingadmissionpolicies","singularName":"mutatingadmissionpolicy","namespaced":false,"kind":"MutatingAdmissionPolicy","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"categories":["api-extensions"],"storageVersionHash":`,
		`{"name":"validatingadmissionpolicies/status","singularName":"","namespaced":false,"kind":"ValidatingAdmissionPolicy","verbs":["get","patch","update"]}`,
		`"name":"validatingwebhookconfigurations"`, `"name":"mutatingwebhookconfigurations"`,
		`"name":"validatingadmissionpolicybindings"`, `"name":"mutatingadmissionpolicybindings"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("discovery lacks %s:\n%s", want, body)
		}
	}
}

// webhookConfig is a configuration of kind with one webhook called at url.
func webhookConfig(kind, name, webhooks string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"webhooks":[` + webhooks + `]}`
}

const hook = `{"name":"check.example.com","clientConfig":{"service":{"namespace":"default","name":"hook"}},` +
	`"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],"sideEffects":"None","admissionReviewVersions":["v1"]}`

// Each kind is stored with kube's defaults and a generation that counts the
// changes of its webhooks or its spec (D.12).
func TestDefaultsAndGeneration_D12(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	for _, tt := range []struct {
		resource, body, update string
		want                   map[string]string
	}{
		{"validatingwebhookconfigurations", webhookConfig("ValidatingWebhookConfiguration", "v", hook),
			`{"webhooks":[{"name":"check.example.com","clientConfig":{"url":"https://hook.example.com"},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`,
			map[string]string{"webhooks.[0].failurePolicy": `"Fail"`, "webhooks.[0].matchPolicy": `"Equivalent"`, "webhooks.[0].namespaceSelector": `{}`,
				"webhooks.[0].objectSelector": `{}`, "webhooks.[0].timeoutSeconds": `10`, "webhooks.[0].clientConfig.service.port": `443`,
				"webhooks.[0].rules.[0].scope": `"*"`, "webhooks.[0].reinvocationPolicy": ``}},
		{"mutatingwebhookconfigurations", webhookConfig("MutatingWebhookConfiguration", "m", hook),
			`{"webhooks":[{"name":"check.example.com","clientConfig":{"url":"https://hook.example.com"},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`,
			map[string]string{"webhooks.[0].failurePolicy": `"Fail"`, "webhooks.[0].reinvocationPolicy": `"Never"`, "webhooks.[0].timeoutSeconds": `10`}},
		{"validatingadmissionpolicies", vap("p", `"validations":[{"expression":"true"}]`), `{"spec":{"validations":[{"expression":"false"}]}}`,
			map[string]string{"spec.failurePolicy": `"Fail"`, "spec.matchConstraints.matchPolicy": `"Equivalent"`, "spec.matchConstraints.namespaceSelector": `{}`,
				"spec.matchConstraints.objectSelector": `{}`, "spec.matchConstraints.resourceRules.[0].scope": `"*"`, "status": `{}`}},
		{"validatingadmissionpolicybindings", vapb("b", `"policyName":"p","validationActions":["Deny"],"matchResources":{}`), `{"spec":{"validationActions":["Warn"]}}`,
			map[string]string{"spec.matchResources": `{"matchPolicy":"Equivalent","namespaceSelector":{},"objectSelector":{}}`}},
		{"mutatingadmissionpolicies", mapol("p", `"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: \"test\", path: \"/metadata/name\", value: object.metadata.name}]"}}],"reinvocationPolicy":"Never"`),
			`{"spec":{"reinvocationPolicy":"IfNeeded"}}`,
			map[string]string{"spec.failurePolicy": `"Fail"`, "spec.matchConstraints.resourceRules.[0].scope": `"*"`}},
		{"mutatingadmissionpolicybindings", mapb("b", `"policyName":"p"`), `{"spec":{"policyName":"q"}}`,
			map[string]string{"spec.matchResources": ``}},
	} {
		code, body := rt.Do(t, srv, http.MethodPost, group+tt.resource, tt.body, nil)
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", tt.resource, code, body)
		}
		obj := rt.Object(t, body)
		tt.want["metadata.generation"] = "1"
		rt.WantFields(t, obj, tt.want)
		name := obj["metadata"].(map[string]any)["name"].(string)
		// Labels alone leave the generation; the spec moves it.
		_, body = rt.Do(t, srv, http.MethodPatch, group+tt.resource+"/"+name, `{"metadata":{"labels":{"a":"b"}}}`, nil)
		rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "1"})
		code, body = rt.Do(t, srv, http.MethodPatch, group+tt.resource+"/"+name, tt.update, nil)
		if code != http.StatusOK {
			t.Fatalf("patch %s: %d %s", tt.resource, code, body)
		}
		rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "2"})
	}
	// A status write leaves the policy's generation and spec.
	code, body := rt.Do(t, srv, http.MethodPatch, group+"validatingadmissionpolicies/p/status",
		`{"spec":{"failurePolicy":"Ignore"},"status":{"observedGeneration":2}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "2", "spec.failurePolicy": `"Fail"`, "status.observedGeneration": "2"})
}

const matchPods = `"matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}`

func vap(name, spec string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"` + name + `"},"spec":{` + matchPods + `,` + spec + `}}`
}

func mapol(name, spec string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"` + name + `"},"spec":{` + matchPods + `,` + spec + `}}`
}

func vapb(name, spec string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
}

func mapb(name, spec string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
}

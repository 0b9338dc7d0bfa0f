package admissionregistration_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	// An empty list where there was none changes the webhooks, as kube
	// compares them, though the stored object is the same.
	code, body := rt.Do(t, srv, http.MethodPatch, group+"validatingwebhookconfigurations/v", `[{"op":"add","path":"/webhooks/0/matchConditions","value":[]}]`,
		map[string]string{"Content-Type": "application/json-patch+json"})
	if code != http.StatusOK {
		t.Fatalf("patch: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "3", "webhooks.[0].matchConditions": ""})
	// A status write leaves the policy's generation and spec.
	code, body = rt.Do(t, srv, http.MethodPatch, group+"validatingadmissionpolicies/p/status",
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

// The Tables have kube's columns and cells: the number of webhooks,
// validations or mutations, the paramKind and the paramRef (B.5, D.12).
func TestTables_D12(t *testing.T) {
	t.Parallel()
	// A fixed clock, so that every object is 0s old.
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	srv := apiservertest.Start(t, apiservertest.WithClock(func() time.Time { return now }))
	rt.Create(t, srv,
		[2]string{group + "validatingwebhookconfigurations", webhookConfig("ValidatingWebhookConfiguration", "v", hook)},
		[2]string{group + "validatingadmissionpolicies", vap("p", `"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"validations":[{"expression":"true"},{"expression":"params != null"}]`)},
		[2]string{group + "validatingadmissionpolicybindings", vapb("named", `"policyName":"p","validationActions":["Deny"],"paramRef":{"name":"c","parameterNotFoundAction":"Deny"}`)},
		[2]string{group + "validatingadmissionpolicybindings", vapb("selected", `"policyName":"p","validationActions":["Deny"],"paramRef":{"selector":{"matchLabels":{"a":"b"}},"parameterNotFoundAction":"Deny"}`)},
		[2]string{group + "mutatingadmissionpolicybindings", mapb("m", `"policyName":"q","paramRef":{"name":"c","namespace":"default","parameterNotFoundAction":"Allow"}`)},
	)
	for path, want := range map[string][]string{
		"validatingwebhookconfigurations":   {`["v",1,"0s"]`},
		"validatingadmissionpolicies":       {`["p",2,"v1/ConfigMap","0s"]`},
		"validatingadmissionpolicybindings": {`["named","p","*/c","0s"]`, `["selected","p","\u0026LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}","0s"]`},
		"mutatingadmissionpolicybindings":   {`["m","q","default/c","0s"]`},
	} {
		rows := rt.Rows(t, srv, group+path)
		if strings.Join(rows, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s rows:\n%s\nwant\n%s", path, strings.Join(rows, "\n"), strings.Join(want, "\n"))
		}
	}
}

// An update must name the resourceVersion it replaces, as kube's
// strategies of the group refuse unconditional updates (D.12).
func TestUpdateNeedsResourceVersion_D12(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const path = group + "validatingwebhookconfigurations"
	rt.Create(t, srv, [2]string{path, webhookConfig("ValidatingWebhookConfiguration", "v", hook)})
	code, body := rt.Do(t, srv, http.MethodPut, path+"/v", webhookConfig("ValidatingWebhookConfiguration", "v", hook), nil)
	rt.WantInvalid(t, code, body, "validatingwebhookconfigurations.admissionregistration.k8s.io", "v",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "metadata.resourceVersion", "Invalid value: 0: must be specified for an update"))
	_, body = rt.Do(t, srv, http.MethodGet, path+"/v", "", nil)
	rv := rt.Object(t, body)["metadata"].(map[string]any)["resourceVersion"].(string)
	withRV := strings.Replace(webhookConfig("ValidatingWebhookConfiguration", "v", hook), `"name":"v"}`, `"name":"v","resourceVersion":"`+rv+`"}`, 1)
	if code, body := rt.Do(t, srv, http.MethodPut, path+"/v", withRV, nil); code != http.StatusOK {
		t.Errorf("PUT with its resourceVersion: %d %s", code, body)
	}
}

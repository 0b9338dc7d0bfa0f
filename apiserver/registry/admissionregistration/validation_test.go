package admissionregistration_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The usual mistakes in each kind are refused with kube's 422 (D.12).
func TestValidation_D12(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	required, invalid, unsupported, duplicate := metav1.CauseTypeFieldValueRequired, metav1.CauseTypeFieldValueInvalid,
		metav1.CauseTypeFieldValueNotSupported, metav1.CauseTypeFieldValueDuplicate
	for _, tt := range []struct {
		name, resource, kind, object, body string
		causes                             []metav1.StatusCause
	}{
		{"a bare webhook", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", "a",
			webhookConfig("ValidatingWebhookConfiguration", "a", `{"name":"x"}`), []metav1.StatusCause{
				rt.Cause(invalid, "webhooks[0].name", `Invalid value: "x": should be a domain with at least three segments separated by dots`),
				rt.Cause(required, "webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun"),
				rt.Cause(required, "webhooks[0].clientConfig", "Required value: exactly one of url or service is required"),
				rt.Cause(required, "webhooks[0].admissionReviewVersions", "Required value: must specify one of v1, v1beta1")}},
		{"a webhook named twice", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", "b",
			webhookConfig("ValidatingWebhookConfiguration", "b", hook+`,`+hook), []metav1.StatusCause{
				rt.Cause(duplicate, "webhooks[1].name", `Duplicate value: "check.example.com"`)}},
		{"bad rules, side effects, timeout, url and review versions", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", "c",
			webhookConfig("MutatingWebhookConfiguration", "c", `{"name":"c.example.com","clientConfig":{"url":"http://u@h/p?q#f"},"sideEffects":"Some",`+
				`"admissionReviewVersions":["v3"],"timeoutSeconds":0,"reinvocationPolicy":"Always","rules":[{"operations":["*","CREATE"],"apiGroups":["*","a"],`+
				`"apiVersions":["v1"],"resources":["pods/*","pods/log"],"scope":"Here"}]}`), []metav1.StatusCause{
				rt.Cause(invalid, "webhooks[0].rules[0].operations", `Invalid value: ["*","CREATE"]: if '*' is present, must not specify other operations`),
				rt.Cause(invalid, "webhooks[0].rules[0].apiGroups", `Invalid value: ["*","a"]: if '*' is present, must not specify other API groups`),
				rt.Cause(invalid, "webhooks[0].rules[0].resources[1]", `Invalid value: "pods/log": if 'pods/*' is present, must not specify pods/log`),
				rt.Cause(unsupported, "webhooks[0].rules[0].scope", `Unsupported value: "Here": supported values: "*", "Cluster", "Namespaced"`),
				rt.Cause(unsupported, "webhooks[0].sideEffects", `Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`),
				rt.Cause(invalid, "webhooks[0].timeoutSeconds", `Invalid value: 0: the timeout value must be between 1 and 30 seconds`),
				rt.Cause(unsupported, "webhooks[0].reinvocationPolicy", `Unsupported value: "Always": supported values: "IfNeeded", "Never"`),
				rt.Cause(invalid, "webhooks[0].clientConfig.url", `Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`),
				rt.Cause(invalid, "webhooks[0].clientConfig.url", `Invalid value: "u": user information is not permitted in the URL`),
				rt.Cause(invalid, "webhooks[0].clientConfig.url", `Invalid value: "f": fragments are not permitted in the URL`),
				rt.Cause(invalid, "webhooks[0].clientConfig.url", `Invalid value: "q": query parameters are not permitted in the URL`),
				rt.Cause(invalid, "webhooks[0].admissionReviewVersions", `Invalid value: ["v3"]: must include at least one of v1, v1beta1`)}},
		{"a reserved name", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", "x.static.k8s.io",
			webhookConfig("ValidatingWebhookConfiguration", "x.static.k8s.io", hook), []metav1.StatusCause{
				rt.Cause(invalid, "metadata.name", `Invalid value: "x.static.k8s.io": names ending with ".static.k8s.io" are reserved for static manifest-based configurations and cannot be managed via the API`)}},
		{"a validation that is no condition", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", "p",
			vap("p", `"validations":[{"expression":"1"}]`), []metav1.StatusCause{
				rt.Cause(invalid, "spec.validations[0].expression", `Invalid value: "1": must evaluate to bool but got int`)}},
		{"a reserved variable name and an undefined variable", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", "q",
			vap("q", `"variables":[{"name":"if","expression":"1"}],"validations":[{"expression":"variables.nope"}]`), []metav1.StatusCause{
				rt.Cause(invalid, "spec.variables[0].name", `Invalid value: "if": must be a valid CEL identifier`),
				rt.Cause(invalid, "spec.validations[0].expression", "Invalid value: \"variables.nope\": compilation failed: ERROR: <input>:1:10: undefined field 'nope'\n | variables.nope\n | .........^")}},
		{"no validations", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", "r", vap("r", `"failurePolicy":"Sometimes"`), []metav1.StatusCause{
			rt.Cause(unsupported, "spec.failurePolicy", `Unsupported value: "Sometimes": supported values: "Fail", "Ignore"`),
			rt.Cause(required, "spec.validations", "Required value: validations or auditAnnotations must contain at least one item"),
			rt.Cause(required, "spec.auditAnnotations", "Required value: validations or auditAnnotations must contain at least one item")}},
		{"Deny with Warn and no policy", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", "b",
			vapb("b", `"validationActions":["Deny","Warn"]`), []metav1.StatusCause{
				rt.Cause(invalid, "spec.validationActions", `Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)`),
				rt.Cause(required, "spec.policyName", "Required value")}},
		{"no actions", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", "c", vapb("c", `"policyName":"p"`), []metav1.StatusCause{
			rt.Cause(required, "spec.validationActions", "Required value")}},
		{"a bad paramRef", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", "d",
			vapb("d", `"policyName":"p","validationActions":["Audit"],"paramRef":{"name":"n","selector":{},"parameterNotFoundAction":"Ignore"}`), []metav1.StatusCause{
				rt.Cause(metav1.CauseTypeForbidden, "spec.paramRef.name", "Forbidden: name and selector are mutually exclusive"),
				rt.Cause(metav1.CauseTypeForbidden, "spec.paramRef.selector", "Forbidden: name and selector are mutually exclusive"),
				rt.Cause(unsupported, "spec.paramRef.parameterNotFoundAction", `Unsupported value: "Ignore": supported values: "Deny", "Allow"`)}},
		{"a patch type without its patch", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", "m",
			mapol("m", `"mutations":[{"patchType":"ApplyConfiguration"}]`), []metav1.StatusCause{
				rt.Cause(required, "spec.mutations[0].applyConfiguration", "Required value: must be specified when patchType is ApplyConfiguration"),
				rt.Cause(required, "spec.reinvocationPolicy", "Required value")}},
		{"a mutation of deletes", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", "m",
			mapb("m", `"matchResources":{"resourceRules":[{"operations":["DELETE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}`), []metav1.StatusCause{
				rt.Cause(required, "spec.policyName", "Required value"),
				rt.Cause(unsupported, "spec.matchResources.resourceRules.operations", `Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, http.MethodPost, group+tt.resource, tt.body, nil)
			rt.WantInvalid(t, code, body, tt.kind+".admissionregistration.k8s.io", tt.object, tt.causes...)
		})
	}
}

// A rule naming a review kube never sends to webhooks is stored with a
// warning (D.12).
func TestExcludedRuleWarning_D12(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, header, body := rt.DoHeader(t, srv, http.MethodPost, group+"validatingwebhookconfigurations", webhookConfig("ValidatingWebhookConfiguration", "reviews",
		`{"name":"r.example.com","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v1"],`+
			`"rules":[{"operations":["CREATE"],"apiGroups":["authorization.k8s.io"],"apiVersions":["v1"],"resources":["subjectaccessreviews","pods"]}]}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	want := `299 - "webhooks[0].rules[0]: subjectaccessreviews.authorization.k8s.io is excluded from admission webhooks; this rule will have no effect"`
	if got := header.Values("Warning"); len(got) != 1 || got[0] != want {
		t.Errorf("warnings = %q, want [%s]", got, want)
	}
}

package conformance

import (
	"net/http"
	"strconv"
)

// crdEquivalentOps define a CRD served in two versions, v1 and v2, with
// conversion None, and apply a ValidatingAdmissionPolicy and webhooks
// whose rules name v1 alone: with the default matchPolicy Equivalent
// they are run on writes through v2 too, and see the object in v1, with
// kind and resource v1 and requestKind and requestResource v2; with
// matchPolicy Exact they are not (D.13, I.2). Everything is deleted at
// the end.
func crdEquivalentOps() []op {
	const (
		crds  = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		group = "/apis/admissionregistration.k8s.io/v1"
		vaps  = group + "/validatingadmissionpolicies"
		vapbs = group + "/validatingadmissionpolicybindings"
		vwcs  = group + "/validatingwebhookconfigurations"
		mwcs  = group + "/mutatingwebhookconfigurations"
		v1    = "/apis/crdeq.example.com/v1/namespaces/" + testNS + "/sprockets"
		v2    = "/apis/crdeq.example.com/v2/namespaces/" + testNS + "/sprockets"
		dry   = "?dryRun=All"
		// rule names sprockets in v1 only.
		rule = `{"apiGroups":["crdeq.example.com"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["sprockets"]}`
	)
	hooks := dynadmHooks()
	sprocket := func(version, name, labels string, size int) string {
		return `{"apiVersion":"crdeq.example.com/` + version + `","kind":"Sprocket","metadata":{"name":"` + name + `","labels":{` + labels +
			`}},"spec":{"size":` + strconv.Itoa(size) + `}}`
	}
	object := func(kind, name, rest string) string {
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},` + rest + `}`
	}
	webhook := func(name, path, extra string) string {
		return `{"name":"` + name + `.crdeq.example.com","clientConfig":` + hooks.client(path) + `,"rules":[` + rule + `]` +
			`,"sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":5` + extra + `}`
	}
	status := func(code int) func(answer) bool { return func(a answer) bool { return a.status == code } }
	return []op{
		{name: "crdeq/create-crd", method: "POST", path: crds, body: sprocketsCRD, project: statusOnly},
		{name: "crdeq/established", method: "GET", path: crds + "/sprockets.crdeq.example.com", until: established, project: establishedOnly},
		{name: "crdeq/v2-served", method: "GET", path: v2, until: status(http.StatusOK)},

		// A policy on v1 says which version it sees the object in.
		{name: "crdeq/vap-create", method: "POST", path: vaps, body: object("ValidatingAdmissionPolicy", "crdeq-size",
			`"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[`+rule+`]},`+
				`"validations":[{"expression":"object.spec.size <= 5","messageExpression":"'at most 5, seen in ' + object.apiVersion + `+
				`' as ' + request.kind.version + '/' + request.resource.version + ' for ' + request.requestKind.version + '/' + request.requestResource.version"}]}`)},
		{name: "crdeq/vap-binding-create", method: "POST", path: vapbs, body: object("ValidatingAdmissionPolicyBinding", "crdeq-size",
			`"spec":{"policyName":"crdeq-size","validationActions":["Deny"]}`)},
		{name: "crdeq/vap-v1-deny-dry-run", method: "POST", path: v1 + dry, body: sprocket("v1", "crdeq-six", "", 6), until: status(422)},
		{name: "crdeq/vap-v2-deny", method: "POST", path: v2, body: sprocket("v2", "crdeq-six", "", 6)},
		{name: "crdeq/vap-v2-allow", method: "POST", path: v2, body: sprocket("v2", "crdeq-three", "", 3)},
		{name: "crdeq/vap-v2-update-deny", method: "PATCH", path: v2 + "/crdeq-three", contentType: mergePatch, body: `{"spec":{"size":7}}`},
		{name: "crdeq/vap-v2-update-allow", method: "PATCH", path: v2 + "/crdeq-three", contentType: mergePatch, body: `{"spec":{"size":4}}`},

		// Exact: the same rule no longer matches v2.
		{name: "crdeq/vap-exact", method: "PATCH", path: vaps + "/crdeq-size", contentType: mergePatch, body: `{"spec":{"matchConstraints":{"matchPolicy":"Exact"}}}`},
		{name: "crdeq/vap-exact-v2-allowed", method: "POST", path: v2 + dry, body: sprocket("v2", "crdeq-six", "", 6), until: status(http.StatusCreated)},
		{name: "crdeq/vap-exact-v1-denied", method: "POST", path: v1 + dry, body: sprocket("v1", "crdeq-six", "", 6)},
		// The status subresource of v1 is that of v2 too.
		{name: "crdeq/vap-status", method: "PATCH", path: vaps + "/crdeq-size", contentType: mergePatch,
			body: `{"spec":{"matchConstraints":{"matchPolicy":"Equivalent","resourceRules":[{"apiGroups":["crdeq.example.com"],"apiVersions":["v1"],` +
				`"operations":["UPDATE"],"resources":["sprockets/status"]}]},"validations":[{"expression":"!has(object.status)","messageExpression":` +
				`"'no status, seen in ' + object.apiVersion + ' for ' + request.requestResource.version + ' ' + request.subResource"}]}}`},
		{name: "crdeq/vap-status-v1-deny", method: "PATCH", path: v1 + "/crdeq-three/status?dryRun=All", contentType: mergePatch,
			body: `{"status":{"ready":true}}`, until: status(422)},
		{name: "crdeq/vap-status-v2-deny", method: "PATCH", path: v2 + "/crdeq-three/status", contentType: mergePatch, body: `{"status":{"ready":true}}`},
		{name: "crdeq/vap-status-v2-main-allowed", method: "PATCH", path: v2 + "/crdeq-three", contentType: mergePatch, body: `{"spec":{"size":9}}`},
		{name: "crdeq/delete-vap-binding", method: "DELETE", path: vapbs + "/crdeq-size"},
		{name: "crdeq/delete-vap", method: "DELETE", path: vaps + "/crdeq-size"},

		// A validating webhook on v1 says what it was sent.
		{name: "crdeq/vwc-create", method: "POST", path: vwcs, body: object("ValidatingWebhookConfiguration", "crdeq-deny",
			`"webhooks":[`+webhook("deny", "/deny", `,"matchConditions":[{"name":"named","expression":"request.name.startsWith('crdeq-deny')"}]`)+`]`)},
		{name: "crdeq/vwc-v1-deny-dry-run", method: "POST", path: v1 + dry, body: sprocket("v1", "crdeq-deny", "", 1), until: status(http.StatusForbidden)},
		{name: "crdeq/vwc-v2-deny", method: "POST", path: v2, body: sprocket("v2", "crdeq-deny", "", 1)},
		{name: "crdeq/vwc-v2-update-deny", method: "PATCH", path: v2 + "/crdeq-three", contentType: mergePatch,
			body: `{"metadata":{"labels":{"x":"y"}}}`},
		{name: "crdeq/delete-vwc", method: "DELETE", path: vwcs + "/crdeq-deny"},

		// A mutating webhook on v1 labels what is created through v2.
		{name: "crdeq/mwc-create", method: "POST", path: mwcs, body: object("MutatingWebhookConfiguration", "crdeq-label",
			`"webhooks":[`+webhook("label", "/label", `,"reinvocationPolicy":"Never","objectSelector":{"matchLabels":{"crdeq-hook":"label"}}`)+`]`)},
		{name: "crdeq/mwc-v1-dry-run", method: "POST", path: v1 + dry, body: sprocket("v1", "crdeq-hooked", `"crdeq-hook":"label"`, 1),
			until: func(a answer) bool { return a.status == http.StatusCreated && len(a.warnings) > 0 }},
		{name: "crdeq/mwc-v2-mutate", method: "POST", path: v2, body: sprocket("v2", "crdeq-hooked", `"crdeq-hook":"label"`, 1)},
		{name: "crdeq/mwc-v1-get", method: "GET", path: v1 + "/crdeq-hooked"},
		{name: "crdeq/delete-mwc", method: "DELETE", path: mwcs + "/crdeq-label"},

		{name: "crdeq/delete-crd", method: "DELETE", path: crds + "/sprockets.crdeq.example.com", project: statusOnly},
		{name: "crdeq/gone", method: "GET", path: v1, until: status(http.StatusNotFound)},
	}
}

// sprocketsCRD is the definition of crdEquivalentOps: two versions with
// the same schema, v1 stored.
const sprocketsCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sprockets.crdeq.example.com
spec:
  group: crdeq.example.com
  scope: Namespaced
  names: {plural: sprockets, singular: sprocket, kind: Sprocket}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {ready: {type: boolean}}}
  - name: v2
    served: true
    storage: false
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {ready: {type: boolean}}}
`

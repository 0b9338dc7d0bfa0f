package conformance

import "strings"

// admissionRegistrationOps are the operations of the admissionregistration
// .k8s.io/v1 kinds (D.12): discovery, each kind's defaults, generation,
// validation, Table and kubectl get. Every webhook, policy and binding
// matches only widgets.example.com, which nothing serves, so that neither
// server's admission ever calls or applies them, and each is deleted at the
// end. The controller manager's type-checking controller writes a
// validating policy's status.typeChecking at its own time (compared in
// the vap-typechecking controller scenario): the reads of a validating policy after its create leave its status out,
// and the status write compares its conditions only.
func admissionRegistrationOps() []op {
	const (
		api      = "/apis/admissionregistration.k8s.io/v1/"
		vwcs     = api + "validatingwebhookconfigurations"
		mwcs     = api + "mutatingwebhookconfigurations"
		vaps     = api + "validatingadmissionpolicies"
		vapbs    = api + "validatingadmissionpolicybindings"
		maps     = api + "mutatingadmissionpolicies"
		mapbs    = api + "mutatingadmissionpolicybindings"
		widgets  = `{"operations":["CREATE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}`
		service  = `"clientConfig":{"service":{"namespace":"default","name":"hook","path":"/check"},"caBundle":"Y2E="}`
		required = `"sideEffects":"None","admissionReviewVersions":["v1"]`
		match    = `"matchConstraints":{"resourceRules":[` + widgets + `]}`
	)
	config := func(kind, name string, hooks ...string) string {
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"webhooks":[` + strings.Join(hooks, ",") + `]}`
	}
	hook := func(name, fields string) string {
		if fields != "" {
			fields = "," + fields
		}
		return `{"name":"` + name + `"` + fields + `}`
	}
	good := func(name string) string { return hook(name, service+`,"rules":[`+widgets+`],`+required) }
	object := func(kind, name, spec string) string {
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	vap := func(name, spec string) string { return object("ValidatingAdmissionPolicy", name, spec) }
	mapol := func(name, spec string) string { return object("MutatingAdmissionPolicy", name, spec) }
	vapb := func(name, spec string) string { return object("ValidatingAdmissionPolicyBinding", name, spec) }
	mapb := func(name, spec string) string { return object("MutatingAdmissionPolicyBinding", name, spec) }
	const applied = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: applied
webhooks:
- name: applied.example.com
  clientConfig:
    url: https://hook.example.com/applied
  rules:
  - operations: ["UPDATE"]
    apiGroups: ["example.com"]
    apiVersions: ["v1"]
    resources: ["widgets"]
    scope: Cluster
  sideEffects: None
  admissionReviewVersions: ["v1"]
`
	const addLabel = `[JSONPatch{op: \"add\", path: \"/metadata/labels\", value: {\"checked\": \"yes\"}}]`
	return []op{
		{name: "admreg/discovery-group", method: "GET", path: "/apis/admissionregistration.k8s.io"},
		{name: "admreg/discovery-v1", method: "GET", path: "/apis/admissionregistration.k8s.io/v1"},
		{name: "admreg/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: aggregatedGroup("admissionregistration.k8s.io")},

		// ValidatingWebhookConfigurations.
		{name: "admreg/vwc-create", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "checks", good("widgets.example.com"),
			hook("url.example.com", `"clientConfig":{"url":"https://hook.example.com/check"},"rules":[`+widgets+`],"sideEffects":"NoneOnDryRun","admissionReviewVersions":["v1beta1","v1"],`+
				`"failurePolicy":"Ignore","matchPolicy":"Exact","timeoutSeconds":5,"matchConditions":[{"name":"not-system","expression":"!request.userInfo.username.startsWith('system:')"}]`))},
		{name: "admreg/vwc-get", method: "GET", path: vwcs + "/checks"},
		{name: "admreg/vwc-list", method: "GET", path: vwcs},
		{name: "admreg/vwc-table", method: "GET", path: vwcs + "/checks", accept: tableAccept},
		{name: "admreg/vwc-table-list", method: "GET", path: vwcs, accept: tableAccept},
		{name: "admreg/vwc-patch-labels", method: "PATCH", path: vwcs + "/checks", contentType: mergePatch, body: `{"metadata":{"labels":{"team":"a"}}}`},
		{name: "admreg/vwc-patch-webhooks", method: "PATCH", path: vwcs + "/checks", contentType: jsonPatch,
			body: `[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":20}]`},
		{name: "admreg/vwc-patch-empty-conditions", method: "PATCH", path: vwcs + "/checks", contentType: jsonPatch,
			body: `[{"op":"add","path":"/webhooks/0/matchConditions","value":[]}]`},
		{name: "admreg/vwc-put-stale", method: "PUT", path: vwcs + "/checks",
			body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"checks","resourceVersion":"1"},"webhooks":[` + good("widgets.example.com") + `]}`},
		{name: "admreg/vwc-put-without-rv", method: "PUT", path: vwcs + "/checks", body: config("ValidatingWebhookConfiguration", "checks", good("widgets.example.com"))},
		{name: "admreg/vwc-patch-invalid", method: "PATCH", path: vwcs + "/checks", contentType: jsonPatch,
			body: `[{"op":"replace","path":"/webhooks/0/sideEffects","value":"Some"}]`},
		{name: "admreg/vwc-create-empty-hook", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "empty", hook("", ""))},
		{name: "admreg/vwc-create-bad-names", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "names",
			good("same.example.com"), good("same.example.com"), good("short"))},
		{name: "admreg/vwc-create-bad-rules", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "rules",
			hook("rules.example.com", service+`,`+required+`,"rules":[`+
				`{"operations":["*","CREATE","PATCH"],"apiGroups":["*","apps"],"apiVersions":["*","v1",""],"resources":["*/*","pods"],"scope":"Everywhere"},`+
				`{"operations":[],"apiGroups":[],"apiVersions":[],"resources":[]},`+
				`{"operations":["DELETE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods/*","pods/status","*/scale","deployments/scale","*","services",""]}]`))},
		{name: "admreg/vwc-create-bad-client", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "clients",
			hook("both.example.com", `"clientConfig":{"url":"https://a.example.com","service":{"namespace":"default","name":"x"}},`+required),
			hook("http.example.com", `"clientConfig":{"url":"http://user:pw@a.example.com/p?q=1#frag"},`+required),
			hook("nohost.example.com", `"clientConfig":{"url":"https:///path"},`+required),
			hook("service.example.com", `"clientConfig":{"service":{"name":"x","port":70000,"path":"no-slash//x/"}},`+required))},
		{name: "admreg/vwc-create-bad-values", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "values",
			hook("values.example.com", service+`,"sideEffects":"Some","admissionReviewVersions":["v2","v2","Bad"],"failurePolicy":"Sometimes","matchPolicy":"Loose",`+
				`"timeoutSeconds":31,"namespaceSelector":{"matchLabels":{"a b":"c"}},"objectSelector":{"matchExpressions":[{"key":"k","operator":"In"}]}`),
			hook("nothing.example.com", service))},
		{name: "admreg/vwc-create-bad-conditions", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "conditions",
			hook("conditions.example.com", service+`,`+required+`,"matchConditions":[{"name":"a","expression":"object.metadata.name =="},`+
				`{"name":"a","expression":"'x'"},{"name":"b c","expression":"params.x == 1"},{"name":"","expression":"  "}]`))},
		{name: "admreg/vwc-create-static", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "mine.static.k8s.io", good("w.example.com"))},
		{name: "admreg/vwc-create-excluded-rule", method: "POST", path: vwcs, body: config("ValidatingWebhookConfiguration", "reviews",
			hook("reviews.example.com", service+`,`+required+`,"rules":[{"operations":["CREATE"],"apiGroups":["authorization.k8s.io","example.com"],"apiVersions":["v1"],`+
				`"resources":["subjectaccessreviews","widgets","selfsubjectaccessreviews"]}]`))},
		{name: "admreg/vwc-delete-reviews", method: "DELETE", path: vwcs + "/reviews"},
		{name: "admreg/kubectl-get-vwc", kubectl: []string{"get", "validatingwebhookconfigurations"}},

		// MutatingWebhookConfigurations.
		{name: "admreg/mwc-create", method: "POST", path: mwcs, body: config("MutatingWebhookConfiguration", "mutators", good("widgets.example.com"))},
		{name: "admreg/mwc-get", method: "GET", path: mwcs + "/mutators"},
		{name: "admreg/mwc-patch-reinvocation", method: "PATCH", path: mwcs + "/mutators", contentType: jsonPatch,
			body: `[{"op":"replace","path":"/webhooks/0/reinvocationPolicy","value":"IfNeeded"}]`},
		{name: "admreg/mwc-list", method: "GET", path: mwcs},
		{name: "admreg/mwc-patch-labels", method: "PATCH", path: mwcs + "/mutators", contentType: mergePatch, body: `{"metadata":{"labels":{"team":"b"}}}`},
		{name: "admreg/mwc-watch-from-rv", method: "GET", path: mwcs + "?watch=1&timeoutSeconds=1&resourceVersion={rv}"},
		{name: "admreg/mwc-create-invalid", method: "POST", path: mwcs, body: config("MutatingWebhookConfiguration", "bad",
			hook("bad.example.com", service+`,"reinvocationPolicy":"Always","sideEffects":"Unknown"`))},
		{name: "admreg/mwc-table", method: "GET", path: mwcs, accept: tableAccept},
		{name: "admreg/kubectl-get-mwc", kubectl: []string{"get", "mutatingwebhookconfigurations"}},

		// ValidatingAdmissionPolicies.
		{name: "admreg/vap-create", method: "POST", path: vaps, body: vap("widgets", match+`,"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},`+
			`"matchConditions":[{"name":"named","expression":"has(object.metadata.name)"}],`+
			`"variables":[{"name":"size","expression":"object.metadata.name.size()"}],`+
			`"validations":[{"expression":"variables.size < 64","message":"short names","reason":"Invalid"},{"expression":"params != null","messageExpression":"'no params for ' + object.metadata.name"}],`+
			`"auditAnnotations":[{"key":"size","valueExpression":"string(variables.size)"}]`)},
		{name: "admreg/vap-get", method: "GET", path: vaps + "/widgets", project: withoutStatus},
		{name: "admreg/vap-table", method: "GET", path: vaps, accept: tableAccept},
		{name: "admreg/vap-patch-spec", method: "PATCH", path: vaps + "/widgets", contentType: mergePatch, project: withoutStatus,
			body: `{"spec":{"failurePolicy":"Ignore"}}`},
		{name: "admreg/vap-status", method: "PATCH", path: vaps + "/widgets/status", contentType: mergePatch, project: statusConditions,
			body: `{"spec":{"failurePolicy":"Fail"},"status":{"conditions":[{"type":"Checked","status":"True","reason":"Done","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
		{name: "admreg/vap-status-invalid", method: "PATCH", path: vaps + "/widgets/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"bad type!","status":"Maybe"}],"typeChecking":{"expressionWarnings":[{"fieldRef":"spec.validations[","warning":""}]}}}`},
		{name: "admreg/vap-status-put-without-rv", method: "PUT", path: vaps + "/widgets/status", body: vap("widgets", match+`,"validations":[{"expression":"true"}]`)},
		{name: "admreg/vap-get-after-status", method: "GET", path: vaps + "/widgets", project: withoutStatus},
		{name: "admreg/vap-create-empty", method: "POST", path: vaps, body: vap("empty", `"failurePolicy":"Maybe"`)},
		{name: "admreg/vap-create-bad-expressions", method: "POST", path: vaps, body: vap("expressions", match+`,`+
			`"paramKind":{"apiVersion":"a/b/c","kind":"Bad_Kind"},`+
			`"variables":[{"name":"in","expression":"1"},{"name":"","expression":""}],`+
			`"validations":[{"expression":"object.metadata.name +","message":"two\nlines"},{"expression":"  ","messageExpression":"1","reason":"Gone"},{"expression":"true","message":"  ","messageExpression":"  "}],`+
			`"auditAnnotations":[{"key":"bad key","valueExpression":""},{"key":"x","valueExpression":"1 +"},{"key":"x","valueExpression":"'a'"}]`)},
		{name: "admreg/vap-create-bad-match", method: "POST", path: vaps, body: vap("match", `"paramKind":{"apiVersion":"Bad.Group/v1"},`+
			`"matchConstraints":{"matchPolicy":"Loose","namespaceSelector":{"matchLabels":{"a b":"c"}},"resourceRules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],`+
			`"resources":["pods"],"resourceNames":["a","a","b/c"]}],"excludeResourceRules":[{"operations":["PATCH"]}]},"validations":[{"expression":"true"}]`)},
		{name: "admreg/vap-create-no-rules", method: "POST", path: vaps, body: vap("norules", `"matchConstraints":{},"validations":[{"expression":"params.x"}]`)},
		{name: "admreg/kubectl-get-vap", kubectl: []string{"get", "validatingadmissionpolicies"}},

		// ValidatingAdmissionPolicyBindings.
		{name: "admreg/vapb-create", method: "POST", path: vapbs, body: vapb("widgets-by-name", `"policyName":"widgets","validationActions":["Deny","Audit"],`+
			`"paramRef":{"name":"limits","namespace":"default","parameterNotFoundAction":"Deny"},"matchResources":{"resourceRules":[`+widgets+`]}`)},
		{name: "admreg/vapb-create-selector", method: "POST", path: vapbs, body: vapb("widgets-by-selector", `"policyName":"widgets","validationActions":["Warn"],`+
			`"paramRef":{"selector":{"matchLabels":{"app":"limits"}},"parameterNotFoundAction":"Allow"}`)},
		{name: "admreg/vapb-get", method: "GET", path: vapbs + "/widgets-by-name"},
		{name: "admreg/vapb-table", method: "GET", path: vapbs, accept: tableAccept},
		{name: "admreg/vapb-patch", method: "PATCH", path: vapbs + "/widgets-by-selector", contentType: mergePatch, body: `{"spec":{"validationActions":["Audit"]}}`},
		{name: "admreg/kubectl-replace-vapb", kubectl: []string{"replace", "-f", "-"}, stdin: vapb("widgets-by-name", `"policyName":"widgets","validationActions":["Audit"]`)},
		{name: "admreg/vapb-create-empty", method: "POST", path: vapbs, body: vapb("empty", `"paramRef":{}`)},
		{name: "admreg/vapb-create-bad-actions", method: "POST", path: vapbs, body: vapb("actions", `"policyName":"Bad_Name","validationActions":["Deny","Warn","Deny","Block"],`+
			`"paramRef":{"name":"a/b","selector":{},"parameterNotFoundAction":"Ignore"}`)},
		{name: "admreg/vapb-create-no-actions", method: "POST", path: vapbs, body: vapb("noactions", `"policyName":"widgets","validationActions":[]`)},
		{name: "admreg/kubectl-get-vapb", kubectl: []string{"get", "validatingadmissionpolicybindings"}},

		// MutatingAdmissionPolicies.
		{name: "admreg/map-create", method: "POST", path: maps, body: mapol("labels", match+`,"reinvocationPolicy":"Never",`+
			`"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"`+addLabel+`"}},`+
			`{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{annotations: {\"checked\": \"yes\"}}}"}}]`)},
		{name: "admreg/map-get", method: "GET", path: maps + "/labels"},
		{name: "admreg/map-patch", method: "PATCH", path: maps + "/labels", contentType: mergePatch, body: `{"spec":{"reinvocationPolicy":"IfNeeded"}}`},
		{name: "admreg/map-table", method: "GET", path: maps, accept: tableAccept},
		{name: "admreg/map-create-empty", method: "POST", path: maps, body: mapol("empty", ``)},
		{name: "admreg/map-create-bad-mutations", method: "POST", path: maps, body: mapol("mutations",
			`"matchConstraints":{"resourceRules":[{"operations":["CREATE","DELETE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}]},"reinvocationPolicy":"Sometimes",`+
				`"mutations":[{},{"patchType":"JSONPatch"},{"patchType":"ApplyConfiguration","jsonPatch":{"expression":"[]"}},{"patchType":"Merge"},`+
				`{"patchType":"JSONPatch","jsonPatch":{"expression":"[]"},"applyConfiguration":{"expression":" "}},`+
				`{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{"}}]`)},
		{name: "admreg/map-get-protobuf", method: "GET", path: maps + "/labels", accept: protobuf},
		{name: "admreg/map-apply", method: "PATCH", path: maps + "/applied?fieldManager=tester", contentType: applyPatch,
			body: mapol("applied", match+`,"reinvocationPolicy":"Never","mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"`+addLabel+`"}}]`)},
		{name: "admreg/map-apply-again", method: "PATCH", path: maps + "/applied?fieldManager=tester", contentType: applyPatch,
			body: mapol("applied", match+`,"reinvocationPolicy":"IfNeeded","mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"`+addLabel+`"}}]`)},
		{name: "admreg/map-create-unknown-field", method: "POST", path: maps + "?fieldValidation=Strict",
			body: mapol("strict", match+`,"reinvocationPolicy":"Never","mutatons":[]`)},
		{name: "admreg/map-delete-applied", method: "DELETE", path: maps + "/applied"},
		{name: "admreg/kubectl-get-map", kubectl: []string{"get", "mutatingadmissionpolicies"}},

		// MutatingAdmissionPolicyBindings.
		{name: "admreg/mapb-create", method: "POST", path: mapbs, body: mapb("labels", `"policyName":"labels","matchResources":{"namespaceSelector":{"matchLabels":{"env":"test"}}}`)},
		{name: "admreg/mapb-get", method: "GET", path: mapbs + "/labels"},
		{name: "admreg/mapb-table", method: "GET", path: mapbs, accept: tableAccept},
		{name: "admreg/mapb-create-invalid", method: "POST", path: mapbs, body: mapb("bad",
			`"paramRef":{"namespace":"default"},"matchResources":{"resourceRules":[{"operations":["DELETE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}]}`)},
		{name: "admreg/kubectl-get-mapb", kubectl: []string{"get", "mutatingadmissionpolicybindings"}},
		{name: "admreg/kubectl-apply-vwc", kubectl: []string{"apply", "-f", "-"}, stdin: applied},
		{name: "admreg/kubectl-get-applied", kubectl: []string{"get", "validatingwebhookconfigurations", "applied", "-o", "jsonpath={.metadata.generation} {.webhooks[0].timeoutSeconds} {.webhooks[0].namespaceSelector}"}},
		{name: "admreg/kubectl-delete-vwc", kubectl: []string{"delete", "validatingwebhookconfigurations", "applied"}},

		// Deletes.
		{name: "admreg/mapb-delete", method: "DELETE", path: mapbs + "/labels"},
		{name: "admreg/map-delete", method: "DELETE", path: maps + "/labels"},
		{name: "admreg/vapb-delete-collection", method: "DELETE", path: vapbs},
		{name: "admreg/vap-delete", method: "DELETE", path: vaps + "/widgets"},
		{name: "admreg/mwc-delete", method: "DELETE", path: mwcs + "/mutators"},
		{name: "admreg/vwc-delete", method: "DELETE", path: vwcs + "/checks"},
		{name: "admreg/vwc-get-deleted", method: "GET", path: vwcs + "/checks"},
		{name: "admreg/vwc-list-empty", method: "GET", path: vwcs},
	}
}

// aggregatedGroup keeps the entry of one group in an aggregated discovery
// document.
func aggregatedGroup(name string) func(any) any {
	return func(v any) any {
		doc, _ := v.(map[string]any)
		items, _ := doc["items"].([]any)
		for _, it := range items {
			if m, _ := it.(map[string]any); m != nil {
				if md, _ := m["metadata"].(map[string]any); md != nil && md["name"] == name {
					return m
				}
			}
		}
		return nil
	}
}

// withoutStatus drops an object's status, and what each server generates
// in its metadata, which a projected answer keeps.
func withoutStatus(v any) any {
	if m, ok := v.(map[string]any); ok {
		delete(m, "status")
		withoutGenerated(m)
	}
	return v
}

// withoutGenerated drops the uid, resourceVersion and times of an object's
// metadata.
func withoutGenerated(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp"} {
		delete(md, k)
	}
	mfs, _ := md["managedFields"].([]any)
	for _, mf := range mfs {
		if m, ok := mf.(map[string]any); ok {
			delete(m, "time")
		}
	}
}

// statusConditions keeps an object's status conditions and its spec.
func statusConditions(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	st, _ := m["status"].(map[string]any)
	return map[string]any{"spec": m["spec"], "conditions": st["conditions"]}
}

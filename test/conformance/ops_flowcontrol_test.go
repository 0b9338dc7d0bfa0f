package conformance

import "strings"

// flowControlOps are the FlowSchema, PriorityLevelConfiguration and
// StorageVersionMigration operations: kube-apiserver's bootstrap
// configuration as served, writes, refusals, status and Tables.
func flowControlOps() []op {
	const (
		fcv1   = "/apis/flowcontrol.apiserver.k8s.io/v1"
		fss    = fcv1 + "/flowschemas"
		pls    = fcv1 + "/prioritylevelconfigurations"
		svms   = "/apis/storagemigration.k8s.io/v1/storageversionmigrations"
		fsKind = `"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema"`
		plKind = `"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration"`
		svKind = `"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration"`
	)
	fs := func(name, spec string) string {
		return `{` + fsKind + `,"metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	pl := func(name, spec string) string {
		return `{` + plKind + `,"metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	svm := func(name, spec string) string {
		return `{` + svKind + `,"metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	rule := `"rules":[{"subjects":[{"kind":"User","user":{"name":"tester"}}],"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["*"]}]}]`
	return []op{
		{name: "kubectl/get-flowschemas", kubectl: []string{"get", "flowschemas"},
			until: func(a answer) bool { return !containsQuestion(a.stdout) }},
		{name: "kubectl/get-prioritylevelconfigurations", kubectl: []string{"get", "prioritylevelconfigurations"}},
		{name: "flowcontrol/get-exempt-level", method: "GET", path: pls + "/exempt", project: withoutServerFields},
		{name: "flowcontrol/get-catch-all-schema", method: "GET", path: fss + "/catch-all", project: withoutServerFields},
		{name: "flowcontrol/get-global-default-level", method: "GET", path: pls + "/global-default", project: withoutServerFields},

		{name: "flowcontrol/level-create", method: "POST", path: pls,
			body: pl("kg-level", `"type":"Limited","limited":{"limitResponse":{"type":"Queue","queuing":{}}}`)},
		{name: "flowcontrol/level-create-reject", method: "POST", path: pls,
			body: pl("kg-reject", `"type":"Limited","limited":{"nominalConcurrencyShares":0,"lendablePercent":50,"borrowingLimitPercent":10,"limitResponse":{"type":"Reject"}}`)},
		{name: "flowcontrol/level-create-invalid", method: "POST", path: pls,
			body: pl("kg-bad", `"type":"Limited","limited":{"nominalConcurrencyShares":-1,"lendablePercent":101,"borrowingLimitPercent":-2,"limitResponse":{"type":"Queue","queuing":{"queues":4,"handSize":5,"queueLengthLimit":-1}}}`)},
		{name: "flowcontrol/level-create-exempt-type", method: "POST", path: pls, body: pl("kg-exempt", `"type":"Exempt","exempt":{}`)},
		{name: "flowcontrol/level-create-no-type", method: "POST", path: pls, body: pl("kg-none", `"type":"Sometimes"`)},
		{name: "flowcontrol/level-create-entropy", method: "POST", path: pls,
			body: pl("kg-entropy", `"type":"Limited","limited":{"limitResponse":{"type":"Queue","queuing":{"queues":10000000,"handSize":100}}}`)},
		{name: "flowcontrol/level-get", method: "GET", path: pls + "/kg-level"},
		{name: "flowcontrol/level-table", method: "GET", path: pls + "/kg-reject", accept: tableAccept},
		{name: "flowcontrol/level-patch", method: "PATCH", path: pls + "/kg-level", contentType: mergePatch,
			body: `{"spec":{"limited":{"nominalConcurrencyShares":7}}}`},
		{name: "flowcontrol/level-status", method: "PATCH", path: pls + "/kg-level/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Ready","status":"False"}]}}`},
		{name: "flowcontrol/level-status-ok", method: "PATCH", path: pls + "/kg-level/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Tested"}]}}`},

		{name: "flowcontrol/schema-create-invalid", method: "POST", path: fss,
			body: fs("kg-bad", `"matchingPrecedence":1,"distinguisherMethod":{"type":"ByColour"},"priorityLevelConfiguration":{"name":"Bad_Name"},`+
				`"rules":[{"subjects":[{"kind":"User"},{"kind":"Group","user":{"name":"x"},"group":{"name":""}},{"kind":"ServiceAccount","serviceAccount":{"name":"A"}},{"kind":"Robot"}],`+
				`"resourceRules":[{"verbs":["get","*"],"apiGroups":["*","apps"],"resources":[]}],"nonResourceRules":[{"verbs":["fly"],"nonResourceURLs":["healthz","/a//b","/x*y"]}]}]`)},
		{name: "flowcontrol/schema-create-no-rules", method: "POST", path: fss,
			body: fs("kg-empty", `"matchingPrecedence":20000,"priorityLevelConfiguration":{"name":""},"rules":[{"subjects":[{"kind":"Group","group":{"name":"g"}}]}]`)},
		{name: "flowcontrol/schema-create-bad-namespace", method: "POST", path: fss,
			body: fs("kg-ns", `"priorityLevelConfiguration":{"name":"kg-level"},"rules":[{"subjects":[{"kind":"Group","group":{"name":"g"}}],"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["Bad NS"]}]}]`)},
		{name: "flowcontrol/schema-create", method: "POST", path: fss,
			body: fs("kg-schema", `"priorityLevelConfiguration":{"name":"kg-level"},"distinguisherMethod":{"type":"ByUser"},`+rule)},
		{name: "flowcontrol/schema-create-dangling", method: "POST", path: fss,
			body: fs("kg-dangling", `"matchingPrecedence":500,"priorityLevelConfiguration":{"name":"kg-missing"}`)},
		{name: "flowcontrol/schema-get-dangling", method: "GET", path: fss + "/kg-dangling", project: withoutServerFields,
			until: func(a answer) bool { return hasStatus(a) }},
		{name: "flowcontrol/schema-get", method: "GET", path: fss + "/kg-schema", project: withoutServerFields,
			until: func(a answer) bool { return hasStatus(a) }},
		{name: "flowcontrol/schema-table", method: "GET", path: fss + "/kg-schema", accept: tableAccept},
		{name: "flowcontrol/schema-update-precedence", method: "PATCH", path: fss + "/kg-schema", contentType: mergePatch,
			body: `{"spec":{"matchingPrecedence":0}}`, project: withoutServerFields},
		{name: "flowcontrol/schema-patch-status-dup", method: "PATCH", path: fss + "/kg-schema/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":""}]}}`},
		{name: "flowcontrol/mandatory-schema-change", method: "PATCH", path: fss + "/exempt", contentType: mergePatch,
			body: `{"spec":{"matchingPrecedence":2}}`, project: statusMessageReason},
		{name: "flowcontrol/mandatory-level-change", method: "PATCH", path: pls + "/catch-all", contentType: mergePatch,
			body: `{"spec":{"limited":{"nominalConcurrencyShares":6}}}`, project: statusMessageReason},
		{name: "flowcontrol/schema-delete", method: "DELETE", path: fss + "/kg-dangling"},
		{name: "flowcontrol/schema-delete-2", method: "DELETE", path: fss + "/kg-schema"},
		{name: "flowcontrol/level-delete", method: "DELETE", path: pls + "/kg-level"},
		{name: "flowcontrol/level-delete-2", method: "DELETE", path: pls + "/kg-reject"},

		{name: "storagemigration/create", method: "POST", path: svms, body: svm("kg-migration", `"resource":{"group":"apps","resource":"deployments"}`)},
		{name: "storagemigration/create-core", method: "POST", path: svms, body: svm("kg-core", `"resource":{"resource":"secrets"}`)},
		{name: "storagemigration/create-invalid", method: "POST", path: svms, body: svm("kg-bad", `"resource":{"group":"Bad_Group","resource":"1pods"}`)},
		{name: "storagemigration/create-empty", method: "POST", path: svms, body: svm("kg-empty", `"resource":{}`)},
		{name: "storagemigration/get", method: "GET", path: svms + "/kg-migration"},
		{name: "storagemigration/update-spec", method: "PATCH", path: svms + "/kg-migration", contentType: mergePatch,
			body: `{"spec":{"resource":{"resource":"statefulsets"}}}`},
		{name: "storagemigration/status-running", method: "PATCH", path: svms + "/kg-migration/status", contentType: mergePatch,
			body: `{"status":{"resourceVersion":"12","conditions":[{"type":"Running","status":"True","reason":"Started","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
		{name: "storagemigration/status-both", method: "PATCH", path: svms + "/kg-migration/status", contentType: "application/json-patch+json",
			body: `[{"op":"replace","path":"/status/conditions","value":[{"type":"Succeeded","status":"True","reason":"Done","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Failed","status":"True","reason":"Broke","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}]`},
		{name: "storagemigration/status-rv-change", method: "PATCH", path: svms + "/kg-migration/status", contentType: mergePatch,
			body: `{"status":{"resourceVersion":"13"}}`},
		{name: "storagemigration/status-bad-condition", method: "PATCH", path: svms + "/kg-core/status", contentType: mergePatch,
			body: `{"status":{"resourceVersion":"abc","conditions":[{"type":"Running","status":"Maybe"}]}}`},
		{name: "storagemigration/table", method: "GET", path: svms, accept: tableAccept},
		{name: "kubectl/get-storageversionmigrations", kubectl: []string{"get", "storageversionmigrations"}},
		{name: "storagemigration/delete", method: "DELETE", path: svms + "/kg-migration"},
		{name: "storagemigration/delete-core", method: "DELETE", path: svms + "/kg-core"},

		{name: "discovery/flowcontrol-v1", method: "GET", path: fcv1},
		{name: "discovery/flowcontrol", method: "GET", path: "/apis/flowcontrol.apiserver.k8s.io"},
		{name: "discovery/storagemigration-v1", method: "GET", path: "/apis/storagemigration.k8s.io/v1"},
		{name: "discovery/aggregated-flowcontrol", method: "GET", path: "/apis", accept: discoveryV2,
			project: discoveryGroups("flowcontrol.apiserver.k8s.io", "storagemigration.k8s.io")},
		{name: "openapi/v3-flowcontrol-schemas", method: "GET", path: "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.flowcontrol.v1.FlowSchema", "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration")},
		{name: "openapi/v3-storagemigration-schemas", method: "GET", path: "/openapi/v3/apis/storagemigration.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.storagemigration.v1.StorageVersionMigration")},
	}
}

// withoutServerFields drops what each server generates in an object's
// metadata, its managed fields (kube's bootstrap writers are not
// kubegate's) and the times of its conditions.
func withoutServerFields(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	withoutGenerated(m)
	if md, _ := m["metadata"].(map[string]any); md != nil {
		delete(md, "managedFields")
	}
	if st, _ := m["status"].(map[string]any); st != nil {
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			if cm, _ := c.(map[string]any); cm != nil {
				delete(cm, "lastTransitionTime")
			}
		}
	}
	return v
}

// hasStatus reports whether an answer's object has status conditions.
func hasStatus(a answer) bool {
	m, _ := a.body.(map[string]any)
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	return len(conds) > 0
}

// containsQuestion reports whether a kubectl table still shows a schema
// whose Dangling condition is not yet written.
func containsQuestion(s string) bool {
	return strings.Contains(s, " ?\n") || strings.HasSuffix(s, " ?")
}

// statusMessageReason keeps a refusal's code, reason and causes' fields
// and types: the message quotes a whole spec, printed from each server's
// own types.
func statusMessageReason(v any) any {
	m, _ := v.(map[string]any)
	details, _ := m["details"].(map[string]any)
	causes, _ := details["causes"].([]any)
	var kept []any
	for _, c := range causes {
		if cm, _ := c.(map[string]any); cm != nil {
			kept = append(kept, map[string]any{"field": cm["field"], "reason": cm["reason"]})
		}
	}
	return map[string]any{"code": m["code"], "reason": m["reason"], "causes": kept}
}

// discoveryGroups keeps the entries of the named groups in an aggregated
// discovery document.
func discoveryGroups(names ...string) func(any) any {
	return func(v any) any {
		var kept []any
		for _, name := range names {
			kept = append(kept, aggregatedGroup(name)(v))
		}
		return kept
	}
}

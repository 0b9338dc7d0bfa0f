package conformance

// pdbOps are the PodDisruptionBudget operations and the evictions that
// consult them. No disruption controller runs next to either server, so
// a budget's status is what the operations write.
func pdbOps() []op {
	const (
		pdbs    = "/apis/policy/v1/namespaces/" + testNS + "/poddisruptionbudgets"
		running = `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`
		unready = `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}}`
	)
	pdb := func(name, spec string) string {
		return `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	evict := func(name, deleteOptions string) string {
		body := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"}`
		if deleteOptions != "" {
			body += `,"deleteOptions":` + deleteOptions
		}
		return body + `}`
	}
	sel := func(app string) string { return `"selector":{"matchLabels":{"app":"` + app + `"}}` }
	return []op{
		{name: "pdb/create", method: "POST", path: pdbs, body: pdb("guard", `"minAvailable":1,`+sel("evictee"))},
		{name: "pdb/create-max-unavailable", method: "POST", path: pdbs,
			body: pdb("loose", `"maxUnavailable":"50%",`+sel("other")+`,"unhealthyPodEvictionPolicy":"AlwaysAllow"`)},
		{name: "pdb/create-both", method: "POST", path: pdbs, body: pdb("bad", `"minAvailable":1,"maxUnavailable":"10%",`+sel("x"))},
		{name: "pdb/create-invalid", method: "POST", path: pdbs,
			body: pdb("bad", `"minAvailable":"150%","selector":{"matchLabels":{"a b":"c"}},"unhealthyPodEvictionPolicy":"Sometimes"`)},
		{name: "pdb/create-negative", method: "POST", path: pdbs, body: pdb("bad", `"maxUnavailable":-1`)},
		{name: "pdb/create-v1beta1-label", method: "POST", path: pdbs, body: pdb("stripped", `"minAvailable":"20%","selector":{"matchLabels":{"app":"x"},`+
			`"matchExpressions":[{"key":"pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match","operator":"Exists"},{"key":"tier","operator":"In","values":["web"]}]}`)},
		{name: "pdb/get", method: "GET", path: pdbs + "/guard"},
		{name: "pdb/table", method: "GET", path: pdbs + "/guard", accept: tableAccept},
		{name: "pdb/table-list", method: "GET", path: pdbs, accept: tableAccept},
		{name: "kubectl/get-pdb", kubectl: []string{"get", "pdb", "-n", testNS}},
		{name: "kubectl/create-pdb", kubectl: []string{"create", "poddisruptionbudget", "kc", "--selector=app=kc", "--max-unavailable=2", "-n", testNS}},

		// A running, ready pod the budget guards.
		{name: "pdb/pod-create", method: "POST", path: ns + "/pods", body: pod("evictee", "")},
		{name: "pdb/pod-running", method: "PATCH", path: ns + "/pods/evictee/status", contentType: mergePatch, body: running},
		{name: "pdb/evict-not-observed", method: "POST", path: ns + "/pods/evictee/eviction", body: evict("evictee", "")},
		{name: "pdb/status-exhausted", method: "PATCH", path: pdbs + "/guard/status", contentType: mergePatch,
			body: `{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}`},
		{name: "pdb/evict-exhausted", method: "POST", path: ns + "/pods/evictee/eviction", body: evict("evictee", "")},
		{name: "pdb/status-allow", method: "PATCH", path: pdbs + "/guard/status", contentType: mergePatch,
			body: `{"status":{"disruptionsAllowed":1,"currentHealthy":2,"expectedPods":2}}`},
		{name: "pdb/evict-dry-run", method: "POST", path: ns + "/pods/evictee/eviction?dryRun=All", body: evict("evictee", "")},
		{name: "pdb/evict-dry-run-mismatch", method: "POST", path: ns + "/pods/evictee/eviction?dryRun=All", body: evict("evictee", `{"dryRun":["None"]}`)},
		{name: "pdb/evict-ignore-read-errors", method: "POST", path: ns + "/pods/evictee/eviction",
			body: evict("evictee", `{"ignoreStoreReadErrorWithClusterBreakingPotential":true}`)},
		{name: "pdb/get-after-dry-run", method: "GET", path: pdbs + "/guard"},
		{name: "pdb/evict", method: "POST", path: ns + "/pods/evictee/eviction", body: evict("evictee", "")},
		{name: "pdb/get-after-eviction", method: "GET", path: pdbs + "/guard"},
		{name: "pdb/get-evicted-pod", method: "GET", path: ns + "/pods/evictee"},

		// A pod two budgets guard.
		{name: "pdb/multi-pod-create", method: "POST", path: ns + "/pods", body: pod("multi", "")},
		{name: "pdb/multi-pod-running", method: "PATCH", path: ns + "/pods/multi/status", contentType: mergePatch, body: running},
		{name: "pdb/multi-create-1", method: "POST", path: pdbs, body: pdb("multi-1", `"minAvailable":0,`+sel("multi"))},
		{name: "pdb/multi-create-2", method: "POST", path: pdbs, body: pdb("multi-2", `"maxUnavailable":1,`+sel("multi"))},
		{name: "pdb/evict-multi", method: "POST", path: ns + "/pods/multi/eviction", body: evict("multi", "")},

		// An unready pod under AlwaysAllow goes without using the budget;
		// a pending pod goes whatever its budget.
		{name: "pdb/unready-pod-create", method: "POST", path: ns + "/pods", body: pod("other", "")},
		{name: "pdb/unready-pod-status", method: "PATCH", path: ns + "/pods/other/status", contentType: mergePatch, body: unready},
		{name: "pdb/evict-unready-always-allow", method: "POST", path: ns + "/pods/other/eviction", body: evict("other", "")},
		{name: "pdb/get-always-allow", method: "GET", path: pdbs + "/loose"},
		{name: "pdb/pending-pod-create", method: "POST", path: ns + "/pods", body: pod("kc", "")},
		{name: "pdb/evict-pending-other-uid", method: "POST", path: ns + "/pods/kc/eviction",
			body: evict("kc", `{"preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`)},
		{name: "pdb/evict-pending", method: "POST", path: ns + "/pods/kc/eviction", body: evict("kc", "")},
		{name: "pdb/evict-missing", method: "POST", path: ns + "/pods/kc/eviction", body: evict("kc", "")},

		{name: "pdb/patch-spec", method: "PATCH", path: pdbs + "/guard", contentType: mergePatch, body: `{"spec":{"minAvailable":"50%"}}`},
		{name: "pdb/patch-both", method: "PATCH", path: pdbs + "/guard", contentType: mergePatch, body: `{"spec":{"maxUnavailable":1}}`},
		{name: "pdb/patch-status-invalid", method: "PATCH", path: pdbs + "/guard/status", contentType: mergePatch,
			body: `{"status":{"disruptionsAllowed":-1,"expectedPods":-2,"conditions":[{"type":"DisruptionAllowed","status":"Maybe"}]}}`},
		{name: "pdb/delete", method: "DELETE", path: pdbs + "/stripped"},
		{name: "kubectl/get-pdb-wide", kubectl: []string{"get", "pdb", "-n", testNS, "-o", "wide"}},
		{name: "kubectl/describe-pdb", kubectl: []string{"describe", "pdb", "guard", "-n", testNS}},
		{name: "kubectl/explain-pdb-spec", kubectl: []string{"explain", "pdb.spec"}},

		{name: "discovery/policy-v1", method: "GET", path: "/apis/policy/v1"},
		{name: "discovery/policy", method: "GET", path: "/apis/policy"},
		{name: "openapi/v3-policy-schemas", method: "GET", path: "/openapi/v3/apis/policy/v1",
			project: openAPISchemas("components", "io.k8s.api.policy.v1.PodDisruptionBudget")},
	}
}

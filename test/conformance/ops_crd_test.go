package conformance

import "strings"

// crdOps are the CustomResourceDefinition operations (I.1): creation with
// kube's defaults, its 422s, the conditions the API server's own
// controllers set (NamesAccepted, Established) and a names conflict, the
// rules of an update (stored versions, generation, scope), the status
// subresource, Tables and kubectl get, discovery of the group, and a
// delete that the CRD finalizer finishes.
func crdOps() []op {
	const (
		crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		// schema is a structural schema that keeps any spec.
		schema = `{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true},"status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}`
	)
	version := func(name string, storage bool, extra string) string {
		s := "false"
		if storage {
			s = "true"
		}
		return `{"name":"` + name + `","served":true,"storage":` + s + `,"schema":` + schema + extra + `}`
	}
	crd := func(name, group, names, scope string, versions ...string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name +
			`"},"spec":{"group":"` + group + `","names":{` + names + `},"scope":"` + scope + `","versions":[` + strings.Join(versions, ",") + `]}}`
	}
	gears := crd("gears.conformance.example.com", "conformance.example.com", `"plural":"gears","kind":"Gear","shortNames":["wd"],"categories":["all"]`, "Namespaced",
		version("v1", true, `,"subresources":{"status":{}},"additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}]`))
	return []op{
		{name: "crd/discovery-group", method: "GET", path: "/apis/apiextensions.k8s.io"},
		{name: "crd/discovery-v1", method: "GET", path: "/apis/apiextensions.k8s.io/v1"},
		{name: "crd/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: groupEntry("apiextensions.k8s.io")},
		{name: "crd/list-empty", method: "GET", path: crds},
		{name: "crd/create", method: "POST", path: crds, body: gears},
		{name: "crd/get-established", method: "GET", path: crds + "/gears.conformance.example.com", until: crdCondition("Established", "True")},
		{name: "crd/create-exists", method: "POST", path: crds, body: gears},
		{name: "crd/create-defaults-dry-run", method: "POST", path: crds + q("dryRun", "All"),
			body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.conformance.example.com"},"spec":{"group":"conformance.example.com","names":{"plural":"things","kind":"Thing"},"scope":"Cluster","versions":[` +
				version("v1", true, "") + `]}}`},
		{name: "crd/create-bad-group", method: "POST", path: crds,
			body: crd("gears.Example_Com", "Example_Com", `"plural":"gears","kind":"Gear"`, "Namespaced", version("v1", true, ""))},
		{name: "crd/create-group-one-label", method: "POST", path: crds,
			body: crd("gears.example", "example", `"plural":"gears","kind":"Gear"`, "Namespaced", version("v1", true, ""))},
		{name: "crd/create-bad-plural", method: "POST", path: crds,
			body: crd("Gears.conformance.example.com", "conformance.example.com", `"plural":"Gears","kind":"Gear"`, "Namespaced", version("v1", true, ""))},
		{name: "crd/create-name-mismatch", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gears","kind":"Gear"`, "Namespaced", version("v1", true, ""))},
		{name: "crd/create-no-storage", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced", version("v1", false, ""))},
		{name: "crd/create-two-storage", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced", version("v1", true, ""), version("v2", true, ""))},
		{name: "crd/create-no-versions", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced")},
		{name: "crd/create-bad-scope", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Global", version("v1", true, ""))},
		{name: "crd/create-no-schema", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced", `{"name":"v1","served":true,"storage":true}`)},
		{name: "crd/create-non-structural", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced",
				`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"properties":{"size":{"type":"integer"}}}}}}}`)},
		{name: "crd/create-bad-cel-rule", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced",
				`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.size >"}],"properties":{"size":{"type":"integer"}}}}}}}`)},
		{name: "crd/create-cel-no-such-field", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced",
				`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.weight > 0"}],"properties":{"size":{"type":"integer"}}}}}}}`)},
		{name: "crd/create-bad-default", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced",
				`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","default":"big"}}}}}}}`)},
		{name: "crd/create-unknown-format-warns", method: "POST", path: crds,
			body: crd("gadgets.conformance.example.com", "conformance.example.com", `"plural":"gadgets","kind":"Gadget"`, "Cluster",
				`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"when":{"type":"string","format":"sometime"}}}}}}}`)},
		{name: "crd/gadgets-established", method: "GET", path: crds + "/gadgets.conformance.example.com", until: crdCondition("Established", "True")},
		{name: "crd/create-names-conflict", method: "POST", path: crds,
			body: crd("gizmos.conformance.example.com", "conformance.example.com", `"plural":"gizmos","kind":"Gizmo","shortNames":["gears"]`, "Namespaced", version("v1", true, ""))},
		{name: "crd/names-conflict", method: "GET", path: crds + "/gizmos.conformance.example.com", until: crdCondition("NamesAccepted", "False")},
		{name: "crd/create-kind-conflict", method: "POST", path: crds,
			body: crd("doodads.conformance.example.com", "conformance.example.com", `"plural":"doodads","kind":"Gear","listKind":"DoodadList"`, "Cluster", version("v1", true, ""))},
		{name: "crd/kind-conflict", method: "GET", path: crds + "/doodads.conformance.example.com", until: crdCondition("NamesAccepted", "False")},
		{name: "crd/update-status-dropped", method: "PATCH", path: crds + "/gears.conformance.example.com", contentType: mergePatch,
			body: `{"metadata":{"labels":{"tier":"gold"}},"status":{"storedVersions":["v0"]}}`},
		{name: "crd/update-scope-immutable", method: "PATCH", path: crds + "/gears.conformance.example.com", contentType: mergePatch,
			body: `{"spec":{"scope":"Cluster"}}`},
		{name: "crd/update-plural-established", method: "PATCH", path: crds + "/gears.conformance.example.com", contentType: mergePatch,
			body: `{"spec":{"names":{"plural":"widgetz"}}}`},
		{name: "crd/update-add-version", method: "PATCH", path: crds + "/gears.conformance.example.com", contentType: mergePatch,
			body: `{"spec":{"versions":[` + version("v1", false, "") + `,` + version("v2", true, "") + `]}}`},
		{name: "crd/update-remove-stored-version", method: "PATCH", path: crds + "/gears.conformance.example.com", contentType: mergePatch,
			body: `{"spec":{"versions":[` + version("v2", true, "") + `]}}`},
		{name: "crd/status-get", method: "GET", path: crds + "/gears.conformance.example.com/status"},
		{name: "crd/status-spec-ignored", method: "PATCH", path: crds + "/gears.conformance.example.com/status", contentType: mergePatch,
			body: `{"spec":{"scope":"Cluster"},"status":{"storedVersions":["v2"]}}`},
		{name: "crd/update-remove-old-version", method: "PATCH", path: crds + "/gears.conformance.example.com", contentType: mergePatch,
			body: `{"spec":{"versions":[` + version("v2", true, "") + `]}}`},
		{name: "crd/status-empty-stored-versions", method: "PATCH", path: crds + "/gears.conformance.example.com/status", contentType: mergePatch,
			body: `{"status":{"storedVersions":[]}}`},
		{name: "crd/status-bad-accepted-names", method: "PATCH", path: crds + "/gears.conformance.example.com/status", contentType: mergePatch,
			body: `{"status":{"acceptedNames":{"plural":"Gears"}}}`},
		{name: "crd/list-label", method: "GET", path: crds + q("labelSelector", "tier=gold")},
		{name: "crd/table", method: "GET", path: crds + "/gears.conformance.example.com", accept: tableAccept},
		{name: "crd/table-list", method: "GET", path: crds, accept: tableAccept},
		{name: "crd/kubectl-get", kubectl: []string{"get", "crd"}},
		{name: "crd/kubectl-get-wide", kubectl: []string{"get", "crds", "-o", "wide"}},
		{name: "crd/kubectl-get-name", kubectl: []string{"get", "crd", "gears.conformance.example.com", "-o", "name"}},
		{name: "crd/apply-create", method: "PATCH", path: crds + "/sprockets.conformance.example.com" + q("fieldManager", "tool"), contentType: applyPatch,
			body: crd("sprockets.conformance.example.com", "conformance.example.com", `"plural":"sprockets","kind":"Sprocket"`, "Cluster", version("v1", true, ""))},
		{name: "crd/apply-established", method: "GET", path: crds + "/sprockets.conformance.example.com", until: crdCondition("Established", "True")},
		{name: "crd/apply-conflict", method: "PATCH", path: crds + "/sprockets.conformance.example.com" + q("fieldManager", "other"), contentType: applyPatch,
			body: crd("sprockets.conformance.example.com", "conformance.example.com", `"plural":"sprockets","kind":"Sprocket"`, "Namespaced", version("v1", true, ""))},
		{name: "crd/kubectl-apply", kubectl: []string{"apply", "-f", "-"},
			stdin: crd("cogs.conformance.example.com", "conformance.example.com", `"plural":"cogs","kind":"Cog"`, "Cluster", version("v1", true, ""))},
		{name: "crd/kubectl-apply-server-side", kubectl: []string{"apply", "--server-side", "-f", "-"},
			stdin: crd("cogs.conformance.example.com", "conformance.example.com", `"plural":"cogs","kind":"Cog","shortNames":["cg"]`, "Cluster", version("v1", true, ""))},
		{name: "crd/cogs-established", method: "GET", path: crds + "/cogs.conformance.example.com", until: crdCondition("Established", "True")},
		{name: "crd/kubectl-delete", kubectl: []string{"delete", "crd", "cogs.conformance.example.com"}},
		{name: "crd/create-webhook-bad-ca", method: "POST", path: crds,
			body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"hooks.conformance.example.com"},"spec":{"group":"conformance.example.com","names":{"plural":"hooks","kind":"Hook"},"scope":"Cluster","versions":[` +
				version("v1", true, "") + `,` + version("v2", false, "") + `],"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://conversion.example.com/convert","caBundle":"bm90IGEgY2VydA=="}}}}}`},
		{name: "crd/webhook-bad-ca", method: "GET", path: crds + "/hooks.conformance.example.com", until: crdReason("Established", "InvalidCABundle")},
		{name: "crd/delete-uid-precondition", method: "DELETE", path: crds + "/hooks.conformance.example.com",
			body: `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`},
		{name: "crd/delete-hooks", method: "DELETE", path: crds + "/hooks.conformance.example.com"},
		{name: "crd/delete", method: "DELETE", path: crds + "/gadgets.conformance.example.com"},
		{name: "crd/deleted", method: "GET", path: crds + "/gadgets.conformance.example.com", until: statusIs(404)},
		{name: "crd/delete-missing", method: "DELETE", path: crds + "/gadgets.conformance.example.com"},
		{name: "crd/delete-dry-run", method: "DELETE", path: crds + "/gears.conformance.example.com" + q("dryRun", "All")},
		{name: "crd/delete-collection", method: "DELETE", path: crds + q("labelSelector", "tier=gold")},
		{name: "crd/deleted-collection", method: "GET", path: crds + "/gears.conformance.example.com", until: statusIs(404)},
		// With gears gone, the naming controller accepts the names that
		// conflicted with its own, in its own time: the deletes below
		// answer with the objects once it has.
		{name: "crd/gizmos-accepted-once-gears-gone", method: "GET", path: crds + "/gizmos.conformance.example.com", until: crdCondition("Established", "True")},
		{name: "crd/doodads-accepted-once-gears-gone", method: "GET", path: crds + "/doodads.conformance.example.com", until: crdCondition("Established", "True")},
		// No CRD of these ops outlives them.
		{name: "crd/delete-gizmos", method: "DELETE", path: crds + "/gizmos.conformance.example.com"},
		{name: "crd/delete-doodads", method: "DELETE", path: crds + "/doodads.conformance.example.com"},
		{name: "crd/delete-sprockets", method: "DELETE", path: crds + "/sprockets.conformance.example.com"},
		{name: "crd/all-deleted", method: "GET", path: crds, until: func(a answer) bool {
			m, _ := a.body.(map[string]any)
			items, _ := m["items"].([]any)
			return len(items) == 0
		}},
	}
}

// crdCondition is satisfied by a CRD whose condition typ has status.
func crdCondition(typ, status string) func(answer) bool {
	return func(a answer) bool {
		m, _ := a.body.(map[string]any)
		st, _ := m["status"].(map[string]any)
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == typ {
				return c["status"] == status
			}
		}
		return false
	}
}

// crdReason is satisfied by a CRD whose condition typ has reason.
func crdReason(typ, reason string) func(answer) bool {
	return func(a answer) bool {
		m, _ := a.body.(map[string]any)
		st, _ := m["status"].(map[string]any)
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == typ {
				return c["reason"] == reason
			}
		}
		return false
	}
}

// statusIs is satisfied by an answer with the HTTP status code.
func statusIs(code int) func(answer) bool {
	return func(a answer) bool { return a.status == code }
}

// groupEntry keeps, of an aggregated discovery document, the entry of
// group.
func groupEntry(group string) func(any) any {
	return func(doc any) any {
		m, _ := doc.(map[string]any)
		items, _ := m["items"].([]any)
		for _, it := range items {
			e, _ := it.(map[string]any)
			if md, _ := e["metadata"].(map[string]any); md["name"] == group {
				return e
			}
		}
		return nil
	}
}

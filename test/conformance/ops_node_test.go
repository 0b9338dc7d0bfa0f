package conformance

// nodeOps are the node.k8s.io RuntimeClass operations and the pods that
// name a class, which the RuntimeClass admission plugin completes.
func nodeOps() []op {
	const rcs = "/apis/node.k8s.io/v1/runtimeclasses"
	rc := func(name, rest string) string {
		return `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"` + name + `"}` + rest + `}`
	}
	return []op{
		{name: "node/discovery-v1", method: "GET", path: "/apis/node.k8s.io/v1"},
		{name: "node/discovery-group", method: "GET", path: "/apis/node.k8s.io"},
		{name: "node/openapi-v1", method: "GET", path: "/openapi/v3/apis/node.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.node.v1.RuntimeClass")},
		{name: "node/create", method: "POST", path: rcs, body: rc("sandboxed", `,"handler":"runsc","overhead":{"podFixed":{"cpu":"250m","memory":"64Mi"}},`+
			`"scheduling":{"nodeSelector":{"sandbox":"gvisor"},"tolerations":[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}]}`)},
		{name: "node/create-plain", method: "POST", path: rcs, body: rc("plain", `,"handler":"runc"`)},
		{name: "node/get", method: "GET", path: rcs + "/sandboxed"},
		{name: "node/list", method: "GET", path: rcs},
		{name: "node/table", method: "GET", path: rcs, accept: tableAccept},
		{name: "node/create-invalid", method: "POST", path: rcs, body: rc("bad", `,"handler":"Not_A_Label","overhead":{"podFixed":{"cpu":"-1","pods":"1"}},`+
			`"scheduling":{"nodeSelector":{"a b":"c"},"tolerations":[{"operator":"Equal","value":"x"},{"key":"k","operator":"Maybe","effect":"Sometimes"}]}`)},
		{name: "node/create-no-handler", method: "POST", path: rcs, body: rc("bad", ``)},
		{name: "node/patch-handler", method: "PATCH", path: rcs + "/plain", contentType: mergePatch, body: `{"handler":"kata"}`},
		{name: "node/patch-labels", method: "PATCH", path: rcs + "/plain", contentType: mergePatch, body: `{"metadata":{"labels":{"tier":"a"}}}`},
		{name: "node/update-no-rv", method: "PUT", path: rcs + "/plain", body: rc("plain", `,"handler":"runc"`)},
		{name: "kubectl/get-runtimeclass", kubectl: []string{"get", "runtimeclass"}},

		{name: "node/pod-with-class", method: "POST", path: ns + "/pods",
			body: pod("sandboxed", `"runtimeClassName":"sandboxed","nodeSelector":{"disk":"ssd"},"tolerations":[{"key":"other","operator":"Exists"}]`)},
		{name: "node/pod-plain-class", method: "POST", path: ns + "/pods", body: pod("plain-rc", `"runtimeClassName":"plain"`)},
		{name: "node/pod-missing-class", method: "POST", path: ns + "/pods", body: pod("missing-rc", `"runtimeClassName":"nowhere"`)},
		{name: "node/pod-selector-conflict", method: "POST", path: ns + "/pods", body: pod("conflict-rc", `"runtimeClassName":"sandboxed","nodeSelector":{"sandbox":"kata"}`)},
		{name: "node/pod-overhead-mismatch", method: "POST", path: ns + "/pods", body: pod("overhead-rc", `"runtimeClassName":"sandboxed","overhead":{"cpu":"1"}`)},
		{name: "node/pod-overhead-without-class", method: "POST", path: ns + "/pods", body: pod("overhead-plain", `"overhead":{"cpu":"1"}`)},
		{name: "node/pod-delete", method: "DELETE", path: ns + "/pods/sandboxed?gracePeriodSeconds=0"},
		{name: "node/pod-plain-delete", method: "DELETE", path: ns + "/pods/plain-rc?gracePeriodSeconds=0"},
		{name: "node/delete", method: "DELETE", path: rcs + "/sandboxed"},
		{name: "node/deletecollection", method: "DELETE", path: rcs},
	}
}

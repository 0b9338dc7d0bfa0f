package conformance

// nodeOps are the node.k8s.io RuntimeClass operations and the pods that
// name a class, which the RuntimeClass admission plugin completes.
func nodeOps() []op {
	const rcs = "/apis/node.k8s.io/v1/runtimeclasses"
	rc := func(name, rest string) string {
		return `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"` + name + `"}` + rest + `}`
	}
	return []op{
		{name: "runtimeclass/discovery-v1", method: "GET", path: "/apis/node.k8s.io/v1"},
		{name: "runtimeclass/discovery-group", method: "GET", path: "/apis/node.k8s.io"},
		{name: "runtimeclass/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: aggregatedGroup("node.k8s.io")},
		{name: "runtimeclass/openapi-v1", method: "GET", path: "/openapi/v3/apis/node.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.node.v1.RuntimeClass")},
		{name: "runtimeclass/create", method: "POST", path: rcs, body: rc("sandboxed", `,"handler":"runsc","overhead":{"podFixed":{"cpu":"250m","memory":"64Mi"}},`+
			`"scheduling":{"nodeSelector":{"sandbox":"gvisor"},"tolerations":[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}]}`)},
		{name: "runtimeclass/create-plain", method: "POST", path: rcs, body: rc("plain", `,"handler":"runc"`)},
		{name: "runtimeclass/get", method: "GET", path: rcs + "/sandboxed"},
		{name: "runtimeclass/list", method: "GET", path: rcs},
		{name: "runtimeclass/table", method: "GET", path: rcs, accept: tableAccept},
		{name: "runtimeclass/create-invalid", method: "POST", path: rcs, body: rc("bad", `,"handler":"Not_A_Label","overhead":{"podFixed":{"pods":"-1"}},`+
			`"scheduling":{"nodeSelector":{"a b":"c"},"tolerations":[{"operator":"Equal","value":"x"},{"key":"k","operator":"Maybe","effect":"Sometimes"}]}`)},
		{name: "runtimeclass/create-no-handler", method: "POST", path: rcs, body: rc("bad", ``)},
		{name: "runtimeclass/patch-handler", method: "PATCH", path: rcs + "/plain", contentType: mergePatch, body: `{"handler":"kata"}`},
		{name: "runtimeclass/patch-labels", method: "PATCH", path: rcs + "/plain", contentType: mergePatch, body: `{"metadata":{"labels":{"tier":"a"}}}`},
		{name: "runtimeclass/update-no-rv", method: "PUT", path: rcs + "/plain", body: rc("plain", `,"handler":"runc"`)},
		{name: "kubectl/get-runtimeclass", kubectl: []string{"get", "runtimeclass"}},

		{name: "runtimeclass/pod-with-class", method: "POST", path: ns + "/pods",
			body: pod("sandboxed", `"runtimeClassName":"sandboxed","nodeSelector":{"disk":"ssd"},"tolerations":[{"key":"other","operator":"Exists"}]`)},
		{name: "runtimeclass/pod-plain-class", method: "POST", path: ns + "/pods", body: pod("plain-rc", `"runtimeClassName":"plain"`)},
		{name: "runtimeclass/pod-missing-class", method: "POST", path: ns + "/pods", body: pod("missing-rc", `"runtimeClassName":"nowhere"`)},
		{name: "runtimeclass/pod-selector-conflict", method: "POST", path: ns + "/pods", body: pod("conflict-rc", `"runtimeClassName":"sandboxed","nodeSelector":{"sandbox":"kata"}`)},
		{name: "runtimeclass/pod-overhead-mismatch", method: "POST", path: ns + "/pods", body: pod("overhead-rc", `"runtimeClassName":"sandboxed","overhead":{"cpu":"1"}`)},
		{name: "runtimeclass/pod-overhead-without-class", method: "POST", path: ns + "/pods", body: pod("overhead-plain", `"overhead":{"cpu":"1"}`)},
		{name: "runtimeclass/pod-delete", method: "DELETE", path: ns + "/pods/sandboxed?gracePeriodSeconds=0"},
		{name: "runtimeclass/pod-plain-delete", method: "DELETE", path: ns + "/pods/plain-rc?gracePeriodSeconds=0"},
		{name: "runtimeclass/delete", method: "DELETE", path: rcs + "/sandboxed"},
		{name: "runtimeclass/deletecollection", method: "DELETE", path: rcs},
	}
}

package conformance

// draOps are the resource.k8s.io/v1 operations (D.18): each kind's
// creation, defaults and validation, a claim's immutable spec and its
// status subresource, a taint rule's status, the slices' field
// selectors, Tables, kubectl get, discovery and the OpenAPI schemas. The
// namespaced kinds live in a namespace of their own, deleted at the end
// with the cluster-scoped objects.
func draOps() []op {
	const (
		group     = "/apis/resource.k8s.io/v1"
		classes   = group + "/deviceclasses"
		rules     = group + "/devicetaintrules"
		slices    = group + "/resourceslices"
		claims    = group + "/namespaces/dra/resourceclaims"
		templates = group + "/namespaces/dra/resourceclaimtemplates"
	)
	class := func(name, spec string) string {
		return `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	claim := func(name, spec string) string {
		return `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	slice := func(name, spec string) string {
		return `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	rule := func(name, spec string) string {
		return `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	const gpu = `{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"dra-gpu"}}]}}`
	return []op{
		{name: "dra/discovery", method: "GET", path: group},
		{name: "dra/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: aggregatedGroup("resource.k8s.io")},
		{name: "dra/openapi-schemas", method: "GET", path: "/openapi/v3/apis/resource.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.resource.v1.ResourceClaim", "io.k8s.api.resource.v1.ResourceSlice",
				"io.k8s.api.resource.v1.DeviceClass", "io.k8s.api.resource.v1.DeviceTaintRule", "io.k8s.api.resource.v1.ResourceClaimTemplate")},
		{name: "dra/namespace", method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dra"}}`},

		{name: "dra/class-create", method: "POST", path: classes,
			body: class("dra-gpu", `{"selectors":[{"cel":{"expression":"device.driver == \"gpu.example.com\""}}],"config":[{"opaque":{"driver":"gpu.example.com","parameters":{"a":1}}}]}`)},
		{name: "dra/class-create-invalid", method: "POST", path: classes,
			body: class("bad", `{"selectors":[{}],"config":[{"opaque":{"driver":"Bad_Driver"}},{}],"extendedResourceName":"kubernetes.io/gpu"}`)},
		{name: "dra/class-create-bad-name", method: "POST", path: classes, body: class("Bad_Name", `{}`)},
		{name: "dra/class-get", method: "GET", path: classes + "/dra-gpu"},
		{name: "dra/class-update", method: "PATCH", path: classes + "/dra-gpu", contentType: mergePatch,
			body: `{"spec":{"extendedResourceName":"example.com/gpu"}}`},
		{name: "dra/class-table", method: "GET", path: classes + "/dra-gpu", accept: tableAccept},

		{name: "dra/claim-create", method: "POST", path: claims, body: claim("c1", gpu)},
		{name: "dra/claim-create-all", method: "POST", path: claims,
			body: claim("c2", `{"devices":{"requests":[{"name":"all","exactly":{"deviceClassName":"dra-gpu","allocationMode":"All"}},`+
				`{"name":"alt","firstAvailable":[{"name":"big","deviceClassName":"dra-gpu","count":2},{"name":"small","deviceClassName":"dra-gpu"}]}],`+
				`"constraints":[{"requests":["all","alt/big"],"matchAttribute":"example.com/numa"}]}}`)},
		{name: "dra/claim-create-invalid", method: "POST", path: claims,
			body: claim("bad", `{"devices":{"requests":[{"name":"Bad_Name"},{"name":"x","exactly":{"deviceClassName":"","allocationMode":"Some","count":-1}},`+
				`{"name":"y","exactly":{"deviceClassName":"dra-gpu","allocationMode":"All","count":3}},{"name":"y","exactly":{"deviceClassName":"dra-gpu"}}],`+
				`"config":[{"requests":["nope","y/z/w"],"opaque":{"driver":"gpu.example.com","parameters":{}}}]}}`)},
		{name: "dra/claim-create-both", method: "POST", path: claims,
			body: claim("both", `{"devices":{"requests":[{"name":"x","exactly":{"deviceClassName":"dra-gpu"},"firstAvailable":[{"name":"a","deviceClassName":"dra-gpu"}]}]}}`)},
		{name: "dra/claim-create-tolerations", method: "POST", path: claims,
			body: claim("tol", `{"devices":{"requests":[{"name":"x","exactly":{"deviceClassName":"dra-gpu","tolerations":[`+
				`{"key":"a","operator":"Exists","value":"v"},{"key":"b","operator":"Maybe","effect":"Evict"},{"key":"c"}]}}]}}`)},
		{name: "dra/claim-get", method: "GET", path: claims + "/c1"},
		{name: "dra/claim-update-spec", method: "PATCH", path: claims + "/c1", contentType: mergePatch,
			body: `{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"other"}}]}}}`},
		{name: "dra/claim-update-labels", method: "PATCH", path: claims + "/c1", contentType: mergePatch,
			body: `{"metadata":{"labels":{"a":"b"}},"status":{"reservedFor":[{"resource":"pods","name":"p","uid":"u"}]}}`},
		{name: "dra/claim-status-reserved-unallocated", method: "PATCH", path: claims + "/c1/status", contentType: mergePatch,
			body: `{"status":{"reservedFor":[{"resource":"pods","name":"p","uid":"u"}]}}`},
		{name: "dra/claim-status-get", method: "GET", path: claims + "/c1/status"},
		{name: "dra/claim-table", method: "GET", path: claims, accept: tableAccept},
		{name: "kubectl/get-resourceclaims", kubectl: []string{"get", "resourceclaims", "-n", "dra"}},

		{name: "dra/template-create", method: "POST", path: templates,
			body: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"t1"},"spec":{"metadata":{"labels":{"a":"b"}},"spec":` + gpu + `}}`},
		{name: "dra/template-create-invalid", method: "POST", path: templates,
			body: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"t2"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu"}]}}}}`},
		{name: "dra/template-update-spec", method: "PATCH", path: templates + "/t1", contentType: mergePatch,
			body: `{"spec":{"metadata":{"labels":{"a":"c"}}}}`},
		{name: "dra/template-table", method: "GET", path: templates, accept: tableAccept},

		{name: "dra/slice-create", method: "POST", path: slices,
			body: slice("s1", `{"driver":"gpu.example.com","pool":{"name":"pool-a","resourceSliceCount":1},"nodeName":"node-a",`+
				`"devices":[{"name":"gpu-0","attributes":{"model":{"string":"x"}},"capacity":{"memory":{"value":"1Gi"}}}]}`)},
		{name: "dra/slice-create-all-nodes", method: "POST", path: slices,
			body: slice("s2", `{"driver":"Net.Example.com","pool":{"name":"pool-b","generation":2,"resourceSliceCount":2},"allNodes":true}`)},
		{name: "dra/slice-create-invalid", method: "POST", path: slices,
			body: slice("bad", `{"driver":"","pool":{"name":"","resourceSliceCount":0,"generation":-1},"nodeName":"","allNodes":false,`+
				`"devices":[{"name":"Dev"},{"name":"Dev","nodeName":"n"}]}`)},
		{name: "dra/slice-create-two-choices", method: "POST", path: slices,
			body: slice("two", `{"driver":"gpu.example.com","pool":{"name":"p","resourceSliceCount":1},"nodeName":"n","allNodes":true,`+
				`"nodeSelector":{"nodeSelectorTerms":[]}}`)},
		{name: "dra/slice-create-no-choice", method: "POST", path: slices,
			body: slice("none", `{"driver":"gpu.example.com","pool":{"name":"p","resourceSliceCount":1}}`)},
		{name: "dra/slice-update-immutable", method: "PATCH", path: slices + "/s1", contentType: mergePatch,
			body: `{"spec":{"driver":"other.example.com","pool":{"name":"pool-c"},"nodeName":"node-b"}}`},
		{name: "dra/slice-update-generation", method: "PATCH", path: slices + "/s1", contentType: mergePatch,
			body: `{"spec":{"pool":{"generation":3}}}`},
		{name: "dra/slice-list-node", method: "GET", path: slices + q("fieldSelector", "spec.nodeName=node-a")},
		{name: "dra/slice-list-driver-pool", method: "GET", path: slices + q("fieldSelector", "spec.driver=Net.Example.com,spec.pool.name=pool-b")},
		{name: "dra/slice-list-no-node", method: "GET", path: slices + q("fieldSelector", "spec.nodeName=")},
		{name: "dra/slice-table", method: "GET", path: slices, accept: tableAccept},
		{name: "kubectl/get-resourceslices", kubectl: []string{"get", "resourceslices"}},

		{name: "dra/rule-create", method: "POST", path: rules,
			body: rule("r1", `{"deviceSelector":{"driver":"gpu.example.com","pool":"pool-a","device":"gpu-0"},"taint":{"key":"example.com/broken","value":"yes","effect":"NoSchedule","timeAdded":"2026-01-02T03:04:05Z"}}`)},
		{name: "dra/rule-create-invalid", method: "POST", path: rules,
			body: rule("bad", `{"deviceSelector":{"driver":"x_y","pool":"","device":"A"},"taint":{"key":"-bad","value":"a b","effect":"Evict"}}`)},
		{name: "dra/rule-create-no-effect", method: "POST", path: rules, body: rule("bad", `{"taint":{"key":"k"}}`)},
		{name: "dra/rule-update-unconditional", method: "PUT", path: rules + "/r1",
			body: rule("r1", `{"taint":{"key":"example.com/broken","effect":"NoExecute","timeAdded":"2026-01-02T03:04:05Z"}}`)},
		{name: "dra/rule-update-status-kept", method: "PATCH", path: rules + "/r1", contentType: mergePatch,
			body: `{"metadata":{"labels":{"a":"b"}},"status":{"conditions":[{"type":"EvictionInProgress","status":"True","reason":"R","message":"m","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`},
		{name: "dra/rule-status", method: "PATCH", path: rules + "/r1/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"EvictionInProgress","status":"True","reason":"R","message":"m","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`},
		{name: "dra/rule-status-invalid", method: "PATCH", path: rules + "/r1/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Bad Type","status":"Maybe","reason":"","message":"m","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`},
		{name: "dra/rule-get", method: "GET", path: rules + "/r1"},
		{name: "kubectl/get-devicetaintrules", kubectl: []string{"get", "devicetaintrules"}},

		{name: "dra/delete-slices", method: "DELETE", path: slices},
		{name: "dra/delete-rule", method: "DELETE", path: rules + "/r1"},
		{name: "dra/delete-class", method: "DELETE", path: classes + "/dra-gpu"},
		{name: "dra/delete-namespace", method: "DELETE", path: "/api/v1/namespaces/dra"},
	}
}

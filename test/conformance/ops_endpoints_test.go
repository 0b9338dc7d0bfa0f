package conformance

// endpointsOps are the Endpoints and EndpointSlice operations: stored with
// kube's defaults and validation. Lists select a label of their own, as
// kubegate up's endpoints controllers write objects for the Services of
// the other operations and kube-apiserver has no controllers beside it.
func endpointsOps() []op {
	const (
		eps    = "/api/v1/namespaces/" + testNS + "/endpoints"
		slices = "/apis/discovery.k8s.io/v1/namespaces/" + testNS + "/endpointslices"
		mine   = "?labelSelector=test%3Dep"
	)
	ep := func(name, subsets string) string {
		return `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"` + name + `","labels":{"test":"ep"}},"subsets":[` + subsets + `]}`
	}
	slice := func(name, rest string) string {
		return `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"` + name + `","labels":{"test":"ep"}},` + rest + `}`
	}
	return []op{
		{name: "endpoints/create", method: "POST", path: eps, body: ep("ep1",
			`{"addresses":[{"ip":"10.0.0.2","nodeName":"n1","targetRef":{"kind":"Pod","name":"p2","namespace":"`+testNS+`"}},{"ip":"10.0.0.1"}],"notReadyAddresses":[{"ip":"10.0.0.3"}],"ports":[{"port":80}]}`)},
		{name: "endpoints/get", method: "GET", path: eps + "/ep1"},
		{name: "endpoints/create-empty", method: "POST", path: eps, body: ep("ep2", "")},
		{name: "endpoints/create-headless", method: "POST", path: eps, body: ep("ep3", `{"addresses":[{"ip":"10.0.0.5","hostname":"web-0"}]}`)},
		{name: "endpoints/create-many", method: "POST", path: eps, body: ep("ep4",
			`{"addresses":[{"ip":"10.0.1.1"},{"ip":"10.0.1.2"},{"ip":"10.0.1.3"},{"ip":"10.0.1.4"}],"ports":[{"name":"http","port":80},{"name":"https","port":443}]}`)},
		{name: "endpoints/create-invalid", method: "POST", path: eps, body: ep("bad",
			`{"addresses":[{"ip":"127.0.0.1","hostname":"Not_A_Label","nodeName":"bad/node"},{"ip":"010.0.0.1"},{"ip":"fe80::1"}],"ports":[{"port":0,"protocol":"ICMP"},{"port":81,"appProtocol":"bad proto"}]},{"ports":[{"port":80}]}`)},
		{name: "endpoints/update", method: "PATCH", path: eps + "/ep1", contentType: mergePatch, body: `{"subsets":[{"addresses":[{"ip":"10.0.0.9"}],"ports":[{"port":8080,"protocol":"UDP"}]}]}`},
		{name: "endpoints/list", method: "GET", path: eps + mine},
		{name: "endpoints/table", method: "GET", path: eps + "/ep4", accept: tableAccept},
		{name: "endpoints/table-list", method: "GET", path: eps + mine, accept: tableAccept},
		{name: "kubectl/get-endpoints", kubectl: []string{"get", "ep", "-n", testNS, "-l", "test=ep"}},
		{name: "endpoints/delete", method: "DELETE", path: eps + "/ep2"},

		{name: "endpointslice/create", method: "POST", path: slices, body: slice("es1",
			`"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true},"nodeName":"n1","zone":"z1","deprecatedTopology":{"a":"b"}},{"addresses":["10.0.0.2"],"hostname":"h"}],"ports":[{"port":80},{"name":"https","port":443,"protocol":"TCP","appProtocol":"https"}]`)},
		{name: "endpointslice/get", method: "GET", path: slices + "/es1"},
		{name: "endpointslice/create-minimal", method: "POST", path: slices, body: slice("es2", `"addressType":"FQDN","endpoints":[],"ports":[]`)},
		{name: "endpointslice/update-fqdn", method: "PATCH", path: slices + "/es2", contentType: mergePatch, body: `{"endpoints":[{"addresses":["db.example.com"]}]}`},
		{name: "endpointslice/create-ipv6", method: "POST", path: slices, body: slice("es3", `"addressType":"IPv6","endpoints":[{"addresses":["2001:db8::1"]}],"ports":[{"port":8080}]`)},
		{name: "endpointslice/create-no-type", method: "POST", path: slices, body: slice("bad", `"endpoints":[]`)},
		{name: "endpointslice/create-type-ip", method: "POST", path: slices, body: slice("bad", `"addressType":"IP","endpoints":[]`)},
		{name: "endpointslice/create-invalid", method: "POST", path: slices, body: slice("bad",
			`"addressType":"IPv4","endpoints":[{"addresses":["2001:db8::1","127.0.0.1","1.2.3"],"hostname":"Bad_Host"}],"ports":[{"name":"Bad_Name","port":80,"protocol":"ICMP"},{"name":"Bad_Name","appProtocol":"a b"}]`)},
		{name: "endpointslice/create-no-addresses", method: "POST", path: slices, body: slice("bad", `"addressType":"IPv4","endpoints":[{"addresses":[]}]`)},
		{name: "endpointslice/create-bad-fqdn", method: "POST", path: slices, body: slice("bad", `"addressType":"FQDN","endpoints":[{"addresses":["not a name"]}]`)},
		{name: "endpointslice/update-address-type", method: "PATCH", path: slices + "/es1", contentType: mergePatch, body: `{"addressType":"IPv6"}`},
		{name: "endpointslice/update-endpoints", method: "PATCH", path: slices + "/es1", contentType: mergePatch,
			body: `{"endpoints":[{"addresses":["10.0.0.7"],"conditions":{"ready":false,"serving":true,"terminating":true},"deprecatedTopology":{"x":"y"}}]}`},
		{name: "endpointslice/update-labels", method: "PATCH", path: slices + "/es1", contentType: mergePatch, body: `{"metadata":{"labels":{"more":"x"}}}`},
		{name: "endpointslice/update-annotations", method: "PATCH", path: slices + "/es1", contentType: mergePatch, body: `{"metadata":{"annotations":{"note":"x"}}}`},
		{name: "endpointslice/list", method: "GET", path: slices + mine},
		{name: "endpointslice/table", method: "GET", path: slices + "/es1", accept: tableAccept},
		{name: "endpointslice/table-list", method: "GET", path: slices + mine, accept: tableAccept},
		{name: "kubectl/get-endpointslices", kubectl: []string{"get", "endpointslices", "-n", testNS, "-l", "test=ep", "-o", "wide"}},
		{name: "openapi/v3-discovery-schemas", method: "GET", path: "/openapi/v3/apis/discovery.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.discovery.v1.EndpointSlice")},
		{name: "openapi/v3-endpoints-schema", method: "GET", path: "/openapi/v3/api/v1",
			project: openAPISchemas("components", "io.k8s.api.core.v1.Endpoints")},
		{name: "endpointslice/delete", method: "DELETE", path: slices + "/es2"},
	}
}

// kubernetesEndpointsOps read what both servers keep for the kubernetes
// Service: its Endpoints and EndpointSlice.
func kubernetesEndpointsOps() []op {
	return []op{
		{name: "endpoints/kubernetes", method: "GET", path: "/api/v1/namespaces/default/endpoints/kubernetes"},
		{name: "endpointslice/kubernetes", method: "GET", path: "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"},
	}
}

package conformance

import "strings"

// networkingOps are the networking.k8s.io/v1 operations: Ingresses and
// their classes, with the DefaultIngressClass plugin, NetworkPolicies,
// ServiceCIDRs (the default one included) and IPAddresses. The default
// IngressClass they make is deleted by the last of them. IPAddresses are
// read by name only: kube-apiserver holds every Service's cluster IP
// with one.
func networkingOps() []op {
	const (
		group     = "/apis/networking.k8s.io/v1"
		ings      = group + "/namespaces/" + testNS + "/ingresses"
		netpols   = group + "/namespaces/" + testNS + "/networkpolicies"
		classes   = group + "/ingressclasses"
		cidrs     = group + "/servicecidrs"
		addresses = group + "/ipaddresses"
		backend   = `"backend":{"service":{"name":"web","port":{"number":80}}}`
		isDefault = `,"annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}`
	)
	obj := func(kind, name, meta, rest string) string {
		return `{"apiVersion":"networking.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"` + meta + `},` + rest + `}`
	}
	return []op{
		{name: "net/discovery-group", method: "GET", path: "/apis/networking.k8s.io"},
		{name: "net/discovery-v1", method: "GET", path: group},
		{name: "net/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: aggregatedGroup("networking.k8s.io")},
		{name: "net/openapi-v3-schemas", method: "GET", path: "/openapi/v3/apis/networking.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.networking.v1.Ingress", "io.k8s.api.networking.v1.IngressClass",
				"io.k8s.api.networking.v1.NetworkPolicy", "io.k8s.api.networking.v1.ServiceCIDR", "io.k8s.api.networking.v1.IPAddress")},

		// Ingresses.
		{name: "net/ingress-create", method: "POST", path: ings, body: obj("Ingress", "web", "", `"spec":{"ingressClassName":"external",`+
			`"tls":[{"hosts":["a.example.com","*.example.org"],"secretName":"web-tls"}],"rules":[`+
			`{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix",`+backend+`},{"path":"/api","pathType":"Exact","backend":{"service":{"name":"api","port":{"name":"http"}}}}]}},`+
			`{"host":"*.example.org","http":{"paths":[{"pathType":"ImplementationSpecific","backend":{"resource":{"apiGroup":"example.com","kind":"Bucket","name":"static"}}}]}},`+
			`{"host":"c.example.com"},{"host":"d.example.com"}]},"status":{"loadBalancer":{"ingress":[{"ip":"10.1.1.1"}]}}`)},
		{name: "net/ingress-create-invalid", method: "POST", path: ings, body: obj("Ingress", "bad", `,"annotations":{"kubernetes.io/ingress.class":"a"}`,
			`"spec":{"ingressClassName":"B_C","tls":[{"hosts":["bad_host"],"secretName":"Bad_Secret"}],"rules":[{"host":"1.2.3.4","http":{"paths":[`+
				`{"path":"/a","backend":{"service":{"name":"s","port":{"number":80}}}},`+
				`{"path":"a//b/..","pathType":"Prefix","backend":{"service":{"name":"Svc","port":{"number":80,"name":"http"}}}},`+
				`{"path":"x","pathType":"ImplementationSpecific","backend":{"service":{"name":"s","port":{"number":70000}}}},`+
				`{"path":"/","pathType":"Sometimes","backend":{}},`+
				`{"path":"/%2f","pathType":"Exact","backend":{"service":{"name":"s","port":{"number":80}},"resource":{"kind":"K","name":"n"}}}]}},`+
				`{"host":"*.*.example.com","http":{"paths":[]}}]}`)},
		{name: "net/ingress-create-empty", method: "POST", path: ings, body: obj("Ingress", "bad", "", `"spec":{"defaultBackend":{"resource":{"kind":"","name":"a/b"},"service":null}}`)},
		{name: "net/ingress-create-no-backend", method: "POST", path: ings, body: obj("Ingress", "bad", "", `"spec":{}`)},
		{name: "net/ingress-create-annotated", method: "POST", path: ings, body: obj("Ingress", "annotated", `,"annotations":{"kubernetes.io/ingress.class":"legacy"}`,
			`"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":8080}}}}`)},
		{name: "net/ingress-get", method: "GET", path: ings + "/web"},
		{name: "net/ingress-table", method: "GET", path: ings + "/web", accept: tableAccept},
		{name: "net/ingress-status", method: "PATCH", path: ings + "/web/status", contentType: mergePatch,
			body: `{"spec":{"ingressClassName":"ignored"},"status":{"loadBalancer":{"ingress":[{"ip":"10.1.1.2","ports":[{"port":443,"protocol":"TCP"}]},{"hostname":"lb.example.com"}]}}}`},
		{name: "net/ingress-status-invalid", method: "PATCH", path: ings + "/web/status", contentType: mergePatch,
			body: `{"status":{"loadBalancer":{"ingress":[{"ip":"10.1.1.256"},{"hostname":"10.1.1.3"},{"hostname":"Bad_Name"}]}}}`},
		{name: "net/ingress-patch-spec", method: "PATCH", path: ings + "/web", contentType: mergePatch,
			body: `{"spec":{"ingressClassName":"internal"},"status":{"loadBalancer":{"ingress":[{"ip":"10.9.9.9"}]}}}`},
		{name: "net/ingress-table-list", method: "GET", path: ings, accept: tableAccept},

		// IngressClasses, and the default one given to an Ingress.
		{name: "net/ingressclass-create", method: "POST", path: classes, body: obj("IngressClass", "net-default", isDefault,
			`"spec":{"controller":"example.com/ingress","parameters":{"apiGroup":"example.com","kind":"Params","name":"p"}}`)},
		{name: "net/ingressclass-create-namespaced", method: "POST", path: classes, body: obj("IngressClass", "net-scoped", "",
			`"spec":{"controller":"example.com/ingress","parameters":{"kind":"Params","name":"p","scope":"Namespace","namespace":"`+testNS+`"}}`)},
		{name: "net/ingressclass-create-invalid", method: "POST", path: classes, body: obj("IngressClass", "net-bad", "",
			`"spec":{"controller":"no-domain","parameters":{"apiGroup":"Bad_Group","kind":"","name":"a/b","scope":"Namespace"}}`)},
		{name: "net/ingressclass-create-bad-scope", method: "POST", path: classes, body: obj("IngressClass", "net-bad", "",
			`"spec":{"controller":"example.com/`+longName(250)+`","parameters":{"kind":"K","name":"n","scope":"Cluster","namespace":"x"}}`)},
		{name: "net/ingressclass-create-unknown-scope", method: "POST", path: classes, body: obj("IngressClass", "net-bad", "",
			`"spec":{"controller":"example.com/x","parameters":{"kind":"K","name":"n","scope":"Galaxy"}}`)},
		{name: "net/ingressclass-get", method: "GET", path: classes + "/net-default"},
		{name: "net/ingressclass-update-controller", method: "PATCH", path: classes + "/net-default", contentType: mergePatch,
			body: `{"spec":{"controller":"example.com/other"}}`},
		{name: "net/ingressclass-table", method: "GET", path: classes + "/net-default", accept: tableAccept},
		{name: "net/ingressclass-table-scoped", method: "GET", path: classes + "/net-scoped", accept: tableAccept},
		{name: "kubectl/get-ingressclass", kubectl: []string{"get", "ingressclass", "net-default", "net-scoped"}},
		{name: "net/ingress-create-defaulted", method: "POST", path: ings, body: obj("Ingress", "defaulted", "",
			`"spec":{"rules":[{"http":{"paths":[{"path":"/","pathType":"Prefix",`+backend+`}]}}]}`)},
		{name: "net/ingress-create-annotated-not-defaulted", method: "POST", path: ings, body: obj("Ingress", "annotated-2", `,"annotations":{"kubernetes.io/ingress.class":"legacy"}`,
			`"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":8080}}}}`)},
		{name: "kubectl/create-ingress-rules", kubectl: []string{"create", "ingress", "net-rules", "-n", testNS,
			"--rule=foo.example.com/bar*=svc1:8080,tls=my-cert", "--rule=bar.example.com/=svc2:http", "--annotation=a=b"}},
		{name: "kubectl/get-ing", kubectl: []string{"get", "ing", "web", "defaulted", "net-rules", "-n", testNS}},
		{name: "net/ingressclass-delete-default", method: "DELETE", path: classes + "/net-default"},
		{name: "net/ingressclass-delete-scoped", method: "DELETE", path: classes + "/net-scoped"},
		{name: "net/ingress-create-after-default", method: "POST", path: ings, body: obj("Ingress", "classless", "",
			`"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}`)},

		// NetworkPolicies.
		{name: "net/netpol-create", method: "POST", path: netpols, body: obj("NetworkPolicy", "db", "", `"spec":{"podSelector":{"matchLabels":{"app":"db"}},`+
			`"ingress":[{"from":[{"podSelector":{"matchLabels":{"app":"web"}},"namespaceSelector":{}},{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}}],"ports":[{"port":5432},{"protocol":"UDP","port":1000,"endPort":2000}]}],`+
			`"egress":[{"to":[{"ipBlock":{"cidr":"2001:db8::/32"}}],"ports":[{"port":"dns"}]}]}`)},
		{name: "net/netpol-create-ingress-only", method: "POST", path: netpols, body: obj("NetworkPolicy", "deny", "", `"spec":{"podSelector":{}}`)},
		{name: "net/netpol-create-warning", method: "POST", path: netpols, body: obj("NetworkPolicy", "noncanonical", "",
			`"spec":{"podSelector":{},"egress":[{"to":[{"ipBlock":{"cidr":"2001:DB8::/64"}}]}],"policyTypes":["Egress"]}`)},
		{name: "net/netpol-create-invalid", method: "POST", path: netpols, body: obj("NetworkPolicy", "bad", "", `"spec":{"podSelector":{"matchLabels":{"a b":"c"}},`+
			`"ingress":[{"ports":[{"protocol":"ICMP","port":"http","endPort":90},{"port":70000},{"port":100,"endPort":50},{"endPort":10},{"port":"Not_A_Name"}],`+
			`"from":[{},{"podSelector":{},"ipBlock":{"cidr":"10.0.0.0/8","except":["11.0.0.0/16","10.0.0.0/8"]}},{"ipBlock":{"cidr":""}},{"ipBlock":{"cidr":"10.0.0.1/33"}}]}],`+
			`"egress":[{"to":[{"ipBlock":{"cidr":"010.0.0.0/8"}}]}],"policyTypes":["Ingress","Sideways"]}`)},
		{name: "net/netpol-create-too-many-types", method: "POST", path: netpols, body: obj("NetworkPolicy", "bad", "",
			`"spec":{"podSelector":{},"policyTypes":["Ingress","Egress","Ingress"]}`)},
		{name: "net/netpol-get", method: "GET", path: netpols + "/db"},
		{name: "net/netpol-patch", method: "PATCH", path: netpols + "/db", contentType: mergePatch, body: `{"spec":{"podSelector":{"matchLabels":{"app":"db2"}}}}`},
		{name: "net/netpol-table-list", method: "GET", path: netpols, accept: tableAccept},
		{name: "kubectl/get-netpol", kubectl: []string{"get", "netpol", "-n", testNS}},

		// ServiceCIDRs: the default one, and one of the operations'.
		{name: "net/servicecidr-get-default", method: "GET", path: cidrs + "/kubernetes"},
		{name: "net/servicecidr-create", method: "POST", path: cidrs, body: obj("ServiceCIDR", "net-extra", "",
			`"spec":{"cidrs":["10.250.0.0/24"]},"status":{"conditions":[{"type":"Ready","status":"True","reason":"Set","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)},
		{name: "net/servicecidr-create-invalid", method: "POST", path: cidrs, body: obj("ServiceCIDR", "net-bad", "", `"spec":{"cidrs":["10.0.0.0/24","10.1.0.0/24"]}`)},
		{name: "net/servicecidr-create-bad-cidr", method: "POST", path: cidrs, body: obj("ServiceCIDR", "net-bad", "", `"spec":{"cidrs":["10.0.0.1/24","fd00::/200"]}`)},
		{name: "net/servicecidr-create-three", method: "POST", path: cidrs, body: obj("ServiceCIDR", "net-bad", "", `"spec":{"cidrs":["10.0.0.0/24","fd00::/64","10.2.0.0/24"]}`)},
		{name: "net/servicecidr-create-empty", method: "POST", path: cidrs, body: obj("ServiceCIDR", "net-bad", "", `"spec":{}`)},
		{name: "net/servicecidr-update-immutable", method: "PATCH", path: cidrs + "/net-extra", contentType: mergePatch, body: `{"spec":{"cidrs":["10.251.0.0/24"]}}`},
		{name: "net/servicecidr-add-family", method: "PATCH", path: cidrs + "/net-extra", contentType: mergePatch, body: `{"spec":{"cidrs":["10.250.0.0/24","fd00:10:250::/112"]}}`},
		{name: "net/servicecidr-shrink", method: "PATCH", path: cidrs + "/net-extra", contentType: mergePatch, body: `{"spec":{"cidrs":["10.250.0.0/24"]}}`},
		{name: "net/servicecidr-status", method: "PATCH", path: cidrs + "/net-extra/status", contentType: mergePatch,
			body: `{"spec":{"cidrs":[]},"status":{"conditions":[{"type":"Ready","status":"False","reason":"Testing","message":"set by a test","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
		{name: "net/servicecidr-table-list", method: "GET", path: cidrs, accept: tableAccept},
		{name: "kubectl/get-servicecidr", kubectl: []string{"get", "servicecidr"}},

		// IPAddresses, outside the service CIDRs.
		{name: "net/ipaddress-create", method: "POST", path: addresses, body: obj("IPAddress", "192.168.7.10", "",
			`"spec":{"parentRef":{"group":"gateway.networking.k8s.io","resource":"gateways","namespace":"`+testNS+`","name":"gw"}}`)},
		{name: "net/ipaddress-create-v6", method: "POST", path: addresses, body: obj("IPAddress", "2001:db8::7", "",
			`"spec":{"parentRef":{"resource":"services","name":"svc"}}`)},
		{name: "net/ipaddress-create-invalid", method: "POST", path: addresses, body: obj("IPAddress", "192.168.007.10", "",
			`"spec":{"parentRef":{"group":"Bad_Group","resource":"a/b","namespace":"x/y"}}`)},
		{name: "net/ipaddress-create-noncanonical", method: "POST", path: addresses, body: obj("IPAddress", "2001:DB8::8", "", `"spec":{}`)},
		{name: "net/ipaddress-get", method: "GET", path: addresses + "/192.168.7.10"},
		{name: "net/ipaddress-update-parent", method: "PATCH", path: addresses + "/192.168.7.10", contentType: mergePatch,
			body: `{"spec":{"parentRef":{"name":"other"}}}`},
		{name: "net/ipaddress-table", method: "GET", path: addresses + "/192.168.7.10", accept: tableAccept},
		{name: "net/ipaddress-table-v6", method: "GET", path: addresses + "/2001:db8::7", accept: tableAccept},
		{name: "kubectl/get-ipaddress", kubectl: []string{"get", "ip", "192.168.7.10", "2001:db8::7"}},

		// What the operations made goes.
		{name: "net/ipaddress-delete", method: "DELETE", path: addresses + "/192.168.7.10"},
		{name: "net/ipaddress-delete-v6", method: "DELETE", path: addresses + "/2001:db8::7"},
		{name: "net/servicecidr-delete", method: "DELETE", path: cidrs + "/net-extra"},
		{name: "net/netpol-delete", method: "DELETE", path: netpols + "/db"},
		{name: "net/ingress-delete", method: "DELETE", path: ings + "/web"},
		{name: "net/ingress-get-deleted", method: "GET", path: ings + "/web"},
	}
}

// longName is a name of n characters.
func longName(n int) string { return strings.Repeat("a", n) }

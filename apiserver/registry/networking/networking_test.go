package networking_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's.

const (
	group        = "/apis/networking.k8s.io/v1"
	ingresses    = group + "/namespaces/default/ingresses"
	policies     = group + "/namespaces/default/networkpolicies"
	classes      = group + "/ingressclasses"
	serviceCIDRs = group + "/servicecidrs"
	ipAddresses  = group + "/ipaddresses"
)

func manifest(kind, name, meta, rest string) string {
	return `{"apiVersion":"networking.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"` + meta + `},` + rest + `}`
}

func inv(field, msg string) metav1.StatusCause {
	return rt.Cause(metav1.CauseTypeFieldValueInvalid, field, msg)
}

func TestIngressValidation_D19(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	tests := []struct {
		name, meta, spec string
		causes           []metav1.StatusCause
	}{
		{"no rules", "", `{}`, []metav1.StatusCause{inv("spec", "Invalid value: null: either `defaultBackend` or `rules` must be specified")}},
		{"paths", "", `{"rules":[{"host":"1.2.3.4","http":{"paths":[
			{"path":"/a","backend":{"service":{"name":"s","port":{"number":80}}}},
			{"path":"a//b/..","pathType":"Prefix","backend":{"service":{"name":"s","port":{"number":80,"name":"http"}}}},
			{"path":"/","pathType":"Sometimes","backend":{}}]}}]}`, []metav1.StatusCause{
			inv("spec.rules[0].host", `Invalid value: "1.2.3.4": must be a DNS name, not an IP address`),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.rules[0].http.paths[0].pathType", "Required value: pathType must be specified"),
			inv("spec.rules[0].http.paths[1].path", `Invalid value: "a//b/..": must be an absolute path`),
			inv("spec.rules[0].http.paths[1].path", `Invalid value: "a//b/..": must not contain '//'`),
			inv("spec.rules[0].http.paths[1].path", `Invalid value: "a//b/..": cannot end with '/..'`),
			inv("spec.rules[0].http.paths[1].backend", `Invalid value: "": cannot set both port name & port number`),
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.rules[0].http.paths[2].pathType",
				`Unsupported value: "Sometimes": supported values: "Exact", "ImplementationSpecific", "Prefix"`),
			inv("spec.rules[0].http.paths[2].backend", `Invalid value: "": resource or service backend is required`)}},
		{"class mismatch", `,"annotations":{"kubernetes.io/ingress.class":"a"}`, `{"ingressClassName":"b","defaultBackend":{"resource":{"kind":"K","name":"n"}}}`,
			[]metav1.StatusCause{inv("annotations.kubernetes.io/ingress.class", "Invalid value: \"a\": must match `ingressClassName` when both are specified")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, http.MethodPost, ingresses, manifest("Ingress", "bad", tt.meta, `"spec":`+tt.spec), nil)
			rt.WantInvalid(t, code, body, "Ingress.networking.k8s.io", "bad", tt.causes...)
		})
	}
}

func TestIngressStatusAndTable_D19(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	rt.Create(t, srv, [2]string{ingresses, manifest("Ingress", "web", "", `"spec":{"tls":[{"hosts":["a.example.com"]}],"rules":[`+
		`{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"name":"http"}}}}]}},`+
		`{},{"host":"b.example.com"},{"host":"c.example.com"},{"host":"d.example.com"}]},"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}`)})
	code, body := rt.Do(t, srv, http.MethodPatch, ingresses+"/web/status", `{"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.2"},{"hostname":"lb.example.com"},{"ip":"10.0.0.2"}]}}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("patch status: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "1"})
	rows := rt.Rows(t, srv, ingresses)
	if want := `["web","\u003cnone\u003e","a.example.com,b.example.com,c.example.com + 2 more...","10.0.0.2,lb.example.com","80, 443","0s"]`; len(rows) != 1 || rows[0] != want {
		t.Errorf("rows = %v, want [%s]", rows, want)
	}
	code, body = rt.Do(t, srv, http.MethodPatch, ingresses+"/web/status", `{"status":{"loadBalancer":{"ingress":[{"hostname":"10.0.0.3"}]}}}`, nil)
	rt.WantInvalid(t, code, body, "Ingress.networking.k8s.io", "web",
		inv("status.loadBalancer.ingress[0].hostname", `Invalid value: "10.0.0.3": must be a DNS name, not an IP address`))
}

func TestDefaultIngressClass_D19(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	rt.Create(t, srv, [2]string{classes, manifest("IngressClass", "nginx", `,"annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}`,
		`"spec":{"controller":"example.com/nginx","parameters":{"kind":"Params","name":"p"}}`)})
	code, body := rt.Do(t, srv, http.MethodGet, classes+"/nginx", "", nil)
	if code != http.StatusOK {
		t.Fatalf("get: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.parameters.scope": `"Cluster"`, "metadata.generation": "1"})
	if rows := rt.Rows(t, srv, classes); len(rows) != 1 || rows[0] != `["nginx (default)","example.com/nginx","Params/p","0s"]` {
		t.Errorf("rows = %v", rows)
	}
	code, body = rt.Do(t, srv, http.MethodPost, ingresses, manifest("Ingress", "plain", "",
		`"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.ingressClassName": `"nginx"`})
	code, body = rt.Do(t, srv, http.MethodPost, ingresses, manifest("Ingress", "annotated", `,"annotations":{"kubernetes.io/ingress.class":"other"}`,
		`"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.ingressClassName": ""})
	code, body = rt.Do(t, srv, http.MethodPatch, classes+"/nginx", `{"spec":{"controller":"example.com/other"}}`, nil)
	rt.WantInvalid(t, code, body, "IngressClass.networking.k8s.io", "nginx",
		inv("spec.controller", `Invalid value: "example.com/other": field is immutable`))
}

func TestNetworkPolicy_D19(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodPost, policies, manifest("NetworkPolicy", "np", "",
		`"spec":{"podSelector":{"matchLabels":{"app":"a"}},"egress":[{"ports":[{"port":53}],"to":[{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}}]}]}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.policyTypes": `["Ingress","Egress"]`, "spec.egress.[0].ports.[0].protocol": `"TCP"`})
	code, body = rt.Do(t, srv, http.MethodPost, policies, manifest("NetworkPolicy", "bad", "",
		`"spec":{"podSelector":{},"ingress":[{"ports":[{"protocol":"ICMP","port":"http","endPort":90}],"from":[{},{"podSelector":{},"ipBlock":{"cidr":"10.0.0.0/8","except":["11.0.0.0/16"]}}]}],"policyTypes":["Sideways"]}`), nil)
	rt.WantInvalid(t, code, body, "NetworkPolicy.networking.k8s.io", "bad",
		rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.ingress[0].ports[0].protocol", `Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`),
		inv("spec.ingress[0].ports[0].endPort", "Invalid value: 90: may not be specified when `port` is non-numeric"),
		rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.ingress[0].from[0]", "Required value: must specify a peer"),
		inv("spec.ingress[0].from[1].ipBlock.except[0]", "Invalid value: \"11.0.0.0/16\": must be a strict subset of `cidr`"),
		rt.Cause(metav1.CauseTypeForbidden, "spec.ingress[0].from[1]", "Forbidden: may not specify both ipBlock and another peer"),
		rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.policyTypes[0]", `Unsupported value: "Sideways": supported values: "Ingress", "Egress"`))
	if rows := rt.Rows(t, srv, policies); len(rows) != 1 || rows[0] != `["np","app=a","0s"]` {
		t.Errorf("rows = %v", rows)
	}
}

func TestServiceCIDRsAndIPAddresses_D19(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodGet, serviceCIDRs+"/kubernetes", "", nil)
	if code != http.StatusOK {
		t.Fatalf("get the default service CIDR: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.cidrs": `["10.96.0.0/12"]`, "status.conditions.[0].type": `"Ready"`,
		"status.conditions.[0].status": `"True"`, "status.conditions.[0].message": `"Kubernetes default Service CIDR is ready"`})
	code, body = rt.Do(t, srv, http.MethodPost, serviceCIDRs, manifest("ServiceCIDR", "bad", "", `"spec":{"cidrs":["10.0.0.0/24","10.1.0.0/24"]}`), nil)
	rt.WantInvalid(t, code, body, "ServiceCIDR.networking.k8s.io", "bad",
		inv("spec.cidrs", `Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64`))
	rt.Create(t, srv, [2]string{serviceCIDRs, manifest("ServiceCIDR", "extra", "", `"spec":{"cidrs":["10.0.0.0/24"]},"status":{"conditions":[{"type":"Ready","status":"True","reason":"x","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)})
	code, body = rt.Do(t, srv, http.MethodPatch, serviceCIDRs+"/extra", `{"spec":{"cidrs":["10.0.1.0/24"]}}`, nil)
	rt.WantInvalid(t, code, body, "ServiceCIDR.networking.k8s.io", "extra", inv("spec.cidrs[0]", `Invalid value: "10.0.1.0/24": field is immutable`))
	code, body = rt.Do(t, srv, http.MethodPatch, serviceCIDRs+"/extra", `{"spec":{"cidrs":["10.0.0.0/24","fd00::/108"]}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("add a second family: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"status": "{}"})

	code, body = rt.Do(t, srv, http.MethodPost, ipAddresses, manifest("IPAddress", "10.0.0.010", "", `"spec":{"parentRef":{"group":"Bad_Group","resource":"services"}}`), nil)
	rt.WantInvalid(t, code, body, "IPAddress.networking.k8s.io", "10.0.0.010",
		inv("metadata.name", `Invalid value: "10.0.0.010": must not have leading 0s`),
		inv("spec.parentRef.group", `Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`),
		rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.parentRef.name", "Required value"))
	rt.Create(t, srv, [2]string{ipAddresses, manifest("IPAddress", "10.0.0.10", "", `"spec":{"parentRef":{"resource":"gateways","group":"gateway.networking.k8s.io","namespace":"ns","name":"gw"}}`)})
	if rows := rt.Rows(t, srv, ipAddresses); len(rows) == 0 || rows[0] != `["10.0.0.10","gateways.gateway.networking.k8s.io/ns/gw","0s"]` {
		t.Errorf("rows = %v", rows)
	}
}

// A Service's cluster IP is held by an IPAddress named by it, which goes
// with the Service; the kubernetes Service's is there from the start.
func TestServiceClusterIPsAreIPAddresses_D19(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodGet, ipAddresses+"/10.96.0.1", "", nil)
	if code != http.StatusOK {
		t.Fatalf("get the kubernetes Service's address: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.parentRef": `{"name":"kubernetes","namespace":"default","resource":"services"}`})
	const services = "/api/v1/namespaces/default/services"
	rt.Create(t, srv, [2]string{services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"clusterIP":"10.96.0.50","ports":[{"port":80}]}}`})
	code, body = rt.Do(t, srv, http.MethodGet, ipAddresses+"/10.96.0.50", "", nil)
	if code != http.StatusOK {
		t.Fatalf("get the Service's address: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{
		"metadata.labels": `{"ipaddress.kubernetes.io/ip-family":"IPv4","ipaddress.kubernetes.io/managed-by":"ipallocator.k8s.io"}`,
		"spec.parentRef":  `{"name":"web","namespace":"default","resource":"services"}`})
	code, body = rt.Do(t, srv, http.MethodPost, services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"twin"},"spec":{"clusterIP":"10.96.0.50","ports":[{"port":80}]}}`, nil)
	if code != http.StatusUnprocessableEntity {
		t.Errorf("a Service asking for a held address: %d %s, want 422", code, body)
	}
	if code, body = rt.Do(t, srv, http.MethodDelete, services+"/web", "", nil); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body = rt.Do(t, srv, http.MethodGet, ipAddresses+"/10.96.0.50", "", nil); code != http.StatusNotFound {
		t.Errorf("the deleted Service's address: %d %s, want 404", code, body)
	}
}

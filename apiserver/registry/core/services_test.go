package core_test

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

const subdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`

const rfc1123LabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

const namePartMsg = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`

const portRangeMsg = "must be between 1 and 65535, inclusive"

func TestServiceCreateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	invalidV, required, forbidden, unsupported, duplicate := metav1.CauseTypeFieldValueInvalid, metav1.CauseTypeFieldValueRequired,
		metav1.CauseType(field.ErrorTypeForbidden), metav1.CauseTypeFieldValueNotSupported, metav1.CauseTypeFieldValueDuplicate
	tests := []struct {
		name   string
		spec   string
		causes []metav1.StatusCause
	}{
		{"no ports", `{}`, []metav1.StatusCause{rt.Cause(required, "spec.ports", "Required value")}},
		{"port 0, and the target port it defaults", `{"ports":[{"port":0}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.ports[0].port", "Invalid value: 0: "+portRangeMsg),
			rt.Cause(invalidV, "spec.ports[0].targetPort", "Invalid value: 0: "+portRangeMsg)}},
		{"port out of range, unknown protocol", `{"ports":[{"port":70000,"targetPort":70000,"protocol":"ICMP"}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.ports[0].port", "Invalid value: 70000: "+portRangeMsg),
			rt.Cause(unsupported, "spec.ports[0].protocol", `Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`),
			rt.Cause(invalidV, "spec.ports[0].targetPort", "Invalid value: 70000: "+portRangeMsg)}},
		{"several ports without names", `{"ports":[{"port":80},{"port":81}]}`, []metav1.StatusCause{
			rt.Cause(required, "spec.ports[0].name", "Required value"),
			rt.Cause(required, "spec.ports[1].name", "Required value")}},
		{"port names", `{"ports":[{"name":"a","port":80},{"name":"a","port":81},{"name":"Bad_N","port":82}]}`, []metav1.StatusCause{
			rt.Cause(duplicate, "spec.ports[1].name", `Duplicate value: "a"`),
			rt.Cause(invalidV, "spec.ports[2].name", `Invalid value: "Bad_N": `+rfc1123LabelMsg)}},
		{"target port name", `{"ports":[{"port":80,"targetPort":"Bad_Port_Name_Long"}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.ports[0].targetPort", `Invalid value: "Bad_Port_Name_Long": must be no more than 15 characters`),
			rt.Cause(invalidV, "spec.ports[0].targetPort", `Invalid value: "Bad_Port_Name_Long": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`)}},
		{"node port on a ClusterIP service", `{"ports":[{"port":80,"nodePort":30080}]}`, []metav1.StatusCause{
			rt.Cause(forbidden, "spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'")}},
		{"unknown type", `{"type":"Weird","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(unsupported, "spec.type", `Unsupported value: "Weird": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`)}},
		{"unknown session affinity", `{"sessionAffinity":"Sticky","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(unsupported, "spec.sessionAffinity", `Unsupported value: "Sticky": supported values: "ClientIP", "None"`)}},
		{"affinity timeout 0", `{"sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":0}},"ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.sessionAffinityConfig.clientIP.timeoutSeconds", "Invalid value: 0: must be greater than 0 and less than 86400")}},
		{"selector key", `{"selector":{"bad key!":"v"},"ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.selector", `Invalid value: "bad key!": `+namePartMsg)}},
		{"external name not a subdomain", `{"type":"ExternalName","externalName":"Bad_Name"}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.externalName", `Invalid value: "Bad_Name": `+subdomainMsg)}},
		{"no external name", `{"type":"ExternalName"}`, []metav1.StatusCause{
			rt.Cause(required, "spec.externalName", "Required value")}},
		{"external name with a cluster IP", `{"type":"ExternalName","externalName":"example.com.","clusterIP":"10.96.0.50"}`, []metav1.StatusCause{
			rt.Cause(forbidden, "spec.clusterIPs", "Forbidden: may not be set for ExternalName services")}},
		{"external traffic policy inside the cluster", `{"externalTrafficPolicy":"Local","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.externalTrafficPolicy", `Invalid value: "Local": may only be set for externally-accessible services`)}},
		{"unknown external traffic policy", `{"type":"NodePort","externalTrafficPolicy":"Sometimes","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(unsupported, "spec.externalTrafficPolicy", `Unsupported value: "Sometimes": supported values: "Cluster", "Local"`)}},
		{"unknown internal traffic policy", `{"internalTrafficPolicy":"Sometimes","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(unsupported, "spec.internalTrafficPolicy", `Unsupported value: "Sometimes": supported values: "Cluster", "Local"`)}},
		{"unknown IP family", `{"ipFamilies":["IPv5"],"ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(unsupported, "spec.ipFamilies[0]", `Unsupported value: "IPv5": supported values: "IPv4", "IPv6"`)}},
		{"unknown IP family policy", `{"ipFamilyPolicy":"Maybe","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(unsupported, "spec.ipFamilyPolicy", `Unsupported value: "Maybe": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"`)}},
		{"headless NodePort", `{"type":"NodePort","clusterIP":"None","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.clusterIPs[0]", `Invalid value: "None": may not be set to 'None' for NodePort services`)}},
		{"the same port twice", `{"ports":[{"name":"a","port":80},{"name":"b","port":80}]}`, []metav1.StatusCause{
			rt.Cause(duplicate, "spec.ports[1]", `Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`)}},
		{"allocateLoadBalancerNodePorts without a load balancer", `{"allocateLoadBalancerNodePorts":true,"ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(forbidden, "spec.allocateLoadBalancerNodePorts", "Forbidden: may only be used when `type` is 'LoadBalancer'")}},
		{"app protocol", `{"ports":[{"port":80,"appProtocol":"bad proto!"}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.ports[0].appProtocol", `Invalid value: "bad proto!": `+namePartMsg)}},
		{"external IPs", `{"externalIPs":["1.2.3","127.0.0.1","0.0.0.0","169.254.1.1","224.0.0.1"],"ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.externalIPs[0]", `Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`),
			rt.Cause(invalidV, "spec.externalIPs[1]", `Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`),
			rt.Cause(invalidV, "spec.externalIPs[2]", `Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)`),
			rt.Cause(invalidV, "spec.externalIPs[3]", `Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)`),
			rt.Cause(invalidV, "spec.externalIPs[4]", `Invalid value: "224.0.0.1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)`)}},
		{"health check node port without a load balancer", `{"healthCheckNodePort":30000,"ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.healthCheckNodePort", "Invalid value: 30000: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'")}},
		{"source ranges without a load balancer", `{"loadBalancerSourceRanges":["1.2.3.0/24"],"ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(forbidden, "spec.LoadBalancerSourceRanges", "Forbidden: may only be used when `type` is 'LoadBalancer'")}},
		{"load balancer class", `{"type":"LoadBalancer","loadBalancerClass":"bad class!","ports":[{"port":80}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.loadBalancerClass", `Invalid value: "bad class!": `+namePartMsg)}},
		{"one node port for two ports", `{"type":"NodePort","ports":[{"name":"a","port":80,"nodePort":30081},{"name":"b","port":81,"nodePort":30081}]}`, []metav1.StatusCause{
			rt.Cause(invalidV, "spec.ports[1].nodePort", "Invalid value: 30081: provided port is already allocated")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("s%d", i)
			code, body := rt.Do(t, srv, "POST", "/api/v1/namespaces/default/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"`+name+`"},"spec":`+tt.spec+`}`, nil)
			rt.WantInvalid(t, code, body, "Service", name, tt.causes...)
		})
	}
}

func TestServiceUpdateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const path = "/api/v1/namespaces/default/services"
	svc := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	for _, s := range []string{svc("u1", `{"ports":[{"port":80}]}`),
		svc("u2", `{"type":"LoadBalancer","loadBalancerClass":"ex.com/a","externalTrafficPolicy":"Local","ports":[{"port":80}]}`)} {
		if code, body := rt.Do(t, srv, "POST", path, s, nil); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	code, body := rt.Do(t, srv, "PUT", path+"/u1", svc("u1", `{"ports":[]}`), nil)
	rt.WantInvalid(t, code, body, "Service", "u1", rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.ports", "Required value"))

	code, body = rt.Do(t, srv, "PUT", path+"/u1", svc("u1", `{"ports":[{"port":80}],"clusterIP":"10.96.0.99","clusterIPs":["10.96.0.99"],"selector":{"x":"bad value!"}}`), nil)
	rt.WantInvalid(t, code, body, "Service", "u1",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.clusterIPs[0]", `Invalid value: ["10.96.0.99"]: may not change once set`),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.selector", `Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`))

	code, body = rt.Do(t, srv, "PUT", path+"/u2", svc("u2", `{"type":"LoadBalancer","loadBalancerClass":"ex.com/b","externalTrafficPolicy":"Local","healthCheckNodePort":32000,"ports":[{"port":80}]}`), nil)
	rt.WantInvalid(t, code, body, "Service", "u2",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.loadBalancerClass", `Invalid value: "ex.com/b": may not change once set`),
		rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "spec.healthCheckNodePort", "Forbidden: field is immutable"))
}

// A create refused after its node port was reserved gives the port back.
func TestServiceRefusedCreateReleasesNodePort(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const path = "/api/v1/namespaces/default/services"
	bad := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"},"spec":{"type":"NodePort","selector":{"x":"b c"},"ports":[{"port":80,"nodePort":30093}]}}`
	if code, body := rt.Do(t, srv, "POST", path, bad, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("got %d %s, want 422", code, body)
	}
	good := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30093}]}}`
	if code, body := rt.Do(t, srv, "POST", path, good, nil); code != http.StatusCreated {
		t.Errorf("got %d %s, want the node port free again", code, body)
	}
}

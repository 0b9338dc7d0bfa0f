package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The Gateway API release whose standard channel gatewayAPIOps install as
// published, and the hash of its module, which go.sum would record: the
// manifests are read from the module cache, so the hash pins what is read.
const (
	gatewayAPIModule  = "sigs.k8s.io/gateway-api"
	gatewayAPIVersion = "v1.6.3"
	gatewayAPISum     = "h1:lKpJa5bGlraC/QeACvCpsHLdmO6y0iKfzVl6gzaFEYc="
	gatewayAPIGroup   = "gateway.networking.k8s.io"
)

// gatewayAPICRDs are the standard channel's CustomResourceDefinitions by
// plural, in the order of their files.
var gatewayAPICRDs = []string{"backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes", "httproutes",
	"listenersets", "referencegrants", "tcproutes", "tlsroutes", "udproutes"}

// gatewayAPIManifests reads the standard channel's manifests once, by file
// name, from the module go mod download puts in the module cache.
var gatewayAPIManifests = sync.OnceValues(func() (map[string]string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", gatewayAPIModule+"@"+gatewayAPIVersion)
	// Outside any module, so that no go.mod or go.sum is read or written.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GO111MODULE=on")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var mod struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out.Bytes(), &mod); jerr != nil && err == nil {
		err = jerr
	}
	switch {
	case mod.Error != "":
		return nil, fmt.Errorf("go mod download: %s", mod.Error)
	case err != nil:
		return nil, fmt.Errorf("go mod download %s@%s: %v: %s", gatewayAPIModule, gatewayAPIVersion, err, strings.TrimSpace(errb.String()))
	case mod.Sum != gatewayAPISum:
		return nil, fmt.Errorf("%s@%s: module hash %s, want %s", gatewayAPIModule, gatewayAPIVersion, mod.Sum, gatewayAPISum)
	}
	dir := filepath.Join(mod.Dir, "config", "crd", "standard")
	files := map[string]string{}
	for _, name := range append(gatewayAPICRDs, "vap_safeupgrades") {
		b, err := os.ReadFile(filepath.Join(dir, gatewayAPIGroup+"_"+name+".yaml"))
		if err != nil {
			return nil, err
		}
		files[name] = string(b)
	}
	return files, nil
})

// requireGatewayAPI reports why gatewayAPIOps are left out of the list:
// the test fails when CI=true, where the module proxy is reachable.
func requireGatewayAPI(t *testing.T) {
	t.Helper()
	if _, err := gatewayAPIManifests(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Gateway API's CRDs are required in CI: %v", err)
		}
		t.Logf("the gwapi/ operations are left out: %v", err)
	}
}

// gatewayAPIOps install the Gateway API's standard channel as published
// (its CRDs and its ValidatingAdmissionPolicy), then create the
// GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes and ReferenceGrants its
// schemas default, and those their OpenAPI rules and CEL validations
// refuse, write a status, print each kind with kubectl and explain one
// (I.1, I.2, D.13). Everything they install is deleted at the end.
func gatewayAPIOps() []op {
	files, err := gatewayAPIManifests()
	if err != nil {
		return nil
	}
	const (
		crds     = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		vaps     = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
		vapbs    = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
		group    = "/apis/" + gatewayAPIGroup
		v1       = group + "/v1"
		v1NS     = v1 + "/namespaces/" + testNS
		classes  = v1 + "/gatewayclasses"
		gateways = v1NS + "/gateways"
		routes   = v1NS + "/httproutes"
		grpc     = v1NS + "/grpcroutes"
		grants   = v1NS + "/referencegrants"
		policy   = "safe-upgrades." + gatewayAPIGroup
	)
	object := func(kind, name, spec string) string {
		return `{"apiVersion":"` + gatewayAPIGroup + `/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	gateway := func(name, listeners string) string {
		return object("Gateway", name, `{"gatewayClassName":"conformance","listeners":[`+listeners+`]}`)
	}
	route := func(name, rules string) string {
		return object("HTTPRoute", name, `{"parentRefs":[{"name":"web"}],"rules":[`+rules+`]}`)
	}
	listeners := make([]string, 65)
	for i := range listeners {
		listeners[i] = fmt.Sprintf(`{"name":"l%d","protocol":"HTTP","port":%d}`, i, 8000+i)
	}
	rules := make([]string, 17)
	for i := range rules {
		rules[i] = fmt.Sprintf(`{"matches":[{"path":{"type":"Exact","value":"/r%d"}}]}`, i)
	}
	var ops []op
	for _, plural := range gatewayAPICRDs {
		ops = append(ops,
			op{name: "gwapi/create-" + plural + "-crd", method: "POST", path: crds, body: files[plural]},
			op{name: "gwapi/" + plural + "-established", method: "GET", path: crds + "/" + plural + "." + gatewayAPIGroup, until: approvedAndEstablished, project: conditionsByType})
	}
	vap, binding, _ := strings.Cut(files["vap_safeupgrades"], "\n---\n")
	ops = append(ops,
		op{name: "gwapi/create-safe-upgrades-policy", method: "POST", path: vaps, body: vap},
		op{name: "gwapi/create-safe-upgrades-binding", method: "POST", path: vapbs, body: binding},
		// The policy refuses an older bundle over the standard channel
		// once both servers have loaded it.
		op{name: "gwapi/safe-upgrades-deny-old-bundle", method: "PATCH", path: crds + "/gateways." + gatewayAPIGroup + q("dryRun", "All"), contentType: mergePatch,
			body: `{"metadata":{"annotations":{"gateway.networking.k8s.io/bundle-version":"v1.4.0"}}}`, until: statusIs(http.StatusUnprocessableEntity)},
		op{name: "gwapi/safe-upgrades-deny-experimental", method: "PATCH", path: crds + "/gateways." + gatewayAPIGroup + q("dryRun", "All"), contentType: mergePatch,
			body: `{"metadata":{"annotations":{"gateway.networking.k8s.io/channel":"experimental"}}}`},
		op{name: "gwapi/safe-upgrades-allow-standard", method: "PATCH", path: crds + "/gateways." + gatewayAPIGroup + q("dryRun", "All"), contentType: mergePatch,
			body: `{"metadata":{"labels":{"tier":"edge"}}}`, project: conditionsByType},

		op{name: "gwapi/discovery-version", method: "GET", path: v1, project: resourcesByName},
		op{name: "gwapi/gatewayclass-create", method: "POST", path: classes,
			body: object("GatewayClass", "conformance", `{"controllerName":"example.com/gateway-controller","description":"the conformance class"}`)},
		op{name: "gwapi/gatewayclass-get", method: "GET", path: classes + "/conformance"},
		op{name: "gwapi/gatewayclass-create-bad-controller", method: "POST", path: classes,
			body: object("GatewayClass", "bad", `{"controllerName":"no domain"}`)},
		op{name: "gwapi/gatewayclass-controller-immutable", method: "PATCH", path: classes + "/conformance", contentType: mergePatch,
			body: `{"spec":{"controllerName":"example.com/other-controller"}}`},
		op{name: "gwapi/gatewayclass-status", method: "PATCH", path: classes + "/conformance/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"accepted","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
		op{name: "gwapi/gatewayclass-status-bad-condition", method: "PATCH", path: classes + "/conformance/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Accepted","status":"Maybe","reason":"Accepted","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
		op{name: "gwapi/gatewayclass-get-v1beta1", method: "GET", path: group + "/v1beta1/gatewayclasses/conformance"},

		op{name: "gwapi/gateway-create", method: "POST", path: gateways, body: gateway("web",
			`{"name":"http","protocol":"HTTP","port":80},{"name":"https","protocol":"HTTPS","port":443,"hostname":"*.example.com","tls":{"certificateRefs":[{"name":"web-cert"}]}}`)},
		op{name: "gwapi/gateway-get", method: "GET", path: gateways + "/web"},
		op{name: "gwapi/gateway-create-tcp-hostname", method: "POST", path: gateways, body: gateway("bad",
			`{"name":"tcp","protocol":"TCP","port":9000,"hostname":"tcp.example.com"}`)},
		op{name: "gwapi/gateway-create-duplicate-listener", method: "POST", path: gateways, body: gateway("bad",
			`{"name":"http","protocol":"HTTP","port":80},{"name":"http","protocol":"HTTP","port":8080}`)},
		op{name: "gwapi/gateway-create-http-tls", method: "POST", path: gateways, body: gateway("bad",
			`{"name":"http","protocol":"HTTP","port":80,"tls":{"mode":"Terminate","certificateRefs":[{"name":"web-cert"}]}}`)},
		op{name: "gwapi/gateway-create-port-range", method: "POST", path: gateways, body: gateway("bad",
			`{"name":"http","protocol":"HTTP","port":70000}`)},
		op{name: "gwapi/gateway-create-too-many-listeners", method: "POST", path: gateways, body: gateway("bad", strings.Join(listeners, ","))},
		op{name: "gwapi/gateway-create-no-listeners", method: "POST", path: gateways, body: gateway("bad", "")},
		op{name: "gwapi/gateway-status", method: "PATCH", path: gateways + "/web/status", contentType: mergePatch,
			body: `{"status":{"addresses":[{"type":"IPAddress","value":"192.0.2.10"}],"conditions":[{"type":"Programmed","status":"True","reason":"Programmed","message":"","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},

		op{name: "gwapi/httproute-create", method: "POST", path: routes, body: object("HTTPRoute", "web",
			`{"parentRefs":[{"name":"web","sectionName":"http"}],"hostnames":["www.example.com"],"rules":[`+
				`{"matches":[{"path":{"type":"PathPrefix","value":"/app"},"headers":[{"name":"x-tier","value":"gold"}]}],"backendRefs":[{"name":"app","port":8080}]},`+
				`{"filters":[{"type":"RequestHeaderModifier","requestHeaderModifier":{"add":[{"name":"x-seen","value":"1"}]}}],"backendRefs":[{"name":"default","port":80}]}]}`)},
		op{name: "gwapi/httproute-get", method: "GET", path: routes + "/web"},
		op{name: "gwapi/httproute-get-v1beta1", method: "GET", path: group + "/v1beta1/namespaces/" + testNS + "/httproutes/web"},
		op{name: "gwapi/httproute-create-relative-path", method: "POST", path: routes, body: route("bad",
			`{"matches":[{"path":{"type":"PathPrefix","value":"app"}}]}`)},
		op{name: "gwapi/httproute-create-double-slash", method: "POST", path: routes, body: route("bad",
			`{"matches":[{"path":{"type":"Exact","value":"/a//b"}}]}`)},
		op{name: "gwapi/httproute-create-too-many-rules", method: "POST", path: routes, body: route("bad", strings.Join(rules, ","))},
		op{name: "gwapi/httproute-create-backend-port-range", method: "POST", path: routes, body: route("bad",
			`{"backendRefs":[{"name":"app","port":0}]}`)},
		op{name: "gwapi/httproute-create-backend-no-port", method: "POST", path: routes, body: route("bad",
			`{"backendRefs":[{"name":"app"}]}`)},
		op{name: "gwapi/httproute-create-filter-mismatch", method: "POST", path: routes, body: route("bad",
			`{"filters":[{"type":"RequestHeaderModifier","urlRewrite":{"hostname":"example.com"}}]}`)},
		op{name: "gwapi/httproute-create-redirect-and-backends", method: "POST", path: routes, body: route("bad",
			`{"filters":[{"type":"RequestRedirect","requestRedirect":{"statusCode":301}}],"backendRefs":[{"name":"app","port":80}]}`)},
		op{name: "gwapi/httproute-patch-bad-path", method: "PATCH", path: routes + "/web", contentType: jsonPatch,
			body: `[{"op":"replace","path":"/spec/rules/0/matches/0/path/value","value":"/a/../b"}]`},

		op{name: "gwapi/grpcroute-create", method: "POST", path: grpc, body: object("GRPCRoute", "greeter",
			`{"parentRefs":[{"name":"web","sectionName":"https"}],"rules":[{"matches":[{"method":{"service":"example.Greeter","method":"Hello"}}],"backendRefs":[{"name":"greeter","port":9090}]}]}`)},
		op{name: "gwapi/grpcroute-get", method: "GET", path: grpc + "/greeter"},
		op{name: "gwapi/grpcroute-create-empty-method", method: "POST", path: grpc, body: object("GRPCRoute", "bad",
			`{"rules":[{"matches":[{"method":{"type":"Exact"}}]}]}`)},
		op{name: "gwapi/grpcroute-create-bad-service", method: "POST", path: grpc, body: object("GRPCRoute", "bad",
			`{"rules":[{"matches":[{"method":{"service":"not a service"}}]}]}`)},

		op{name: "gwapi/referencegrant-create", method: "POST", path: grants, body: object("ReferenceGrant", "routes-to-services",
			`{"from":[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","namespace":"other"}],"to":[{"group":"","kind":"Service"}]}`)},
		op{name: "gwapi/referencegrant-get-v1beta1", method: "GET", path: group + "/v1beta1/namespaces/" + testNS + "/referencegrants/routes-to-services"},
		op{name: "gwapi/referencegrant-create-no-from", method: "POST", path: grants, body: object("ReferenceGrant", "bad",
			`{"to":[{"group":"","kind":"Service"}]}`)},
		op{name: "gwapi/referencegrant-create-bad-kind", method: "POST", path: grants, body: object("ReferenceGrant", "bad",
			`{"from":[{"group":"gateway.networking.k8s.io","kind":"http route","namespace":"other"}],"to":[{"group":"","kind":"Service"}]}`)},

		op{name: "gwapi/table-gateways", method: "GET", path: gateways, accept: tableAccept},
		op{name: "gwapi/kubectl-get-gatewayclasses", kubectl: []string{"get", "gatewayclasses"}},
		op{name: "gwapi/kubectl-get-gc-wide", kubectl: []string{"get", "gc", "-o", "wide"}},
		op{name: "gwapi/kubectl-get-gateways", kubectl: []string{"get", "gateways", "-n", testNS}},
		op{name: "gwapi/kubectl-get-httproutes", kubectl: []string{"get", "httproutes", "-n", testNS}},
		op{name: "gwapi/kubectl-get-grpcroutes", kubectl: []string{"get", "grpcroutes", "-n", testNS}},
		op{name: "gwapi/kubectl-get-referencegrants", kubectl: []string{"get", "referencegrants", "-n", testNS}},
		op{name: "gwapi/kubectl-get-category", kubectl: []string{"get", "gateway-api", "-n", testNS}},
		op{name: "gwapi/kubectl-explain-listeners", kubectl: []string{"explain", "gateways.spec.listeners"}},
		op{name: "gwapi/openapi-gateway", method: "GET", path: "/openapi/v3/apis/" + gatewayAPIGroup + "/v1", project: openAPISchema("io.k8s.networking.gateway.v1.Gateway")},

		op{name: "gwapi/delete-safe-upgrades-binding", method: "DELETE", path: vapbs + "/" + policy},
		op{name: "gwapi/delete-safe-upgrades-policy", method: "DELETE", path: vaps + "/" + policy},
	)
	for _, plural := range gatewayAPICRDs {
		ops = append(ops, op{name: "gwapi/delete-" + plural + "-crd", method: "DELETE", path: crds + "/" + plural + "." + gatewayAPIGroup, project: statusOnly})
	}
	// kube-apiserver drops the group from discovery a moment after the
	// last definition goes.
	return append(ops, op{name: "gwapi/group-gone", method: "GET", path: group, until: statusIs(http.StatusNotFound)})
}

// approvedAndEstablished is satisfied by a definition of the Gateway
// API's protected group once it is established and its approval
// annotation has been judged: the two conditions come from different
// controllers, in either order.
func approvedAndEstablished(a answer) bool {
	return established(a) && crdCondition("KubernetesAPIApprovalPolicyConformant", "True")(a)
}

// resourcesByName sorts the resources of a group version's discovery
// document by name: kube-apiserver lists custom resources in the order
// of its informer's cache, which is no order.
func resourcesByName(doc any) any {
	m, _ := doc.(map[string]any)
	resources, _ := m["resources"].([]any)
	sort.SliceStable(resources, func(i, j int) bool {
		return fmt.Sprint(resources[i].(map[string]any)["name"]) < fmt.Sprint(resources[j].(map[string]any)["name"])
	})
	return m
}

// conditionsByType keeps of a definition what no server chooses (its
// name, labels, annotations, generation, spec and status) with its
// conditions sorted by type and without their times: the approval and
// the naming controllers each add theirs first, as they come.
func conditionsByType(doc any) any {
	m, _ := doc.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok {
			delete(c, "lastTransitionTime")
		}
	}
	sort.SliceStable(conds, func(i, j int) bool {
		return fmt.Sprint(conds[i].(map[string]any)["type"]) < fmt.Sprint(conds[j].(map[string]any)["type"])
	})
	return map[string]any{"name": md["name"], "labels": md["labels"], "annotations": md["annotations"], "generation": md["generation"],
		"spec": m["spec"], "status": st}
}

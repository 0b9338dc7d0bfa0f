package conformance

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// dynamicAdmissionOps apply ValidatingAdmissionPolicies,
// MutatingAdmissionPolicies and admission webhooks, then send requests
// they allow, deny, warn about or mutate (D.13). The webhooks are
// dynadmHooks, run by the test over TLS for both servers. Each policy or
// configuration matches only objects named or labelled dynadm, and all are
// deleted at the end. The first request a new one must affect is retried
// until it does (op.until): both servers see it a moment after it is
// written.
func dynamicAdmissionOps() []op {
	const (
		group = "/apis/admissionregistration.k8s.io/v1"
		vaps  = group + "/validatingadmissionpolicies"
		vapbs = group + "/validatingadmissionpolicybindings"
		maps  = group + "/mutatingadmissionpolicies"
		mapbs = group + "/mutatingadmissionpolicybindings"
		vwcs  = group + "/validatingwebhookconfigurations"
		mwcs  = group + "/mutatingwebhookconfigurations"
		deps  = "/apis/apps/v1/namespaces/" + testNS + "/deployments"
		cms   = ns + "/configmaps"
		dry   = "?dryRun=All"
	)
	hooks := dynadmHooks()
	object := func(kind, name, rest string) string {
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},` + rest + `}`
	}
	spec := func(kind, name, spec string) string { return object(kind, name, `"spec":{`+spec+`}`) }
	deployment := func(name string, replicas int) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `"},"spec":{"replicas":` + strconv.Itoa(replicas) +
			`,"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},` +
			`"spec":{"containers":[{"name":"app","image":"registry.example/app:1"}]}}}}`
	}
	cm := func(name, labels, data string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{` + labels + `}},"data":{` + data + `}}`
	}
	rules := func(group, resource string, ops ...string) string {
		return `[{"apiGroups":["` + group + `"],"apiVersions":["v1"],"operations":["` + strings.Join(ops, `","`) + `"],"resources":["` + resource + `"]}]`
	}
	webhook := func(name, client, extra string) string {
		return `{"name":"` + name + `.dynadm.example.com","clientConfig":` + client + `,"rules":` + rules("", "configmaps", "CREATE", "UPDATE", "DELETE") +
			`,"sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":5` + extra + `}`
	}
	status := func(code int) func(answer) bool { return func(a answer) bool { return a.status == code } }
	warned := func(a answer) bool { return len(a.warnings) > 0 }
	labelled := func(key string) func(answer) bool {
		return func(a answer) bool {
			m, _ := a.body.(map[string]any)
			md, _ := m["metadata"].(map[string]any)
			l, _ := md["labels"].(map[string]any)
			_, ok := l[key]
			return ok
		}
	}
	const inTestNS = `"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + testNS + `"}}`
	return []op{
		// A ValidatingAdmissionPolicy: at most 5 replicas.
		{name: "dynadm/vap-create", method: "POST", path: vaps, body: spec("ValidatingAdmissionPolicy", "dynadm-replicas",
			`"failurePolicy":"Fail","matchConstraints":{"resourceRules":`+rules("apps", "deployments", "CREATE", "UPDATE")+`},`+
				`"validations":[{"expression":"object.spec.replicas <= 5","message":"at most 5 replicas"}]`)},
		{name: "dynadm/vap-binding-create", method: "POST", path: vapbs, body: spec("ValidatingAdmissionPolicyBinding", "dynadm-replicas",
			`"policyName":"dynadm-replicas","validationActions":["Deny"],"matchResources":{`+inTestNS+`}`)},
		{name: "dynadm/vap-deny-dry-run", method: "POST", path: deps + dry, body: deployment("dynadm-six", 6), until: status(422)},
		{name: "dynadm/vap-deny", method: "POST", path: deps, body: deployment("dynadm-six", 6)},
		{name: "dynadm/vap-allow", method: "POST", path: deps, body: deployment("dynadm-five", 5)},
		{name: "dynadm/vap-update-deny", method: "PATCH", path: deps + "/dynadm-five", contentType: mergePatch, body: `{"spec":{"replicas":7}}`},
		{name: "dynadm/vap-update-allow", method: "PATCH", path: deps + "/dynadm-five", contentType: mergePatch, body: `{"spec":{"replicas":4}}`},
		{name: "dynadm/kubectl-vap-deny", kubectl: []string{"create", "deployment", "dynadm-kc", "--image=registry.example/app:1", "--replicas=6", "-n", testNS}},
		{name: "dynadm/vap-other-namespace", method: "POST", path: "/apis/apps/v1/namespaces/" + limitedNS + "/deployments" + dry, body: deployment("dynadm-six", 6)},

		// namespaceSelector: a webhook for the limited namespace only, before
		// a policy whose params are not there refuses every config map of it.
		{name: "dynadm/ns-create", method: "POST", path: vwcs, body: object("ValidatingWebhookConfiguration", "dynadm-ns", `"webhooks":[`+
			webhook("ns", hooks.client("/deny"), `,"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"`+limitedNS+`"}},`+
				`"objectSelector":{"matchLabels":{"dynadm-ns":"yes"}}`)+`]`)},
		{name: "dynadm/ns-deny", method: "POST", path: "/api/v1/namespaces/" + limitedNS + "/configmaps" + dry, body: cm("dynadm-ns", `"dynadm-ns":"yes"`, ""),
			until: status(403)},
		{name: "dynadm/ns-other-allowed", method: "POST", path: cms, body: cm("dynadm-ns", `"dynadm-ns":"yes"`, "")},

		// Warn and Audit: allowed, with a warning.
		{name: "dynadm/warn-policy-create", method: "POST", path: vaps, body: spec("ValidatingAdmissionPolicy", "dynadm-legacy",
			`"matchConstraints":{"resourceRules":`+rules("", "configmaps", "CREATE", "UPDATE")+`},`+
				`"validations":[{"expression":"!has(object.data) || !('legacy' in object.data)","messageExpression":"'key legacy is deprecated in ' + object.metadata.name"}]`)},
		{name: "dynadm/warn-binding-create", method: "POST", path: vapbs, body: spec("ValidatingAdmissionPolicyBinding", "dynadm-legacy",
			`"policyName":"dynadm-legacy","validationActions":["Warn","Audit"]`)},
		{name: "dynadm/warn-dry-run", method: "POST", path: cms + dry, body: cm("dynadm-legacy", "", `"legacy":"1"`), until: warned},
		{name: "dynadm/warn-create", method: "POST", path: cms, body: cm("dynadm-legacy", "", `"legacy":"1"`)},

		// Params and match conditions: at most params.data.max keys in a
		// config map labelled dynadm-limited.
		{name: "dynadm/params-create", method: "POST", path: cms, body: cm("dynadm-limits", "", `"max":"2"`)},
		{name: "dynadm/params-policy-create", method: "POST", path: vaps, body: spec("ValidatingAdmissionPolicy", "dynadm-max-keys",
			`"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"matchConstraints":{"resourceRules":`+rules("", "configmaps", "CREATE", "UPDATE")+`},`+
				`"matchConditions":[{"name":"limited","expression":"has(object.metadata.labels) && 'dynadm-limited' in object.metadata.labels"}],`+
				`"validations":[{"expression":"size(object.data) <= int(params.data.max)","reason":"Forbidden",`+
				`"messageExpression":"'too many keys: ' + string(size(object.data)) + ' > ' + params.data.max"}]`)},
		{name: "dynadm/params-binding-create", method: "POST", path: vapbs, body: spec("ValidatingAdmissionPolicyBinding", "dynadm-max-keys",
			`"policyName":"dynadm-max-keys","validationActions":["Deny"],"paramRef":{"name":"dynadm-limits","parameterNotFoundAction":"Deny"}`)},
		{name: "dynadm/params-deny-dry-run", method: "POST", path: cms + dry, body: cm("dynadm-three", `"dynadm-limited":""`, `"a":"1","b":"2","c":"3"`),
			until: status(403)},
		{name: "dynadm/params-allow", method: "POST", path: cms, body: cm("dynadm-two", `"dynadm-limited":""`, `"a":"1","b":"2"`)},
		{name: "dynadm/params-match-condition-false", method: "POST", path: cms, body: cm("dynadm-three", "", `"a":"1","b":"2","c":"3"`)},
		{name: "dynadm/params-not-found", method: "POST", path: "/api/v1/namespaces/" + limitedNS + "/configmaps" + dry,
			body: cm("dynadm-two", `"dynadm-limited":""`, `"a":"1"`)},
		{name: "dynadm/params-update", method: "PATCH", path: cms + "/dynadm-limits", contentType: mergePatch, body: `{"data":{"max":"3"}}`},
		{name: "dynadm/params-updated-allow", method: "POST", path: cms + dry, body: cm("dynadm-three-limited", `"dynadm-limited":""`, `"a":"1","b":"2","c":"3"`),
			until: status(201)},

		// A MutatingAdmissionPolicy stamps config maps labelled dynadm-map.
		{name: "dynadm/map-create", method: "POST", path: maps, body: spec("MutatingAdmissionPolicy", "dynadm-stamp",
			`"failurePolicy":"Fail","reinvocationPolicy":"Never","matchConstraints":{"resourceRules":`+rules("", "configmaps", "CREATE")+`},`+
				`"matchConditions":[{"name":"wants","expression":"has(object.metadata.labels) && 'dynadm-map' in object.metadata.labels"}],`+
				`"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":`+
				`"Object{metadata: Object.metadata{labels: {'dynadm-stamped': 'yes'}}, data: {'by': request.userInfo.username}}"}},`+
				`{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 'add', path: '/data/operation', value: request.operation}]"}}]`)},
		{name: "dynadm/map-binding-create", method: "POST", path: mapbs, body: spec("MutatingAdmissionPolicyBinding", "dynadm-stamp",
			`"policyName":"dynadm-stamp"`)},
		{name: "dynadm/map-dry-run", method: "POST", path: cms + dry, body: cm("dynadm-stamped", `"dynadm-map":""`, `"k":"v"`), until: labelled("dynadm-stamped")},
		{name: "dynadm/map-mutate", method: "POST", path: cms, body: cm("dynadm-stamped", `"dynadm-map":""`, `"k":"v"`)},
		{name: "dynadm/map-update-not-matched", method: "PATCH", path: cms + "/dynadm-stamped", contentType: mergePatch, body: `{"data":{"k":"w"}}`},

		// A validating webhook refuses config maps named dynadm-deny-*,
		// echoing what it was sent; one exists before it.
		{name: "dynadm/vwc-existing-create", method: "POST", path: cms, body: cm("dynadm-deny-old", "", `"k":"v"`)},
		{name: "dynadm/vwc-create", method: "POST", path: vwcs, body: object("ValidatingWebhookConfiguration", "dynadm-deny",
			`"webhooks":[`+webhook("deny", hooks.client("/deny"), `,"matchConditions":[{"name":"named","expression":"request.name.startsWith('dynadm-deny')"}]`)+`]`)},
		{name: "dynadm/vwc-deny-dry-run", method: "POST", path: cms + dry, body: cm("dynadm-deny-new", "", ""), until: status(403)},
		{name: "dynadm/vwc-deny-create", method: "POST", path: cms, body: cm("dynadm-deny-new", "", "")},
		{name: "dynadm/vwc-deny-update", method: "PATCH", path: cms + "/dynadm-deny-old", contentType: mergePatch, body: `{"data":{"k":"w"}}`},
		{name: "dynadm/vwc-deny-delete", method: "DELETE", path: cms + "/dynadm-deny-old"},
		{name: "dynadm/vwc-allow", method: "POST", path: cms, body: cm("dynadm-allowed", "", "")},

		// A mutating webhook labels config maps labelled dynadm-hook and
		// warns; the validating one still sees what it made.
		{name: "dynadm/mwc-create", method: "POST", path: mwcs, body: object("MutatingWebhookConfiguration", "dynadm-label",
			`"webhooks":[`+webhook("label", hooks.client("/label"), `,"reinvocationPolicy":"Never","objectSelector":{"matchLabels":{"dynadm-hook":"label"}}`)+`]`)},
		{name: "dynadm/mwc-dry-run", method: "POST", path: cms + dry, body: cm("dynadm-hooked", `"dynadm-hook":"label"`, ""), until: labelled("dynadm-hooked")},
		{name: "dynadm/mwc-mutate", method: "POST", path: cms, body: cm("dynadm-hooked", `"dynadm-hook":"label"`, "")},
		{name: "dynadm/mwc-then-deny", method: "POST", path: cms, body: cm("dynadm-deny-hooked", `"dynadm-hook":"label"`, "")},
		{name: "dynadm/mwc-not-selected", method: "POST", path: cms, body: cm("dynadm-unhooked", `"dynadm-hook":"other"`, "")},

		// Webhooks nobody answers: failurePolicy Fail refuses, Ignore lets
		// through; one that answers too late is a failure too.
		{name: "dynadm/down-create", method: "POST", path: vwcs, body: object("ValidatingWebhookConfiguration", "dynadm-down", `"webhooks":[`+
			webhook("fail", hooks.down, `,"failurePolicy":"Fail","objectSelector":{"matchLabels":{"dynadm-down":"fail"}}`)+`,`+
			webhook("ignore", hooks.down, `,"failurePolicy":"Ignore","objectSelector":{"matchLabels":{"dynadm-down":"ignore"}}`)+`,`+
			webhook("slow", hooks.client("/slow"), `,"failurePolicy":"Fail","timeoutSeconds":1,"objectSelector":{"matchLabels":{"dynadm-down":"slow"}}`)+`]`)},
		{name: "dynadm/down-fail", method: "POST", path: cms + dry, body: cm("dynadm-down", `"dynadm-down":"fail"`, ""), until: status(500)},
		{name: "dynadm/down-ignore", method: "POST", path: cms, body: cm("dynadm-ignored", `"dynadm-down":"ignore"`, "")},
		{name: "dynadm/down-timeout", method: "POST", path: cms + dry, body: cm("dynadm-slow", `"dynadm-down":"slow"`, ""), until: status(500)},

		// Everything goes.
		{name: "dynadm/delete-vap-binding", method: "DELETE", path: vapbs + "/dynadm-replicas"},
		{name: "dynadm/delete-vap", method: "DELETE", path: vaps + "/dynadm-replicas"},
		{name: "dynadm/delete-warn-binding", method: "DELETE", path: vapbs + "/dynadm-legacy"},
		{name: "dynadm/delete-warn", method: "DELETE", path: vaps + "/dynadm-legacy"},
		{name: "dynadm/delete-params-binding", method: "DELETE", path: vapbs + "/dynadm-max-keys"},
		{name: "dynadm/delete-params", method: "DELETE", path: vaps + "/dynadm-max-keys"},
		{name: "dynadm/delete-map-binding", method: "DELETE", path: mapbs + "/dynadm-stamp"},
		{name: "dynadm/delete-map", method: "DELETE", path: maps + "/dynadm-stamp"},
		{name: "dynadm/delete-vwc", method: "DELETE", path: vwcs + "/dynadm-deny"},
		{name: "dynadm/delete-mwc", method: "DELETE", path: mwcs + "/dynadm-label"},
		{name: "dynadm/delete-down", method: "DELETE", path: vwcs + "/dynadm-down"},
		{name: "dynadm/delete-ns", method: "DELETE", path: vwcs + "/dynadm-ns"},
		{name: "dynadm/after-delete-allowed", method: "POST", path: deps + dry, body: deployment("dynadm-six", 6), until: status(201)},
	}
}

// testWebhooks is a webhook both servers call: a TLS server on 127.0.0.1
// run by the test, and an address nothing listens at.
type testWebhooks struct {
	srv  *httptest.Server
	down string // clientConfig JSON of a webhook nobody answers
}

// startTestWebhooks serves h over TLS for the life of the test binary.
func startTestWebhooks(h http.HandlerFunc) *testWebhooks {
	w := &testWebhooks{srv: httptest.NewTLSServer(h)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("reserve an address for the webhook that is down: %v", err))
	}
	addr := l.Addr().String()
	l.Close()
	w.down = `{"url":"https://` + addr + `/down","caBundle":"` + w.caBundle() + `"}`
	return w
}

// dynadmHooks is the admission webhook, started once (the op list is
// built more than once).
var dynadmHooks = sync.OnceValue(func() *testWebhooks { return startTestWebhooks(serveDynadmReview) })

func (h *testWebhooks) caBundle() string {
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw}))
}

// client is the clientConfig JSON of the webhook at path.
func (h *testWebhooks) client(path string) string {
	return `{"url":"` + h.srv.URL + path + `","caBundle":"` + h.caBundle() + `"}`
}

// serveDynadmReview answers one AdmissionReview: /deny refuses, saying
// what the server sent; /label adds a label and warns; /slow answers only
// once the caller has given up; anything else allows.
func serveDynadmReview(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	switch r.URL.Path {
	case "/deny":
		var options struct{ Kind string }
		_ = json.Unmarshal(req.Options.Raw, &options)
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: fmt.Sprintf(
			"%s %s %s/%s (kind %s, request kind %s, resource %s, subresource %q) by %s in %v, dryRun %t, options %s, object %t, old object %t",
			req.Operation, req.Resource.Resource, req.Namespace, req.Name, req.Kind.Kind, req.RequestKind.Kind, req.Resource.Group+"/"+req.Resource.Version,
			req.SubResource, req.UserInfo.Username, req.UserInfo.Groups, req.DryRun != nil && *req.DryRun, options.Kind,
			req.Object.Raw != nil, req.OldObject.Raw != nil)}
	case "/label":
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
		resp.Patch = []byte(`[{"op":"add","path":"/metadata/labels/dynadm-hooked","value":"yes"}]`)
		resp.Warnings = []string{"labelled " + req.Name}
	case "/slow":
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
}

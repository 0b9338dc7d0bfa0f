package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// conversionOps define Gadgets in two versions converted by a webhook
// (v1's spec.size is v2's spec.length), write them in one version and
// read them in the other, and define Brokens, whose webhook refuses every
// conversion, and Strays, whose webhook nobody answers (I.2). They also
// compare the Gadgets' definitions in /openapi/v2, read once before the
// definition is made (B.7). The webhooks are convHooks, run by the test
// over TLS for both servers. A policy on v1 sees a Gadget written in v2
// converted by the webhook (D.13).
func conversionOps() []op {
	const (
		crds    = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		group   = "/apis/conv.example.com"
		gadgets = "/namespaces/" + testNS + "/gadgets"
		v1      = group + "/v1" + gadgets
		v2      = group + "/v2" + gadgets
		brokens = "/namespaces/" + testNS + "/brokens"
		strays  = "/namespaces/" + testNS + "/strays"
		vaps    = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
		vapbs   = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	)
	hooks := convHooks()
	gadget := func(version, name, field string, value int) string {
		return fmt.Sprintf(`{"apiVersion":"conv.example.com/%s","kind":"Gadget","metadata":{"name":"%s","labels":{"conv":"yes"}},"spec":{"%s":%d}}`,
			version, name, field, value)
	}
	obj := func(kind, version, name, field string) string {
		return `{"apiVersion":"conv.example.com/` + version + `","kind":"` + kind + `","metadata":{"name":"` + name + `"},"spec":{"` + field + `":1}}`
	}
	return []op{
		// /openapi/v2 is built before the definition exists.
		{name: "conv/openapi-v2-before", method: "GET", path: "/openapi/v2", headOnly: true},
		{name: "conv/create-gadgets-crd", method: "POST", path: crds, body: convCRD("gadgets", "Gadget", hooks.client("/convert")), project: statusOnly},
		{name: "conv/gadgets-established", method: "GET", path: crds + "/gadgets.conv.example.com", until: established, project: establishedOnly},
		{name: "conv/v2-served", method: "GET", path: v2, until: statusIs(http.StatusOK)},

		{name: "conv/create-v1", method: "POST", path: v1, body: gadget("v1", "g1", "size", 3)},
		{name: "conv/get-v2", method: "GET", path: v2 + "/g1"},
		{name: "conv/create-v2", method: "POST", path: v2, body: gadget("v2", "g2", "length", 5)},
		{name: "conv/get-v1", method: "GET", path: v1 + "/g2"},
		{name: "conv/create-v2-dry-run", method: "POST", path: v2 + "?dryRun=All", body: gadget("v2", "g9", "length", 9)},
		{name: "conv/list-v2", method: "GET", path: v2},
		{name: "conv/list-v1", method: "GET", path: v1 + "?labelSelector=conv%3Dyes"},
		{name: "conv/patch-v2", method: "PATCH", path: v2 + "/g1", contentType: mergePatch, body: `{"spec":{"length":7}}`},
		{name: "conv/get-v1-after-patch", method: "GET", path: v1 + "/g1"},
		{name: "conv/json-patch-v1", method: "PATCH", path: v1 + "/g2", contentType: jsonPatch, body: `[{"op":"replace","path":"/spec/size","value":6}]`},
		{name: "conv/get-v2-after-json-patch", method: "GET", path: v2 + "/g2"},
		{name: "conv/apply-v2", method: "PATCH", path: v2 + "/g3?fieldManager=tester", contentType: applyPatch,
			body: "apiVersion: conv.example.com/v2\nkind: Gadget\nmetadata:\n  name: g3\nspec:\n  length: 8\n"},
		{name: "conv/apply-v1-conflict", method: "PATCH", path: v1 + "/g3?fieldManager=other", contentType: applyPatch,
			body: "apiVersion: conv.example.com/v1\nkind: Gadget\nmetadata:\n  name: g3\nspec:\n  size: 9\n"},
		{name: "conv/get-v1-applied", method: "GET", path: v1 + "/g3"},
		{name: "conv/list-v2-again", method: "GET", path: v2},
		{name: "conv/watch-v2-from-rv", method: "GET", path: v2 + "?watch=1&timeoutSeconds=1&resourceVersion={rv}"},
		{name: "conv/openapi-v2-definition", method: "GET", path: "/openapi/v2", project: openAPIV2Definition("com.example.conv.v2.Gadget"),
			until: func(a answer) bool { return openAPIV2Definition("com.example.conv.v2.Gadget")(a.body) != nil }},
		{name: "conv/openapi-v2-definition-v1", method: "GET", path: "/openapi/v2", project: openAPIV2Definition("com.example.conv.v1.Gadget")},
		// A policy on v1 sees a write through v2 converted by the
		// webhook: v2's length is v1's size.
		{name: "conv/vap-create", method: "POST", path: vaps, body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",` +
			`"metadata":{"name":"conv-size"},"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"operations":["CREATE"],` +
			`"apiGroups":["conv.example.com"],"apiVersions":["v1"],"resources":["gadgets"]}]},` +
			`"validations":[{"expression":"object.spec.size <= 10","messageExpression":"'size ' + string(object.spec.size) + ' in ' + object.apiVersion"}]}}`},
		{name: "conv/vap-binding-create", method: "POST", path: vapbs, body: `{"apiVersion":"admissionregistration.k8s.io/v1",` +
			`"kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"conv-size"},"spec":{"policyName":"conv-size","validationActions":["Deny"]}}`},
		{name: "conv/vap-v2-deny-dry-run", method: "POST", path: v2 + "?dryRun=All", body: gadget("v2", "g20", "length", 20),
			until: func(a answer) bool { return a.status == http.StatusUnprocessableEntity }},
		{name: "conv/vap-v2-allow", method: "POST", path: v2, body: gadget("v2", "g4", "length", 4)},
		{name: "conv/vap-binding-delete", method: "DELETE", path: vapbs + "/conv-size", project: statusOnly},
		{name: "conv/vap-delete", method: "DELETE", path: vaps + "/conv-size", project: statusOnly},
		{name: "conv/delete-v2", method: "DELETE", path: v2 + "/g2"},
		{name: "conv/get-v1-deleted", method: "GET", path: v1 + "/g2"},

		// A webhook that refuses: the objects stored in v1 are read in v1
		// alone, and nothing is written in v2.
		{name: "conv/create-brokens-crd", method: "POST", path: crds, body: convCRD("brokens", "Broken", hooks.client("/fail")), project: statusOnly},
		{name: "conv/brokens-established", method: "GET", path: crds + "/brokens.conv.example.com", until: established, project: establishedOnly},
		{name: "conv/brokens-served", method: "GET", path: group + "/v1" + brokens, until: statusIs(http.StatusOK)},
		{name: "conv/failing-create-v1", method: "POST", path: group + "/v1" + brokens, body: obj("Broken", "v1", "b1", "size")},
		{name: "conv/failing-get-v1", method: "GET", path: group + "/v1" + brokens + "/b1"},
		{name: "conv/failing-get-v2", method: "GET", path: group + "/v2" + brokens + "/b1", project: storeRevisionsHidden},
		{name: "conv/failing-create-v2", method: "POST", path: group + "/v2" + brokens, body: obj("Broken", "v2", "b2", "length")},

		// A webhook nobody answers.
		{name: "conv/create-strays-crd", method: "POST", path: crds, body: convCRD("strays", "Stray", hooks.down), project: statusOnly},
		{name: "conv/strays-established", method: "GET", path: crds + "/strays.conv.example.com", until: established, project: establishedOnly},
		{name: "conv/strays-served", method: "GET", path: group + "/v1" + strays, until: statusIs(http.StatusOK)},
		{name: "conv/down-create-v1", method: "POST", path: group + "/v1" + strays, body: obj("Stray", "v1", "s1", "size")},
		{name: "conv/down-get-v2", method: "GET", path: group + "/v2" + strays + "/s1", project: storeRevisionsHidden},

		// A definition named as a built-in kind's: group core.api.k8s.io,
		// kind Pod.
		{name: "conv/create-shadow-pods-crd", method: "POST", path: crds, body: shadowPodsCRD, project: statusOnly},
		{name: "conv/shadow-pods-established", method: "GET", path: crds + "/pods.core.api.k8s.io", until: established, project: establishedOnly},
		{name: "conv/openapi-v2-shadow-pods", method: "GET", path: "/openapi/v2", project: shadowPodsDefinitions,
			until: func(a answer) bool { return shadowPodsDefinitions(a.body).(map[string]any)["ref"] != nil }},
		{name: "conv/delete-shadow-pods-crd", method: "DELETE", path: crds + "/pods.core.api.k8s.io", project: statusOnly},
		{name: "conv/delete-gadgets-crd", method: "DELETE", path: crds + "/gadgets.conv.example.com", project: statusOnly},
		{name: "conv/delete-brokens-crd", method: "DELETE", path: crds + "/brokens.conv.example.com", project: statusOnly},
		{name: "conv/delete-strays-crd", method: "DELETE", path: crds + "/strays.conv.example.com", project: statusOnly},
		{name: "conv/gadgets-crd-gone", method: "GET", path: crds + "/gadgets.conv.example.com", until: statusIs(http.StatusNotFound), project: statusOnly},
	}
}

// convCRD is a namespaced definition of conv.example.com in v1 (stored,
// spec.size) and v2 (spec.length), converted by the webhook of client.
func convCRD(plural, kind, client string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.conv.example.com"},` +
		`"spec":{"group":"conv.example.com","scope":"Namespaced","names":{"plural":"` + plural + `","singular":"` + strings.ToLower(kind) + `","kind":"` + kind + `"},` +
		`"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1","v1beta1"],"clientConfig":` + client + `}},` +
		`"versions":[` +
		`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","description":"the size"}}}}}}},` +
		`{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","description":"a gadget","properties":{"spec":{"type":"object","properties":{"length":{"type":"integer","minimum":0}}}}}}}]}}`
}

// shadowPodsCRD defines Pods in group core.api.k8s.io, whose OpenAPI v2
// definition name is the built-in Pod's.
const shadowPodsCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"pods.core.api.k8s.io",` +
	`"annotations":{"api-approved.kubernetes.io":"unapproved, a test"}},"spec":{"group":"core.api.k8s.io","scope":"Namespaced",` +
	`"names":{"plural":"pods","singular":"pod","kind":"Pod"},"versions":[{"name":"v1","served":true,"storage":true,` +
	`"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"shadow":{"type":"string"}}}}}}}]}}`

// shadowPodsDefinitions is what /openapi/v2 says of the shadow Pods: the
// definition their GET answers with and its properties, and the built-in
// Pod's properties.
func shadowPodsDefinitions(v any) any {
	m, _ := v.(map[string]any)
	defs, _ := m["definitions"].(map[string]any)
	paths, _ := m["paths"].(map[string]any)
	item, _ := paths["/apis/core.api.k8s.io/v1/namespaces/{namespace}/pods/{name}"].(map[string]any)
	get, _ := item["get"].(map[string]any)
	responses, _ := get["responses"].(map[string]any)
	ok, _ := responses["200"].(map[string]any)
	schema, _ := ok["schema"].(map[string]any)
	out := map[string]any{"ref": schema["$ref"]}
	if ref, _ := schema["$ref"].(string); ref != "" {
		def, _ := defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
		out["properties"] = def["properties"]
	}
	pod, _ := defs["io.k8s.api.core.v1.Pod"].(map[string]any)
	props, _ := pod["properties"].(map[string]any)
	out["built-in spec"] = props["spec"]
	return out
}

// storeRevision is the store revision kube's error of an object it
// cannot decode names, which is each store's own.
var storeRevision = regexp.MustCompile(`revision=[0-9]+`)

// storeRevisionsHidden is an answer whose strings name no store revision.
func storeRevisionsHidden(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = storeRevisionsHidden(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = storeRevisionsHidden(e)
		}
		return out
	case string:
		return storeRevision.ReplaceAllString(v, "revision=REV")
	}
	return v
}

// openAPIV2Definition is the definition name of an OpenAPI v2 document.
func openAPIV2Definition(name string) func(any) any {
	return func(v any) any {
		m, _ := v.(map[string]any)
		defs, _ := m["definitions"].(map[string]any)
		return defs[name]
	}
}

// convHooks is the conversion webhook, started once (the op list is built
// more than once).
var convHooks = sync.OnceValue(func() *testWebhooks { return startTestWebhooks(serveConversionReview) })

// serveConversionReview answers one ConversionReview: /convert renames
// spec.size (v1) and spec.length (v2); /fail refuses.
func serveConversionReview(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	if r.URL.Path == "/fail" {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "cannot convert to " + req.DesiredAPIVersion}
	} else {
		for _, raw := range req.Objects {
			var o map[string]any
			if err := json.Unmarshal(raw.Raw, &o); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			from, to := "size", "length"
			if req.DesiredAPIVersion == "conv.example.com/v1" {
				from, to = to, from
			}
			if spec, ok := o["spec"].(map[string]any); ok {
				if v, ok := spec[from]; ok {
					spec[to] = v
					delete(spec, from)
				}
			}
			o["apiVersion"] = req.DesiredAPIVersion
			data, _ := json.Marshal(o)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Response: resp})
}
